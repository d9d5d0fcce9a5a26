"""One cap a server enforces, its state and its refusals: a token bucket, a fixed window (clock-aligned, or from the
client's first request), a sliding window (a log, or a counter), or an in-flight cap; and the schedules that move a
cap during a run. The fake-clock model (capmodel.py) puts them on a server's path; the HTTP simulator (caps.py) uses
a sliding window's on the wall clock.

A refusal carries what that server would send: Retry-After none / exact / fixed / a large fixed value on some
refusals only, its other forms, or a reset hint instead (OpenRouter's `X-RateLimit-Reset` in epoch ms,
`x-ratelimit-reset-requests` like "6m0s", a gateway's `llm_provider-retry-after`, the IETF RateLimit fields,
Flask-Limiter's headers, Gemini's error details), read with the runner's own parser (protocol.answers.retry_for).
"""
from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from ..protocol.answers import Retry, retry_for
from .config import QUOTA_NAMES, google_refusal, ratelimit_fields, retry_after_forms

EPOCH = 1_800_000_000.0  # the fake clock's t=0 as a wall-clock epoch, for epoch-ms reset hints


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
    queue: int = 0  # bucket: requests past its tokens held until their token comes, up to this many at once, and
    #                 refused only past them (nginx's limit_req with a burst and no `nodelay`: its default)
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
    held: float = 0.0  # bucket with a queue: seconds the request that last passed check() waits for its token

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
        self.held = max(0.0, 1 - self.tokens) / rate  # (a queue's place: its token comes that much later)
        return None if self.tokens >= 1 - self.queue - 1e-9 else (1 - self.queue - self.tokens) / rate

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
