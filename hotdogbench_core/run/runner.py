"""The async runner: one queue of photos per model, an adaptive in-flight limit, one HTTP client.

It is the only place with concurrency. It reports what happens as events and knows nothing of terminals or
notebooks. Every photo ends as a journaled result; the parquet and summary files are rebuilt from the journal.
"""
from __future__ import annotations

import asyncio
import dataclasses
import heapq
import itertools
import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import aiohttp
import httpx

from ..protocol.answers import Answer, Failed, Fatal, Outcome, Retry
from ..protocol.conditions import REFERENCE, Condition, arm_label
from ..protocol.transform import Sent, sent_image
from .budget import CostBudget
from ..store.dataset import Dataset, Photo
from .gc_tuning import tuned_for_run
from ..errors import StorageError
from ..store.journal import Journal, read_journal
from ..store.redact import Redactor, public_url
from ..protocol.request import Request
from ..stats.conditions import condition_summary
from ..stats.summary import summarize, summarize_statistics
from ..store.conditioned import CONDITION_SCHEMA, ConditionResult
from ..store.results import Result, write_results_parquet
from ..store.rundir import RunDir
from .events import Event, LimitChanged, ModelFinished, ModelStarted, Notice, PhotoDone
from .failfast import FailFast
from .settings import LIMITERS, RunError, RunSettings
from .transport import MAX_BODY_BYTES, TRANSPORT_ERRORS, new_client, post

def _difference(key: str, have, want) -> str:
    """What differs, named: for the request settings the keys that changed (e.g. "logprobs: the run has none,
    now true"), else the two values."""
    if isinstance(have, dict) and isinstance(want, dict):
        changed = [k for k in dict.fromkeys([*have, *want]) if have.get(k, _ABSENT) != want.get(k, _ABSENT)]

        def show(d, k):
            return "none" if k not in d else json.dumps(d[k], default=str)[:60]
        return "; ".join(f"{k}: the run has {show(have, k)}, now {show(want, k)}" for k in changed)
    return f"{key} {str(have)[:80]} != {str(want)[:80]}"


_ABSENT = object()


@dataclass(order=True)
class _Pending:
    not_before: float
    seq: int
    photo: Photo = field(compare=False)
    result: Result = field(compare=False)
    first_t: float = field(default=0.0, compare=False)  # when the photo was first asked (its retry budget's start)
    failed: int = field(default=0, compare=False)  # its attempts that failed (not a "later")
    hint: float = field(default=0.0, compare=False)  # the longest wait the server asked of it (the budget outlasts it)


