"""A terminal progress bar, or plain periodic lines when output is not a terminal (CI logs, pipes)."""
from __future__ import annotations

import sys
import time
from typing import TextIO

PLAIN_EVERY_S = 5.0  # how often a non-terminal gets a line
REDRAW_EVERY_S = 0.1


def _human(n: float, unit: str) -> str:
    if unit == "B":
        for u in ("B", "KB", "MB", "GB"):
            if n < 1024 or u == "GB":
                return f"{n:.0f} {u}" if u == "B" else f"{n:.1f} {u}"
            n /= 1024
    return f"{n:.0f}"


def download_bar(stream: TextIO | None = None):
    """An on_download callback for load_dataset: a byte progress bar, made at the first chunk."""
    bar: list[ProgressBar] = []

    def on_download(name: str, done: int, total: int | None, finished: bool = False) -> None:
        if not bar:
            bar.append(ProgressBar(f"download {name}", total, unit="B", stream=stream or sys.stderr))
        bar[0].done = done
        bar[0].close() if finished else bar[0].update()
    return on_download


class ProgressBar:
    def __init__(self, label: str, total: int | None, *, unit: str = "", stream: TextIO | None = None,
                 enabled: bool = True, clock=time.monotonic):
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.clock = clock
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.done = 0
        self.extra = ""
        self.t0 = clock()
        self._last = -float("inf")
        self._drawn_done = -1

    def advance(self, n: int = 1, extra: str | None = None) -> None:
        self.done += n
        self.update(extra)

    def update(self, extra: str | None = None, *, force: bool = False) -> None:
        if extra is not None:
            self.extra = extra
        if not self.enabled:
            return
        now = self.clock()
        every = REDRAW_EVERY_S if self.tty else PLAIN_EVERY_S
        if not force and now - self._last < every:
            return
        self._last = now
        self._drawn_done = self.done
        line = self.render(now)
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def render(self, now: float | None = None) -> str:
        now = self.clock() if now is None else now
        elapsed = max(now - self.t0, 1e-9)
        rate = self.done / elapsed
        done = _human(self.done, self.unit)
        if self.total:
            frac = min(1.0, self.done / self.total)
            width = 24
            bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
            left = (self.total - self.done) / rate if rate > 0 else None
            eta = f", {left:.0f}s left" if left is not None and self.done < self.total else ""
            head = f"{self.label} [{bar}] {done}/{_human(self.total, self.unit)} {frac:4.0%}"
        else:
            head, eta = f"{self.label} {done}", ""
        rate_s = f"{_human(rate, self.unit)}/s" if self.unit == "B" else f"{rate:.1f}/s"
        tail = f" | {self.extra}" if self.extra else ""
        return f"{head} {rate_s}{eta}{tail}"

    def close(self) -> None:
        if not self.enabled:
            return
        if self.tty or self._drawn_done != self.done:
            self.update(force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()
