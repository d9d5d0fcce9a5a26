"""A discrete-event model of capped providers and of the runner's loop, on a fake clock.

Not a test file: tests and benchmarks import it to drive limiters deterministically (no sleeping, no sockets).

Server side: a `Cap` is one counter a server enforces: a token bucket (rate, burst), a fixed window (n requests
per clock-aligned window of `period` seconds, refused past n, refilled at the boundary), or an in-flight cap. A
request passes every cap on its path (a key-wide cap and/or the model's own) or is refused at once with 429 (or
402 for an in-flight budget), carrying what that server would send: Retry-After none / exact / fixed / a large
fixed value on some refusals only, or a reset hint instead (OpenRouter's `X-RateLimit-Reset` in epoch ms,
`x-ratelimit-reset-requests` like "6m0s", a gateway's `llm_provider-retry-after`). The client reads those headers
with the runner's own parser (protocol.answers.retry_for). Caps may move during the run (`scale(t)`: a fall and a
recovery, a drift, an oscillation). Admitted requests answer after a lognormal latency that may grow with the
load, with random 5xx, 200-errors and dropped connections; those still used the cap.

Client side: one `Client` per model (or per process), each with its own limiter, asking `photos` photos the way the
runner does: retries first, then fresh photos, through the limiter's synchronous gate (wait_time / start / finish);
a refused photo waits its Retry-After (or reset hint) in full, else a jittered exponential back-off; at once after a
dropped connection; it gives up only when its retry budget (seconds since its first attempt, or a count of attempts
for the reference) is spent. A loaded client hears an answer a moment after the server let it go
(`Server.client_lag`), and meanwhile counts one more in flight than the server does. Several clients in one run
share the event loop and the caps.
"""
from __future__ import annotations

import heapq
import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from ..protocol.answers import Retry, minute_count_rate, retry_for
from .config import QUOTA_NAMES, google_refusal, ratelimit_fields, retry_after_forms

EPOCH = 1_800_000_000.0  # the fake clock's t=0 as a wall-clock epoch, for epoch-ms reset hints
IN_FLIGHT_402 = "402/in_flight"  # the tag the runner's classifier gives a 402 in-flight budget (protocol/answers.py)


class FakeClock:
    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


# -- caps that move ------------------------------------------------------------------------------------------
def step(at: float, factor: float, until: float | None = None) -> Callable[[float], float]:
    """The cap times `factor` from `at` seconds (back to 1 from `until`, if given)."""
    return lambda t: factor if at <= t and (until is None or t < until) else 1.0


def drift(at: float, to: float, over: float) -> Callable[[float], float]:
    """A slow drift from 1 to `to` between `at` and `at + over` seconds, then held."""
    return lambda t: 1.0 if t < at else to if t >= at + over else 1.0 + (to - 1.0) * (t - at) / over


def oscillate(period: float, depth: float) -> Callable[[float], float]:
    """1 - depth/2 + depth/2 * cos(2 pi t / period): between 1 and 1 - depth."""
    return lambda t: 1.0 - depth / 2 + depth / 2 * math.cos(2 * math.pi * t / period)