class ModelRun:
    """One model over one dataset, under one condition (None: the reference): live counters for a UI to poll,
    and the loop that does the work. `arm` names it in events and budgets: the model id, `model@condition`
    under another condition."""

    GATE_RECHECK_S = 0.1  # while the pacer holds a send back, the gate is looked at again at least this often
    SAVE_RETRY_S = 3.0  # after a journal write failed and the requests in flight came back: how long to retry it

    def __init__(self, model: str, dataset: Dataset, settings: RunSettings, run_dir: Path, *,
                 resume: bool = False, on_event: Callable[[Event], None] | None = None,
                 budget: CostBudget | None = None, price: dict[str, float] | None = None, key=None,
                 condition: Condition | None = None):
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
        # key: a limit.KeyCoordinator the models of one run on one key share (adaptive policy only)
        self.limiter = LIMITERS[settings.limiter](settings.start_concurrency, settings.max_concurrency) \
            if key is None or settings.limiter == "reference" else \
            LIMITERS[settings.limiter](settings.start_concurrency, settings.max_concurrency, key=key)
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

    # -- journal and resume -------------------------------------------------------------------------------
    def _header(self) -> dict:
        cond = {"condition": self.condition.header()} if self.condition is not None else {}
        return {"model": self.model, **cond, "dataset_sha256": self.dataset.sha256, "dataset_rows": len(self.dataset),
                "request": self.request.settings(), "repeats": self.repeats}

    def _prepare(self, resume: bool) -> None:
        state = read_journal(self._journal_path)
        if state.skipped:
            self._notices.append(f"{self._journal_path}: skipped line(s) {', '.join(map(str, state.skipped[:10]))} "
                                 f"of a kind this version does not write (they hold no result)")
        if state.header is None and not state.results:
            self._todo = None  # everything
            return
        if not resume:
            raise RunError(f"{self.run_dir} already holds results for {self.arm}: "
                           f"resume that run, or choose another run name")
        want, have = self._header(), state.header or {}
        if have.get("condition") != want.get("condition"):
            raise RunError(self._changed_condition(have.get("condition")))
        for key, what in (("dataset_sha256", "dataset"), ("request", "request settings"), ("repeats", "repeats")):
            if have.get(key) != want[key]:
                raise RunError(f"cannot resume {self.arm} in {self.run_dir}: the {what} differ from the run's "
                               f"({_difference(key, have.get(key), want[key])}); choose another run name")
        keys = {(p.id, k) for p in self.dataset.photos for k in range(self.repeats)}
        self.results = {key: r for key, r in state.results.items() if key in keys}
        self.done = len(self.results)
        self.previous_wall_s = sum(s.get("wall_s") or 0.0 for s in state.sessions)
        self._todo = keys - set(self.results)

    def _changed_condition(self, had) -> str:
        """Why a resume is refused when the journal's condition is not the one asked for now."""
        spec = had.get("spec") if isinstance(had, dict) else None
        try:
            was = Condition(self.condition_name, **spec).text() if isinstance(spec, dict) else None
        except TypeError:
            was = None
        now = self.condition.text() if self.condition is not None else ""
        return (f"cannot resume {self.model} under condition {self.condition_name} in {self.run_dir}: the "
                f"condition {self.condition_name} was {was if was is not None else json.dumps(had)[:80]!r} in this "
                f"run, now {now!r}; give the new spec another condition name, or choose another run name")

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

    def _new_result(self, photo: Photo, repeat: int, **values) -> Result:
        if self.condition is None:
            return Result(id=photo.id, open_images_id=photo.open_images_id, category=photo.category,
                          is_hot_dog=photo.is_hot_dog, scored=photo.scored, repeat=repeat, **values)
        return ConditionResult(id=photo.id, open_images_id=photo.open_images_id, category=photo.category,
                               is_hot_dog=photo.is_hot_dog, scored=photo.scored, repeat=repeat,
                               condition=self.condition_name, **values)

    async def _condition_photo(self, item: _Pending) -> str | None:
        """Under a condition: the photo of `item` replaced by the bytes sent (transformed once per photo, in a
        worker thread: Pillow works outside the GIL), and the row told their digest and size. The problem, when
        the photo cannot be re-encoded."""
        res = item.result
        if self.condition is None or res.image_sha256 is not None:
            return None
        sent = self._sent.get(item.photo.id)
        if sent is None:
            c = self.condition
            try:
                sent = await asyncio.to_thread(sent_image, item.photo.image, c.px, c.q)
            except ValueError as e:
                return f"condition {self.condition_name}: {e}"
            if len(self._sent) >= 64:
                self._sent.clear()
            self._sent[item.photo.id] = sent
        item.photo = dataclasses.replace(item.photo, image=sent.image)
        res.image_sha256, res.image_width, res.image_height = sent.sha256, sent.width, sent.height
        res.image_bytes = len(sent.image)
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

    async def _watch_deadlines(self) -> None:
        """Cancel the attempts still out after request_timeout. One watchdog instead of a timer per request (a
        timer costs about as much as classifying an answer); it looks every request_timeout / 4, at most 1 s, so
        a deadline fires at most that late."""
        period = min(1.0, self.settings.request_timeout / 4)
        while True:
            await asyncio.sleep(period)
            now = time.perf_counter()
            for task, deadline in list(self._deadlines.items()):
                if now >= deadline and task not in self._timed_out:
                    self._timed_out.add(task)
                    task.cancel()

    async def _send(self, client, photo: Photo) -> tuple[Outcome, float | None]:
        """POST one photo; the whole exchange (connect, send, every byte of the answer) within request_timeout."""
        body = self.request.encode(photo.image)
        headers = {"Authorization": f"Bearer {self.settings.api_key}", "Content-Type": "application/json"}
        task = asyncio.current_task()
        t0 = time.perf_counter()
        self._deadlines[task] = t0 + self.settings.request_timeout
        try:
            status, resp_headers, data = await post(client, self.url, body, headers, self.settings.body_timeout)
        except TRANSPORT_ERRORS as e:
            # dropped connection, stalled answer, stale keep-alive, refused connection: ask again
            return Retry(type(e).__name__, "transport", 0.0), None
        except asyncio.CancelledError:
            if task not in self._timed_out:
                raise  # the run is stopping
            self._timed_out.discard(task)
            if task.uncancel() > 0:
                raise  # cancelled for another reason as well: that wins
            return Retry("TimeoutError", "transport", 0.0), None  # stalled past the deadline: ask again
        finally:
            del self._deadlines[task]
        if data is None:
            return Failed(f"{status}: response body over {MAX_BODY_BYTES} bytes"), None
        latency = time.perf_counter() - t0
        # secrets out before the body is read: a server that echoes the key must not get it journaled, and a cut
        # at a length limit must not keep half of it
        return self.request.classify(status, resp_headers, self.redactor.bytes(data), time.time()), latency

    async def _attempt(self, client, item: _Pending, reserved: float = 0.0) -> None:
        try:
            answered, cost = await self._attempt_once(client, item)
            if self.budget is not None:
                self.budget.settle(self.arm, reserved, cost, answered)
                if self.budget.unenforceable(self.arm):
                    self.stop(f"budget: the answers of {self.model} carry no cost, so the budget of "
                              f"${self.budget.max_cost_usd:g} cannot be kept")
                    self.fatal_hint = "give a price table for this server, or run without a budget"
        finally:
            self._active -= 1
            self._wake.set()

    async def _attempt_once(self, client, item: _Pending) -> tuple[bool, float | None]:
        """One request for one photo; returns (answered?, what it cost, where the provider said or a price
        table tells)."""
        res = item.result
        sent = res.in_flight_at_send  # set by the scheduler when the slot was taken
        if self._journal.error is not None:  # started in the loop iteration the journal failed in: not sent
            self.limiter.finish("success", None, sent_in_flight=sent)
            return False, None
        problem = await self._condition_photo(item) if self.condition is not None else None
        if problem is not None:  # this photo cannot be sent under the condition: said in its row, not sent
            self.limiter.finish("success", None, sent_in_flight=sent)
            res.error = problem
            self._settle(res)
            return False, None
        try:
            outcome, latency = await self._send(client, item.photo)
        except Exception as e:  # a bug must settle the photo, not hang the run
            outcome, latency = Failed(f"internal error: {type(e).__name__}: {str(e)[:200]}"), None
        if latency is not None:
            res.latency_s = latency
        outcome = self._priced(outcome)
        give_up = self.fail_fast.see(outcome)
        if give_up is not None:
            self.fatal_hint = give_up[1]
            self.stop(give_up[0], scope="model")
        if isinstance(outcome, Retry):
            self.limiter.finish(outcome.signal, latency, outcome.tag, outcome.retry_after, sent)
            res.retries += (outcome.tag,)
            now = time.perf_counter()
            if item.first_t == 0.0:
                item.first_t = now - (latency or 0.0)
            # The reference gives up after max_attempts of anything. Otherwise "later" (429, 402 in-flight budget)
            # is waited out for retry_budget_s (a count of attempts runs out inside a minute's window), and only
            # failures (5xx, timeouts, dropped connections) count against max_attempts.
            if outcome.signal != "rate":
                item.failed += 1
            item.hint = max(item.hint, outcome.retry_after or 0.0)
            if len(res.retries) >= self.settings.max_attempts if self.settings.limiter == "reference" else \
                    item.failed >= self.settings.max_attempts or \
                    now - item.first_t >= self.settings.retry_budget_s + item.hint:
                res.error = "retries exhausted: " + ",".join(res.retries[-3:])
                self.retries_exhausted += 1
                self._settle(res)
            else:  # back on the queue; honour Retry-After, else a short jittered pause (the limiter's base)
                delay = outcome.retry_after if outcome.retry_after is not None else \
                    min(self.settings.max_backoff_s, self.limiter.RETRY_BASE_S * 2 ** len(res.retries)) \
                    * self.rng.random()
                heapq.heappush(self._waiting, _Pending(now + delay, next(self._seq), item.photo, res, item.first_t,
                                                      item.failed, item.hint))
        elif isinstance(outcome, Fatal):
            self.limiter.finish("transport", latency, sent_in_flight=sent)
            res.latency_s = None
            self.fatal_hint = outcome.hint
            self.stop(f"fatal: {outcome.error}")
        else:
            self.limiter.finish("success", latency, sent_in_flight=sent)
            if isinstance(outcome, Answer):
                res.pred, res.raw = outcome.pred, outcome.raw
                res.prompt_tokens, res.completion_tokens = outcome.prompt_tokens, outcome.completion_tokens
                res.reasoning_tokens, res.cost_usd = outcome.reasoning_tokens, outcome.cost_usd
                res.provider, res.error = outcome.provider, outcome.error
                res.p_hot_dog = outcome.p_hot_dog
            else:
                res.error = outcome.error
            self._settle(res)
            if isinstance(outcome, Answer):
                return True, outcome.cost_usd
        return False, None

    def _priced(self, outcome: Outcome) -> Outcome:
        """An answer without a cost, priced from the price table (USD per token) when there is one."""
        if not isinstance(outcome, Answer) or outcome.cost_usd is not None or not self.price:
            return outcome
        if outcome.prompt_tokens is None and outcome.completion_tokens is None:
            return outcome
        p = self.price
        cost = ((outcome.prompt_tokens or 0) * p.get("prompt", 0.0) + (outcome.completion_tokens or 0)
                * p.get("completion", 0.0) + p.get("image", 0.0) + p.get("request", 0.0))
        return dataclasses.replace(outcome, cost_usd=cost)

    def _settle(self, res: Result) -> None:
        # durable first: it counts as done once the journal has handed it to the OS (with the other results of
        # this loop iteration, at its end: one write for them all)
        self.redactor.result(res)
        self._journal.result(res, then=lambda: self._settled(res))

    def _settled(self, res: Result) -> None:
        self.results[res.key] = res
        self.done += 1
        self._emit(PhotoDone(self.arm, res, self.done, self.total))

    # -- outputs -------------------------------------------------------------------------------------------
    def ordered_results(self) -> list[Result]:
        """Every photo in id order; photos a stopped run never settled carry an error saying so."""
        out = []
        for p in self.dataset.photos:
            for k in range(self.repeats):
                r = self.results.get((p.id, k))
                if r is None:
                    r = self._new_result(p, k, error=f"not run: {self.stop_reason}")
                out.append(r)
        return out

    def write_outputs(self) -> dict:
        ordered = self.ordered_results()
        write_results_parquet(ordered, self.rundir.results(self.model, self.condition_name),
                              CONDITION_SCHEMA if self.condition is not None else None)
        wall = self.previous_wall_s + round(self.wall_s, 3)  # the sum of what the journal records
        # The reference keys over repeat 0 (comparable with a one-repeat run); photos_per_s counts every request.
        summary = summarize(self.model, [r for r in ordered if r.repeat == 0], wall, asked=len(ordered))
        if self.condition is not None:  # (model, condition) names the entry; the reference's has no condition key
            summary = {"model": summary.pop("model"), "condition": self.condition_name,
                       "condition_spec": self.condition.spec(), **summary}
        summary["concurrency"] = {"start": self.settings.start_concurrency, "cap": self.settings.max_concurrency,
                                  **self.limiter.stats(), "retries_exhausted": self.retries_exhausted}
        if self.stop_reason:
            summary["stopped"] = self.stop_reason
            if self.fatal_hint:
                summary["hint"] = self.fatal_hint
        summary.update(summarize_statistics(ordered, self.repeats, self.request.probability))
        if self.experiment:
            summary.update(condition_summary([r for r in ordered if r.repeat == 0 and r.scored],
                                             sent=self.condition is not None))
        return summary
