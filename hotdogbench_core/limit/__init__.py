"""How many requests may be out at once, and how fast they may go: the limiter policies (reference AIMD, the
adaptive default) behind one synchronous, clock-driven gate the runner calls."""
