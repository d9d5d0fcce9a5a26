"""The reference script's AIMD in-flight limit, with an injectable clock so its timing is testable.

Slow start doubles the limit after each window of `limit` successes until the first throttle; from then on
each window adds one. A throttle cuts the limit to 70%, at most once per round trip, so a burst of 429s from
one overshoot counts once. Dropped connections leave the limit alone.
"""
from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Literal

Feedback = Literal["success", "rate", "failure", "transport"]


@dataclass(frozen=True)
class LimitChange:
    t: float  # seconds since the limiter started
    limit: int
    reason: str  # "slow start", "increase", "cut 429", ...
    rate: float | None = None  # paced requests per second, for limiters that pace (None: unpaced)


class LimitHistory:
    """What every limiter keeps: a clock, a bounded history of limit changes with reasons, and observers."""

    HISTORY = 10_000  # bounded: a long run must not grow memory without end

    def __init__(self, clock: Callable[[], float]):
        self.clock = clock
        self.t0 = clock()
        self.history: deque[LimitChange] = deque(maxlen=self.HISTORY)
        self._observers: list[Callable[[LimitChange], None]] = []

    def subscribe(self, observer: Callable[[LimitChange], None]) -> None:
        self._observers.append(observer)

    def restart_clock(self) -> None:
        self.t0 = self.clock()

    @property
    def limit_trace(self) -> list[tuple[float, int]]:
        """(seconds since start, limit) on every change, as in the reference's summary."""
        return [(c.t, c.limit) for c in self.history]

    @property
    def rate_trace(self) -> list[tuple[float, float | None]]:
        """(seconds since start, paced requests per second or None for unpaced) on every change."""
        return [(c.t, c.rate) for c in self.history]

    def _announce(self, limit: int, reason: str, rate: float | None = None) -> LimitChange:
        change = LimitChange(round(self.clock() - self.t0, 2), limit, reason, rate)
        self.history.append(change)
        for observer in self._observers:
            observer(change)
        return change


class AIMDLimiter(LimitHistory):
    """Reference AIMD: the behaviour of hotdogbench.py's Limiter, kept as the baseline policy."""

    CUT_FACTOR = 0.7
    RETRY_BASE_S = 0.5  # a retry without Retry-After waits up to RETRY_BASE_S * 2**attempts (jittered), as the reference
    MIN_COOLDOWN_S = 1.0  # cut at most once per max(this, latency of the throttled request)

    def __init__(self, start: int, cap: int, clock: Callable[[], float] = time.perf_counter):
        if start < 1 or cap < 1:
            raise ValueError(f"concurrency must be >= 1 (start={start}, cap={cap})")
        super().__init__(clock)
        self.cap = cap
        self._limit = float(min(start, cap))
        self.in_flight = 0
        self.peak_in_flight = 0
        self.slow_start = True
        self.successes = 0
        self.throttles = 0
        self.failures = 0
        self.transport_errors = 0
        self.last_cut = -float("inf")

    # -- state -------------------------------------------------------------------------------------
    @property
    def limit(self) -> int:
        return int(self._limit)

    def _set(self, value: float, reason: str) -> None:
        self._limit = value
        self._announce(int(value), reason)

    # -- the policy (synchronous, clock-driven: what the tests exercise) -------------------------------
    def on_success(self, latency: float | None = None) -> None:
        self.successes += 1
        if self.successes >= int(self._limit):  # one window of successes
            self.successes = 0
            grown = self._limit * 2 if self.slow_start else self._limit + 1
            if min(self.cap, grown) != self._limit:
                self._set(min(self.cap, grown), "slow start" if self.slow_start else "increase")

    def on_throttle(self, latency: float | None = None, tag: str = "429") -> None:
        self.throttles += 1
        now = self.clock()
        if now - self.last_cut > max(self.MIN_COOLDOWN_S, latency or self.MIN_COOLDOWN_S):  # one cut per round trip
            self.slow_start, self.successes, self.last_cut = False, 0, now
            self._set(max(1.0, self._limit * self.CUT_FACTOR), f"cut {tag}")

    def on_transport_error(self) -> None:
        self.transport_errors += 1

    def feedback(self, kind: Feedback, latency: float | None = None, tag: str = "") -> None:
        if kind == "success":
            self.on_success(latency)
        elif kind == "transport":
            self.on_transport_error()
        else:  # the reference cuts on every retryable status, rate signal or not
            if kind == "failure":
                self.failures += 1
            self.on_throttle(latency, tag or kind)

    # -- the gate -----------------------------------------------------------------------------------
    def wait_time(self, now: float | None = None) -> float:
        """0 if a request may start now, inf while the limit is reached (the same synchronous gate as the
        adaptive limiter's, which also paces)."""
        return 0.0 if self.in_flight < int(self._limit) else math.inf

    def start(self, now: float | None = None) -> int:
        """A request starts now (when wait_time() is 0); returns the number in flight, itself included."""
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        return self.in_flight

    def finish(self, kind: Feedback, latency: float | None = None, tag: str = "", retry_after: float | None = None,
               sent_in_flight: int | None = None) -> None:
        """A request came back (retry_after and sent_in_flight are ignored, as the reference did)."""
        self.in_flight -= 1
        self.feedback(kind, latency, tag)

    def stated(self, rate: float, source: str = "") -> None:
        """A cap the server states: the reference has no pacer, so it keeps none."""

    def stats(self) -> dict:
        return {"policy": "reference", "final_limit": self.limit, "peak_in_flight": self.peak_in_flight, "throttles": self.throttles,
                "transport_errors": self.transport_errors, "limit_trace": self.limit_trace}
