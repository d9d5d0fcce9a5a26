"""One model run's attempts: each photo sent, its answer read and journaled, or put back on the queue (a
ModelRun mixin: runner.py holds the loop that starts them)."""
from __future__ import annotations

import asyncio
import dataclasses
import heapq
import time
from dataclasses import dataclass, field

from ..protocol.answers import Answer, Failed, Fatal, Outcome, Retry
from ..protocol.transform import sent_image
from ..store.dataset import Photo
from ..store.results import Result
from .events import PhotoDone
from .transport import MAX_BODY_BYTES, TRANSPORT_ERRORS, post


@dataclass(order=True)
class _Pending:
    not_before: float
    seq: int
    photo: Photo = field(compare=False)
    result: Result = field(compare=False)
    first_t: float = field(default=0.0, compare=False)  # when the photo was first asked (its retry budget's start)
    failed: int = field(default=0, compare=False)  # its attempts that failed (not a "later")
    hint: float = field(default=0.0, compare=False)  # the longest wait the server asked of it (the budget outlasts it)


class Attempts:
    """Sending, reading, retrying and settling: the half of ModelRun that runs once per attempt."""

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
            if outcome.stated_rate:
                self.limiter.stated(outcome.stated_rate)
            self._retry_later(item, outcome, latency)
        elif isinstance(outcome, Fatal):
            self.limiter.finish("transport", latency, sent_in_flight=sent)
            res.latency_s = None
            self.fatal_hint = outcome.hint
            self.stop(f"fatal: {outcome.error}")
        else:
            self.limiter.finish("success", latency, sent_in_flight=sent)
            if isinstance(outcome, Answer) and outcome.stated_rate:
                self.limiter.stated(outcome.stated_rate)
            _keep(res, outcome)
            self._settle(res)
            if isinstance(outcome, Answer):
                return True, outcome.cost_usd
        return False, None

    def _retry_later(self, item: _Pending, outcome: Retry, latency: float | None) -> None:
        """Back on the queue (a Retry-After waited out, else a short jittered pause: the limiter's base), or
        settled as "retries exhausted". The reference gives up after max_attempts of anything. Otherwise "later"
        (429, 402 in-flight budget) is waited out for retry_budget_s (a count of attempts runs out inside a
        minute's window), and only failures (5xx, timeouts, dropped connections) count against max_attempts."""
        res = item.result
        res.retries += (outcome.tag,)
        now = time.perf_counter()
        if item.first_t == 0.0:
            item.first_t = now - (latency or 0.0)
        if outcome.signal != "rate":
            item.failed += 1
        item.hint = max(item.hint, outcome.retry_after or 0.0)
        if (outcome.retry_after or 0.0) > self.settings.max_wait_s:  # (a 503's "back in two hours" too)
            self._quota_spent(outcome.retry_after, None if outcome.signal == "rate" else outcome.tag)
            return  # (the photo stays unasked: a resume asks it)
        if len(res.retries) >= self.settings.max_attempts if self.settings.limiter == "reference" else \
                item.failed >= self.settings.max_attempts or \
                now - item.first_t >= self.settings.retry_budget_s + item.hint:
            res.error = "retries exhausted: " + ",".join(res.retries[-3:])
            self.retries_exhausted += 1
            self._settle(res)
            return
        delay = outcome.retry_after if outcome.retry_after is not None else \
            min(self.settings.max_backoff_s, self.limiter.RETRY_BASE_S * 2 ** len(res.retries)) * self.rng.random()
        heapq.heappush(self._waiting, _Pending(now + delay, next(self._seq), item.photo, res, item.first_t,
                                              item.failed, item.hint))

    def _quota_spent(self, wait_s: float, unavailable: str | None = None) -> None:
        """The server asks for a wait past max_wait_s: a spent quota (or, `unavailable` the status that said so, a
        server down for that long). This model stops, saying until when."""
        until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time.time() + wait_s))
        hours, minutes = divmod(round(wait_s / 60), 60)
        why = f"the server is unavailable until then ({unavailable})" if unavailable else \
            "a spent quota, such as a free model's daily cap"
        self.stop(f"the server asks to wait {hours} h {minutes:02d} min (until about {until}) before the next "
                  f"request: {why}", scope="model")
        self.fatal_hint = (f"resume after {until}: the same command with --resume (or wait it out: a larger "
                           f"--max-wait-s than {self.settings.max_wait_s:g} s)")

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


def _keep(res: Result, outcome: Answer | Failed) -> None:
    """What a final outcome says, into the photo's row."""
    if isinstance(outcome, Answer):
        res.pred, res.raw = outcome.pred, outcome.raw
        res.prompt_tokens, res.completion_tokens = outcome.prompt_tokens, outcome.completion_tokens
        res.reasoning_tokens, res.cost_usd = outcome.reasoning_tokens, outcome.cost_usd
        res.provider, res.error = outcome.provider, outcome.error
        res.p_hot_dog = outcome.p_hot_dog
    else:
        res.error = outcome.error
