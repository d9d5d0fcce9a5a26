"""In-flight and rate limits for the runner's one queue: the default PacedLimiter and the reference AIMD.

Every policy is synchronous and driven by a clock (tests and benchmarks pass a fake one), and implements `Limiter`:
the runner asks `wait_time(now)` (0: go now, inf: wait for an answer, else seconds), calls `start(now)` when it
sends (the number in flight, itself included, comes back and is handed to `finish` as `sent_in_flight`), and
`finish(kind, latency, tag, retry_after, sent_in_flight)` when the answer is in (kind: "success", "rate",
"failure" or "transport"). Limit changes go into a bounded history with reasons and to observers.
"""
from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

from .aimd import AIMDLimiter, Feedback, LimitChange, LimitHistory
from .board import KeyBoard
from .key import KeyCoordinator
from .paced import PacedLimiter


@runtime_checkable
class Limiter(Protocol):
    RETRY_BASE_S: float  # a refused photo without Retry-After waits up to this x 2**attempts (jittered)
    in_flight: int
    throttles: int
    transport_errors: int

    @property
    def limit(self) -> int: ...

    def wait_time(self, now: float | None = None) -> float: ...

    def start(self, now: float | None = None) -> int: ...

    def finish(self, kind: Feedback, latency: float | None = None, tag: str = "", retry_after: float | None = None,
               sent_in_flight: int | None = None) -> None: ...

    def stated(self, rate: float, source: str = ...) -> None: ...  # a cap the server states (or known), requests/s

    def stats(self) -> dict: ...

    def subscribe(self, observer: Callable[[LimitChange], None]) -> None: ...

    def restart_clock(self) -> None: ...


__all__ = ["AIMDLimiter", "Feedback", "KeyBoard", "KeyCoordinator", "LimitChange", "LimitHistory", "Limiter", "PacedLimiter"]
