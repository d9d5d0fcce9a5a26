"""A run launched from a UI: the plan (what to ask, where), the run itself, and its live state for display.

The notebook builds a RunPlan from its widgets, starts run_plan() as a task, and every few tenths of a
second draws LiveRun's rows and trace; LiveRun is fed by run_models' on_event/on_model callbacks and reads
the live counters of the ModelRun in progress. The API key is looked up inside run_plan and goes nowhere else.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..store.dataset import Dataset
from ..run.keys import find_key
from ..run.runner import (DEFAULT_BASE_URL, Event, LimitChanged, ModelFinished, ModelRun, ModelStarted, PhotoDone,
                     RunSettings)
from ..run.session import RunResult, run_models

TARGETS = {"openrouter": "OpenRouter", "simulator": "Simulator (no key, no network)",
           "base_url": "Another base URL"}
LOOPBACK = ("http://127.", "http://localhost", "http://[::1]")
REFRESH_S = 0.3  # how often a UI redraws while a run goes on


@dataclass
class ModelLive:
    model: str
    total: int
    done: int = 0
    already_done: int = 0
    state: str = "waiting"  # waiting, running, done, stopped
    started_at: float | None = None
    finished_at: float | None = None
    limit: int | None = None
    in_flight: int = 0
    throttles: int = 0
    transport_errors: int = 0
    trace: list[tuple[float, int]] = field(default_factory=list)
    summary: dict | None = None

    def elapsed(self, now: float) -> float:
        if self.started_at is None:
            return 0.0
        return (self.finished_at or now) - self.started_at

    def rate(self, now: float) -> float | None:
        """Photos settled per second in this session."""
        el, n = self.elapsed(now), self.done - self.already_done
        return n / el if el > 0 and n > 0 else None

    def eta_s(self, now: float) -> float | None:
        if self.state != "running":
            return 0.0 if self.state in ("done", "stopped") else None
        r = self.rate(now)
        return (self.total - self.done) / r if r else None

    def subtitle(self, now: float) -> str:
        if self.state == "waiting":
            return "waiting"
        r, eta = self.rate(now), self.eta_s(now)
        parts = [self.state, f"{r:.1f} photos/s" if r else "- photos/s"]
        if self.state == "running":
            parts.append(f"~{eta:.0f} s left" if eta is not None else "time left unknown")
        parts += [f"in flight {self.in_flight}", f"limit {self.limit if self.limit is not None else '-'}",
                  f"throttles {self.throttles}", f"dropped connections {self.transport_errors}"]
        return " · ".join(parts)


class LiveRun:
    """Per-model progress and counters, fed by run_models' callbacks; read by a UI on its own schedule."""

    def __init__(self, models: list[str], total_per_model: int, *, clock=time.monotonic):
        self.clock = clock
        self.models = {m: ModelLive(m, total_per_model) for m in models}
        self._runs: dict[str, ModelRun] = {}

    # -- callbacks for run_models -------------------------------------------------------------------------
    def on_model(self, run: ModelRun) -> None:
        self._runs[run.model] = run
        live = self.models.setdefault(run.model, ModelLive(run.model, run.total))
        live.total, live.limit = run.total, run.limiter.limit

    def on_event(self, event: Event) -> None:
        live = self.models.setdefault(event.model, ModelLive(event.model, 0))
        if isinstance(event, ModelStarted):
            live.state, live.started_at, live.total = "running", self.clock(), event.total
            live.done = live.already_done = event.already_done
            if live.limit is not None:
                live.trace = [(0.0, live.limit)]
        elif isinstance(event, PhotoDone):
            live.done = event.done
        elif isinstance(event, LimitChanged):
            live.limit = event.change.limit
            live.trace.append((event.change.t, event.change.limit))
        elif isinstance(event, ModelFinished):
            self.refresh()
            live.summary, live.finished_at = event.summary, self.clock()
            live.state = "stopped" if event.summary.get("stopped") else "done"
            live.in_flight = 0

    # -- reading --------------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Copy the live counters of the models in progress."""
        for model, run in self._runs.items():
            live = self.models[model]
            if live.state in ("done", "stopped"):
                continue
            lim = run.limiter
            live.limit, live.in_flight = lim.limit, lim.in_flight
            live.throttles, live.transport_errors = lim.throttles, lim.transport_errors

    @property
    def finished(self) -> bool:
        return all(m.state in ("done", "stopped") for m in self.models.values())

    def rows(self) -> list[dict]:
        now = self.clock()
        return [{"model": m.model, "state": m.state, "done": m.done, "total": m.total,
                 "photos_per_s": None if m.rate(now) is None else round(m.rate(now), 1),
                 "time_left_s": None if m.eta_s(now) is None else round(m.eta_s(now)),
                 "in_flight": m.in_flight, "limit": m.limit, "throttles": m.throttles,
                 "dropped_connections": m.transport_errors} for m in self.models.values()]

    def trace_frame(self) -> pl.DataFrame:
        """label, t, limit for every model that started; a running model's line reaches to now."""
        now, rows = self.clock(), []
        for m in self.models.values():
            points = list(m.trace)
            if points and m.limit is not None and m.state != "waiting":
                points.append((round(m.elapsed(now), 2), m.limit))
            rows += [{"label": m.model, "t": float(t), "limit": int(lim)} for t, lim in points]
        schema = {"label": pl.String, "t": pl.Float64, "limit": pl.Int64}
        return pl.DataFrame(rows, schema=schema, orient="row" if not rows else None)


