"""The live state of a run for a UI: LiveRun is fed by run_plan's on_event/on_model callbacks, reads the
live counters of the ModelRun in progress, and a UI draws its rows and limit trace on its own schedule."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import polars as pl

from ..run.events import Event, LimitChanged, ModelFinished, ModelStarted, Notice, PhotoDone
from ..report.format import Col
from ..run.runner import ModelRun

REFRESH_S = 0.3  # how often a UI redraws while a run goes on
# The live table's columns (LiveRun.rows()).
LIVE = (Col("model", "model", "text"), Col("state", "state", "text"), Col("done", "done", "count"),
        Col("total", "of", "count"), Col("photos_per_s", "photos/s", "rate"), Col("time_left_s", "time left (s)", "count"),
        Col("in_flight", "in flight", "count"), Col("limit", "in-flight limit", "count"),
        Col("throttles", "throttled", "count"), Col("dropped_connections", "dropped connections", "count"))


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
        self.notices: list[str] = []  # warnings that did not stop the run (a repaired journal, ...)

    # -- callbacks for run_models -------------------------------------------------------------------------
    def on_model(self, run: ModelRun) -> None:
        self._runs[run.arm] = run  # the model id, or model@condition under a condition (as events name it)
        live = self.models.setdefault(run.arm, ModelLive(run.arm, run.total))
        live.total, live.limit = run.total, run.limiter.limit

    def on_event(self, event: Event) -> None:
        if isinstance(event, Notice):
            self.notices.append(f"{event.model}: {event.text}" if event.model else event.text)
            return
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