@dataclass
class Cap:
    kind: str  # "bucket" | "window" | "inflight"
    rate: float = 0.0  # bucket: tokens per second
    burst: float = 1.0  # bucket: capacity (starts full)
    n: int = 0  # window: requests per window; inflight: requests being served at once
    period: float = 60.0  # window length, seconds
    phase: float = 0.0  # window boundaries at phase + k * period (clock-aligned, not the client's start)
    from_first: bool = False  # window: one starts at the first request after the last one ended, not on the clock
    #                           (express-rate-limit's memory store; LiteLLM's ttl): phase moves to that request
    slide: str = ""  # window: "log", n in any `period` s (a sliding log: the `limits` library's moving window);
    #                  "counter", the clock window's count plus the last one's weighted by the share of it still in
    #                  the last `period` s (limits' sliding-window counter, Cloudflare's); "": fixed
    counts_refused: bool = False  # a refused request counts against the cap too (HAProxy's http_req_rate, as its
    #                               guides set it: a client that keeps asking while refused keeps itself refused)
    status: int = 429  # 402 for an in-flight budget
    retry_after: str = "none"  # none | exact | fixed | large | reset_ms | reset_requests | gateway | openrouter |
    #                            http_date | retry_after_ms (the exact wait in Retry-After's other forms) | google |
    #                            ratelimit (the IETF RateLimit fields: a window's policy, the seconds to its refill) |
    #                            flask (Flask-Limiter's whole seconds, truncated: 0 for a wait inside the clock's second)
    retry_after_s: float = 1.0  # fixed, large and gateway: the value sent
    large_share: float = 1.0  # large: share of refusals that carry it (the others carry nothing)
    scale: Callable[[float], float] | None = None  # t (seconds from start) -> cap multiplier
    # state
    tokens: float | None = None
    last: float = 0.0
    window_idx: int | None = None
    used: int = 0
    before: int = 0  # slide "counter": the last window's count
    log: deque = field(default_factory=deque)  # slide "log": admission times within the last period
    in_flight: int = 0

    def factor(self, t: float) -> float:
        return 1.0 if self.scale is None else self.scale(t)

    def limit_now(self, t: float) -> float:
        """The cap in requests per second (bucket, window) or requests in flight, as it is at t."""
        f = self.factor(t)
        return {"bucket": self.rate * f, "window": self.n * f / self.period, "inflight": self.n * f}[self.kind]

    def check(self, t: float) -> float | None:
        """None if a request may pass at t (seconds from start), else the real wait (inf: unknown)."""
        f = self.factor(t)
        if self.kind == "inflight":
            return None if self.in_flight < max(1, round(self.n * f)) else math.inf
        if self.kind == "window" and self.slide:
            return self._slide_wait(t, max(1, round(self.n * f)))
        if self.kind == "window":
            if self.from_first and t >= self.phase + self.period:
                self.phase, self.window_idx = t, None  # (the request that finds it ended starts the next)
            idx = math.floor((t - self.phase) / self.period)
            if idx != self.window_idx:
                self.window_idx, self.used = idx, 0
            if self.used < max(1, round(self.n * f)):
                return None
            return self.phase + (idx + 1) * self.period - t
        rate = self.rate * f
        burst = max(1.0, self.burst * f)
        if self.tokens is None:
            self.tokens = burst
        else:
            self.tokens = min(burst, self.tokens + (t - self.last) * rate)
        self.last = t
        return None if self.tokens >= 1 - 1e-9 else (1 - self.tokens) / rate

    def _slide_wait(self, t: float, n: int) -> float | None:
        """A sliding window's check: None if a request may pass at t, else the wait until one may (the oldest
        admission's expiry; for the counter, until the last window's weighted count has fallen by enough)."""
        self.last = t
        if self.slide == "log":
            while self.log and self.log[0] <= t - self.period:
                self.log.popleft()
            return None if len(self.log) < n else self.log[len(self.log) - n] + self.period - t
        idx = math.floor((t - self.phase) / self.period)
        if self.window_idx is None or idx != self.window_idx:
            self.before = self.used if self.window_idx == idx - 1 else 0
            self.window_idx, self.used = idx, 0
        start = self.phase + idx * self.period
        left = 1 - (t - start) / self.period  # the share of the last window still inside the last period
        if math.floor(self.before * left + self.used) + 1 <= n:
            return None
        if self.used + 1 > n:  # (full on its own: the next window, where this one's count is the weighted one)
            return start + self.period + self.period * (1 - n / self.used) - t + 1e-9
        return start + self.period * (1 - (n - self.used) / self.before) - t + 1e-9  # (before > 0 here)

    def take(self) -> None:
        if self.kind == "inflight":
            self.in_flight += 1
        elif self.kind == "window" and self.slide == "log":
            self.log.append(self.last)
        elif self.kind == "window":
            self.used += 1
        else:
            self.tokens -= 1.0

    def refusal(self, wait: float, now: float, rng: random.Random) -> Retry:
        """The refusal as the runner's classifier reads it (its wait, and a minute's quota it names). In mode
        "openrouter", a free model's 429: X-RateLimit-* in the body's metadata.headers only, the quota named."""
        headers, err = self.headers(wait, now, rng), {}
        if self.retry_after == "google":  # (Gemini's: the error in a list, its details the hints)
            refusal = google_refusal(self.retry_after_s if math.isinf(wait) else wait, self.n,
                                     self.period if self.kind == "window" else None)
            headers, err = {}, refusal[0]["error"]
        elif self.retry_after == "openrouter":
            name = QUOTA_NAMES.get(self.period, "free-models") if self.kind == "window" else "free-models"
            headers, err = {}, {"message": f"Rate limit exceeded: {name}.", "code": 429,
                                "metadata": {"headers": headers}}
        return retry_for(429, err, headers, EPOCH + now, "429")

    def headers(self, wait: float, now: float, rng: random.Random) -> dict:
        """What the refusal carries, as lower-case headers."""
        mode = self.retry_after
        exact = None if math.isinf(wait) else math.ceil(wait * 1000) / 1000
        if mode in ("http_date", "retry_after_ms"):
            forms = retry_after_forms(mode, exact if exact is not None else self.retry_after_s, EPOCH + now)
            return {k.lower(): v for k, v in forms.items()}
        if mode == "ratelimit":  # (a window's policy, and the seconds to its refill)
            fields = ratelimit_fields(self.n, self.period if self.kind == "window" else None, exact)
            return {k.lower(): v for k, v in fields.items()}
        if mode == "exact":
            return {"retry-after": str(exact if exact is not None else self.retry_after_s)}
        if mode == "flask":  # Flask-Limiter's: the reset's epoch second + 1, and the whole seconds between the clock's
            at = EPOCH + now + (exact if exact is not None else self.retry_after_s)  # second now and the reset's: 0
            return {"retry-after": str(math.floor(at) - math.floor(EPOCH + now)),  # for a wait under one within it
                    "x-ratelimit-limit": str(self.n), "x-ratelimit-remaining": "0",
                    "x-ratelimit-reset": str(math.floor(at) + 1)}
        if mode == "fixed":
            return {"retry-after": f"{self.retry_after_s:g}"}
        if mode == "large":
            return {"retry-after": f"{self.retry_after_s:g}"} if rng.random() < self.large_share else {}
        if mode == "gateway":
            return {"llm_provider-retry-after": f"{self.retry_after_s:g}"}
        reset = exact if exact is not None else self.retry_after_s
        if mode == "openrouter":  # what a free model's 429 carries in its body (refusal() puts it there)
            return {"x-ratelimit-limit": str(self.n), "x-ratelimit-remaining": "0",
                    "x-ratelimit-reset": str(int((EPOCH + now + reset) * 1000))}
        if mode == "reset_ms":
            return {"x-ratelimit-reset": str(int((EPOCH + now + reset) * 1000))}
        if mode == "reset_requests":
            m, s = divmod(math.ceil(reset), 60)
            return {"x-ratelimit-reset-requests": f"{m}m{s}s" if m else f"{s}s"}
        return {}


