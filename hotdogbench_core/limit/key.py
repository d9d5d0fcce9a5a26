"""The models of one run on one key (the session gives every ModelRun of a run the same KeyCoordinator).

Caps may be the key's (OpenRouter's in-flight budget, free-model limits) or each model's own (a provider's), and the
runner cannot be told which. So each model starts with a limiter of its own, and the key is also watched as one
sender: a PacedLimiter (`key.limiter`) hears every member's sends. A member whose first sends were all refused while
another member's were taken says the cap is the key's (the key's burst went to the other; behind a cap of its own, a
model's first sends take that cap's burst). So do members pausing at once, each after sends taken, with a probe of
each pause refused, while every other member is refused too: one quota spent, the key's (a bucket of a model's own
refills by its first probe; a window's quota does not, and k members probing it each on their own cost k refusals a
probe). So does a refusal that names its quota (OpenRouter counts a free model's per key): the others wait out the
key's pause instead of each spending a refusal of its own. From then on every member sends through the key's
limiter: its window, its refusal pause and its pace, each member at most an equal slice of the window and the pace,
so the key is shared evenly (Jain's index 0.98-1.00 where each model ran on its own at 0.4-0.9). Members that stop
asking leave their slice to the others.
"""
from __future__ import annotations

import math
import time
from typing import Callable

from ..protocol.answers import names_quota
from .paced import PacedLimiter, taken_since


class KeyMember(PacedLimiter):
    """A model's limiter on a key: its own until the cap is seen to be the key's, then an equal slice of the key's
    limiter (its window and pace), which hears every member's sends."""

    _on_key = True

    def __init__(self, start: int, cap: int, key: KeyCoordinator, clock: Callable[[], float] = time.perf_counter,
                 max_rate: float | None = None):
        super().__init__(start, cap, clock, max_rate)
        self.key = key
        key.join(self)

    @property
    def limit(self) -> int:
        return self.key.slice(self, self.clock()) if self.key.shared else super().limit

    def rate(self, now: float | None = None) -> float:
        if not self.key.shared:
            return super().rate(now)
        now = self.clock() if now is None else now
        return min(self.key.limiter.rate(now) / self.key.active(now), self.max_rate)

    def wait_time(self, now: float | None = None) -> float:
        now = self.clock() if now is None else now
        return self.key.wait_time(self, now) if self.key.shared else super().wait_time(now)

    def start(self, now: float | None = None) -> int:
        now = self.clock() if now is None else now
        self.key.started(self, now)
        return super().start(now)

    def finish(self, kind, latency=None, tag="", retry_after=None, sent_in_flight=None) -> None:
        super().finish(kind, latency, tag, retry_after, sent_in_flight)
        self.key.finished(self, kind, latency, tag, retry_after, sent_in_flight)

    def stated(self, rate: float, source: str = "the server's stated cap") -> None:
        super().stated(rate, source)
        self.key.stated(rate)

    def _taken_one(self, now: float, sent_at: float, level: int) -> None:
        if not self.key.shared:  # (once shared, the key's limiter decides: it hears this in finish)
            super()._taken_one(now, sent_at, level)

    def _refusal(self, now: float, sent_at: float, level: int, tag: str, retry_after: float | None) -> None:
        if not self.key.shared:
            super()._refusal(now, sent_at, level, tag, retry_after)

    def _cut(self, now: float, ceiling: float, reason: str) -> None:
        if math.isinf(self._r_ceiling):  # the first cut: at least an equal share of what the key took (a model
            ceiling = max(ceiling, self.key.share(now))  # refused because another took the burst is no crawl)
        super()._cut(now, ceiling, reason)

    def stats(self) -> dict:
        return {**super().stats(), "key_shared": self.key.shared}


