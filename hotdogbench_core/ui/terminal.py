"""What a terminal shows while models run: a progress bar per model, or one for models run at once."""
from __future__ import annotations

import sys

from ..run.events import Event, LimitChanged, ModelStarted, Notice, PhotoDone
from ..run.runner import ModelRun
from .progress import ProgressBar


class TerminalDisplay:
    """A progress bar per model (plain periodic lines when stderr is not a terminal)."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.bar: ProgressBar | None = None
        self.run: ModelRun | None = None

    def on_model(self, run: ModelRun) -> None:
        self.run = run

    def on_tick(self) -> None:
        if self.bar is not None and not self.quiet:
            self.bar.update(self._counters())

    def _counters(self) -> str:
        lim = self.run.limiter if self.run else None
        return (f"limit {lim.limit}, in flight {lim.in_flight}, throttles {lim.throttles}, "
                f"dropped conns {lim.transport_errors}") if lim else ""

    def on_event(self, event: Event) -> None:
        if isinstance(event, Notice):  # shown even with --quiet
            print(f"warning: {event.model + ': ' if event.model else ''}{event.text}", file=sys.stderr, flush=True)
            return
        if self.quiet:
            return
        if isinstance(event, ModelStarted):
            self.bar = ProgressBar(event.model, event.total)
            self.bar.done = event.already_done
        elif self.bar is not None and isinstance(event, (PhotoDone, LimitChanged)):
            if isinstance(event, PhotoDone):
                self.bar.done = event.done
            self.bar.update(self._counters(), force=isinstance(event, PhotoDone) and event.done == event.total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class ParallelDisplay:
    """One progress bar for models run at once (--parallel-models): photos done over all of them."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.runs: list[ModelRun] = []
        self.bar: ProgressBar | None = None

    def on_model(self, run: ModelRun) -> None:
        self.runs.append(run)

    def on_event(self, event: Event) -> None:
        if isinstance(event, Notice):
            print(f"warning: {event.model + ': ' if event.model else ''}{event.text}", file=sys.stderr, flush=True)
            return
        if self.quiet or not isinstance(event, (ModelStarted, PhotoDone)):
            return
        if self.bar is None:
            self.bar = ProgressBar(f"{len(self.runs)} models", sum(r.total for r in self.runs))
        self.bar.done = sum(r.done for r in self.runs)
        self.bar.update(self._counters(), force=self.bar.done == self.bar.total)

    def _counters(self) -> str:
        running = sum(1 for r in self.runs if r.done < r.total and r.stop_reason is None)
        return (f"{running} running, in flight {sum(r.in_flight for r in self.runs)}, "
                f"throttles {sum(r.limiter.throttles for r in self.runs)}")

    def on_tick(self) -> None:
        if self.bar is not None and not self.quiet:
            self.bar.update(self._counters())

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
