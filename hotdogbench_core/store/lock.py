"""One process per run folder: an OS lock (flock) on OUT/RUN/run.lock, held for the whole run.

The kernel drops a flock when its holder exits, however it exits (SIGKILL included), so a lock left by a
killed process never blocks a resume; the PID in the file is only for the message. Two runs in one process
on the same folder conflict too (each takes its own open file description).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..errors import FieldError

try:
    import fcntl
except ImportError:  # not on this OS: no lock (Windows)
    fcntl = None


class RunLockedError(FieldError):
    """Another process (or another run in this one) is using the run folder."""

    field = "run_name"

    def __init__(self, path: Path, holder: dict | None):
        pid = (holder or {}).get("pid")
        who = "this process" if pid == os.getpid() else f"process {pid}" if pid else "another process"
        since = f", since {holder['started_at']}" if holder and holder.get("started_at") else ""
        cmd = f" ({holder['command']})" if holder and holder.get("command") else ""
        self.pid = pid
        super().__init__(f"{path.parent} is in use by {who}{cmd}{since}: wait for it to finish or stop it, then "
                         f"resume with --resume (nothing was sent)")


# The holder writes its name just after it takes the lock: a process refused in between waits this long for it
HOLDER_WAIT_S = 0.5


def _holder(fd: int, wait_s: float = HOLDER_WAIT_S) -> dict | None:
    deadline = time.monotonic() + wait_s
    while True:
        holder = _read_holder(fd)
        if (holder and holder.get("pid")) or time.monotonic() >= deadline:
            return holder
        time.sleep(0.02)


def _read_holder(fd: int) -> dict | None:
    try:
        data = os.pread(fd, 4096, 0)
        obj = json.loads(data) if data.strip() else None
        return obj if isinstance(obj, dict) else None
    except (OSError, ValueError):
        return None


def check_free(path: str | Path) -> None:
    """RunLockedError if a live process holds the lock at `path` now (a look only: nothing is created)."""
    path = Path(path)
    if fcntl is None or not path.is_file():
        return
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RunLockedError(path, _holder(fd)) from None
    except OSError:
        pass
    finally:
        os.close(fd)


class RunLock:
    """`with RunLock(path):` holds the lock or raises RunLockedError naming the holder."""

    def __init__(self, path: str | Path, command: str | None = None):
        self.path = Path(path)
        self.command = command
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _holder(fd)
                os.close(fd)
                raise RunLockedError(self.path, holder) from None
            except OSError:  # a file system without locks: run unlocked rather than not at all
                pass
        self._fd = fd
        info = {"pid": os.getpid(), "started_at": time.strftime("%Y-%m-%d %H:%M:%S"), "command": self.command}
        try:  # the holder's name, for the message another process shows; a full disk must not stop the run
            data = json.dumps({k: v for k, v in info.items() if v}).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
        except OSError:
            pass
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)  # no stale PID for the next reader
        except OSError:
            pass
        os.close(fd)  # closing the last descriptor drops the flock

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
