"""A tiny discrete-event model of a capped provider and of the runner's loop, on a fake clock.

Not a test file: tests import it to drive a limiter deterministically (no sleeping, no sockets). The server
has a token bucket (rate, burst) and/or an in-flight cap, answers 429 at once when a cap is hit (with an
optional Retry-After), and otherwise after a lognormal latency, with random 5xx and dropped connections.
The client asks `photos` photos through the limiter's synchronous gate (wait_time/start/finish) and retries
as the runner does (Retry-After, else a jittered exponential back-off; at once after a dropped connection).
"""
from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field


class FakeClock:
    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


@dataclass
class Server:
    rate: float | None = None  # token bucket refill per second
    burst: int = 10
    max_in_flight: int | None = None
    latency: float = 0.2  # median seconds
    sigma: float = 0.3
    error_5xx: float = 0.0
    drop: float = 0.0
    retry_after: str = "none"  # "none" | "exact" | "fixed"
    retry_after_s: float = 1.0
    reject_latency: float = 0.001
    in_flight: int = 0
    tokens: float | None = None
    bucket_t: float = 0.0

    def admit(self, now: float) -> tuple[bool, float | None]:
        """(admitted?, Retry-After for a reject)."""
        if self.max_in_flight is not None and self.in_flight >= self.max_in_flight:
            return False, None if self.retry_after == "none" else self.retry_after_s
        if self.rate is not None:
            if self.tokens is None:
                self.tokens = float(self.burst)
            else:
                self.tokens = min(float(self.burst), self.tokens + (now - self.bucket_t) * self.rate)
            self.bucket_t = now
            if self.tokens < 1.0 - 1e-9:
                wait = (1.0 - self.tokens) / self.rate
                ra = {"none": None, "exact": math.ceil(wait * 1000) / 1000, "fixed": self.retry_after_s}
                return False, ra[self.retry_after]
            self.tokens -= 1.0
        return True, None


@dataclass
class Outcome:
    wall: float
    attempts: int
    rejects: int
    failures: int
    early_retries: int  # retries sent before their Retry-After had passed
    max_in_flight_seen: int
    windows: list = field(default_factory=list)


def run(limiter, clock: FakeClock, server: Server, photos: int, *, seed: int = 0, max_attempts: int = 8,
        max_backoff: float = 20.0, changes: dict[float, dict] | None = None, until: float | None = None,
        hold_slots: bool = False) -> Outcome:
    """Ask `photos` photos; `changes` {seconds from start: {server field: value}} alters the server mid-run.
    hold_slots: a throttled request keeps its slot (counts in flight) until its retry goes, which may always go."""
    rng = random.Random(seed)
    t_start = clock()
    events: list = []  # (time, seq, kind, payload)
    seq = 0

    def push(t, kind, payload=None):
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, payload))

    for dt, change in sorted((changes or {}).items()):
        push(t_start + dt, "change", change)
    fresh = photos
    retries: list = []  # (not_before, seq, attempts, retry_after deadline)
    done = attempts = rejects = failures = early = peak = 0
    wake_at = retry_wake = None
    while done < photos:
        now = clock()
        if until is not None and now - t_start > until:
            break
        # start what the gate allows now
        while True:
            item = None
            if retries and retries[0][0] <= now:
                item = heapq.heappop(retries)
            elif fresh > 0:
                item = (now, 0, 0, None, False)  # (not before, seq, attempts, Retry-After deadline, holds a slot)
            if item is None:
                break
            if item[4]:
                limiter.in_flight -= 1  # its own slot, kept since the 429: start() takes it again
            wait = 0.0 if item[4] else limiter.wait_time(now)
            if wait > 0:
                if item[2] == 0:
                    pass  # fresh photo goes back (it was not taken)
                else:
                    heapq.heappush(retries, item)
                if not math.isinf(wait) and (wake_at is None or wake_at > now + wait):
                    wake_at = now + wait
                    push(wake_at, "wake")
                break
            if item[2] == 0:
                fresh -= 1
            if item[3] is not None and now < item[3] - 1e-9:
                early += 1
            k = limiter.start(now)
            attempts += 1
            peak = max(peak, server.in_flight)
            ok, ra = server.admit(now)
            n_attempts = item[2] + 1
            if not ok:
                push(now + server.reject_latency, "reply", ("rate", server.reject_latency, ra, n_attempts, k))
                continue
            server.in_flight += 1
            peak = max(peak, server.in_flight)
            lat = rng.lognormvariate(math.log(server.latency), server.sigma) if server.sigma else server.latency
            r = rng.random()
            kind = "failure" if r < server.error_5xx else "transport" if r < server.error_5xx + server.drop \
                else "success"
            push(now + lat, "reply", (kind, lat, None, n_attempts, k, True))
        if retries and retries[0][0] > now and retry_wake != retries[0][0]:
            retry_wake = retries[0][0]
            push(retry_wake, "wake")
        if not events:
            break
        t, _, kind, payload = heapq.heappop(events)
        clock.t = max(clock.t, t)
        if kind == "wake":
            if wake_at is not None and t >= wake_at:
                wake_at = None
            continue
        if kind == "change":
            for k, v in payload.items():
                setattr(server, k, v)
            continue
        fb, lat, ra, n_attempts, k, *admitted = payload
        if admitted:
            server.in_flight -= 1
        limiter.finish(fb, lat, "429" if fb == "rate" else fb, ra, k)
        held = hold_slots and fb == "rate" and n_attempts < max_attempts
        if held:
            limiter.in_flight += 1  # kept until the retry goes
        if fb == "success":
            done += 1
            continue
        rejects += fb == "rate"
        failures += fb != "rate"
        if n_attempts >= max_attempts:
            done += 1
            continue
        base = getattr(limiter, "RETRY_BASE_S", None) or getattr(getattr(limiter, "lim", None), "RETRY_BASE_S", 0.5)
        delay = ra if ra is not None else 0.0 if fb == "transport" else \
            min(max_backoff, base * 2 ** n_attempts) * rng.random()
        heapq.heappush(retries, (clock() + delay, seq, n_attempts, clock() + ra if ra is not None else None, held))
        seq += 1
    return Outcome(clock() - t_start, attempts, rejects, failures, early, peak)


class ReferenceGate:
    """The reference AIMDLimiter behind the same synchronous gate (window only, no pacing)."""

    def __init__(self, lim):
        self.lim = lim

    @property
    def in_flight(self) -> int:
        return self.lim.in_flight

    @in_flight.setter
    def in_flight(self, value: int) -> None:
        self.lim.in_flight = value

    def wait_time(self, now=None):
        return 0.0 if self.lim.in_flight < self.lim.limit else math.inf

    def start(self, now=None):
        self.lim.in_flight += 1
        return self.lim.in_flight

    def finish(self, kind, latency=None, tag="", retry_after=None, sent_in_flight=None):
        self.lim.in_flight -= 1
        self.lim.feedback(kind, latency, tag)
