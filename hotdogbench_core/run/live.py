"""A run's live state, from its events, and the heartbeat that writes it to OUT/RUN/live.json.

LiveRun is fed by run_plan's on_event/on_model callbacks and reads the live counters (in flight, limit,
throttles) of the ModelRun in progress. Heartbeat writes LiveRun.status() to live.json every EVERY_S while
the run goes on and once when it ends, so another process (the run notebook, a second tab, a new kernel)
can follow the run without being part of it: it reads the file (ui/runs.py).

live.json (written atomically, so a reader sees a whole file):

    {"version": 1, "pid": 4242, "state": "running" | "stopping" | "done" | "stopped" | "failed",
     "reason": why it stopped or failed (null when done), "started_at": epoch s, "updated_at": epoch s,
     "launch": how it was started ({"command": "demo", "argv": [...]}, from the CLI) or null,
     "notices": warnings that did not stop the run (a repaired journal, a model the server may not list),
     "models": {model id: {"total", "done", "answered", "errors", "first_error", "state", "stop_reason",
                           "hint", "photos_per_s", "time_left_s", "in_flight", "limit", "throttles",
                           "dropped_connections", "trace": [[seconds since the model started, limit], ...]}}}

A model's state is "waiting", "running", "done" or "stopped"; "answered" counts photos with a verdict and
"errors" photos that ended with an error, so a model with done > 0 and answered == 0 has no answers at all.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field

import polars as pl

from ..store.journal import JournalError, read_journal
from ..store.results import Result
from ..store.atomic import write_atomic
from ..store.rundir import RunDir
from .events import Event, LimitChanged, ModelFinished, ModelStarted, Notice, PhotoDone
from .runner import ModelRun

LIVE_VERSION = 1
TRACE_POINTS = 400  # the newest limit changes kept per model in live.json (the chart's line)
ERROR_CHARS = 300  # a first error longer than this is cut in live.json


@dataclass
class ModelLive:
    model: str
    total: int
    done: int = 0
    already_done: int = 0
    answered: int = 0  # photos with a verdict (this session and the ones before)
    errors: int = 0  # photos that ended with an error
    first_error: str | None = None
    state: str = "waiting"  # waiting, running, done, stopped
    stop_reason: str | None = None
    hint: str | None = None  # what to do about the stop (the summary's hint)
    started_at: float | None = None
    finished_at: float | None = None
    limit: int | None = None
    in_flight: int = 0
    throttles: int = 0
    transport_errors: int = 0
    trace: list[tuple[float, int]] = field(default_factory=list)
    summary: dict | None = None

    def count(self, res: Result) -> None:
        """One settled photo's verdict or error."""
        if res.pred is not None:
            self.answered += 1
        if res.error is not None:
            self.errors += 1
            if self.first_error is None:
                self.first_error = res.error[:ERROR_CHARS]

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

    def status(self, now: float) -> dict:
        """This model's entry in live.json."""
        rate, eta = self.rate(now), self.eta_s(now)
        trace = list(self.trace)
        if trace and self.limit is not None and self.state == "running":
            trace.append((round(self.elapsed(now), 2), self.limit))  # the line reaches to now
        return {"total": self.total, "done": self.done, "answered": self.answered, "errors": self.errors,
                "first_error": self.first_error, "state": self.state, "stop_reason": self.stop_reason,
                "hint": self.hint,
                "photos_per_s": None if rate is None else round(rate, 2),
                "time_left_s": None if eta is None else round(eta), "in_flight": self.in_flight,
                "limit": self.limit, "throttles": self.throttles, "dropped_connections": self.transport_errors,
                "trace": [[round(t, 2), lim] for t, lim in trace[-TRACE_POINTS:]]}