# -- the plan and the run ---------------------------------------------------------------------------------
@dataclass
class RunPlan:
    models: list[str]
    dataset: Dataset
    target: str  # a key of TARGETS
    out: Path
    run_name: str
    base_url: str | None = None  # target "base_url" only
    sim_config: object | None = None  # a SimConfig, target "simulator" only
    start_concurrency: int = 8
    max_concurrency: int = 256
    resume: bool = False  # finish an interrupted run of this name: ask only photos without a result
    max_cost_usd: float | None = None  # spending cap for the run (None: no cap)

    def __post_init__(self):
        if self.target not in TARGETS:
            raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {self.target!r}")
        if not self.models:
            raise ValueError("choose at least one model")
        if self.target == "base_url" and not (self.base_url or "").startswith(("http://", "https://")):
            raise ValueError("give a base URL starting with http:// or https://")
        if self.target == "openrouter" and not find_key():
            raise ValueError("no OpenRouter key: set OPENROUTER_API_KEY or put it in ./.env, or use the simulator")
        if not self.run_name or "/" in self.run_name or self.run_name.startswith("."):
            raise ValueError("the run name must be a plain folder name")
        RunSettings(api_key="", start_concurrency=self.start_concurrency, max_concurrency=self.max_concurrency)
        if self.max_cost_usd is not None and not self.max_cost_usd > 0:
            raise ValueError(f"the budget must be more than $0 (or empty for none), not {self.max_cost_usd}")
        self.out = Path(self.out)
        if not self.resume and (self.run_dir / "journal").is_dir():
            raise ValueError(f"{self.run_dir} already holds a run: choose another run name, or resume it")

    @property
    def run_dir(self) -> Path:
        return self.out / self.run_name

    @property
    def requests_per_model(self) -> int:
        return len(self.dataset)

    def endpoint(self) -> str:
        return {"openrouter": DEFAULT_BASE_URL, "simulator": "the built-in simulator"}.get(
            self.target, (self.base_url or "").rstrip("/"))


async def run_plan(plan: RunPlan, live: LiveRun | None = None) -> RunResult:
    """Run the plan's models one after another into OUT/RUN, reporting to `live`."""
    hooks = {"on_event": live.on_event, "on_model": live.on_model} if live else {}
    hooks["max_cost_usd"] = plan.max_cost_usd

    def settings(key: str, base_url: str) -> RunSettings:
        return RunSettings(api_key=key, base_url=base_url, start_concurrency=plan.start_concurrency,
                           max_concurrency=plan.max_concurrency)

    if plan.target == "simulator":
        from .cli import DEMO_SIM
        from ..sim.app import SimConfig, Simulator, labels_from_parquet

        config = plan.sim_config or SimConfig.from_dict(DEMO_SIM)
        async with Simulator(config, labels=labels_from_parquet(plan.dataset.path)) as sim:
            return await run_models(plan.models, plan.dataset, settings("sk-local-simulator", sim.base_url),
                                    out=plan.out, run_name=plan.run_name, resume=plan.resume, **hooks)
    base_url = DEFAULT_BASE_URL if plan.target == "openrouter" else plan.base_url.rstrip("/")
    key = find_key() or ("sk-local-simulator" if base_url.startswith(LOOPBACK) else "")
    if not key:
        raise ValueError(f"no key for {base_url}: set OPENROUTER_API_KEY or put it in ./.env")
    return await run_models(plan.models, plan.dataset, settings(key, base_url), out=plan.out,
                            run_name=plan.run_name, resume=plan.resume, **hooks)
