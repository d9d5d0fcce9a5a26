"""Running a benchmark: settings built once (settings.py), a run planned and checked whole (plan.py), the runner
(the only place with concurrency), the HTTP exchange, budgets, the session over several models, events."""
