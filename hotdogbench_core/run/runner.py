"""The async runner: one queue of photos per model, an adaptive in-flight limit, one HTTP client.

It is the only place with concurrency. It reports what happens as events and knows nothing of terminals or
notebooks. Every photo ends as a journaled result; the parquet and summary files are rebuilt from the journal.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import random
import time
from pathlib import Path
from typing import Callable

import aiohttp
import httpx

from ..errors import StorageError
from ..protocol.conditions import REFERENCE, Condition, arm_label
from ..protocol.models import known_rates
from ..protocol.request import Request
from ..protocol.transform import Sent
from ..store.dataset import Dataset
from ..store.journal import Journal
from ..store.results import Result
from ..store.redact import Redactor, public_url
from ..store.rundir import RunDir
from .attempts import Attempts, _Pending
from .budget import CostBudget
from .events import Event, LimitChanged, ModelFinished, ModelStarted, Notice
from .failfast import FailFast
from .gc_tuning import tuned_for_run
from .model_files import ModelFiles
from .settings import RunSettings
from .transport import new_client


class ModelRun(ModelFiles, Attempts):
    """One model over one dataset, under one condition (None: the reference): live counters for a UI to poll,
    and the loop that does the work. `arm` names it in events and budgets: the model id, `model@condition`
    under another condition."""

    GATE_RECHECK_S = 0.1  # while the pacer holds a send back, the gate is looked at again at least this often
    SAVE_RETRY_S = 3.0  # after a journal write failed and the requests in flight came back: how long to retry it

    def __init__(self, model: str, dataset: Dataset, settings: RunSettings, run_dir: Path, *,
                 resume: bool = False, on_event: Callable[[Event], None] | None = None,
                 budget: CostBudget | None = None, price: dict[str, float] | None = None, key=None,
                 condition: Condition | None = None, known_rate: float | None = None):
        self.model, self.dataset, self.settings = model, dataset, settings
        self.experiment = condition is not None  # a run with conditions (this one may be the reference)
        self.condition = None if condition is None or condition.is_reference else condition
        self.condition_name = self.condition.name if self.condition is not None else REFERENCE
        self.arm = arm_label(model, self.condition_name)
        self._sent: dict[int, Sent] = {}  # photo id -> the bytes sent under the condition (a few, for repeats)
        self.rundir = run_dir if isinstance(run_dir, RunDir) else RunDir.at(run_dir)
        self.run_dir = self.rundir.path
        self.on_event = on_event
        self.request: Request = settings.request(model, self.condition)
        self.url = settings.url_for(self.request.path)
        self.redactor = Redactor.for_settings(settings)  # the key and URL credentials out of every stored text
        # key: a limit.KeyCoordinator the models of one run on one key share, or the limit.KeyBoard of the
        # processes on the key (adaptive policy only); known_rate: the model's slice of a cap known before the
        # first send (the session's protocol.models.known_rates; by default the model's own, as if alone)
        if known_rate is None:
            known_rate = known_rates([model], together=False).get(model)
        self.limiter = settings.limiter_for(key, known_rate)
        self.limiter.subscribe(lambda c: self._emit(LimitChanged(self.arm, c)))
        self.retries_exhausted = 0  # photos that ended as "retries exhausted" in this session
        self.rng = random.Random(settings.seed)
        self.results: dict[tuple[int, int], Result] = {}  # (photo id, repeat) -> settled result
        self.repeats = settings.repeats
        self.total = len(dataset) * self.repeats
        self.done = 0
        self.budget = budget
        self.price = price  # USD per token / image / request, for answers that come without a cost
        self.stop_reason: str | None = None
        self.stop_scope = "run"  # "run": the others stop too (a bad key, a budget); "model": this model only
        self.fail_fast = FailFast(public_url(self.url), model)  # its hint names the URL: never a query token
        self.fatal_hint = ""
        self._grace_s: float | None = None  # after a stop, how long requests in flight may still take
        self._wake = asyncio.Event()  # an attempt ended, or a stop: the scheduler looks again
        self._deadlines: dict[asyncio.Task, float] = {}  # attempts out: when request_timeout is up for each
        self._timed_out: set[asyncio.Task] = set()  # attempts the watchdog cancelled
        self.started_at: float | None = None
        self.wall_s = 0.0
        self.previous_wall_s = 0.0
        self._journal_path = self.rundir.journal(model, self.condition_name)
        self._notices: list[str] = []
        self._prepare(resume)

    def _emit(self, event: Event) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception:  # a broken display must not lose a paid-for answer
            pass

    # -- public --------------------------------------------------------------------------------------------
    def stop(self, reason: str, grace_s: float | None = None, scope: str = "run") -> None:
        """Send nothing more. Requests in flight finish and are saved; with grace_s, those still out after that
        long are abandoned (not journaled, so a resume asks them again). scope "model": only this model stops."""
        if self.stop_reason is None:
            self.stop_reason, self.stop_scope = reason, scope
        if grace_s is not None:
            self._grace_s = grace_s if self._grace_s is None else min(self._grace_s, grace_s)
        self._wake.set()

    @property
    def in_flight(self) -> int:
        return self.limiter.in_flight

    def new_client(self) -> aiohttp.ClientSession:
        return new_client(self.url, self.settings.max_concurrency)

    async def run(self, client: aiohttp.ClientSession | httpx.AsyncClient | None = None) -> dict:
        """Ask every photo still to ask. `client`: an aiohttp session or an httpx.AsyncClient (any transport);
        by default the run opens its own aiohttp session and closes it at the end."""
        self._emit(ModelStarted(self.arm, self.total, self.done))
        # an OSError here (read-only, no such folder) comes before anything is sent
        self._journal = Journal(self._journal_path, redact=self.redactor.bytes if self.redactor else None,
                                on_failure=self._journal_failed)
        if self._journal.torn is not None:
            self._notices.append(f"{self._journal_path}: its last line was unfinished (a process stopped mid-write): "
                                 f"its {self._journal.torn.nbytes} bytes were cut off and saved as "
                                 f"{self._journal.torn.saved_to.name}; that photo is asked again")
        for text in self._notices:
            self._emit(Notice(self.arm, text))
        own_client = client is None
        if own_client:
            client = self.new_client()
        try:
            try:
                if self._journal.size == 0:
                    self._journal.header(**self._header())
                self._journal.start()
            except OSError:
                pass  # journal.error holds it; nothing was sent
            else:
                self.started_at = time.perf_counter()
                self.limiter.restart_clock()
                with tuned_for_run():  # the cycle collector cost a fifth of the runner's time at speed
                    await self._schedule(client)
                if self._journal.unsaved:  # the disk may have room again: answers in memory are paid for
                    await self._journal.retry(self.SAVE_RETRY_S)
        finally:
            self.wall_s = time.perf_counter() - (self.started_at or time.perf_counter())
            self._journal.session(wall_s=round(self.wall_s, 3), stop_reason=self.stop_reason,
                                  settings=self.settings.public(), concurrency=self.limiter.stats())
            self._journal.close()
            if own_client:
                await client.close()
        if self._journal.error is not None:
            error = self._journal.error
            try:
                self.write_outputs()  # what the journal holds, if the disk takes it
            except OSError:
                pass
            raise StorageError(self._journal_path, error.strerror or str(error), unsaved=self._journal.unsaved,
                               saved=self.done, run_dir=self.run_dir)
        try:
            summary = self.write_outputs()
        except OSError as e:
            raise StorageError(e.filename or self.run_dir, e.strerror or str(e), saved=self.done, run_dir=self.run_dir,
                               detail="; the journal is whole, so a resume rebuilds the files without asking "
                                      "anything again") from None
        self._emit(ModelFinished(self.arm, summary))
        return summary

    def _journal_failed(self, error: OSError) -> None:
        """A journal write failed: send nothing more (nothing more would be saved); what is in flight comes back
        and is kept in memory while the journal tries again."""
        self.stop(f"cannot save answers to {self._journal_path}: {error.strerror or error}")
        self.fatal_hint = "free space on that disk (or make it writable), then resume the run"

    # -- the loop ------------------------------------------------------------------------------------------
    async def _schedule(self, client) -> None:
        fresh = self._work()
        tasks: set[asyncio.Task] = set()
        self._waiting: list[_Pending] = []  # retries, by the time they may be sent
        self._seq = itertools.count()
        self._active = 0  # attempts started and not yet finished (the task set lags behind by a callback)
        watchdog = asyncio.create_task(self._watch_deadlines())
        try:
            while self.stop_reason is None:
                now = time.perf_counter()
                item = self._next_due(fresh, now)
                if item is None:
                    if not self._waiting and self._active == 0:
                        break  # every photo settled
                    await self._sleep_until_due(now)
                    continue
                reserved = await self._reserve(item)  # before taking a slot: a budget wait must not hold one
                if reserved is None:
                    continue
                sent_in_flight = await self._acquire_slot()
                if sent_in_flight is None:
                    if self.budget is not None:
                        self.budget.settle(self.arm, reserved, None)
                    break
                item.result.in_flight_at_send, item.result.limit_at_send = sent_in_flight, self.limiter.limit
                self._active += 1
                task = asyncio.create_task(self._attempt(client, item, reserved))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            await self._drain(tasks)
        finally:
            watchdog.cancel()
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

    def _next_due(self, fresh, now: float) -> _Pending | None:
        """A retry whose time has come, else the next fresh photo; None when nothing is due now."""
        if self._waiting and self._waiting[0].not_before <= now:
            return heapq.heappop(self._waiting)
        for photo, repeat in fresh:  # one photo (an exhausted stream yields none)
            return _Pending(0.0, next(self._seq), photo, self._new_result(photo, repeat))
        return None

    async def _sleep_until_due(self, now: float) -> None:
        """Until an attempt ends, a stop, or the first retry falls due."""
        self._wake.clear()
        timeout = max(0.0, self._waiting[0].not_before - now) if self._waiting else None
        try:
            await asyncio.wait_for(self._wake.wait(), timeout)
        except (asyncio.TimeoutError, TimeoutError):
            pass

    async def _reserve(self, item: _Pending) -> float | None:
        """The budget reserved for this send (0 without a budget); None if it must wait or the run stops (the
        item goes back on the queue either way)."""
        if self.budget is None:
            return 0.0
        decision, reserved = self.budget.reserve(self.arm)
        if decision == "go":
            return reserved
        heapq.heappush(self._waiting, item)
        if decision == "stop":
            self.stop(f"budget: the cap of ${self.budget.max_cost_usd:g} would be passed "
                      f"(spent ${self.budget.spent_usd:.4f})")
            self.fatal_hint = "raise the budget, then resume the run"
        else:  # a price probe is out: ask again once it is back
            self._wake.clear()
            await self._wake.wait()
        return None

    async def _acquire_slot(self) -> int | None:
        """A slot under the limit (returns the number in flight with it), or None if the run stops meanwhile.

        Waits on the run's own wake-up (set when an attempt ends and on a stop) or a timer for the pacer, not on
        the limiter's async gate: no task per wait, so a full window costs little per photo."""
        limiter = self.limiter
        while self.stop_reason is None:
            wait = limiter.wait_time()
            if wait <= 0:
                return limiter.start()
            if self.settings.max_wait_s < wait < math.inf:  # the key paused on a quota another model was refused
                self._quota_spent(wait)  # by (OpenRouter's free-model limits are the key's): stopped as if refused
                return None
            self._wake.clear()
            # pacing: look again when the pacer allows, or sooner (its pace may change meanwhile)
            timer = None if math.isinf(wait) else \
                asyncio.get_running_loop().call_later(min(wait, self.GATE_RECHECK_S), self._wake.set)
            await self._wake.wait()
            if timer is not None:
                timer.cancel()
        return None

    async def _drain(self, tasks: set[asyncio.Task]) -> None:
        """Let requests in flight finish (they are paid for), or give them the grace a stop allowed."""
        while self._active:
            if self._grace_s is not None:
                await asyncio.wait(set(tasks), timeout=self._grace_s)
                return
            self._wake.clear()
            await self._wake.wait()

    def _work(self):
        """(photo, repeat) pairs still to ask, streamed from the file."""
        ids = None if self._todo is None else {i for i, _ in self._todo}
        for photo in self.dataset.stream(ids):
            for k in range(self.repeats):
                if self._todo is None or (photo.id, k) in self._todo:
                    yield photo, k