class KeyCoordinator:
    """The shared view of the models of one run on one key; see the module doc."""

    ACTIVE_S = 1.0  # a member that asked to send within this many seconds (or has sends out) holds a slice

    def __init__(self):
        self.members: list[KeyMember] = []  # the limiters of the run's models, in the order they joined
        self.limiter = None  # the key as one sender (made at the first send, when every member has joined)
        self.shared = False  # the cap is the key's: every member sends through `limiter`
        self._levels: dict = {}  # (member, its level at a send) -> the key's levels of those sends, oldest first
        self._next: dict = {}  # member -> when its slice of the key's pace lets it send again
        self._asked: dict = {}  # member -> when it last asked to send

    def join(self, member: KeyMember) -> None:
        self.members.append(member)

    def member(self, start: int, cap: int, clock: Callable[[], float] = time.perf_counter,
               max_rate: float | None = None) -> KeyMember:
        """A limiter for one more model of the run on this key."""
        return KeyMember(start, cap, self, clock, max_rate)

    def stated(self, rate: float) -> None:
        """A member's server stated a cap: once the cap is the key's, it is the key's (OpenRouter's free models: 20 a
        minute on the key); while each model acts alone, it is that model's (a LiteLLM deployment's rpm)."""
        if self.limiter is not None:
            self.limiter.stated(rate)

    # -- what every member reports -------------------------------------------------------------------------
    def started(self, member, now: float) -> None:
        if self.limiter is None:
            self.limiter = PacedLimiter(sum(int(m.window(now)) for m in self.members),
                                        sum(m.cap for m in self.members), clock=member.clock)
        if not self.shared and self.limiter.refused:  # the key's pause ends as a member's would: a send of it not
            self.limiter.wait_time(now)  # refused in time was taken (the key's own gate is not asked until shared)
        level = self.limiter.start(now)
        self._levels.setdefault((member, member.in_flight + 1), []).append(level)
        if self.shared:
            rate = member.rate(now)  # its slice of the key's pace (and at most its max_rate)
            self._next[member] = max(self._next.get(member, now), now) + (0.0 if math.isinf(rate) else 1.0 / rate)

    def finished(self, member, kind, latency, tag, retry_after, level) -> None:
        """After the member heard the answer (its in-flight count is down)."""
        if self.limiter is None:
            return
        sent = self._levels.get((member, level))
        self.limiter.finish(kind, latency, tag, retry_after, sent.pop(0) if sent else None)
        if kind == "rate" and not self.shared and (names_quota(tag) or self.starved() or
                                                   self.spent_together(member.clock())):
            self.shared = True
            for m in self.members:
                m._record(m.clock(), "the key's cap: one sender, an equal slice each")
            self.limiter.subscribe(self._told)

    def _told(self, change) -> None:
        """The key's limiter changed: every member's history says so (with its own slice)."""
        for m in self.members:
            m._record(m.clock(), f"key: {change.reason}")

    def starved(self) -> bool:
        """A member was refused and took nothing, with nothing out, while another took (or has sends out)."""
        return any(m.throttles and not m._taken and not m.in_flight for m in self.members) and \
            any(m._taken or m.in_flight for m in self.members)

    def _sent_lately(self, now: float) -> list:
        """The members that sent within the last PROBE_MAX_S seconds."""
        return [m for m in self.members if m._sends and m._sends[-1] > now - m.PROBE_MAX_S]

    def spent_together(self, now: float) -> bool:
        """Two members or more are paused after a stretch of sends taken, with a probe of each pause refused (a bucket
        refills by the first probe; a quota does not), and every other member that sent lately was refused since,
        with nothing taken (at a slow pace, too few sends to pause): one quota, the key's, is spent."""
        live = self._sent_lately(now)
        probed = [m for m in live if m.refused and m._refused_at > m._paused_at and
                  m._open_sends - m._open_refused >= m.REFUSED]
        if len(probed) < 2:
            return False
        since = min(m._paused_at for m in probed)  # the others: refused since then, nothing taken (a slow pace)
        return all(m in probed or m._in_row and m._refused_since >= since for m in live)

    # -- the gate, once the cap is the key's -----------------------------------------------------------------
    def active(self, now: float) -> int:
        return max(1, sum(1 for m in self.members if m.in_flight or now - self._asked.get(m, -math.inf) < self.ACTIVE_S))

    def slice(self, member, now: float) -> int:
        """The member's share of the key's window."""
        return max(1, math.ceil(int(self.limiter.window(now)) / self.active(now)))

    def wait_time(self, member, now: float) -> float:
        """The member's gate: its slice of the key's window, the key's own gate (window, pause, pace: sends evenly
        spaced), then its slice of the pace. A member blocked by the others' sends looks again soon: no answer of
        its own may come to wake it (but the key's pause is waited out: a wait past max_wait_s stops the model)."""
        self._asked[member] = now
        lim = self.limiter
        again = min(0.5, max(0.01, lim._rtt / 4))
        if member.in_flight >= self.slice(member, now) and not lim.refused:
            return math.inf if member.in_flight else again
        wait = lim.wait_time(now)
        if wait > 0:
            return wait if (member.in_flight or lim.refused) and not math.isinf(wait) else min(wait, again)
        return max(0.0, self._next.get(member, now) - now)

    def share(self, now: float) -> float:
        """An equal share of what the key took over the last PROBE_MAX_S / 2 seconds (a round trip at least), over
        the members that sent lately."""
        live = self._sent_lately(now)
        if not live:
            return 0.0
        since = max(now - live[0].PROBE_MAX_S / 2, min(m._first for m in live))
        return sum(taken_since(m, since) for m in live) / max(now - since, min(m._rtt for m in live)) / len(live)