@dataclass
class Server:
    """Per model: the caps on its path (shared Cap objects make a key-wide cap) and how it answers."""
    caps: list[Cap] = field(default_factory=list)
    latency: float = 0.2  # median seconds
    sigma: float = 0.3
    load_latency: float = 0.0  # latency grows by this fraction per `load_ref` requests in flight on the server
    load_ref: int = 100
    in_flight: int = 0  # requests admitted and not yet answered (the load)
    error_5xx: float = 0.0
    error_200: float = 0.0
    drop: float = 0.0
    refuse_402: float = 0.0  # share of requests refused at once with 402 in-flight budget, Retry-After: 1
    states: int | None = None  # x-ratelimit-limit-requests on every answer (a minute's requests: LiteLLM, OpenAI)
    reject_latency: float | None = 0.001  # seconds to a refusal; None: as long as an answer at the load of the
    #                                       moment (a gateway on a loaded machine refuses through the same queue)
    client_lag: float = 0.0  # mean seconds (exponential) from the server's release of an answered request to the
    #                          client hearing it (a loaded client's event loop): meanwhile the client counts one more

    def answer_latency(self, rng) -> float:
        """A latency drawn at the load now: lognormal around the median grown by the requests held."""
        med = self.latency * (1 + self.load_latency * self.in_flight / self.load_ref)
        return rng.lognormvariate(math.log(med), self.sigma) if self.sigma else med

    def refusal_latency(self, rng) -> float:
        """Seconds to a refusal: reject_latency, or an answer's latency at the load now when that is None."""
        return self.answer_latency(rng) if self.reject_latency is None else self.reject_latency


