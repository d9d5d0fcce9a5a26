"""Counters the OpenRouter simulator keeps for tests and benchmarks (``sim.stats``)."""
from __future__ import annotations

import copy
import threading
import time

DROPPED = 0  # status recorded for a connection closed without a response
CLIENT_GONE = 499  # status recorded when the client disconnected (or the server stopped) mid-request


class SimStats:
    """Counts of the API requests (POST chat completions and decisions; not GET /v1/models).

    Written only by the simulator's event-loop thread, under a lock; any thread may read the attributes,
    or take a consistent copy with snapshot(). Times are time.monotonic() seconds.

    requests        requests that arrived (counted on arrival)
    by_status       {status: count} of finished requests; 0 = dropped connection, 499 = client went away
    rate_limited    a cap's refusals (in-flight cap, token bucket, window): 429s, or 502s in upstream form
    answered        billed completions carrying a verdict (chat content with hot_dog, or a noul)
    unanswered      billed completions without one ("I cannot tell.", length, empty content)
    in_flight       admitted requests being served now (live; not reset)
    peak_in_flight  the most admitted requests served at once since the last reset
    dropped         connections closed without a response
    faults          {fault kind: count} of injected faults (see SimConfig)
    spent_usd       cost billed so far (what credits_usd is checked against; reset() refills the credits)
    by_digest       {sha256 hex of the image: [(arrival time, status, retry_after seconds or None), ...]}
                    in order of completion
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight = 0
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.requests = 0
            self.by_status: dict[int, int] = {}
            self.rate_limited = 0
            self.answered = 0
            self.unanswered = 0
            self.peak_in_flight = self.in_flight
            self.dropped = 0
            self.faults: dict[str, int] = {}
            self.spent_usd = 0.0
            self.by_digest: dict[str, list[tuple[float, int, float | None]]] = {}
            self.since = time.monotonic()

    def snapshot(self) -> dict:
        """A deep copy of every counter, taken under the lock."""
        with self._lock:
            return copy.deepcopy({k: v for k, v in vars(self).items() if not k.startswith("_")})

    # --- written by the simulator's loop thread ----------------------------------------------------------
    def _arrive(self) -> None:
        with self._lock:
            self.requests += 1

    def _admit(self) -> None:
        with self._lock:
            self.in_flight += 1
            if self.in_flight > self.peak_in_flight:
                self.peak_in_flight = self.in_flight

    def _release(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _fault(self, kind: str) -> None:
        with self._lock:
            self.faults[kind] = self.faults.get(kind, 0) + 1

    def _finish(self, digest: str | None, t: float, status: int, retry_after: float | None = None, *,
                admitted: bool = False, cost: float = 0.0, verdict: bool | None = None,
                refused: bool = False) -> None:
        """One finished request. verdict: True/False for a billed completion with/without a verdict; refused: a
        cap's refusal, whatever its status (a 429, or a 502 passing on an upstream provider's 429)."""
        with self._lock:
            if admitted:
                self.in_flight -= 1
            self.by_status[status] = self.by_status.get(status, 0) + 1
            if status == 429 or refused:
                self.rate_limited += 1
            elif status == DROPPED:
                self.dropped += 1
            if verdict is not None:
                if verdict:
                    self.answered += 1
                else:
                    self.unanswered += 1
                self.spent_usd += cost
            if digest is not None:
                events = self.by_digest.get(digest)
                if events is None:
                    self.by_digest[digest] = [(t, status, retry_after)]
                else:
                    events.append((t, status, retry_after))
