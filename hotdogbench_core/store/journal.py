"""An append-only journal per model and run: the single source of truth the output files are rebuilt from.

One JSON object per line. A photo's final result is written (and handed to the OS) before it counts as
done, so a killed process loses at most the requests still in flight; fsync runs periodically and on close.
Inside a running event loop, results that arrive in the same loop iteration are handed to the OS together at
its end (one write instead of one per photo); the runner counts them done only then. A half-written last line
(the process died mid-write) is ignored on reading.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .results import Result

FSYNC_EVERY_S = 1.0
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode  # one encoder: json.dumps builds one per call


class JournalError(ValueError):
    pass


@dataclass
class JournalState:
    """What a journal says: each photo's final result (latest wins) and each session's record."""
    results: dict[tuple[int, int], Result] = field(default_factory=dict)  # (id, repeat) -> result
    sessions: list[dict] = field(default_factory=list)
    header: dict | None = None


class Journal:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "ab")
        self._last_sync = time.monotonic()
        self._pending: list[Callable[[], None]] = []  # what to do once the batch of results is in the OS's hands

    def _write(self, obj: dict) -> None:
        self._f.write((_ENCODE(obj) + "\n").encode())
        self._flush()

    def _flush(self) -> None:
        if self._f.closed:
            return  # closed in the same loop iteration: close() flushed it and ran what waited
        self._f.flush()  # in the OS's hands now: survives the process being killed
        now = time.monotonic()
        if now - self._last_sync >= FSYNC_EVERY_S:
            os.fsync(self._f.fileno())
            self._last_sync = now
        pending, self._pending = self._pending, []
        for then in pending:
            then()

    def header(self, **info) -> None:
        self._write({"type": "header", **info})

    def start(self) -> None:
        """A session begins; if it never writes its end (killed), its wall time runs to its last result."""
        self._write({"type": "start", "at": round(time.time(), 3)})

    def result(self, res: Result, then: Callable[[], None] | None = None) -> None:
        """Write one final result. With `then` (inside a running event loop), the write is handed to the OS at
        the end of this loop iteration together with the others written in it, and `then` runs after that."""
        line = {"type": "result", **res.to_json(), "at": round(time.time(), 3)}
        if then is None:
            self._write(line)
            return
        self._f.write((_ENCODE(line) + "\n").encode())
        if not self._pending:
            asyncio.get_running_loop().call_soon(self._flush)
        self._pending.append(then)

    def session(self, **info) -> None:
        self._write({"type": "session", **info})

    def close(self) -> None:
        if self._f.closed:
            return
        self._flush()  # (and runs what waited for it)
        os.fsync(self._f.fileno())
        self._f.close()

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_journal(path: Path) -> JournalState:
    state = JournalState()
    path = Path(path)
    if not path.exists():
        return state
    lines = path.read_bytes().split(b"\n")
    open_session: dict | None = None  # a started session: its start time and its latest result time
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            if n == len(lines):  # torn final write of a killed process: that photo is asked again
                continue
            raise JournalError(f"{path}: line {n} is not valid JSON; the journal is damaged") from None
        kind = obj.pop("type", None)
        if kind == "result":
            res = Result.from_json(obj)
            state.results[res.key] = res
            if open_session is not None and "at" in obj:
                open_session["last"] = obj["at"]
        elif kind == "start":
            if open_session is not None:
                state.sessions.append(_killed(open_session))
            open_session = {"start": obj.get("at", 0.0), "last": obj.get("at", 0.0)}
        elif kind == "session":
            state.sessions.append(obj)
            open_session = None
        elif kind == "header":
            if state.header is None:
                state.header = obj
    if open_session is not None:
        state.sessions.append(_killed(open_session))
    return state


def read_header(path: Path) -> dict | None:
    """The journal's header (its first line, where the runner writes it; else the first header in the file)."""
    try:
        with open(path, "rb") as f:
            obj = json.loads(f.readline())
    except (OSError, ValueError):
        obj = None
    if isinstance(obj, dict) and obj.get("type") == "header":
        return {k: v for k, v in obj.items() if k != "type"}
    try:
        return read_journal(path).header
    except (OSError, JournalError):
        return None


def _killed(session: dict) -> dict:
    return {"wall_s": round(max(0.0, session["last"] - session["start"]), 3), "stop_reason": "killed"}