@dataclass
class Client:
    """One model's run: its limiter, its server path, its retry rules, and what happened."""
    limiter: object
    server: Server
    photos: int
    retry_budget_s: float | None = 180.0  # give up after this long since the first attempt (None: max_attempts)
    max_attempts: int = 8
    max_backoff_s: float = 20.0
    backoff: Callable | None = None  # (attempts, signal, retry_after, rng) -> seconds; default: the runner's rule
    start_at: float = 0.0  # seconds after the run's start
    # results
    sends: list = field(default_factory=list)  # (t, admitted?, refused?) per attempt, seconds from start
    done: int = 0
    exhausted: int = 0
    early_retries: int = 0  # retries sent before their Retry-After had passed
    attempts: int = 0
    rejects: int = 0
    failures: int = 0
    finished_at: float | None = None
    fresh_done_at: float | None = None  # when the last fresh photo was first sent (seconds from start)
    answered: list = field(default_factory=list)  # send times of the attempts answered successfully
    latencies: list = field(default_factory=list)  # (send time, latency) of every admitted attempt
    # loop state
    fresh: int = 0
    retries: list = field(default_factory=list)  # heap of (not before, seq, attempts, first_t, RA deadline, failed)
    wake_at: float | None = None
    hints: dict = field(default_factory=dict)  # first_t -> the longest wait the server asked of that photo

    def delay(self, attempts: int, signal: str, ra: float | None, rng: random.Random) -> float:
        if self.backoff is not None:
            return self.backoff(attempts, signal, ra, rng)
        if ra is not None:
            return ra
        if signal == "transport":
            return 0.0
        base = getattr(self.limiter, "RETRY_BASE_S", 0.5)
        return min(self.max_backoff_s, base * 2 ** attempts) * rng.random()


@dataclass
class Outcome:
    wall: float
    attempts: int
    rejects: int
    failures: int
    early_retries: int
    max_in_flight_seen: int
    exhausted: int = 0


def simulate(clients: list[Client], clock: FakeClock, *, seed: int = 0, until: float | None = None) -> float:
    """Run every client to the end (or `until` seconds); returns the wall time. Results are on the clients."""
    return _Simulation(clients, clock, random.Random(seed)).run(until)


