"""One measurement of a rate cap while it is being hit (used by the adaptive limiter).

A server that rejects some sends and takes the others takes them at its cap: the cap is the sends it accepted
per second. Only time with the in-flight window not full counts (a full window, not the cap, held sends back
then). The estimate starts at the pace before the measurement and never goes above it: that pace was rejected.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CapMeasurement:
    t0: float  # when it began: rejects of requests sent before are the old pace's
    prior_rate: float  # requests per second before it: an upper bound, and the estimate's starting point
    sends: int = 0
    rejects: int = 0  # of requests sent since t0
    rate_rejects: int = 0  # of them, at levels the server takes (a rate cap's, not an in-flight cap's)
    paced_s: float = 0.0  # seconds of it with the window not full
    last: float = field(default=0.0)

    def __post_init__(self) -> None:
        self.last = self.t0

    def counts(self, sent_at: float) -> bool:
        """Was a request sent at this time sent during the measurement?"""
        return sent_at >= self.t0

    @property
    def accepted(self) -> int:
        # (a reject can be of a request that left just before the measurement began: never below none taken)
        return max(0, self.sends - self.rejects)

    def tick(self, now: float, window_full: bool) -> None:
        if not window_full:
            self.paced_s += max(0.0, now - self.last)
        self.last = now

    def estimate(self, rate_min: float) -> float:
        """Accepted sends per second, pulled toward the prior rate at first; never above it."""
        est = (self.accepted + 1) / (self.paced_s + 1.0 / self.prior_rate)
        return max(rate_min, min(self.prior_rate, est))

    def verdict(self, now: float, min_s: float, min_sends: int, max_s: float) -> str | None:
        """None while it goes on; "done" once long enough (min_s of paced time and min_sends accepted, or
        max_s in all); "under the window" if the window held sends back nearly all along (no cap was seen)."""
        elapsed = now - self.t0
        if self.paced_s >= min_s and self.accepted >= min_sends or elapsed >= max_s:
            return "done"
        if elapsed >= 2 * min_s and self.paced_s < min_s / 2 and self.accepted >= min_sends:
            return "under the window"
        return None