class LiveRun:
    """Per-model progress and counters, fed by run_models' callbacks; read by a UI on its own schedule."""

    def __init__(self, models: list[str], total_per_model: int, *, clock=time.monotonic):
        self.clock = clock
        self.models = {m: ModelLive(m, total_per_model) for m in models}
        self._runs: dict[str, ModelRun] = {}
        self.notices: list[str] = []  # warnings that did not stop the run (a repaired journal, ...)

    def seed(self, rundir: RunDir, arms: list[tuple[str, str]] | None = None) -> "LiveRun":
        """Count what earlier sessions of the run settled (a resume), for models that have not started yet.
        arms: (model, condition) for each of the live models, in the same order (default: plain model ids)."""
        for (model, condition), live in zip(arms or [(m, None) for m in self.models], self.models.values()):
            try:
                results = read_journal(rundir.journal(model, condition)).results
            except (OSError, JournalError):
                continue
            self._recount(live, results.values())
        return self

    def _recount(self, live: ModelLive, results) -> None:
        live.done = live.answered = live.errors = 0
        live.first_error = None
        for res in results:
            live.done += 1
            live.count(res)

    # -- callbacks for run_models -------------------------------------------------------------------------
    def on_model(self, run: ModelRun) -> None:
        self._runs[run.arm] = run  # the model id, or model@condition under a condition (as events name it)
        live = self.models.setdefault(run.arm, ModelLive(run.arm, run.total))
        live.total, live.limit = run.total, run.limiter.limit
        self._recount(live, run.results.values())  # what a resumed model holds already

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
            live.count(event.result)
        elif isinstance(event, LimitChanged):
            live.limit = event.change.limit
            live.trace.append((event.change.t, event.change.limit))
        elif isinstance(event, ModelFinished):
            self.refresh()
            live.summary, live.finished_at = event.summary, self.clock()
            live.stop_reason = event.summary.get("stopped")
            live.hint = event.summary.get("hint") or None
            live.state = "stopped" if live.stop_reason else "done"
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

    @property
    def stopping(self) -> bool:
        """Told to stop (Ctrl-C, a fatal answer, the budget) and still finishing the requests in flight."""
        return any(run.stop_reason and self.models[m].state == "running" for m, run in self._runs.items())

    def status(self) -> dict[str, dict]:
        """model -> its entry in live.json."""
        now = self.clock()
        return {m: live.status(now) for m, live in self.models.items()}

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


class Heartbeat:
    """Writes the run's live state to OUT/RUN/live.json while it goes on, and its end state once it is over.

        async with Heartbeat(rundir, live, launch) as beat:
            result = await run_models(...)
            beat.finished(result)

    The file says who runs the folder (pid), how far each model is and how the run ended: "done", "stopped"
    (with the reason: interrupted, a fatal answer, the budget) or "failed" (an error ended it). Only the process
    that holds the folder writes it: the heartbeat starts with the first model (on_model, called once run_models
    holds the folder's lock), so a second process refused at the lock, or a run refused by its preflight, leaves
    the file of the run before it as it was (the CLI prints why). It is written without fsync (a heartbeat need
    not survive a crash; the journal does that) and atomically."""

    EVERY_S = 0.25

    def __init__(self, rundir: RunDir, live: LiveRun, launch: dict | None = None, *, wall=time.time):
        self.rundir, self.live, self.launch, self.wall = rundir, live, launch, wall
        self.started_at = wall()
        self._end: tuple[str, str | None] | None = None
        self._task: asyncio.Task | None = None
        self.armed = False  # this process holds the run folder: the file is its to write

    def status(self, state: str | None = None, reason: str | None = None) -> dict:
        self.live.refresh()
        if state is None:
            state = "stopping" if self.live.stopping else "running"
        return {"version": LIVE_VERSION, "pid": os.getpid(), "state": state, "reason": reason,
                "started_at": round(self.started_at, 3), "updated_at": round(self.wall(), 3),
                "launch": self.launch, "notices": list(self.live.notices[-20:]), "models": self.live.status()}

    def write(self, state: str | None = None, reason: str | None = None) -> None:
        data = json.dumps(self.status(state, reason), separators=(",", ":")).encode()
        write_atomic(self.rundir.live, data, fsync=False)

    def on_model(self, run) -> None:
        """A model is about to start (run_models holds the folder by now): beat from here on."""
        if not self.armed:
            self.armed = True
            self.write()

    def finished(self, result) -> None:
        """The run came to its end (a RunResult): done, or stopped early and why."""
        self._end = ("stopped", result.stopped) if result.stopped else ("done", None)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.EVERY_S)
            if not self.armed:
                continue
            try:
                self.write()
            except OSError:  # a full disk must not end the run; the journal is what counts
                pass

    async def __aenter__(self) -> "Heartbeat":
        self._task = asyncio.create_task(self._beat())
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        if not self.armed:
            return  # it never held the folder (refused at the lock, by the preflight, at resume's checks)
        if exc is None:
            state, reason = self._end or ("done", None)
        elif isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
            state, reason = "stopped", "interrupted"
        else:
            state, reason = "failed", f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
        try:
            self.write(state, reason)
        except OSError:
            pass


def read_live(rundir: RunDir) -> dict | None:
    """live.json as written, or None when there is none (or it cannot be read)."""
    try:
        data = json.loads(rundir.live.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == LIVE_VERSION else None