class _Simulation:
    """One event queue (wakes and replies, in time order) for clients whose loops are the runner's: send while the
    limiter lets (retries first), settle each reply, retry later or give up as the runner does."""

    def __init__(self, clients: list[Client], clock: FakeClock, rng: random.Random):
        self.clients, self.clock, self.rng = clients, clock, rng
        self.t0 = clock()
        self.events: list = []
        self.seq = 0
        self.active = set(range(len(clients)))

    def push(self, t: float, kind: str, payload) -> None:
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, payload))

    def run(self, until: float | None) -> float:
        for c in self.clients:
            c.fresh = c.photos
            self.push(self.t0 + c.start_at, "wake", c)
        while self.active and self.events:
            t, _, kind, payload = heapq.heappop(self.events)
            if until is not None and t - self.t0 > until:
                break
            self.clock.t = max(self.clock.t, t)
            if kind == "release":
                self.release(payload)
                continue
            if kind == "wake":
                c = payload
                if c.wake_at is not None and t >= c.wake_at:
                    c.wake_at = None
            else:
                c = self.settle(payload, self.clock.t)
            self.pump(c, self.clock.t)  # an answer frees a slot for this client only: limiters are per client
        return self.clock() - self.t0

    def pump(self, c: Client, now: float) -> None:
        """Send what the client's limiter lets it, retries due first, then fresh photos; then sleep until due."""
        if now < self.t0 + c.start_at:
            return
        while c.retries and c.retries[0][0] <= now or c.fresh > 0:
            item = c.retries[0] if c.retries and c.retries[0][0] <= now else None
            wait = c.limiter.wait_time(now)
            if wait > 0:
                if not math.isinf(wait) and (c.wake_at is None or c.wake_at > now + wait or c.wake_at <= now):
                    c.wake_at = now + wait
                    self.push(c.wake_at, "wake", c)
                break
            if item is not None:
                heapq.heappop(c.retries)
                _, _, n, first_t, deadline, failed = item
                if deadline is not None and now < deadline - 1e-9:
                    c.early_retries += 1
            else:
                c.fresh -= 1
                n, first_t, failed = 0, now, 0
                if c.fresh == 0:
                    c.fresh_done_at = now - self.t0
            self.send(c, now, n, first_t, failed)
        if c.retries and c.retries[0][0] > now:
            nxt = c.retries[0][0]
            if c.wake_at is None or c.wake_at <= now or nxt < c.wake_at:
                c.wake_at = nxt
                self.push(nxt, "wake", c)

    def send(self, c: Client, now: float, n: int, first_t: float, failed: int) -> None:
        """One attempt: a random 402, a cap's refusal (with the hints it carries), or admitted, answered later."""
        k = c.limiter.start(now)
        c.attempts += 1
        t, srv, rng = now - self.t0, c.server, self.rng
        if srv.refuse_402 and rng.random() < srv.refuse_402:
            c.sends.append((t, False, True))
            refusal_s = srv.refusal_latency(rng)
            self.push(now + refusal_s, "reply",
                      (c, "rate", refusal_s, 1.0, n + 1, first_t, k, None, failed, IN_FLIGHT_402, None))
            return
        for cap in srv.caps:
            wait_cap = cap.check(t)
            if wait_cap is not None:
                if cap.counts_refused:  # (HAProxy's stick table tracks a request before its deny rule)
                    cap.take()
                c.sends.append((t, False, True))
                refused = cap.refusal(wait_cap, t, rng)
                refusal_s = srv.refusal_latency(rng)
                self.push(now + refusal_s, "reply", (c, "rate", refusal_s, refused.retry_after, n + 1, first_t, k,
                                                     None, failed, IN_FLIGHT_402 if cap.status == 402 else refused.tag,
                                                     refused.stated_rate))
                return
        for cap in srv.caps:
            cap.take()
        c.sends.append((t, True, False))
        srv.in_flight += 1
        lat = srv.answer_latency(rng)
        c.latencies.append((t, lat))
        r = rng.random()
        kind = "failure" if r < srv.error_5xx + srv.error_200 else \
            "transport" if r < srv.error_5xx + srv.error_200 + srv.drop else "success"
        lag = rng.expovariate(1 / srv.client_lag) if srv.client_lag else 0.0
        if lag:
            self.push(now + lat, "release", (srv, srv.caps))
        self.push(now + lat + lag, "reply", (c, kind, lat + lag, None, n + 1, first_t, k, None if lag else srv.caps,
                                             failed, kind, None))

    @staticmethod
    def release(admitted: tuple) -> None:
        """An admitted request leaves the server (its answer sent)."""
        srv, caps = admitted
        srv.in_flight -= 1
        for cap in caps:
            if cap.kind == "inflight":
                cap.in_flight -= 1

    def settle(self, reply: tuple, now: float) -> Client:
        """A reply reaches its client: the limiter hears it; a refusal or failure is retried or given up on."""
        c, fb, lat, ra, n, first_t, k, caps, failed, tag, stated = reply
        if caps is not None:  # admitted: it leaves the server (unless it left a client's lag ago)
            self.release((c.server, caps))
        c.limiter.finish(fb, lat, tag, ra, k)
        if stated:  # a minute's quota the refusal named, as the runner reads it
            c.limiter.stated(stated)
        if fb == "success":
            if c.server.states:  # as the runner reads an answer's headers
                c.limiter.stated(minute_count_rate(c.server.states))
            c.done += 1
            c.answered.append(now - lat - self.t0)
        else:
            c.rejects += fb == "rate"
            c.failures += fb != "rate"
            spent, failed = now - first_t, failed + (fb != "rate")
            c.hints[first_t] = hint = max(c.hints.get(first_t, 0.0), ra or 0.0)
            # as the runner: the reference gives up after max_attempts; else "later" is waited out for the
            # retry budget (plus the longest wait the server asked) and only failures count against max_attempts
            if (n >= c.max_attempts) if c.retry_budget_s is None else \
                    (failed >= c.max_attempts or spent >= c.retry_budget_s + hint):
                c.done += 1
                c.exhausted += 1
            else:
                self.seq += 1
                heapq.heappush(c.retries, (now + c.delay(n, fb, ra, self.rng), self.seq, n, first_t,
                                           now + ra if ra is not None else None, failed))
        if c.done >= c.photos:
            c.finished_at = now - self.t0
            self.active.discard(self.clients.index(c))
        return c


def run(limiter, clock: FakeClock, server, photos: int, *, seed: int = 0, max_attempts: int = 8,
        retry_budget_s: float | None = None, until: float | None = None, changes: dict | None = None) -> Outcome:
    """One client against one server (a Server, or the old keyword form via `legacy_server`)."""
    if not isinstance(server, Server):
        server = legacy_server(**server) if isinstance(server, dict) else server
    c = Client(limiter, server, photos, retry_budget_s=retry_budget_s, max_attempts=max_attempts)
    wall = simulate([c], clock, seed=seed, until=until)
    peak = 0
    return Outcome(wall, c.attempts, c.rejects, c.failures, c.early_retries, peak, c.exhausted)


def legacy_server(rate=None, burst=10, max_in_flight=None, latency=0.2, sigma=0.3, error_5xx=0.0, drop=0.0,
                  retry_after="none", retry_after_s=1.0) -> Server:
    caps = []
    if max_in_flight is not None:
        caps.append(Cap("inflight", n=max_in_flight, retry_after=retry_after, retry_after_s=retry_after_s))
    if rate is not None:
        caps.append(Cap("bucket", rate=rate, burst=burst, retry_after=retry_after, retry_after_s=retry_after_s))
    return Server(caps, latency=latency, sigma=sigma, error_5xx=error_5xx, drop=drop)
