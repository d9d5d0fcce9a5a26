"""A discrete-event model of capped providers and of the runner's loop, on a fake clock.

Not a test file: tests and benchmarks import it to drive limiters deterministically (no sleeping, no sockets).

Server side: a `Cap` (cap.py) is one counter a server enforces: a token bucket, a fixed or sliding window, or an
in-flight cap. A request passes every cap on its path (a key-wide cap and/or the model's own) or is refused at once
with 429 (or 402 for an in-flight budget), carrying what that server would send (cap.py). Caps may move during the
run (`scale(t)`: a fall and a recovery, a drift, an oscillation). Admitted requests answer after a lognormal latency that may grow with the
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
from dataclasses import dataclass, field
from typing import Callable

from ..protocol.answers import minute_count_rate
from .cap import EPOCH, Cap, drift, oscillate, step

__all__ = ["Cap", "Client", "EPOCH", "FakeClock", "Server", "drift", "legacy_server", "oscillate", "run", "simulate",
           "step"]

IN_FLIGHT_402 = "402/in_flight"  # the tag the runner's classifier gives a 402 in-flight budget (protocol/answers.py)


class FakeClock:
    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, s: float) -> None:
        self.t += s


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
    held: list = field(default_factory=list)  # seconds each admitted attempt waited in a bucket's queue
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
        held = max((cap.held for cap in srv.caps if cap.queue), default=0.0)  # (in a bucket's queue)
        for cap in srv.caps:
            cap.take()
        c.sends.append((t, True, False))
        srv.in_flight += 1
        lat = held + srv.answer_latency(rng)
        c.latencies.append((t, lat))
        c.held.append(held)
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
