"""The run notebook's runs: each one a `hotdogbench run|demo` process that the notebook starts and then follows
through its run folder, OUT/RUN/ (live.json, the journals, summary.json, runner.log).

Why a separate process and not a task in the notebook's kernel: a run costs money and must not end half way
because of the notebook. A task lives only as long as its kernel, and a kernel ends more often than a run
should: `marimo run` closes a session --session-ttl seconds (120 by default) after its tab closes, a kernel
restart or crash ends it, and a cell that computes for a while starves the event loop the requests would be
sent from. A process in its own session goes on through all of that, and is the command line a user can run
in a terminal, with its rules for Ctrl-C (nothing more is sent, requests in flight are saved), --resume and
the journal. Whoever looks at OUT (another tab, a new kernel, a kernel restarted) finds the run by reading its
folder, runs started in a terminal included. The costs: a second of Python start-up before the first request
(shown as "starting"), and live counters that go through a file the runner writes (run/live.py).

RunRegistry is keyed by run folder name. It starts and stops runs, tells what each folder holds (RunInfo) and,
inside the notebook's kernel, polls the folders and reports changes (watch). One run at a time: two runs at
once would share the provider's rate limit and spoil each other's timings.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..run.live import read_live
from ..store.journal import JournalError, read_journal
from ..store.rundir import RunDir, run_folders
from .launch import launch_labels, with_run

log = logging.getLogger(__name__)

LIVE_STATES = ("starting", "running", "stopping", "finishing")
HEARTBEAT_STALE_S = 5.0  # a "running" heartbeat older than this whose process is gone: the run was killed
DOUBLE_CLICK_S = 1.0  # a Stop this soon after the Run is the second click of a double click, not a Stop
POLL_S = 0.4  # how often the notebook's watcher looks at the run folders
STOP_SIGNAL = signal.SIGINT  # the CLI's Ctrl-C: nothing more is sent, requests in flight finish and are saved
_WATCHERS: dict[tuple[int, str], asyncio.Task] = {}  # (event loop, OUT) -> the watcher polling it


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class RunInfo:
    """What is known about one run folder: its state, per-model counts (live.json's), how it was started."""
    name: str
    state: str  # live: starting, running, stopping, finishing | done, stopped, failed, interrupted, not started
    pid: int | None = None
    reason: str | None = None  # why it stopped, failed or was interrupted
    models: dict = field(default_factory=dict)  # model -> live.json's entry (total, done, answered, errors, ...)
    launch: dict | None = None  # {"command", "argv"}: how it was started (argv[0] is the command)
    holds_results: bool = False  # a journal exists: a new run of this name would mix with it (resume instead)
    start_error: str | None = None  # the last start from this notebook ended at once: what it printed
    updated_at: float | None = None
    notices: tuple[str, ...] = ()  # warnings the run gave that did not stop it

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def complete(self) -> bool:
        """Every photo of every model settled."""
        return bool(self.models) and all(m.get("total") and m.get("done", 0) >= m["total"]
                                         for m in self.models.values())


@dataclass
class _Child:
    proc: subprocess.Popen
    started: float
    launch: dict
    log_from: int  # where this start's output begins in runner.log


# -- what a folder holds ------------------------------------------------------------------------------------
def models_from_journals(rundir: RunDir) -> dict[str, dict]:
    """Per-model counts read from the journals, for a run with no live.json (started before it existed, or
    through the Python API's run_models)."""
    from ..protocol.conditions import arm_label

    out = {}
    for (model, condition), path in rundir.arms().items():
        try:
            state = read_journal(path)
        except (OSError, JournalError):
            continue
        results = list(state.results.values())
        errors = [r.error for r in results if r.error is not None]
        header = state.header or {}
        total = (header.get("dataset_rows") or 0) * (header.get("repeats") or 1)
        stopped = next((s.get("stop_reason") for s in reversed(state.sessions) if s.get("stop_reason")), None) \
            if len(results) < total else None
        out[arm_label(model, condition)] = {
            "total": total, "done": len(results), "answered": sum(r.pred is not None for r in results),
            "errors": len(errors), "first_error": errors[0] if errors else None,
            "state": "stopped" if len(results) < total else "done", "stop_reason": stopped, "in_flight": 0,
            "trace": []}
    return out


def _log_tail(rundir: RunDir, start: int) -> str | None:
    """The last meaningful line a run printed since `start` (its error, when it exits at once)."""
    try:
        with open(rundir.log, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("== ")]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or lines or [None])[-1]


