"""The default limiter: a paced send rate measured from the cap itself, under an in-flight window.

Two limits, each for the kind of cap it can see:

- a send rate R (requests per second), paced with a small burst tolerance. A rate signal (429, 402 in-flight
  budget) means the key's cap was passed; the cap is then *measured*, not guessed: the sends the server
  accepted per second while it was rejecting (every accepted send used a token) is the cap C. R is then held
  just under C (HOLD x C) and probed upward on a cubic curve (flat near C, faster beyond), as CUBIC does.
  A token bucket's burst is no guide to its rate: the first measurement starts at the first reject, so a
  slow start into a big burst does not set R to the burst's rate.
- an in-flight window W for in-flight caps. Each outcome is kept with the number in flight when it was sent.
  A reject at a level where lately more were rejected than taken says the cap is below that level: W becomes
  the number of the other requests in flight (a measurement again, not x0.7), and is probed up by one after a
  few windows of answers; the pace is then kept clear of the window. Under a rate cap, where some requests are
  rejected at every level, the window is kept WINDOW_HEADROOM above the most ever taken, so it never binds.
  The first reject of a slow start looks like an in-flight cap under a rate cap too: if the rate measurement
  after it finds the window in charge (no rate cap seen), the limiter goes unpaced with the window growing again
  until the next reject tells the two apart. Rejects of requests sent above a window that has come down since are
  old news.

Only rate signals move the limits. Failures (5xx, malformed answers) and transport errors (dropped
connections, timeouts) are noise to the limiter unless most recent outcomes fail (a failure storm), which is
then treated as a rate signal. A Retry-After pauses new sends for a while (capped: it is a statement about the
whole key, but an in-flight cap's Retry-After is only a guess), besides delaying the photo's own retry.

Every change is kept in a bounded history with its reason (observers are told), and the summary's concurrency
block gets the policy, the measured cap, both traces and the settings. The policy is synchronous and
clock-driven (wait_time/start/finish; tests drive it with a fake clock, tests/capsim.py models capped servers);
acquire/release are the async gate the runner uses, with the same interface as the reference AIMDLimiter.
"""
from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from typing import Callable

from .cap_measurement import CapMeasurement
from .aimd import Feedback, LimitChange, LimitHistory


