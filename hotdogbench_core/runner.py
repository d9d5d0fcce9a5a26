"""The async runner: one queue of photos per model, an adaptive in-flight limit, one HTTP client.

It is the only place with concurrency. It reports what happens as events and knows nothing of terminals or
notebooks. Every photo ends as a journaled result; the parquet and summary files are rebuilt from the journal.
"""
from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import aiohttp
import httpx
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from .answers import Answer, Failed, Fatal, Outcome, Retry, classify
from .dataset import Dataset, Photo
from .journal import Journal, journal_path, read_journal
from .adaptive_limiter import AdaptiveLimiter
from .limiter import AIMDLimiter, LimitChange
from .models import encode_body, endpoint_path, request_settings, uses_decisions
from .results import Result, model_file_stem, summarize, write_results_parquet

DEFAULT_BASE_URL = "https://openrouter.ai/api"
# In-flight limit policies: "adaptive" (AdaptiveLimiter, the default) or "reference" (the original script's AIMD).
LIMITERS = {"adaptive": AdaptiveLimiter, "reference": AIMDLimiter}
LIMITER_POLICIES = tuple(LIMITERS)
MAX_BODY_BYTES = 4 << 20  # a response larger than this is no verdict: refuse it instead of holding it


class RunError(RuntimeError):
    """A run cannot start or go on; the message says why and what to do."""


@dataclass
class RunSettings:
    api_key: str = field(repr=False)  # never printed, logged or written
    base_url: str = DEFAULT_BASE_URL
    start_concurrency: int = 8
    max_concurrency: int = 256
    request_timeout: float = 120.0
    max_attempts: int = 8
    max_backoff_s: float = 20.0
    repeats: int = 1  # ask each photo this many times (self-consistency)
    seed: int | None = None  # for the back-off jitter
    limiter: str = "adaptive"  # in-flight limit policy: "adaptive" or "reference" (see LIMITERS)

    def __post_init__(self):
        if self.start_concurrency < 1:
            raise ValueError(f"--start-concurrency must be >= 1, got {self.start_concurrency}")
        if self.max_concurrency < self.start_concurrency:
            raise ValueError(f"--max-concurrency ({self.max_concurrency}) must be >= --start-concurrency "
                             f"({self.start_concurrency})")
        if self.repeats < 1:
            raise ValueError(f"--repeats must be >= 1, got {self.repeats}")
        if self.request_timeout <= 0:
            raise ValueError(f"--request-timeout must be > 0, got {self.request_timeout}")
        if self.limiter not in LIMITERS:
            raise ValueError(f"--limiter must be one of {', '.join(LIMITERS)}, got {self.limiter!r}")
        self.base_url = self.base_url.rstrip("/")

    def public(self) -> dict:
        """The settings as they may be written down: everything but the key."""
        return {"base_url": self.base_url, "start_concurrency": self.start_concurrency,
                "max_concurrency": self.max_concurrency, "request_timeout": self.request_timeout,
                "max_attempts": self.max_attempts, "repeats": self.repeats, "limiter": self.limiter}


# -- events ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelStarted:
    model: str
    total: int
    already_done: int


@dataclass(frozen=True)
class PhotoDone:
    model: str
    result: Result
    done: int
    total: int


@dataclass(frozen=True)
class LimitChanged:
    model: str
    change: LimitChange


@dataclass(frozen=True)
class ModelFinished:
    model: str
    summary: dict


Event = ModelStarted | PhotoDone | LimitChanged | ModelFinished


@dataclass(order=True)
class _Pending:
    not_before: float
    seq: int
    photo: Photo = field(compare=False)
    result: Result = field(compare=False)