class RunRegistry:
    """The runs under OUT: start, stop, and what each folder holds. One per notebook kernel (its setup cell)."""

    def __init__(self, out: Path | str, *, python: str = sys.executable, env: dict | None = None):
        self.out = Path(out)
        self.python, self.env = python, env
        self._children: dict[str, _Child] = {}
        self._lock = threading.RLock()  # button callbacks and the watcher may call in at once
        self._cache: dict[str, tuple[tuple, RunInfo]] = {}
        self._watch_task: asyncio.Task | None = None

    # -- actions --------------------------------------------------------------------------------------------
    def start(self, name: str, argv: list[str], *, resume: bool = False) -> str | None:
        """Start run NAME with the CLI command `argv` (or resume it with the command it was started with).
        Returns None when started, else why not (then nothing was started)."""
        with self._lock:
            rundir = RunDir(self.out, name)
            info = self.info(name)
            if info.live:
                return f"`{name}` is already {info.state}: this press was ignored (one run of a name at a time)."
            busy = [i for i in self.snapshot().values() if i.live]
            if busy:
                return (f"`{busy[0].name}` is {busy[0].state}: one run at a time (two would share the provider's "
                        "rate limit and each other's timings). Stop it, or wait for it to end.")
            if info.holds_results and not resume:
                return f"`{name}` already holds results: resume it, or run under a new name."
            own = self._children.get(name)
            if resume and own is not None:  # a resume asks with the settings the run started with: ours as
                argv = list(own.launch["argv"])  # given (live.json's has a base URL's query token cut)
            elif resume and info.launch and info.launch.get("argv"):
                argv = list(info.launch["argv"])
            argv = with_run(argv, self.out.resolve(), name, resume)
            rundir.create()
            with open(rundir.log, "ab") as logf:
                log_from = logf.tell()
                logf.write(f"== {time.strftime('%Y-%m-%d %H:%M:%S')} hotdogbench {argv[0]} "
                           f"(started by the run notebook)\n".encode())
                logf.flush()
                env = {**(self.env if self.env is not None else os.environ), "PYTHONUNBUFFERED": "1"}
                proc = subprocess.Popen([self.python, "-m", "hotdogbench_core", *argv], stdin=subprocess.DEVNULL,
                                        stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            self._children[name] = _Child(proc, time.time(), {"command": argv[0], "argv": argv}, log_from)
            self._cache.pop(name, None)
            return None

    def stop(self, name: str, *, force: bool = False) -> str | None:
        """Ask run NAME to stop (the CLI's Ctrl-C). Returns None when asked, else why not."""
        with self._lock:
            info = self.info(name)
            if not info.live:
                return f"`{name}` is not running."
            if info.state in ("stopping", "finishing"):
                return f"`{name}` is already {info.state}: requests in flight are finishing and being saved."
            child = self._children.get(name)
            if child is not None and not force and time.time() - child.started < DOUBLE_CLICK_S:
                return (f"Stop ignored: `{name}` started less than {DOUBLE_CLICK_S:.0f} s ago (the second click of a "
                        "double click?). Press Stop again to stop it.")
            pid = child.proc.pid if child is not None and child.proc.poll() is None else info.pid
            try:
                os.kill(pid, STOP_SIGNAL)
            except (ProcessLookupError, TypeError):
                return f"`{name}` has already ended."
            return None

    # -- reading --------------------------------------------------------------------------------------------
    def info(self, name: str) -> RunInfo:
        """What is known about run NAME, from its folder and from the process this kernel started for it."""
        with self._lock:
            rundir = RunDir(self.out, name)
            child = self._children.get(name)
            running = child is not None and child.proc.poll() is None  # poll(): our children leave no zombies
            beat = read_live(rundir)
            mine = beat is not None and child is not None and beat.get("pid") == child.proc.pid
            holds = rundir.has_results()
            start_error = None
            if child is not None and not running and child.proc.returncode != 0 and not mine:
                start_error = _log_tail(rundir, child.log_from) or f"it exited with code {child.proc.returncode}"
            if running and not mine:  # started, no heartbeat yet (reading the photos, starting the simulator)
                models = {m: {"total": None, "done": 0, "answered": 0, "errors": 0, "state": "waiting"}
                          for m in launch_labels(child.launch["argv"])}
                return RunInfo(name, "starting", child.proc.pid, None, models, child.launch, holds, None,
                               time.time())
            if beat is None:
                return self._without_heartbeat(rundir, holds, start_error)
            state, reason, pid = beat.get("state"), beat.get("reason"), beat.get("pid")
            if running and state not in ("running", "stopping"):
                state = "finishing"  # ended; our process is still writing its files and printing its summary
            elif state in ("running", "stopping") and not running:
                fresh = time.time() - (beat.get("updated_at") or 0) < HEARTBEAT_STALE_S
                if not (pid_alive(pid) and fresh):
                    state, reason = "interrupted", "its process ended before the run did (killed?): resume it"
            return RunInfo(name, state, pid, reason, beat.get("models") or {}, beat.get("launch"), holds,
                           start_error, beat.get("updated_at"), tuple(beat.get("notices") or ()))

    def _without_heartbeat(self, rundir: RunDir, holds: bool, start_error: str | None) -> RunInfo:
        summaries = rundir.summaries()
        if summaries is None:
            state = "interrupted" if holds else "not started"
        else:
            state = "stopped" if any(s.get("stopped") for s in summaries) else "done"
        try:
            updated = rundir.summary.stat().st_mtime
        except OSError:
            updated = None
        return RunInfo(rundir.name, state, None, None, {}, None, holds, start_error, updated)

    def _stamp(self, name: str) -> tuple:
        rundir = RunDir(self.out, name)
        stamp = []
        for p in (rundir.live, rundir.summary, rundir.journal_dir):
            try:
                stamp.append(p.stat().st_mtime_ns)
            except OSError:
                stamp.append(None)
        return tuple(stamp)

    def snapshot(self) -> dict[str, RunInfo]:
        """Every run folder under OUT, by name. A folder whose files have not changed since the last look and
        that is not live is not read again."""
        with self._lock:
            out = {}
            for name in sorted(set(run_folders(self.out)) | set(self._children)):
                stamp = self._stamp(name)
                cached = self._cache.get(name)
                child = self._children.get(name)
                if cached and cached[0] == stamp and not cached[1].live and \
                        (child is None or child.proc.poll() is not None):
                    out[name] = cached[1]
                    continue
                info = self.info(name)
                self._cache[name] = (stamp, info)
                out[name] = info
            return out

    # -- the kernel's watcher -------------------------------------------------------------------------------
    def watch(self, on_change: Callable[[dict | None, dict], None], every_s: float = POLL_S) -> bool:
        """Look at the run folders every `every_s` on the running event loop (the notebook kernel's) and call
        on_change(before, after) with two snapshots when anything changed. A new watcher replaces the old one.
        The task ends with its loop (the kernel); the runs go on. False when there is no running loop.

        One watcher per OUT and loop: a new one (from this registry or a new one for the same OUT, as when the
        notebook's cell that made the registry is run again) replaces the old."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        for k in [k for k, t in _WATCHERS.items() if t.done() or t.get_loop().is_closed()]:
            del _WATCHERS[k]  # of kernels that have ended
        key = (id(running), str(self.out.resolve()))
        old = _WATCHERS.pop(key, None)
        if old is not None:
            old.cancel()

        async def loop():
            last = None
            while True:
                try:
                    snap = self.snapshot()
                    if snap != last:
                        on_change(last, snap)
                        last = snap
                except Exception:  # a broken folder or callback must not end the watching
                    log.exception("watching %s", self.out)
                await asyncio.sleep(every_s)

        self._watch_task = _WATCHERS[key] = running.create_task(loop())
        return True

    def wait(self, name: str, on_tick: Callable[[RunInfo], None] | None = None, every_s: float = 0.3) -> RunInfo:
        """Block until run NAME is no longer live (headless use: an export, a script); on_tick sees each look."""
        while True:
            info = self.info(name)
            if on_tick is not None:
                on_tick(info)
            if not info.live:
                return info
            time.sleep(every_s)


# -- views of a snapshot ----------------------------------------------------------------------------------------
def index_of(snap: dict[str, RunInfo]) -> list[tuple]:
    """The coarse view of a snapshot (which runs exist, their state): it changes far less often than the counts,
    so the cells that read only it are not re-run on every heartbeat."""
    return [(n, i.state, i.holds_results, i.complete, i.start_error) for n, i in snap.items()]


def finished(snap: dict[str, RunInfo]) -> list[str]:
    """Runs that hold results and are not live, most recently updated first."""
    done = [i for i in snap.values() if not i.live and i.holds_results]
    return [i.name for i in sorted(done, key=lambda i: (i.updated_at or 0, i.name), reverse=True)]
