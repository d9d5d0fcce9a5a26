"""The default limiter: a paced rate and an in-flight window, each probed on CUBIC's curve, with a refusal pause.

A cap refuses what goes over it, so the limiter runs loss-based control (AIMD, Chiu and Jain 1989: what converges to
a fair share of a shared cap) with CUBIC's probe and BBR's pacing. Sends are paced at a rate R under an in-flight
window W, which slow start doubles per round trip until a refusal cuts. A refusal near R's ceiling is the cap: R is
cut to BETA x what the server took lately (a bucket with no burst: under the refused send's spacing); refusals under
the ceiling no more often than chance allows are noise, and a 402 in-flight budget is never a rate. Refusals above
every in-flight level taken are an in-flight cap, and W is set under them. R and W climb back to their ceilings on
CUBIC's curve over a probe cycle of PROBE_SENDS sends (at most PROBE_MAX_S), then past them, to at most HEADROOM x
what was taken. REFUSED refusals in a row are a pause: one probe at a time, backing off to BACKOFF_MAX_S; a pause
that outlasted the stretch before it was a spent quota, R becomes what was taken over that cycle, and within
QUOTA_CYCLES of its refill a first refusal pauses at once, first probed as far into the stretch as the last
stretch's last refused probe came. A server's Retry-After or reset hint may bring a probe forward until a probe it
timed is refused; a reset named twice, or by the quota itself, is waited for. On a key (limit/key.py) each model's
first cut is at least an equal share of what the key took, and once the cap is seen to be the key's, the key's
limiter decides for every model. Every change goes into a bounded history with its reason; docs/limiter.md has each
rule with its reason.
"""
from __future__ import annotations

import math
import time
from bisect import bisect_right
from collections import Counter, deque
from typing import Callable

from ..protocol.answers import names_quota
from .aimd import Feedback, LimitHistory


def taken_since(limiter: PacedLimiter, since: float, until: float = math.inf) -> int:
    """How many of a limiter's sends from `since` to `until` the server took (not refused yet counts as taken)."""
    n = sum(1 for t in limiter._long_sends if since <= t <= until) - \
        sum(1 for t in limiter._long_refused if since <= t <= until)
    return max(0, n)