class ModelRun:
    """One model over one dataset: live counters for a UI to poll, and the loop that does the work."""

    def __init__(self, model: str, dataset: Dataset, settings: RunSettings, run_dir: Path, *,
                 resume: bool = False, on_event: Callable[[Event], None] | None = None):
        self.model, self.dataset, self.settings = model, dataset, settings
        self.run_dir = Path(run_dir)
        self.on_event = on_event
        self.decisions = uses_decisions(model)
        self.url = settings.base_url + endpoint_path(model)
        self.limiter = LIMITERS[settings.limiter](settings.start_concurrency, settings.max_concurrency)
        self.limiter.subscribe(lambda c: self._emit(LimitChanged(model, c)))
        self.rng = random.Random(settings.seed)
        self.results: dict[tuple[int, int], Result] = {}  # (photo id, repeat) -> settled result
        self.repeats = settings.repeats
        self.total = len(dataset) * self.repeats
        self.done = 0
        self.stop_reason: str | None = None
        self.fatal_hint = ""
        self.started_at: float | None = None
        self.wall_s = 0.0
        self.previous_wall_s = 0.0
        self._journal_path = journal_path(self.run_dir, model)
        self._prepare(resume)

    # -- journal and resume -------------------------------------------------------------------------------
    def _header(self) -> dict:
        return {"model": self.model, "dataset_sha256": self.dataset.sha256, "dataset_rows": len(self.dataset),
                "request": request_settings(self.model), "repeats": self.repeats}

    def _prepare(self, resume: bool) -> None:
        state = read_journal(self._journal_path)
        if state.header is None and not state.results:
            self._todo = None  # everything
            return
        if not resume:
            raise RunError(f"{self.run_dir} already holds results for {self.model}: "
                           f"add --resume to finish that run, or choose another --run")
        want, have = self._header(), state.header or {}
        for key, what in (("dataset_sha256", "dataset"), ("request", "request settings"), ("repeats", "repeats")):
            if have.get(key) != want[key]:
                raise RunError(f"cannot resume {self.model} in {self.run_dir}: the {what} differ from the run's "
                               f"({key} {str(have.get(key))[:80]} != {str(want[key])[:80]}); use another --run")
        keys = {(p.id, k) for p in self.dataset.photos for k in range(self.repeats)}
        self.results = {key: r for key, r in state.results.items() if key in keys}
        self.done = len(self.results)
        self.previous_wall_s = sum(s.get("wall_s") or 0.0 for s in state.sessions)
        self._todo = keys - set(self.results)

    def _emit(self, event: Event) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception:  # a broken display must not lose a paid-for answer
            pass

    # -- public --------------------------------------------------------------------------------------------
    def stop(self, reason: str) -> None:
        """Send nothing more; requests in flight finish and are saved."""
        if self.stop_reason is None:
            self.stop_reason = reason

    @property
    def in_flight(self) -> int:
        return self.limiter.in_flight

    def new_client(self) -> aiohttp.ClientSession:
        """The default HTTP client: an aiohttp session, one connection per request in flight.

        httpx's own connection pool slows sharply with hundreds of connections, and even its aiohttp transport
        costs about half of the client's time in httpx's request and response objects; a plain aiohttp session
        keeps the client far from being the bottleneck. TLS settings come from httpx (certifi); an HTTP(S)_PROXY
        from the environment is honoured as httpx does (looked up once: aiohttp's trust_env would look it up in a
        thread on every request); cookies are ignored. The per-request deadline is applied in _send.
        """
        cap = self.settings.max_concurrency
        proxy, proxy_auth = None, None
        with contextlib.suppress(LookupError):
            proxy, proxy_auth = get_env_proxy_for_url(URL(self.url))
        connector = aiohttp.TCPConnector(limit=cap, limit_per_host=0, ssl=httpx.create_ssl_context())
        return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None),
                                     cookie_jar=aiohttp.DummyCookieJar(), proxy=proxy, proxy_auth=proxy_auth)

    async def run(self, client: aiohttp.ClientSession | httpx.AsyncClient | None = None) -> dict:
        """Ask every photo still to ask. `client`: an aiohttp session or an httpx.AsyncClient (any transport);
        by default the run opens its own aiohttp session and closes it at the end."""
        self._emit(ModelStarted(self.model, self.total, self.done))
        own_client = client is None
        if own_client:
            client = self.new_client()
        self._journal = Journal(self._journal_path)
        try:
            if self._journal_path.stat().st_size == 0:
                self._journal.header(**self._header())
            self.started_at = time.perf_counter()
            self.limiter.restart_clock()
            await self._schedule(client)
        finally:
            self.wall_s = time.perf_counter() - (self.started_at or time.perf_counter())
            self._journal.session(wall_s=round(self.wall_s, 3), stop_reason=self.stop_reason,
                                  settings=self.settings.public(), concurrency=self.limiter.stats())
            self._journal.close()
            if own_client:
                await client.close()
        summary = self.write_outputs()
        self._emit(ModelFinished(self.model, summary))
        return summary

    # -- the loop ------------------------------------------------------------------------------------------
    async def _schedule(self, client) -> None:
        fresh = self._work()
        exhausted = False
        waiting: list[_Pending] = []  # retries, by the time they may be sent
        tasks: set[asyncio.Task] = set()
        seq = itertools.count()
        self._wake = asyncio.Event()
        self._waiting, self._seq = waiting, seq
        self._active = 0  # attempts started and not yet finished (the task set lags behind by a callback)
        try:
            while self.stop_reason is None:
                now = time.perf_counter()
                item = None
                if waiting and waiting[0].not_before <= now:
                    item = heapq.heappop(waiting)
                elif not exhausted:
                    work = next(fresh, None)
                    if work is None:
                        exhausted = True
                        continue
                    photo, repeat = work
                    res = Result(id=photo.id, open_images_id=photo.open_images_id, category=photo.category,
                                 is_hot_dog=photo.is_hot_dog, scored=photo.scored, repeat=repeat)
                    item = _Pending(0.0, next(seq), photo, res)
                if item is None:
                    if not waiting and self._active == 0:
                        break  # every photo settled
                    self._wake.clear()
                    timeout = max(0.0, waiting[0].not_before - now) if waiting else None
                    try:
                        await asyncio.wait_for(self._wake.wait(), timeout)
                    except (asyncio.TimeoutError, TimeoutError):
                        pass
                    continue
                sent_in_flight = await self.limiter.acquire()
                if self.stop_reason is not None:
                    await self.limiter.release("transport")
                    break
                item.result.in_flight_at_send, item.result.limit_at_send = sent_in_flight, self.limiter.limit
                self._active += 1
                task = asyncio.create_task(self._attempt(client, item))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if tasks:
                await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

    def _work(self):
        """(photo, repeat) pairs still to ask, streamed from the file."""
        ids = None if self._todo is None else {i for i, _ in self._todo}
        for photo in self.dataset.stream(ids):
            for k in range(self.repeats):
                if self._todo is None or (photo.id, k) in self._todo:
                    yield photo, k

    async def _send(self, client, photo: Photo) -> tuple[Outcome, float | None]:
        """POST one photo; the whole exchange (connect, send, every byte of the answer) within request_timeout."""
        body = encode_body(self.model, photo.image)
        headers = {"Authorization": f"Bearer {self.settings.api_key}", "Content-Type": "application/json"}
        t0 = time.perf_counter()
        try:
            async with asyncio.timeout(self.settings.request_timeout):
                if isinstance(client, httpx.AsyncClient):
                    status, resp_headers, data = await self._post_httpx(client, body, headers)
                else:
                    status, resp_headers, data = await self._post_aiohttp(client, body, headers)
        except (aiohttp.ClientError, httpx.HTTPError, OSError, TimeoutError) as e:
            # dropped connection, stalled answer, stale keep-alive, refused connection: ask again
            return Retry(type(e).__name__, "transport", 0.0), None
        if data is None:
            return Failed(f"{status}: response body over {MAX_BODY_BYTES} bytes"), None
        latency = time.perf_counter() - t0
        return classify(status, resp_headers, data, decisions=self.decisions), latency

    async def _post_aiohttp(self, session: aiohttp.ClientSession, body: bytes, headers: dict):
        """(status, headers, body or None if over MAX_BODY_BYTES); headers answer .get() case-insensitively."""
        async with session.post(self.url, data=body, headers=headers) as response:
            chunks, size = [], 0
            async for chunk in response.content.iter_any():
                size += len(chunk)
                if size > MAX_BODY_BYTES:  # leaving the block closes the connection: the rest is never read
                    return response.status, response.headers, None
                chunks.append(chunk)
            return response.status, response.headers, b"".join(chunks)

    async def _post_httpx(self, client: httpx.AsyncClient, body: bytes, headers: dict):
        request = client.build_request("POST", self.url, content=body, headers=headers)
        response = await client.send(request, stream=True)
        try:
            if response.is_stream_consumed:  # e.g. a MockTransport's response, read already
                data = response.content
                return response.status_code, response.headers, data if len(data) <= MAX_BODY_BYTES else None
            chunks, size = [], 0
            async for chunk in response.aiter_raw():
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    return response.status_code, response.headers, None
                chunks.append(chunk)
        finally:
            await response.aclose()
        return response.status_code, response.headers, b"".join(chunks)

    async def _attempt(self, client, item: _Pending) -> None:
        try:
            await self._attempt_once(client, item)
        finally:
            self._active -= 1
            self._wake.set()

    async def _attempt_once(self, client, item: _Pending) -> None:
        res = item.result
        sent = res.in_flight_at_send  # set by the scheduler when the slot was taken
        try:
            outcome, latency = await self._send(client, item.photo)
        except Exception as e:  # a bug must settle the photo, not hang the run
            outcome, latency = Failed(f"internal error: {type(e).__name__}: {str(e)[:200]}"), None
        if latency is not None:
            res.latency_s = latency
        if isinstance(outcome, Retry):
            await self.limiter.release(outcome.signal, latency, outcome.tag, outcome.retry_after, sent)
            res.retries.append(outcome.tag)
            if len(res.retries) >= self.settings.max_attempts:
                res.error = "retries exhausted: " + ",".join(res.retries[-3:])
                self._settle(res)
            else:  # back on the queue; honour Retry-After, else a short jittered pause (the limiter's base)
                delay = outcome.retry_after if outcome.retry_after is not None else \
                    min(self.settings.max_backoff_s, self.limiter.RETRY_BASE_S * 2 ** len(res.retries)) \
                    * self.rng.random()
                heapq.heappush(self._waiting, _Pending(time.perf_counter() + delay, next(self._seq), item.photo, res))
        elif isinstance(outcome, Fatal):
            await self.limiter.release("transport", latency, sent_in_flight=sent)
            res.latency_s = None
            self.fatal_hint = outcome.hint
            self.stop(f"fatal: {outcome.error}")
        else:
            await self.limiter.release("success", latency, sent_in_flight=sent)
            if isinstance(outcome, Answer):
                res.pred, res.raw = outcome.pred, outcome.raw
                res.prompt_tokens, res.completion_tokens = outcome.prompt_tokens, outcome.completion_tokens
                res.reasoning_tokens, res.cost_usd = outcome.reasoning_tokens, outcome.cost_usd
                res.provider, res.error = outcome.provider, outcome.error
            else:
                res.error = outcome.error
            self._settle(res)
        self._wake.set()

    def _settle(self, res: Result) -> None:
        self._journal.result(res)  # durable first: only then does it count as done
        self.results[res.key] = res
        self.done += 1
        self._emit(PhotoDone(self.model, res, self.done, self.total))

    # -- outputs -------------------------------------------------------------------------------------------
    def ordered_results(self) -> list[Result]:
        """Every photo in id order; photos a stopped run never settled carry an error saying so."""
        out = []
        for p in self.dataset.photos:
            for k in range(self.repeats):
                r = self.results.get((p.id, k))
                if r is None:
                    r = Result(id=p.id, open_images_id=p.open_images_id, category=p.category, is_hot_dog=p.is_hot_dog,
                               scored=p.scored, repeat=k, error=f"not run: {self.stop_reason}")
                out.append(r)
        return out

    def write_outputs(self) -> dict:
        ordered = self.ordered_results()
        write_results_parquet(ordered, self.run_dir / f"{model_file_stem(self.model)}.parquet")
        wall = self.previous_wall_s + self.wall_s
        summary = summarize(self.model, ordered, wall)
        summary["concurrency"] = {"start": self.settings.start_concurrency, "cap": self.settings.max_concurrency,
                                  **self.limiter.stats()}
        if self.stop_reason:
            summary["stopped"] = self.stop_reason
        return summary
