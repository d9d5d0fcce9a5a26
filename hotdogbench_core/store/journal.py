"""An append-only journal per model and run: the single source of truth the output files are rebuilt from.

One JSON object per line. A photo's final result is written (and handed to the OS) before it counts as
done, so a killed process loses at most the requests still in flight; fsync runs periodically and on close.
Inside a running event loop, results that arrive in the same loop iteration are handed to the OS together at
its end (one write instead of one per photo); the runner counts them done only then. A half-written last line
(the process died mid-write) is ignored on reading, and cut off (its bytes saved as <journal>.torn-<time>) when
the journal is next opened for writing. A write that fails is undone to the last whole line and kept in memory
(Journal.error, Journal.unsaved, Journal.retry).

Reading is strict where skipping could cost money or mix runs: a line that is not JSON (but the last), not an
object, or a result, start, session or header of the wrong shape raises JournalError naming the file and line
(skipping a result would make a resume pay for it again). A line of a kind this version does not write carries
no result, so it is skipped and its number listed in JournalState.skipped.
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .conditioned import ConditionResult
from .results import Result

FSYNC_EVERY_S = 1.0
_ENCODE = json.JSONEncoder(separators=(",", ":")).encode  # one encoder: json.dumps builds one per call


class JournalError(ValueError):
    """A journal line that cannot be read as this version writes it; the message names the file and line."""


@dataclass
class JournalState:
    """What a journal says: each photo's final result (latest wins) and each session's record."""
    results: dict[tuple[int, int], Result] = field(default_factory=dict)  # (id, repeat) -> result
    sessions: list[dict] = field(default_factory=list)
    header: dict | None = None
    skipped: list[int] = field(default_factory=list)  # line numbers of lines of a kind this version doesn't know


@dataclass(frozen=True)
class TornTail:
    """The unfinished last line a journal ended with when it was opened (a process died mid-write)."""
    nbytes: int
    saved_to: Path


def _os_write(fd: int, data) -> int:  # the one call that hands journal bytes to the OS (tests inject faults here)
    return os.write(fd, data)


def _write_all(fd: int, data: bytes) -> None:
    view, done = memoryview(data), 0
    while done < len(data):
        done += _os_write(fd, view[done:])


class Journal:
    """The writer. Lines go to the OS with one write per batch, on a file opened for append.

    A write that fails (disk full, read-only, I/O error) is undone back to the last whole line (ftruncate)
    and its lines are kept in memory: `error` holds the first failure, `on_failure(error)` is called once
    (the runner stops sending), every later result and `retry()` try the kept lines again, and `unsaved`
    counts the results still only in memory. On open, an unfinished last line (a process killed mid-write)
    is cut off and its bytes saved beside the journal (`torn`), so the next line starts on a line of its own.
    """

    def __init__(self, path: Path, *, redact: Callable[[bytes], bytes] | None = None,
                 on_failure: Callable[[OSError], None] | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.redact = redact  # the last defence: every line's bytes pass through it
        self.on_failure = on_failure
        self.error: OSError | None = None
        self.torn: TornTail | None = None
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        self.closed = False
        try:
            self._size = self._cut_torn_tail()
        except BaseException:
            os.close(self._fd)
            self.closed = True
            raise
        self._last_sync = time.monotonic()
        self._buf: list[bytes] = []  # lines not yet in the OS's hands
        self._buf_results = 0  # how many of them are results
        self._pending: list[Callable[[], None]] = []  # what to do once the buffered results are in the OS's hands
        self._scheduled = False

    @property
    def size(self) -> int:
        """Bytes of whole lines in the file."""
        return self._size

    @property
    def unsaved(self) -> int:
        """Results written to this journal that the OS does not hold (a write failed and was not yet redone)."""
        return self._buf_results

    def _cut_torn_tail(self) -> int:
        size = os.fstat(self._fd).st_size
        if size == 0:
            return 0
        with open(self.path, "rb") as f:
            pos, tail = size, b""
            while pos > 0:  # back from the end to the last newline
                step = min(1 << 16, pos)
                pos -= step
                f.seek(pos)
                tail = f.read(step) + tail
                if tail.endswith(b"\n"):
                    return size
                cut = tail.rfind(b"\n")
                if cut >= 0:
                    keep = pos + cut + 1
                    break
            else:
                keep = 0
            f.seek(keep)
            torn = f.read()
        aside = self.path.with_name(f"{self.path.name}.torn-{time.strftime('%Y%m%dT%H%M%S')}-{time.time_ns() % 10**9:09d}")
        with open(aside, "wb") as out:  # saved before the cut: if this fails (disk full), nothing is cut
            out.write(torn)
            out.flush()
            os.fsync(out.fileno())
        os.ftruncate(self._fd, keep)
        self.torn = TornTail(len(torn), aside)
        return keep

    # -- writing ---------------------------------------------------------------------------------------
    def _fail(self, error: OSError) -> None:
        try:
            os.ftruncate(self._fd, self._size)  # no part of a line stays behind
        except OSError:
            pass  # the next open cuts it off
        if self.error is None:
            self.error = error
            if self.on_failure is not None:
                self.on_failure(error)

    def _flush(self) -> bool:
        """Hand the buffered lines to the OS; then run what waited for them. False if that failed (kept)."""
        self._scheduled = False
        if self.closed:
            return not self._buf
        if self._buf:
            data = b"".join(self._buf)
            if self.redact is not None:
                data = self.redact(data)
            try:
                _write_all(self._fd, data)  # in the OS's hands now: survives the process being killed
            except OSError as e:
                self._fail(e)
                return False
            self._size += len(data)
            self._buf.clear()
            self._buf_results = 0
        now = time.monotonic()
        if now - self._last_sync >= FSYNC_EVERY_S:
            self._last_sync = now
            try:
                os.fsync(self._fd)
            except OSError as e:  # written, but the device reports trouble: stop sending
                if self.error is None:
                    self.error = e
                    if self.on_failure is not None:
                        self.on_failure(e)
        pending, self._pending = self._pending, []
        for then in pending:
            then()
        return True

    def _line(self, obj: dict, result: bool = False) -> None:
        self._buf.append((_ENCODE(obj) + "\n").encode())
        self._buf_results += result

    def _write(self, obj: dict) -> bool:
        self._line(obj)
        return self._flush()

    def header(self, **info) -> None:
        if not self._write({"type": "header", **info}):
            raise self.error

    def start(self) -> None:
        """A session begins; if it never writes its end (killed), its wall time runs to its last result."""
        if not self._write({"type": "start", "at": round(time.time(), 3)}):
            raise self.error

    def result(self, res: Result, then: Callable[[], None] | None = None) -> bool:
        """Write one final result. With `then` (inside a running event loop), the write is handed to the OS at
        the end of this loop iteration together with the others written in it, and `then` runs after that."""
        self._line({"type": "result", **res.to_json(), "at": round(time.time(), 3)}, result=True)
        if then is None:
            return self._flush()
        self._pending.append(then)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)
        return True

    async def retry(self, seconds: float, every: float = 0.2) -> bool:
        """Try the kept lines again for up to `seconds`; True once nothing is kept."""
        deadline = time.monotonic() + seconds
        while self._buf and not self.closed:
            if self._flush():
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await asyncio.sleep(min(every, left))
        return not self._buf

    def session(self, **info) -> bool:
        return self._write({"type": "session", **info})

    def close(self) -> None:
        """Flush what it can and close; results still kept in memory are counted by `unsaved`."""
        if self.closed:
            return
        self._flush()  # (and runs what waited for it)
        try:
            if self.error is None:
                os.fsync(self._fd)
        except OSError as e:
            self.error = e
        finally:
            os.close(self._fd)
            self.closed = True

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_RESULT_TYPES = {"id": int, "repeat": int, "category": str, "is_hot_dog": bool}
_KIND_NAMES = {int: "a whole number", str: "a text", bool: "true/false"}


def _result(obj: dict, path: Path, n: int, cls: type[Result] = Result) -> Result:
    for key, kind in _RESULT_TYPES.items():
        if key == "repeat" and key not in obj:
            continue
        v = obj.get(key)
        ok = isinstance(v, kind) and (kind is bool or not isinstance(v, bool))
        if not ok:
            raise JournalError(f"{path}: line {n}: a result whose {key} is {json.dumps(v)[:40]}, not "
                               f"{_KIND_NAMES[kind]}{_DAMAGED}")
    p = obj.get("p_hot_dog")
    if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0):
        raise JournalError(f"{path}: line {n}: a result whose p_hot_dog is {json.dumps(p)[:40]}, not a probability "
                           f"in [0, 1] or null{_DAMAGED}")
    try:
        return cls.from_json(obj)
    except (TypeError, ValueError) as e:
        raise JournalError(f"{path}: line {n}: a result that cannot be read ({e}){_DAMAGED}") from None


_DAMAGED = ("; the journal is damaged. Fix or delete that line (a deleted result is asked again on --resume), "
            "or start a new run name")


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
            raise JournalError(f"{path}: line {n} is not valid JSON{_DAMAGED}") from None
        if not isinstance(obj, dict):
            raise JournalError(f"{path}: line {n} is a JSON {type(obj).__name__}, not an object{_DAMAGED}")
        kind = obj.pop("type", None)
        if kind == "result":
            # a condition's journal (its header names the condition) holds what was sent as well
            res = _result(obj, path, n, ConditionResult if (state.header or {}).get("condition") else Result)
            state.results[res.key] = res
            if open_session is not None and isinstance(obj.get("at"), (int, float)):
                open_session["last"] = obj["at"]
        elif kind == "start":
            if open_session is not None:
                state.sessions.append(_killed(open_session))
            at = obj.get("at") if isinstance(obj.get("at"), (int, float)) else 0.0
            open_session = {"start": at, "last": at}
        elif kind == "session":
            wall = obj.get("wall_s")
            if wall is not None and (isinstance(wall, bool) or not isinstance(wall, (int, float))):
                raise JournalError(f"{path}: line {n}: a session whose wall_s is {json.dumps(wall)[:40]}, not a "
                                   f"number{_DAMAGED}")
            state.sessions.append(obj)
            open_session = None
        elif kind == "header":
            if state.header is None:
                state.header = obj
        else:  # a kind this version does not write: it carries no result, so skipping it loses nothing
            state.skipped.append(n)
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