class AdaptiveLimiter(LimitHistory):
    """Paced rate measured at the cap, plus an in-flight window; failure noise ignored. See the module doc."""

    POLICY = "adaptive"
    HOLD = 0.98  # after measuring the cap C, send at HOLD x C ...
    PROBE_MIN_S = 3.0  # ... and come back up to C after this long (at least) on a cubic curve,
    PROBE_SENDS = 100  # or after this many sends, whichever is longer: few rejects per probe
    MEASURE_MIN_S = 0.5  # a measurement of the cap lasts at least this long (with the window not full) ...
    MEASURE_SENDS = 40  # ... and until this many sends were accepted during it (or MEASURE_MAX_S passed)
    MEASURE_MAX_S = 5.0
    REMEASURE_FLOOR = 0.8  # a new measurement lowers the cap by at most this factor at once
    MEASURE_OVER = 1.1  # while measuring, send this much above the estimate: a cap is seen only while hit
    CUT = 0.97  # a probe's reject: the cap is taken to be this much under the pace that was rejected
    CUT_GRACE_S = 0.2  # rejects of requests sent this soon after a cut are still the old pace's
    CUTS_IN_ROW_S = 2.0  # cuts this close together ...
    CUTS_TO_MEASURE = 3  # ... this many times: the cap fell, measure it again
    RATE_HEADROOM = 2.0  # the probe goes past the cap, but not past this times the rate sends really went at
    PACE_BURST = 2.0  # sends that may go at once after a scheduling delay (burst tolerance of the pacer)
    GATE_RECHECK_S = 0.1  # the async gate re-reads the pace at least this often while it waits
    SLOW_START_STEP = 1  # slow start: the window grows by this per answer while full (x2 per round trip at 1)
    WINDOW_PROBE_WINDOWS = 3  # after a window cut, +1 per this many windows of successes while the window is full
    LEVELS = 256  # recent outcomes kept with the number in flight at their send
    WINDOW_HEADROOM = 1.25  # under a rate cap the window stays this far above the most in flight that was taken
    PAUSE_MAX_S = 0.5  # a Retry-After pauses new sends for at most this long (the photo's retry waits it all)
    STORM_SAMPLE = 40  # recent outcomes looked at for a failure storm
    STORM_RATIO = 0.5  # failures above this share of them are treated as a rate signal
    RATE_MIN = 0.05  # requests per second: the slowest the pacer goes
    RETRY_BASE_S = 0.1  # a retry without Retry-After waits up to this x 2**attempts: the pacer keeps the rate
    SLOT_S = 0.05  # resolution of the send log
    LOG_S = 5.0  # how far back the send log reaches

    def __init__(self, start: int, cap: int, clock: Callable[[], float] = time.perf_counter):
        if start < 1 or cap < 1:
            raise ValueError(f"concurrency must be >= 1 (start={start}, cap={cap})")
        super().__init__(clock)
        self.cap = cap
        self.window = float(min(start, cap))
        self._log_at = 2 * self.window
        self.rate = math.inf  # no pacing until the first rate signal
        self.in_flight = 0
        self.peak_in_flight = 0
        self.slow_start = True
        self.successes = 0
        self.throttles = 0
        self.failures = 0
        self.transport_errors = 0
        self.pauses = 0
        # pacing (GCRA: theoretical arrival time of the next send) and Retry-After pause
        self._tat = -math.inf
        self._pause_until = -math.inf
        # the measured cap and the probe
        self.cap_rate: float | None = None  # C, requests per second, once measured
        self._probe_t0 = 0.0  # when the current probe curve started
        self._probe_k = self.PROBE_MIN_S  # seconds from HOLD x C back up to C
        self._last_cut = -math.inf  # rejects of requests sent before this are old news
        self._cuts_in_row = 0
        self._headroom_idx, self._headroom = -1, math.inf
        self._recorded_rate = math.inf  # last rate written to the history (growth is logged in steps)
        self._m: CapMeasurement | None = None  # a measurement of the cap in progress
        self._under_window = False  # a measurement found the window, not a rate cap, in charge: unpaced
        # sends and answers per SLOT_S slot, for rates over a recent window
        self._slots: deque[list] = deque()  # [slot index, sends, answered]
        # window growth
        self._window_acc = 0
        self._outcomes: deque[bool] = deque(maxlen=self.STORM_SAMPLE)  # True = failed
        self._levels: deque[tuple[int, bool]] = deque(maxlen=self.LEVELS)  # (in flight at send, rejected?)
        self._changed: asyncio.Event | None = None

    # -- state -------------------------------------------------------------------------------------------
    @property
    def limit(self) -> int:
        return int(self.window)

    @property
    def limit_trace(self) -> list[tuple[float, int]]:
        """(seconds since start, in-flight limit) on every change, like the reference's."""
        out, last = [], None
        for c in self.history:
            if c.limit != last:
                out.append((c.t, c.limit))
                last = c.limit
        return out

    @property
    def rate_trace(self) -> list[tuple[float, float | None]]:
        """(seconds since start, paced requests per second or None for unpaced) on every recorded change."""
        return [(c.t, c.rate) for c in self.history]

    def _record(self, reason: str) -> None:
        rate = self.current_rate()
        self._recorded_rate = rate
        self._announce(int(self.window), reason, None if math.isinf(rate) else round(rate, 2))

    # -- the send rate -------------------------------------------------------------------------------------
    def current_rate(self, now: float | None = None) -> float:
        """The paced rate now: during a probe it follows the cubic curve up from HOLD x C."""
        if self.cap_rate is None or self._m is not None:
            return self.rate
        now = self.clock() if now is None else now
        dt = now - self._probe_t0 - self._probe_k
        s = (1.0 - self.HOLD) / self._probe_k ** 3
        rate = self.cap_rate * (1.0 + s * dt ** 3)
        if rate > self.cap_rate * self.RATE_HEADROOM:  # far past the cap: only as far as sends actually follow
            idx = int(now / self.SLOT_S)
            if idx != self._headroom_idx:
                self._headroom_idx = idx
                self._headroom = self.RATE_HEADROOM * max(self.cap_rate, self.send_rate(now - 1.0, now))
            rate = min(rate, self._headroom)
        return max(self.RATE_MIN, rate)

    def send_delay(self, now: float | None = None) -> float:
        """Seconds until the pacer and any Retry-After pause let the next request go (0: now)."""
        now = self.clock() if now is None else now
        rate = self.current_rate(now)
        if math.isinf(rate):
            return max(0.0, self._pause_until - now)
        # (a schedule made at a slower pace never holds a send back longer than one interval at this one)
        tat = min(self._tat, now + (1.0 + self.PACE_BURST) / rate) - self.PACE_BURST / rate
        return max(0.0, tat - now, self._pause_until - now)

    def on_send(self, now: float | None = None) -> None:
        """A request leaves now: the pacer's schedule and the send log (start() calls this)."""
        now = self.clock() if now is None else now
        rate = self.current_rate(now)
        if not math.isinf(rate):
            self._tat = max(self._tat, now - self.PACE_BURST / rate) + 1.0 / rate
        self._slot(now)[1] += 1
        if self._m is not None:
            self._m.sends += 1
        elif self.cap_rate is not None:
            rate_now = self.current_rate(now)
            if rate_now > self._recorded_rate * 1.1 or (rate_now >= self.cap_rate > self._recorded_rate):
                self._record("probe")  # log the curve's growth in steps, not on every send

    def _slot(self, t: float) -> list:
        """The send log's slot for time t (sends only go forward in time)."""
        idx = int(t / self.SLOT_S)
        slots = self._slots
        if not slots or slots[-1][0] < idx:
            slots.append([idx, 0, 0])
            while slots[0][0] < idx - self.LOG_S / self.SLOT_S:
                slots.popleft()
        return slots[-1]

    def send_rate(self, since: float, now: float, answered: bool = False) -> float:
        """Requests sent (answered=True: answered successfully) per second from `since` to now."""
        lo, column = int(since / self.SLOT_S), 2 if answered else 1
        return sum(s[column] for s in self._slots if s[0] >= lo) / max(now - since, self.SLOT_S)

    # -- the policy (synchronous, clock-driven: what the tests exercise) -----------------------------------
    def feedback(self, kind: Feedback, latency: float | None = None, tag: str = "",
                 retry_after: float | None = None, sent_in_flight: int | None = None) -> None:
        """One attempt came back; it still counts in flight (finish() counts it out after this).
        sent_in_flight: requests in flight when it was sent, itself included (default: now)."""
        now = self.clock()
        sent_at = now - (latency or 0.0)
        k = self.in_flight if sent_in_flight is None else sent_in_flight
        if self._m is not None:
            self._m.tick(now, self.in_flight >= int(self.window))
        self._levels.append((k, kind == "rate"))
        if kind in ("failure", "transport"):
            if kind == "failure":
                self.failures += 1
            else:
                self.transport_errors += 1
            self._outcomes.append(True)
            if len(self._outcomes) >= self.STORM_SAMPLE // 2 and \
                    sum(self._outcomes) > self.STORM_RATIO * len(self._outcomes):
                self._outcomes.clear()  # one storm, one signal
                self._on_reject(now, sent_at, k, "failure storm", None)
            else:
                self._grow_window()
            return
        if kind == "success":
            self.successes += 1
            self._slot(now)[2] += 1
            self._outcomes.append(False)
            self._grow_window()
            if self._m is not None:
                self.rate = self._measuring_rate(now)
                self._check_measurement(now)
            return
        self.throttles += 1
        self._on_reject(now, sent_at, k, tag or "429", retry_after)

    # -- synchronous gate (the async one below wraps it; tests drive it with a fake clock) -------------------
    def wait_time(self, now: float | None = None) -> float:
        """Seconds until a request may start: inf while the window is full, else the pacer's delay."""
        if self.in_flight >= int(self.window):
            return math.inf
        return self.send_delay(now)

    def start(self, now: float | None = None) -> int:
        """A request starts now (call when wait_time() is 0); returns the number in flight, itself included."""
        if self._m is not None:
            self._m.tick(self.clock() if now is None else now, self.in_flight >= int(self.window))
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        self.on_send(now)
        return self.in_flight

    def finish(self, kind: Feedback, latency: float | None = None, tag: str = "",
               retry_after: float | None = None, sent_in_flight: int | None = None) -> None:
        """A request came back: feedback on it, then it no longer counts in flight."""
        self.feedback(kind, latency, tag, retry_after, sent_in_flight)
        self.in_flight -= 1

    def _in_flight_evidence(self, k: int) -> bool:
        """Was a reject at k in flight an in-flight cap's? Yes if, lately, requests sent with k or more in flight
        were rejected more often than taken (a rate cap rejects a few at every level)."""
        taken = rejected = 0
        for level, was_rejected in self._levels:
            if level >= k:
                if was_rejected:
                    rejected += 1
                else:
                    taken += 1
        return rejected > taken

    def _grow_window(self) -> None:
        """A request came back while the window was full (it, not the pacer, held sends back): slow start adds
        one per such answer (doubling per round trip); later, one per WINDOW_PROBE_WINDOWS windows of them."""
        if self.in_flight < int(self.window) or self.window >= self.cap or self._m is not None:
            return  # (nor while the rate is measured: the window is not cut then either)
        if self.slow_start:
            self.window = float(min(self.cap, self.window + self.SLOW_START_STEP))
            if self.window >= self._log_at:  # log each doubling, not every step
                self._log_at = 2 * self.window
                self._record("slow start")
            return
        self._window_acc += 1
        if self._window_acc >= int(self.window) * self.WINDOW_PROBE_WINDOWS:
            self._window_acc = 0
            self.window = float(min(self.cap, self.window + 1))
            self._record("window probe")

    def _on_reject(self, now: float, sent_at: float, k: int, tag: str, retry_after: float | None) -> None:
        if retry_after is not None and retry_after > 0:
            until = now + min(retry_after, self.PAUSE_MAX_S)
            if until > self._pause_until:
                self._pause_until = until
                self.pauses += 1
        self.slow_start = False
        counted = self._m is not None and self._m.counts(sent_at)
        if counted:
            self._m.rejects += 1
        above = k > int(self.window) + 1  # sent above the window as it is now: the window cut since answered it
        evidence = 1 < k and not above and self._in_flight_evidence(k)
        if self._m is not None:  # the window is not cut while the rate is measured, but may open up
            if not evidence and not above:
                self._m.rate_rejects += counted
                self._window_room(tag)
            if counted:
                self._update_measurement(now, f"measure {tag}")
            return
        if above:
            return
        # An in-flight cap: rejected with more in flight than the server lately takes -> the window goes to the
        # number in flight besides it (a measurement, not a guess), and the pace is not to blame. The first
        # reject of a slow start looks so under a rate cap too: then the rate is measured as well.
        if evidence:
            if k - 1 < int(self.window):
                self.window = float(k - 1)
                self._window_acc = 0
                self._record(f"window {tag}")
            if self._under_window:
                return  # unpaced, the window in charge: it alone answers an in-flight cap
            if self.cap_rate is not None:
                sent = self.send_rate(now - 1.0, now, answered=True)  # (rejects come back at once: not them)
                rate = self.current_rate(now)
                clear = self.WINDOW_HEADROOM * sent
                if sent < 0.9 * rate < clear:  # the window is in charge: the pace must not come to bind too
                    self._hold(now, clear / self.HOLD, "pace clear of the window", rejected=False)
                return
        else:
            self._under_window = False  # rejected at a level the server takes: a rate cap after all
            self._window_room(tag)
        if sent_at < self._last_cut + max(self.CUT_GRACE_S, 2.0 / self.current_rate(now)):
            return  # sent at the old pace, or before the new one could show: the last cut answered it
        rate = self.current_rate(now)
        self._cuts_in_row = self._cuts_in_row + 1 if now - self._last_cut < self.CUTS_IN_ROW_S else 1
        self._last_cut = now
        if self.cap_rate is None or math.isinf(rate) or rate > 1.5 * self.cap_rate or \
                self._cuts_in_row >= self.CUTS_TO_MEASURE:
            self._start_measurement(now, tag)  # no cap known, far above it, or it fell: measure it
            return
        # a probe passed the cap (a bucket's burst hid it for a while): the cap is a little under this pace
        self._hold(now, rate * self.CUT, f"cut {tag}")

    def _window_room(self, tag: str) -> None:
        """A rate cap's reject: requests are taken at this many in flight and more; the window must not bind."""
        taken = max((level for level, rejected in self._levels if not rejected), default=0)
        roomy = min(float(self.cap), math.ceil(taken * self.WINDOW_HEADROOM))
        if roomy > self.window:
            self.window = roomy
            self._record(f"window room {tag}")

    def _start_measurement(self, now: float, tag: str) -> None:
        rate = self.current_rate(now)
        if math.isinf(rate):  # unpaced: the rate we were sending at
            rate = max(self.send_rate(now - max(self.SLOT_S * 4, 0.25), now), 1.0)
        self._m = CapMeasurement(now, rate)
        self.rate = rate
        self._tat = min(self._tat, now)
        self._record(f"measure {tag}")

    def _estimate(self, now: float) -> float:
        self._m.tick(now, self.in_flight >= int(self.window))
        return self._m.estimate(self.RATE_MIN)

    def _measuring_rate(self, now: float) -> float:
        """While measuring, send a little above the estimate: a cap is seen only while it is hit."""
        return min(self._m.prior_rate, self._estimate(now) * self.MEASURE_OVER)

    def _update_measurement(self, now: float, reason: str) -> None:
        self.rate = self._measuring_rate(now)
        self._record(reason)
        self._check_measurement(now)

    def _check_measurement(self, now: float) -> None:
        m = self._m
        if m is None:
            return
        verdict = m.verdict(now, self.MEASURE_MIN_S, self.MEASURE_SENDS, self.MEASURE_MAX_S)
        if verdict == "done":
            self._m = None
            est = m.estimate(self.RATE_MIN)
            if not m.rate_rejects and self.cap_rate is None:
                # Sending above what was taken, nothing was rejected at a level the server takes: no rate cap
                # here. The reject that started this was the window's (an in-flight cap, which the window
                # answers): pacing at what the window let through would only add a second, wrong limit.
                self.rate, self._under_window = math.inf, True
                self.slow_start = not m.rejects  # nothing rejected at all: the window may grow again
                self._record("measured: no rate cap")
                return
            reason = "measured"
            if self.cap_rate is not None and est < self.REMEASURE_FLOOR * self.cap_rate:
                # far under the cap measured before: a client starved of CPU sends little and measures little;
                # come down in steps (a cap that really fell is measured again after a few more cuts)
                est, reason = self.REMEASURE_FLOOR * self.cap_rate, "measured (stepped down)"
            self._hold(now, est, reason)
        elif verdict == "under the window":
            # The window held sends back nearly all along, so no rate cap was seen: the reject that set the
            # window (the first of a slow start, often: a rate cap's looks the same) is all there is. Unpaced
            # again, the window grows as in slow start until the next reject says which cap it is.
            self._m = None
            self.cap_rate, self.rate, self.slow_start, self._under_window = None, math.inf, True, True
            self._record("measured under the window")

    def _hold(self, now: float, c: float, reason: str, rejected: bool = True) -> None:
        """The cap is c: send at HOLD x c, back at c after the probe time, then beyond."""
        self.cap_rate = max(self.RATE_MIN, c)
        self._probe_t0 = now
        self._probe_k = max(self.PROBE_MIN_S, self.PROBE_SENDS / self.cap_rate)
        self._last_cut = now
        rate = self.current_rate(now)
        if rejected:  # the server just said no: the next send one interval on
            self._tat = now + (1.0 + self.PACE_BURST) / rate
        self._record(reason)

    # -- the gate ------------------------------------------------------------------------------------------
    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    async def acquire(self) -> int:
        """Wait for a free slot under the window and for the pacer (and any Retry-After pause); returns the
        number in flight, this request included (pass it back to release as sent_in_flight)."""
        changed = self._event()
        while (wait := self.wait_time()) > 0:
            if math.isinf(wait):
                changed.clear()
                await changed.wait()  # a request came back
            else:  # pacing; looked at again now and then, as the pace may change meanwhile
                await asyncio.sleep(min(wait, self.GATE_RECHECK_S))
        return self.start()

    async def release(self, kind: Feedback, latency: float | None = None, tag: str = "",
                      retry_after: float | None = None, sent_in_flight: int | None = None) -> None:
        self.finish(kind, latency, tag, retry_after, sent_in_flight)
        self._event().set()

    def stats(self) -> dict:
        return {"policy": self.POLICY, "final_limit": self.limit, "peak_in_flight": self.peak_in_flight,
                "throttles": self.throttles, "failures": self.failures, "transport_errors": self.transport_errors,
                "retry_after_pauses": self.pauses,
                "cap_rate_per_s": None if self.cap_rate is None else round(self.cap_rate, 3),
                "final_rate_per_s": None if math.isinf(self.current_rate()) else round(self.current_rate(), 3),
                "limit_trace": self.limit_trace, "rate_trace": self.rate_trace,
                "settings": {"hold": self.HOLD, "probe_min_s": self.PROBE_MIN_S, "probe_sends": self.PROBE_SENDS,
                             "pace_burst": self.PACE_BURST, "window_probe_windows": self.WINDOW_PROBE_WINDOWS,
                             "pause_max_s": self.PAUSE_MAX_S, "storm_ratio": self.STORM_RATIO}}