class PacedLimiter(LimitHistory):
    """Paced AIMD rate + AIMD in-flight window + refusal pause. See the module doc."""

    POLICY = "adaptive"
    BETA = 0.9  # cut to 90%: CUBIC's concave climb from 0.9 C back to C averages 97.5% of a hard cap
    PROBE_SENDS = 100  # a probe cycle spans about this many sends: one refusal per cycle is 1% throttled
    PROBE_MAX_S = 6.0  # ... but at most this long: a doubled cap is at 1.8x the old ceiling 6 + 2.5 s after a cut
    #                    (under 2 requests a second, a cycle spans PROBE_SENDS / 8 sends: its probe costs a refusal)
    HEADROOM = 2.0  # the probe runs at most this far past what the server was seen to take (rate and in flight)
    REFUSED = 3  # this many refusals in a row with nothing taken between: a spent quota, not a rate
    BACKOFF_MAX_S = 4.0  # while refused, probes back off from 1/16 of this up to it (or a quarter of the last spent
    #                      quota's refusal): a window's boundary is missed by at most that, a long refusal costs ~7
    QUOTA_CYCLES = 1.5  # a refusal this many of a spent quota's cycles from its refill is that quota spent again:
    #                     its next cycle, and half of one for a refill placed only to within a probe's back-off
    RETRY_BASE_S = 0.1  # a refused photo without Retry-After waits up to this x 2**attempts: the pacer keeps the rate

    _on_key = False  # a member of a key (limit/key.py: KeyMember) may be refused in slow start by the others' sends

    def __init__(self, start: int, cap: int, clock: Callable[[], float] = time.perf_counter,
                 max_rate: float | None = None):
        if start < 1 or cap < 1:
            raise ValueError(f"concurrency must be >= 1 (start={start}, cap={cap})")
        super().__init__(clock)
        self.cap = cap
        self.max_rate = self._max_told = max_rate or math.inf  # told by the user (or the server): never passed
        self.in_flight = self.peak_in_flight = self.throttles = self.failures = self.transport_errors = 0
        self.slow_start, self._window = True, float(min(start, cap))
        self._recorded = int(self._window)  # the limit the history last said
        self._w_ceiling, self._w_t = self._window, -math.inf  # the window's probe curve: ceiling, when set
        self._r_ceiling, self._r_t, self._r_k = math.inf, -math.inf, 1.0  # the rate's (inf: unpaced)
        self._tat = -math.inf  # pacer: when the next send is due
        # the last PROBE_SENDS sends, refusals (start here, answered, in-flight level, sent by its latency), takes
        self._sends: deque[float] = deque(maxlen=self.PROBE_SENDS)
        self._refusals: deque[tuple[float, float, int, float]] = deque(maxlen=self.PROBE_SENDS)
        self._taken: deque[tuple[float, int]] = deque(maxlen=self.PROBE_SENDS)  # (sent, in-flight level)
        self._seen, self._w_k = 0, self.PROBE_MAX_S  # the highest level taken; the window's probe time scale
        self._above = 0  # refusals above every level taken since the last reading: two make a first one
        self._w_read = 0.0  # the in-flight cap last read (the ceiling also rises to levels taken above it)
        self._in_row = 0  # refusals since the last request taken (of those sent after the last refusal)
        # the latest refusal's send time, its answer, when the latest run of them began; the take before a pause
        self._refused_at = self._last_refusal = self._refused_since = -math.inf
        self._taken_before = self._paused_at = math.inf
        self._probe_at, self._backoff, self._probe_sent = -math.inf, 0.0, None  # while refused
        self._reset_at, self._reset_t = -math.inf, math.inf  # the clock time a pause's last hint named, and when
        self._trust, self._hinted = True, 0.0  # hints time probes until one proves wrong; the wait the last set
        self._spent_s = self._cycle_s = self._refill_s = 0.0  # the last spent quota's refusal, cycle, and open
        #                                                      stretch to its last refused probe (0: no quota's)
        self._early = 0  # the pause began at its first refusal (1), and a probe of it was refused (2)
        self._named = False  # the latest run of refusals began with one naming its quota ("429/quota")
        self._refusal_s = 0.0  # the slowest refusal of the latest run: a probe not refused in time passed
        self._open_t, self._open_sends, self._open_refused = clock(), 0, 0  # since the last refusal ended
        self._rtt, self._first = 1.0, math.inf  # the answers' smoothed latency; the first send
        self._changed = -math.inf  # the last cut: refusals of sends from before it are old news
        self._cut_yet = False  # before a cut, a ceiling is the start's reading
        self._taken_apart, self._refused_apart = math.inf, 0.0  # see _apart
        self._noise = 0.0  # the share refused under the ceiling, over about 4 x PROBE_SENDS sends
        # over 8 x PROBE_SENDS: for a slow refusal's lag, and a key's share's 3 s at up to 266/s
        self._long_sends: deque[float] = deque(maxlen=8 * self.PROBE_SENDS)
        self._long_refused: deque[float] = deque(maxlen=8 * self.PROBE_SENDS)

    @property
    def limit(self) -> int:
        """The in-flight limit now."""
        return max(1, int(self.window()))

    refused = property(lambda self: self._in_row >= self.REFUSED)  # refused in a row: probing
    # the server never took two sends as close as one it refused (_apart); once it did, never again
    _no_burst = property(lambda self: self._taken_apart > self._refused_apart)
    _quick = property(lambda self: self._no_burst and not self._cut_yet)  # the start's quick climb (see _k)

    def taken_rate(self, now: float, last: int = PROBE_SENDS, lag: float = 0.0) -> float:
        """Requests a second the server took over the `last` sends (at most PROBE_SENDS; a round trip at least), of
        those sent `lag` s ago or more: where refusals are as slow as answers, a pace over the cap measures itself."""
        end = now - lag
        if lag and end - self._first >= self._rtt:  # (the start's sends alone are no rate)
            sends = [t for t in self._long_sends if t <= end][-self.PROBE_SENDS:]
        else:
            end, sends = now, self._sends
        if len(sends) < 2:
            return math.inf
        t0 = sends[-min(last, len(sends))]
        t0 = min(t0, max(sends[0], end - self._rtt))  # over a round trip at least (a burst is no rate) ...
        span = max(end - t0, self._rtt if end - self._first < self._rtt else 1e-3)  # (or the start's round trip)
        return taken_since(self, t0, end) / span

    def _refusal_lag(self) -> float:
        """The slowest refusal lately, if half a round trip or more (a gateway refusing through its queue; a server
        that refuses at its door tells at once: 0)."""
        lag = max((answered - sent for _, answered, _, sent in self._refusals), default=0.0)
        return lag if lag >= self._rtt / 2 else 0.0

    def _k(self, per_s: float) -> float:
        """Seconds of a probe cycle at `per_s`: PROBE_SENDS sends, at most PROBE_MAX_S; at least an eighth of them
        once that many were taken or a bucket with no burst was cut, and the pace is not near max_rate (under a
        request a second each probe costs a refusal; a pace guessed from fewer, or told, climbs at once); at least
        so long that the probe grows by no more than 1 / BETA while a slow refusal is on its way. In the start's quick
        climb (no burst taken yet), two round trips."""
        slow = (len(self._taken) >= self.PROBE_SENDS / 8 or self._no_burst and self._cut_yet) and \
            per_s < self.BETA * self.max_rate
        sends = max(min(self.PROBE_MAX_S * per_s, self.PROBE_SENDS), self.PROBE_SENDS / 8 if slow else 0)
        cycle = 2 * self._rtt if self._quick else sends / max(per_s, 1e-3)
        return max(cycle, 2 / math.log2(1 / self.BETA) * self._refusal_s)

    def _curve(self, ceiling: float, t_set: float, now: float, k: float) -> float:
        """CUBIC's probe: BETA x ceiling when set, back at the ceiling after k seconds, then ever faster."""
        x = (now - t_set) / k - 1.0
        if x <= 0:
            return ceiling * (1.0 - (1.0 - self.BETA) * min(1.0, -x) ** 3)
        return ceiling * 2.0 ** min(2.0 * x, 20.0)  # past it with nothing refused: doubling every k/2

    def rate(self, now: float | None = None) -> float:
        """The pace now, requests per second (inf: unpaced, before the first rate signal), at most max_rate."""
        return min(self._probed(self.clock() if now is None else now), self.max_rate)

    def stated(self, rate: float, source: str = "the server's stated cap") -> None:
        """The server says it allows `rate` requests per second (x-ratelimit-limit-requests), or it is known (an
        OpenRouter free model's): a max rate, unless the user gave one (a server may mean another period)."""
        if math.isinf(self._max_told) and rate != self.max_rate:
            self.max_rate = rate
            self._record(self.clock(), f"{source}: at most {rate * 60:.4g} a minute")

    def _probed(self, now: float) -> float:
        if math.isinf(self._r_ceiling):
            return math.inf
        value = self._curve(self._r_ceiling, self._r_t, now, self._r_k)
        top = self.HEADROOM * self._r_ceiling
        if value >= top:  # far past the old ceiling with nothing refused: a new ceiling, if sends followed (in the
            if self.taken_rate(now, 1 if self._quick else self.PROBE_SENDS) < self._r_ceiling:  # quick climb, over
                return top  # the last round trip: 25 sends at 5/s span four)
            self._r_k = max(self._r_k, self._k(top))  # (a quota's cycle stays the time scale)
            self._r_ceiling, self._r_t = top, now - self._r_k
            self._record(now, "probe")
            return top
        return value

    def window(self, now: float | None = None) -> float:
        """The in-flight limit now: slow start's, or the probe curve from the last in-flight ceiling."""
        if self.slow_start:
            return self._window
        now = self.clock() if now is None else now
        x = (now - self._w_t) / self._w_k - 1.0  # back at the ceiling after k, then one more, two, four ...
        value = self._curve(self._w_ceiling, self._w_t, now, self._w_k) if x <= 0 else \
            self._w_ceiling + 2.0 ** min(x, 20.0) - 1.0
        return max(1.0, min(float(self.cap), value, max(self._w_ceiling, self.HEADROOM * self._seen)))

    # -- the gate -----------------------------------------------------------------------------------------
    def wait_time(self, now: float | None = None) -> float:
        """Seconds until a request may start: 0 = now, inf = the window is full (wait for an answer)."""
        now = self.clock() if now is None else now
        if self.in_flight >= int(self.window(now)):
            return math.inf
        if self.refused:  # one probe at a time; one not refused within REFUSED x the slowest refusal was taken
            if self._probe_sent is None:
                return max(0.0, self._probe_at - now)
            passed = self._probe_sent + self.REFUSED * max(self._refusal_s, 1e-3)
            if now < passed:
                return passed - now
            self._end_refusal(now)
        rate = self.rate(now)
        return 0.0 if math.isinf(rate) else max(0.0, self._tat - now)

    def start(self, now: float | None = None) -> int:
        """A request starts now (when wait_time() is 0); returns the number in flight, itself included."""
        now = self.clock() if now is None else now
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        rate = self.rate(now)
        if not math.isinf(rate):
            self._tat = max(self._tat, now) + 1.0 / rate  # (no slack: a bucket with a burst of 1 refuses any)
        if self.refused:
            self._probe_at, self._probe_sent = math.inf, now  # until this probe is answered, or not refused
        self._sends.append(now)
        self._long_sends.append(now)
        self._noise *= 1 - 1 / (4 * self.PROBE_SENDS)
        self._first = min(self._first, now)
        self._open_sends += 1
        if self.limit != self._recorded and not self.slow_start:  # the window's probe moved it: on the trace too
            self._record(now, "window probe")
        return self.in_flight

    def finish(self, kind: Feedback, latency: float | None = None, tag: str = "", retry_after: float | None = None,
               sent_in_flight: int | None = None) -> None:
        """A request came back: `kind` is success, rate (429, 402 in-flight budget), failure or transport."""
        now = self.clock()
        level = self.in_flight if sent_in_flight is None else sent_in_flight
        self.in_flight -= 1
        sent_at = now - (latency or 0.0)  # the server's count at the send: ours, less those it had refused that
        level -= sum(1 for _, answered, _, sent in self._refusals if sent < sent_at < answered)  # were not answered
        if kind in ("failure", "transport"):
            self.failures += kind == "failure"
            self.transport_errors += kind == "transport"
        elif kind == "success":
            if latency:  # (RFC 6298's smoothed round trip, each answer weighing 1/8: one slow answer of a
                #          lognormal tail set the quick climb's cycle, 2.8 s for 1.3 s)
                self._rtt = self._rtt + (latency - self._rtt) / 8 if self._taken else latency
            self._taken_one(now, sent_at, level)
        else:
            self.throttles += 1
            self._refusal(now, sent_at, level, tag or "429", retry_after)

    # -- the policy ---------------------------------------------------------------------------------------
    def _taken_one(self, now: float, sent_at: float, level: int) -> None:
        taken = self._taken
        dropped = taken[0][1] if len(taken) == taken.maxlen else 0
        taken.append((sent_at, level))
        if level >= self._seen:
            self._seen, self._above = level, 0
            if level > self._w_ceiling and not self.slow_start:  # taken above it: no in-flight cap there
                self._w_ceiling = float(level)
        elif dropped == self._seen:
            self._seen = max(lvl for _, lvl in taken)
        if self._no_burst:
            own = self._sent(sent_at)
            self._apart(taken=min((abs(self._sent(t) - own) for t, _ in list(taken)[:-1]), default=math.inf))
        if sent_at < self._refused_at or self.refused and sent_at <= self._refused_at + 1e-6:
            return  # sent before the last refusal (in a pause, with it: no refill): says nothing about the server now
        if self.refused:
            self._end_refusal(now)
        self._in_row = 0
        if self.slow_start and self.in_flight + 1 >= self._window:  # doubling per round trip while full
            self._window = min(float(self.cap), self._window + 1)
            if self._window >= 2 * self._w_ceiling:
                self._w_ceiling = self._window
                self._record(now, "slow start")

    def _end_refusal(self, now: float) -> None:
        """The server takes again. A refusal that outlasted the stretch before it, or a probe of a pause begun at
        once, was a spent quota: the pace becomes what the server took over the cycle, the cycle the next probe's
        time scale. A shorter one was a cap passed for a moment, cut already at its first refusal."""
        refill = (self._last_refusal + now) / 2  # the refill came between the last refused probe and this one
        cycle = (self._open_sends - self._open_refused) / max(refill - self._open_t, 1e-3)
        spent = now - self._refused_since >= self._refused_since - self._open_t or self._early > 1
        self._leave_slow_start(now)
        self._spent_s, self._cycle_s = (now - self._refused_since, now - self._open_t) if spent else (0.0, 0.0)
        self._refill_s = self._last_refusal - self._open_t if spent else 0.0
        if spent:
            self._r_ceiling = min(self.rate(now), max(cycle, 1.0 / self.BACKOFF_MAX_S))
            self._r_k = max(self._k(self._r_ceiling), now - self._open_t)
            self._r_t = self._changed = now - self._r_k  # at the ceiling, not under it
        else:  # as one refusal's cut, to what was taken before the pause
            self._cut(now, min(self.rate(now), self._taken_before), "cut: refused in a row")
        self._in_row, self._probe_sent, self._early = 0, None, 0
        self._open_t, self._open_sends, self._open_refused = now, 0, 0
        self._record(now, "taken again")

    def _refusal(self, now: float, sent_at: float, level: int, tag: str, retry_after: float | None) -> None:
        old = now - self.REFUSED * max(self._refusal_s, now - sent_at)  # sends older than this were not refused
        between = sum(1 for t in self._sends if self._refused_at < t < min(sent_at, old))  # taken since the last
        own = self._sent(sent_at, refused=True)  # refused send
        self._refusals.append((own, now, level, sent_at))
        self._long_refused.append(own)
        gap = self._refused_gap(own)  # a bucket with no burst's refusal (not an in-flight cap's): its spacing
        self._open_refused += sent_at >= self._open_t
        self._refused_at, self._last_refusal = max(self._refused_at, sent_at), now
        if sent_at < self._changed and not self.refused:
            return  # sent before the last cut could show: it answered this one already
        self._in_row = self._in_row + 1 if not between or self.refused else 1  # in a row: of sends in a row
        if self._in_row == 1:
            self._refused_since = now
            self._named = names_quota(tag)  # a quota the server named: spent, whatever came before
            if level <= max(self._seen, 1) and now - self._open_t < self.QUOTA_CYCLES * self._cycle_s and \
                    gap is None or self._named:  # the quota spent again (not an in-flight cap's, nor a bucket
                self._in_row, self._early = self.REFUSED, 1  # with no burst's, which its refill takes): pause
        self._refusal_s = max(self._refusal_s, now - sent_at) if self._in_row > 1 else now - sent_at
        if self._in_row >= self.REFUSED:  # refused: probes back off, one at a time
            self._pause(now, sent_at, tag, retry_after)
        elif level > 1 and gap is None and (level > self._seen or
                                           level >= self._w_read > 1 and self._refused_at_the_top(level)):
            self._read_window(now, level, tag)  # (a reading of 1 is most often a rate cap's burst: level 2 is
            #                                     sent only by the window's probes, at the pace)
        else:
            if level < self._w_read:  # refused under an in-flight reading: the reading was (also) a rate cap's
                self._w_read, self._w_t = 0.0, now - self._w_k
                self._w_ceiling = max(self._w_ceiling, self.HEADROOM * self._seen)
            if not tag.startswith("402"):  # an in-flight budget (OpenRouter's 402): a count out, never a rate
                rate = self.rate(now)
                if not self._noise_now(rate):  # a rate cap: cut from what was taken, or from the refused send's
                    spacing = 0.0 if gap is None else 1.0 / max(gap, 1e-6)  # spacing (a bucket with no burst's rate
                    lately = self.taken_rate(now, self.PROBE_SENDS // 4, self._refusal_lag())  # is under it)
                    measure = max(lately, spacing)
                    self._cut(now, min(rate, measure), f"cut {tag}")

    def _pause(self, now: float, sent_at: float, tag: str, retry_after: float | None) -> None:
        """Refused in a row: the next probe waits a back-off (or a server's hint, while trusted)."""
        # a Retry-After of 0 is no hint: Flask-Limiter truncates whole seconds (trusted: a probe every round trip)
        first, retry_after = self._in_row == self.REFUSED, retry_after or None
        if first or sent_at >= self._refused_since:  # (refusals of sends from before the pause: no back-off)
            # after a quota's refusal of S s, the next one's probes start at S/8, back off to S/4 (or BACKOFF_MAX_S)
            first_s = min(self.BACKOFF_MAX_S / 4, max(self.BACKOFF_MAX_S / 16, self._spent_s / 8))
            longest = max(self.BACKOFF_MAX_S, self._spent_s / 4)
            self._backoff = first_s if first else min(longest, self._backoff * 2)
            self._early = 2 if self._early and not first else self._early
        counted = retry_after is not None and retry_after < self._hinted / 2  # it counts down: the probe it
        self._trust = self._trust and (first or not self._hinted or counted)  # timed was a hair early
        backoff = self._backoff
        if first and self._spent_s:  # a quota spent again refills as far into its open stretch as the last did (a
            due = min(self._open_t + self._refill_s - now, self._spent_s, longest)
            if due > backoff:  # window from a first send; at most the back-off's longest step, since a clock
                backoff, self._early = due, 2 if self._early else 0  # window's stretch may span two): a probe
                #                                                      taken then is the quota's, as a refused one
        hint = backoff if retry_after is None else max(retry_after, 1e-3)
        wait = min(backoff, hint) if self._trust else backoff
        if retry_after is not None:  # two refusals of a pause that name one clock time name a quota's reset (a
            at, spacing = now + retry_after, now - self._reset_t  # fixed value moves with the clock by the spacing;
            if spacing >= self.BACKOFF_MAX_S / 16 and abs(at - self._reset_at) < min(1.0, spacing / 4) or \
                    self._named:  # Retry-After counts whole seconds), as does a refusal that names its quota
                wait = max(wait, retry_after)
            self._reset_at, self._reset_t = at, now
        self._hinted = wait if wait < backoff else 0.0  # (a server's hint may only bring a probe forward)
        self._probe_at, self._probe_sent = now + wait, None
        if first:
            self._taken_before, self._paused_at = self.taken_rate(now, lag=self._refusal_lag()), now
            self._record(now, f"refused {tag}")

    def _read_window(self, now: float, level: int, tag: str) -> None:
        """A refusal above every level taken: two of them (or one where the window was read before) read an
        in-flight cap just under it."""
        again = not self.slow_start and self._w_read <= level - 1 <= self._w_read + 1
        self._above += 1
        if again or self._above >= 2:
            self.slow_start, self._above = False, 0
            self._window = self._w_ceiling = self._w_read = float(level - 1)
            pace = 0.0 if math.isinf(self._r_ceiling) else self._r_ceiling  # by sends, a probe costs a refusal:
            taken = self.taken_rate(now)  # the pace's, where the window holds the sends back
            self._w_k = self.PROBE_SENDS / max(taken, pace, 1e-3)
            if not again:  # a first reading (a burst may have met a rate cap) is tested again after a round trip,
                self._w_k = min(self._w_k, max(self._rtt, 1e-3))  # with the pace at most what was taken (a bucket
                if pace and 0 < taken < self.rate(now):  # with no burst refuses the test's extra send at once)
                    self._r_ceiling, self._r_k = taken, self._k(taken)
                    self._r_t = now - self._r_k  # (at that ceiling, probing past it)
            self._w_t = now - self._w_k  # at the ceiling: measured, not cut
            self._record(now, f"window {tag}")

    def _refused_at_the_top(self, level: int) -> bool:
        """Lately every refusal came at `level` in flight or above, and that more often than chance allows (1 in 40)
        at the share of sends made there: an in-flight cap refuses only at its top, a rate cap at every level. (A
        loaded client hears answers late and counts one more in flight than the server, so the top is taken too.)"""
        since = max(self._taken[0][0] if self._taken else -math.inf, self._refusals[0][3])  # (by send times)
        refused = [lvl for _, _, lvl, t in self._refusals if t >= since]
        levels = [lvl for t, lvl in self._taken if t >= since] + refused
        top = sum(1 for lvl in levels if lvl >= level) / max(len(levels), 1)
        return len(refused) >= 2 and min(refused) >= level and top ** len(refused) < 1 / 40

    def _sent(self, t: float, refused: bool = False) -> float:
        """When a request the runner measured as sent at `t` was started here: the last start at or before it (give
        or take a microsecond); a refused one, the last no other refusal was matched to (a burst's each its own)."""
        i = bisect_right(self._sends, t + 1e-6) - 1
        claimed = Counter(s for s, *_ in self._refusals) if refused else Counter()
        while i > 0 and claimed[self._sends[i]] > 0:
            claimed[self._sends[i]] -= 1
            i -= 1
        return self._sends[i] if i >= 0 else t

    def _refused_gap(self, own: float) -> float | None:
        """How soon after the last send taken a refused send went, while the server took no burst (_apart): a bucket
        with no burst refuses a send sooner than 1 / its rate after the last it took. None once it took one."""
        refused = {t for t, *_ in self._refusals}  # (own: the refused send's start, already among them)
        last_taken = next((t for t in reversed(self._sends) if t < own and t not in refused), -math.inf)
        self._apart(refused=own - last_taken if last_taken > -math.inf else 0.0)
        return own - last_taken if self._no_burst and self._taken_apart < math.inf else None

    def _apart(self, taken: float = math.inf, refused: float = 0.0) -> None:
        """The closest two sends taken and the widest spacing of a refusal from the last send taken: a bucket with
        no burst keeps the first wider. Once it is not, the start's quick climb ends where it is."""
        quick = self._quick
        self._taken_apart, self._refused_apart = min(self._taken_apart, taken), max(self._refused_apart, refused)
        if quick and not self._no_burst and not math.isinf(self._r_ceiling):
            self._r_k = max(self._r_k, self._k(self._r_ceiling))

    def _noise_now(self, rate: float) -> bool:
        """Under the ceiling (or in slow start off a key), a refusal no more than chance allows at the share refused
        there lately is noise: it moves nothing."""
        under = not math.isinf(rate) and rate < self._r_ceiling * (1 - (1 - self.BETA) / 8)
        if not under and not (self.slow_start and not self._on_key):
            return False
        self._noise += 1 / (4 * self.PROBE_SENDS)
        since = max(self._sends[0], self._changed)
        refused = sum(1 for t, *_ in self._refusals if t >= since)
        expected = self._noise * sum(1 for t in self._sends if t >= since)  # by chance, at the noise seen
        return refused <= expected + 2 * math.sqrt(expected)  # (two deviations: 1 in ~40 cuts for nothing)

    def _leave_slow_start(self, now: float) -> None:
        if self.slow_start:  # the window stays where slow start left it, at its ceiling (not cut)
            self.slow_start = False
            self._w_ceiling, self._w_t = self._window, now - self.PROBE_MAX_S

    def _cut(self, now: float, ceiling: float, reason: str) -> None:
        self._leave_slow_start(now)
        floor = 1 / (4 if ceiling > 0 else 1) / self.BACKOFF_MAX_S  # a send a back-off where nothing was taken,
        self._r_ceiling, self._r_t = max(ceiling, floor), now  # else one in four (0.2/s is paced under, not over)
        self._cut_yet = True
        self._r_k, self._changed = self._k(self._r_ceiling), now
        self._tat = now + 1.0 / self.rate(now)
        self._record(now, reason)

    def _record(self, now: float, reason: str) -> None:
        rate, self._recorded = self.rate(now), self.limit
        self._announce(self._recorded, reason, None if math.isinf(rate) else round(rate, 2))

    def stats(self) -> dict:
        if self.limit != self._recorded:  # (slow start logs its doublings only)
            self._record(self.clock(), "at the end")
        rate, fin = self.rate(), lambda x: None if math.isinf(x) else round(x, 3)
        names = [k for k in vars(PacedLimiter) if k.isupper() and k not in ("POLICY", "RETRY_BASE_S")]
        return {"policy": self.POLICY, "final_limit": self.limit, "peak_in_flight": self.peak_in_flight,
                "throttles": self.throttles, "failures": self.failures, "transport_errors": self.transport_errors,
                "cap_rate_per_s": fin(self._r_ceiling), "final_rate_per_s": fin(rate),
                "max_rate_per_s": fin(self.max_rate), "limit_trace": self.limit_trace,
                "rate_trace": self.rate_trace, "settings": {k.lower(): getattr(self, k) for k in names}}
