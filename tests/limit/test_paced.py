"""The default limiter (PacedLimiter) and its key coordinator on a fake clock, against the capped-server model.

Each family of benchmarks/scenarios.py has a regression here on a fixed draw, with the thresholds it meets today
(a change that makes it worse fails). The unit tests drive the gate by hand.
"""
import math
import sys

import pytest

from support.paths import REPO
from hotdogbench_core.limit import AIMDLimiter, Limiter, PacedLimiter
from hotdogbench_core.limit.key import KeyCoordinator
from hotdogbench_core.sim.capmodel import Cap, Client, FakeClock, Server, simulate

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_families as bf  # noqa: E402
from scenarios import Setup  # noqa: E402


def make(start=8, cap=256):
    clock = FakeClock()
    return PacedLimiter(start, cap, clock=clock), clock


def one(lim, clock, kind="success", latency=0.2, retry_after=None):
    k = lim.start()
    clock.advance(latency)
    lim.finish(kind, latency, "429" if kind == "rate" else kind, retry_after, k)
    return k


# -- the interface ---------------------------------------------------------------------------------------------
def test_both_policies_implement_the_protocol():
    for lim in (PacedLimiter(8, 256, clock=FakeClock()), AIMDLimiter(8, 256, clock=FakeClock())):
        assert isinstance(lim, Limiter)
        assert not hasattr(lim, "acquire") and not hasattr(lim, "release")


def test_the_docs_design_paragraph_is_the_modules():
    # docs/limiter.md explains the limiter in the module's own paragraph: the code owns it, the page quotes it
    from hotdogbench_core.limit import paced
    docs = (REPO / "docs" / "limiter.md").read_text()
    anchor = "`--limiter adaptive` (the default) is `hotdogbench_core/limit/paced.py`, the `PacedLimiter`:"
    quoted = docs.split(anchor, 1)[1].strip().split("\n\n", 1)[0]
    assert quoted.split() == paced.__doc__.split("\n\n", 1)[1].split()


def test_slow_start_is_unpaced_and_doubles_per_round_trip():
    lim, clock = make(8, 256)
    assert lim.wait_time() == 0 and math.isinf(lim.rate())
    c = Client(lim, Server([], latency=0.1, sigma=0.0), 10_000)  # no cap: the runner refills the window at once
    simulate([c], clock, until=0.35)  # three round trips and a half
    assert lim.limit == 64 and [ch.reason for ch in lim.history] == ["slow start"] * 3
    assert math.isinf(lim.rate()) and math.isinf(lim.wait_time())  # full: wait for an answer


def test_failures_and_dropped_connections_move_nothing():
    lim, clock = make(16, 256)
    for i in range(300):
        one(lim, clock, "failure" if i % 12 == 0 else "transport" if i % 25 == 0 else "success", 0.01)
    assert lim.failures == 25 and lim.transport_errors == 11
    assert math.isinf(lim.rate()) and not any("cut" in c.reason or "window" in c.reason for c in lim.history)


def test_a_retry_after_does_not_stall_other_sends():
    # The photo that got it waits all of it (test_a_retry_after_is_waited_in_full); for the limiter it may only
    # bring a refusal's probe forward, so the other photos go on at the pace, whatever its value.
    gaps = {}
    for mode in ("none", "large", "fixed"):
        clock = FakeClock(0.0)
        cap = Cap("bucket", rate=20, burst=5, retry_after=mode, retry_after_s=30.0, large_share=0.2)
        c = Client(PacedLimiter(8, 256, clock=clock), Server([cap], latency=0.2), 600)
        simulate([c], clock, seed=3)
        first = sorted(t for t, _, _ in c.sends)[:500]  # (the last photos may only be retries, waiting out 30 s)
        gaps[mode] = max(b - a for a, b in zip(first, first[1:]))
        assert c.early_retries == 0
    assert max(gaps.values()) <= 1.0, gaps


def test_a_refusal_in_a_row_pauses_then_probes_one_at_a_time():
    lim, clock = make(8, 256)
    for _ in range(20):
        one(lim, clock)
    for _ in range(lim.REFUSED):  # sends in a row, each refused (the gate's pace respected)
        clock.advance(min(lim.wait_time(), 1.0))
        one(lim, clock, "rate", 0.001)
    assert lim.refused and 0 < lim.wait_time() <= lim.BACKOFF_MAX_S
    clock.advance(lim.wait_time())
    assert lim.wait_time() == 0
    lim.start()
    assert lim.wait_time() > 0  # one probe out: nothing else goes until it is refused or taken
    clock.advance(0.01)  # not refused within REFUSED x the refusals' latency: it was taken
    wait = lim.wait_time()
    assert not lim.refused  # the pause is over; the probe was a send of the pace: the next keeps its spacing (a
    assert 0 < wait <= 1.1 / lim.rate()  # bucket with a burst of 1 refuses a send right behind it)


def test_refusals_under_the_ceiling_are_a_fallen_cap_unless_they_come_as_noise_has():
    # under the ceiling (climbing back after a cut), the first refusal of a quiet run is a fallen cap; where 2% of
    # the sends have been refused there all along (a provider's random 429s), one more is noise and moves nothing;
    # past the ceiling one refusal is the cap either way
    for noisy in (False, True):
        lim, clock = make(8, 256)
        lim._r_ceiling, lim._r_t, lim._r_k, lim.slow_start = 50.0, clock(), 2.0, False  # just cut: 45/s, climbing
        lim._noise = 0.02 if noisy else 0.0  # the share refused under the ceiling lately
        for i in range(40):
            clock.advance(lim.wait_time())
            one(lim, clock, "rate" if i == 25 else "success", 0.001)
        cut = any(c.reason.startswith("cut") for c in lim.history)
        assert cut != noisy and (lim._r_ceiling == 50.0) == noisy, (noisy, lim._r_ceiling)
        clock.advance(10.0)  # past the ceiling now: one refusal is the cap
        one(lim, clock, "rate", 0.001)
        assert lim.history[-1].reason == "cut 429"


def test_a_provider_s_random_429s_do_not_bring_the_pace_down():
    # 1-2% of sends refused at random with 429 (no cap behind them) against a 40/s bucket: learned as noise, the
    # pace stays near the cap (without the noise they would each cut it: 21-33/s at 2%)
    import hotdogbench_core.sim.capmodel as capmodel
    for share, floor in ((0.01, 38.0), (0.02, 35.5)):  # (39.0/s at 1% while a probe taken reset the pacer)
        clock = FakeClock(0.0)
        lim = PacedLimiter(8, 256, clock=clock)
        cap = Cap("bucket", rate=40.0, burst=20.0, retry_after="fixed", retry_after_s=1.0)
        c = Client(lim, Server([cap], latency=0.3, sigma=0.3, refuse_402=share), 2400, retry_budget_s=180.0)
        tag, capmodel.IN_FLIGHT_402 = capmodel.IN_FLIGHT_402, "429"  # the model's random refusals as 429s
        try:
            simulate([c], clock, seed=6)
        finally:
            capmodel.IN_FLIGHT_402 = tag
        ok = [t for t, admitted, _ in c.sends if admitted and 10 <= t < 50]
        assert len(ok) / 40 >= floor, (share, len(ok) / 40)


def test_a_402_in_flight_budget_is_never_taken_for_a_rate():
    # OpenRouter's 402 in-flight budget counts requests out (a cost reserved per request), so it may read a window
    # but never cuts the pace: at the ceiling, where one 429 is the cap, a 402 moves nothing
    lim, clock = make(8, 256)
    lim._r_ceiling, lim._r_t, lim._r_k, lim.slow_start = 50.0, clock() - 3.0, 2.0, False  # past the ceiling
    for i in range(40):
        clock.advance(lim.wait_time())
        one(lim, clock, "success", 0.001)
    rate = lim.rate()
    k = lim.start()
    lim.finish("rate", 0.001, "402/in_flight", 1.0, k)
    assert not any(c.reason.startswith("cut") for c in lim.history) and lim.rate() >= rate
    lim.finish("rate", 0.001, "429", 1.0, lim.start())
    assert lim.history[-1].reason == "cut 429"
    # the case: 1-2% of answers a 402 in-flight budget against a 40/s cap whose 429s say Retry-After: 1
    clock = FakeClock(0.0)
    lim = PacedLimiter(8, 256, clock=clock)
    cap = Cap("bucket", rate=40.0, burst=20.0, retry_after="fixed", retry_after_s=1.0)
    c = Client(lim, Server([cap], latency=0.3, sigma=0.3, refuse_402=0.02), 2400, retry_budget_s=180.0)
    simulate([c], clock, seed=5)
    ok = [t for t, admitted, _ in c.sends if admitted and 10 <= t < 50]
    assert len(ok) / 40 >= 0.975 * 40, len(ok) / 40  # (39.9/s; 38.8/s while 402s cut the pace; the limiter of
    #                                                    2026-11-30 held 4-5/s here)
    assert c.exhausted == 0 and c.done == 2400


def spend_a_quota(lim, clock, open_s, refused_s, latency=0.2):
    """Sends taken one after another for open_s, then refused (one at least; REFUSED in a row, then the pause's
    probes) until refused_s later, then one taken (refused_s 0: none; the last sent was refused)."""
    t = clock() + open_s
    while clock() < t:
        one(lim, clock, latency=latency)
    t = clock() + refused_s
    one(lim, clock, "rate", 0.001)
    while clock() < t:
        clock.advance(min(lim.wait_time(), t - clock()) if lim.refused else 0.0)
        one(lim, clock, "rate", 0.001)
    if refused_s:
        clock.advance(lim.wait_time())
        one(lim, clock)


def test_a_spent_quota_s_next_refusal_pauses_at_once():
    # a quota spent early (refused longer than it was open) has a cycle; within QUOTA_CYCLES of them from its
    # refill, the first refusal is that quota spent again: the pause starts at once, not after REFUSED refused sends
    lim, clock = make(8, 256)
    start = clock()
    spend_a_quota(lim, clock, 4.0, 5.0)
    assert not lim.refused and lim._cycle_s == pytest.approx(clock() - start, abs=0.3)  # from the start to the refill
    refill = clock()
    throttles = lim.throttles
    spend_a_quota(lim, clock, 3.0, 0.0)  # open for 3 s, then one refusal: the pause began at it
    assert lim.refused and lim.throttles == throttles + 1
    clock.advance(lim.wait_time())
    one(lim, clock, "rate", 0.001)  # a probe of this pause refused: the quota's again, its cycle the new one
    clock.advance(lim.wait_time())
    one(lim, clock)
    assert not lim.refused and lim._cycle_s == pytest.approx(clock() - refill, abs=0.5)
    # long after the quota's cycle (steady sends for 2 cycles), a refusal is no quota's: REFUSED in a row pause
    spend_a_quota(lim, clock, 2 * lim.QUOTA_CYCLES * lim._cycle_s, 0.0)
    assert not lim.refused
    # nor a refusal above every in-flight level taken (an in-flight cap's), even on the quota's time
    lim, clock = make(8, 256)
    spend_a_quota(lim, clock, 4.0, 5.0)
    ks = [lim.start() for _ in range(3)]  # three out at once: the third is above every level taken (1)
    lim.finish("rate", 0.001, "429", None, ks[-1])
    assert not lim.refused


def test_a_quota_spent_again_is_first_probed_as_far_into_its_stretch_as_its_last_refill_came():
    # a window from the client's first request (express-rate-limit's store) refills a period after the probe that
    # started it: the pause's first probe waits as far into the open stretch as the last pause's last refused probe
    # came into its own (at most the back-off's longest step), not a back-off from the refusal (a search begun anew
    # each window, up to a back-off late: 80-89% of such a window used, found alone)
    lim, clock = make(8, 256)
    start = clock()
    spend_a_quota(lim, clock, 4.0, 5.0)
    assert lim._refill_s == pytest.approx(lim._last_refusal - start)  # from the start to the last refused probe
    due = lim._open_t + lim._refill_s
    spend_a_quota(lim, clock, 6.0, 0.0)  # open for 6 s, then one refusal: the pause began at it
    assert lim.refused and lim.wait_time() == pytest.approx(due - clock(), abs=1e-6)
    assert lim.wait_time() > lim.BACKOFF_MAX_S / 4  # (the back-off alone would probe in 0.25-1 s)
    clock.advance(lim.wait_time())
    one(lim, clock)  # taken at the refill: a spent quota's end (the pace from its cycle), not a cap passed for a
    assert not lim.refused and lim._spent_s > 0  # moment (cut to what was taken before it)


def test_refusals_in_a_row_are_of_sends_in_a_row():
    # noise refusals with successes sent between them (still in flight) are not a spent quota
    lim, clock = make(8, 256)
    for _ in range(20):
        one(lim, clock)
    lim._r_ceiling, lim._r_t, lim._r_k, lim.slow_start = 100.0, clock() - 1.0, 1.0, False
    for _ in range(4):
        ks = []
        for _ in range(10):  # ten sends out, the last refused at once: the others still in flight
            ks.append(lim.start())
            clock.advance(0.001)
        lim.finish("rate", 0.001, "429", None, ks[-1])
    assert not lim.refused


def test_the_pacer_keeps_no_slack_for_a_late_send():
    # a bucket with a burst of 1 refuses two sends closer than 1 / rate: after a late send the next waits a full
    # interval
    lim, clock = make(8, 256)
    lim._r_ceiling, lim._r_t, lim._r_k, lim.slow_start = 10.0, clock() - 1.0, 1.0, False
    lim.start()
    clock.advance(0.5)  # late
    assert lim.wait_time() == 0
    lim.start()
    assert lim.wait_time() == pytest.approx(1.0 / lim.rate(), rel=0.01)


def test_a_refusal_on_its_way_bounds_the_probe_s_growth(monkeypatch):
    # a loaded gateway's refusals take as long as its answers (LiteLLM on 2 cores: 0.4 s at 10 in flight, 2.1 s at
    # 80): gateway seed 26, a 49/s bucket at 0.7 s growing 2x per 100 in flight. A probe cycle shorter than a few
    # refusal latencies doubles the rate past the cap before the first refusal comes back.
    def probe_cycle_by_sends_only(self, per_s):
        return min(self.PROBE_MAX_S, self.PROBE_SENDS / max(per_s, 1e-3))

    ours = run_family("gateway", 26)
    monkeypatch.setattr(PacedLimiter, "_k", probe_cycle_by_sends_only)
    unbounded = run_family("gateway", 26)
    assert ours["throttled"] <= 5 and ours["util"] >= 98, ours  # 3.3%, 99.7%
    assert unbounded["throttled"] >= 20, unbounded  # 36.8%: the case this rule is for


def test_a_probe_cycle_is_at_least_a_few_refusal_latencies():
    lim, clock = make()
    lim._refusal_s, lim._cut_yet = 0.0, True  # (before a first cut, a start with no burst taken probes faster)
    assert lim._k(100.0) == pytest.approx(1.0)  # PROBE_SENDS at 100/s
    lim._refusal_s = 2.0  # a refusal takes 2 s: the rate may grow by 1 / BETA per 2 s at most
    k = lim._k(100.0)
    assert 2 ** (2 * 2.0 / k) == pytest.approx(1 / lim.BETA)


def test_a_first_in_flight_reading_takes_two_refusals_and_is_tested_again():
    lim, clock = make(8, 256)
    ks = [lim.start() for _ in range(8)]
    clock.advance(0.2)
    for k in ks[:6]:
        lim.finish("success", 0.2, "", None, k)
    lim.finish("rate", 0.001, "429", None, ks[7])  # one refusal above every level taken: noise, or a cap
    assert lim.slow_start
    lim.finish("rate", 0.001, "429", None, ks[6])  # two: a first reading ...
    assert not lim.slow_start and lim._w_ceiling == 6
    assert lim._w_k <= 0.2 + 1e-9  # ... tested again after a round trip


def test_an_in_flight_reading_paces_at_most_at_what_was_taken():
    lim, clock = make(8, 256)
    for _ in range(10):  # two at a time: 10/s taken, two in flight at most
        ks = [lim.start() for _ in range(2)]
        clock.advance(0.2)
        for k in ks:
            lim.finish("success", 0.2, "", None, k)
    one(lim, clock, "rate", 0.001)  # a rate cap: the pace is cut to about what was taken
    assert not math.isinf(lim.rate())
    one(lim, clock)  # (and taken again: the refusals below are not in a row with that one)
    clock.advance(30.0)  # nothing sent: the probe runs the pace up to twice its ceiling
    assert lim.rate() > lim.taken_rate(clock())
    ks = [lim.start() for _ in range(4)]
    clock.advance(0.001)
    lim.finish("rate", 0.001, "429", None, ks[3])
    lim.finish("rate", 0.001, "429", None, ks[2])  # two refusals above every level taken: an in-flight cap of 2
    assert lim.limit == 2
    # ... and the pace no higher than what was taken: the reading's test, a send past it, then waits its turn, where
    # a pace left above it would send it at once (a bucket with no burst refuses that, and it reads as this cap)
    assert lim.rate() <= lim.taken_rate(clock()) + 1e-9
    for k in ks[:2]:
        lim.finish("success", 0.2, "", None, k)
    clock.advance(1.0)
    one(lim, clock)  # (taken after the refusals: the next is not in a row with them)
    ceiling = lim._r_ceiling
    ks = [lim.start() for _ in range(3)]
    clock.advance(0.001)
    lim.finish("rate", 0.001, "429", None, ks[2])  # refused at the reading again: an in-flight cap, confirmed;
    assert lim.limit == 2 and lim._r_ceiling == ceiling  # the pace is left alone (brought down at every probe of
    #                                                       the window, it cost nginx's limit_conn 4 points in 100)


def test_a_level_above_the_reading_taken_now_and_then_but_refused_beyond_chance_is_the_in_flight_cap():
    # a loaded client hears answers late and counts one more in flight than the server did: the server took a send
    # at level 4 once, so 4 is no longer above every level taken; every refusal at 4 or above, more often than the
    # share of sends made there allows by chance (1 in 40), it is the cap
    lim, clock = make(8, 256)
    ks = [lim.start() for _ in range(5)]
    clock.advance(0.001)
    lim.finish("rate", 0.001, "429", None, ks[4])
    lim.finish("rate", 0.001, "429", None, ks[3])  # a first reading: 3 (one refusal at level 4 so far)
    assert lim._w_read == 3
    for k in ks[:3]:
        lim.finish("success", 0.2, "", None, k)
    clock.advance(1.0)
    one(lim, clock)
    ks = [lim.start() for _ in range(4)]
    clock.advance(0.2)
    for k in ks:  # 4 taken: one answer came in late
        lim.finish("success", 0.2, "", None, k)
    assert lim._seen == 4
    cuts = lambda: [c for c in lim.history if c.reason.startswith("cut")]

    def refused_at_4():
        clock.advance(1.0)
        one(lim, clock)
        ks = [lim.start() for _ in range(4)]
        clock.advance(0.001)
        lim.finish("rate", 0.001, "429", None, ks[3])
        for k in ks[:3]:
            lim.finish("success", 0.2, "", None, k)

    refused_at_4()  # 3 refusals, all at 4 or above, where 4 of 9 sends were: (4/9)^3 = 0.09, a rate cap's as well
    assert len(cuts()) == 1
    for _ in range(2):  # 4 of them where 5 of 14 were, (5/14)^4 = 0.016: the in-flight cap, read again (not a cut)
        refused_at_4()
        assert lim._w_read == 3 and lim.limit == 3 and len(cuts()) == 1, list(lim.history)
    ks = [lim.start() for _ in range(2)]  # refused under the reading: a rate cap's, and its pace is cut
    clock.advance(0.001)
    lim.finish("rate", 0.001, "429", None, ks[1])
    assert lim._w_read == 0 and len(cuts()) == 2


def test_an_in_flight_cap_met_by_a_loaded_client_is_held():
    # a client that hears answers 10 ms after the server let them go (a busy 2-core machine behind nginx's
    # limit_conn 3 at 0.2 s: CI measured 75% used where a quiet run gets 95%): 20 seeds, 150 photos each. Before
    # levels mostly refused were read as the cap, the worst seed held 59% (a taken level 4 made every refusal there
    # a cut of the pace); measured 2026-12-06: worst 76%, median 86%
    used = []
    for seed in range(20):
        clock = FakeClock()
        server = Server([Cap("inflight", n=3)], latency=0.2, sigma=0.3, client_lag=0.01)
        client = Client(PacedLimiter(8, 256, clock=clock), server, 150)
        wall = simulate([client], clock, seed=seed)
        used.append(150 * 0.2 * math.exp(0.3 ** 2 / 2) / 3 / wall)
        assert client.exhausted == 0 and client.rejects <= 0.1 * client.attempts
    assert min(used) >= 0.72 and sorted(used)[10] >= 0.83, sorted(used)


def test_a_bucket_with_no_burst_is_not_read_as_an_in_flight_cap():
    # `strict` seed 87: 7.3/s with no burst at 0.59 s, so about 4.3 in flight. Two sends closer than 1/7.3 s are
    # refused whatever is in flight; while an in-flight reading left the pace at the start's guess doubled (15.8/s),
    # every window probe sent its extra request 63 ms after the last, had it refused, and read an in-flight cap of 1
    # again: 22.5% of the cap for the whole run.
    r = run_family("strict", 87)
    assert r["util"] >= 68, r  # 70.7%
    history = drawn_clients("strict", 87)[0].limiter.history
    assert max(c.limit for c in history if c.t < 10) >= 4
    assert all(c.rate is None or c.rate <= 7.29 for c in history if c.reason.startswith("window 429"))


def test_refusals_closer_than_any_two_taken_do_not_read_an_in_flight_cap():
    # `strict` seed 57: 2.2/s with no burst at 0.76 s. Its refusals each came sooner after the last send taken than
    # any two taken came, as a bucket with no burst's do (an in-flight cap, or a burst, takes sends that close);
    # read as an in-flight cap of 1 at 2.2 s and 34 s, each cut the pace to what that window let through: 50.0% of
    # the cap used. Only the start's, before two sends were taken, may read one now.
    readings = [c.t for c in drawn_clients("strict", 57)[0].limiter.history if c.reason.startswith("window 429")]
    assert readings and max(readings) < 2 * 0.76, readings


def test_a_refusal_is_matched_to_its_own_send_when_its_latency_began_after_it():
    # The runner measures latency over the HTTP exchange, which begins a little after start(): a refusal's send
    # time (its answer less its latency) falls just after its own start. Taken for a send before it, every refusal
    # looked tight, a bucket with no burst's, and an in-flight cap of 3 over HTTP (tests/run/
    # test_loaded_client.py) was never read: 57.7% of it used in CI, 79% matched.
    lim, clock = make(8, 256)
    first = lim.start()
    clock.advance(0.1)
    second = lim.start()
    clock.advance(0.2)
    lim.finish("success", 0.3, sent_in_flight=first)
    lim.finish("success", 0.2, sent_in_flight=second)  # two taken 0.1 s apart
    clock.advance(0.4)
    sent, third = clock(), lim.start()  # 0.4 s after the last taken
    clock.advance(0.01)
    lim.finish("rate", 0.01 - 0.001, "429", None, third)  # its exchange began 1 ms after start()
    assert lim._refusals[-1][0] == sent  # matched to its own start
    assert lim._refused_gap(lim._refusals[-1][0]) is None  # refused wider apart than two taken: no bucket with no burst


def test_a_bursts_refusals_are_matched_each_to_a_start_of_its_own():
    # Of a burst's starts microseconds apart, each refusal's send time (its exchange began 3 ms after start()) falls
    # after the last of them. Matched all to that one, every refusal of the burst counted in the span of the last 25
    # sends, which held only the burst's last 10: CI on 2026-12-07, three models on a key-wide 12/s bucket, the key's
    # limiter read 1.1-1.7/s taken where 12/s was, cut to that, and the run took 22-25 s for 11 (four runs in five).
    lim, clock = make(24, 256)
    starts = []
    for _ in range(24):
        starts.append((clock(), lim.start()))
        clock.advance(0.0001)
    clock.advance(0.05)
    for i, (t, level) in enumerate(starts):  # the first 4 taken (a burst of 4), 20 refused
        lim.finish("success" if i < 4 else "rate", clock() - t - 0.003, "429", None, level)
    assert sorted(t for t, *_ in lim._refusals) == [t for t, _ in starts[4:]]
    for _ in range(15):  # then 15 a second, all taken
        clock.advance(1 / 15)
        level = lim.start()
        clock.advance(0.01)
        lim.finish("success", 0.01 - 0.003, sent_in_flight=level)
    assert lim.taken_rate(clock(), 25) >= 11  # the last 25 sends: the burst's last 10, refused, and 15 taken


def test_refusals_at_the_top_are_counted_by_when_they_were_sent():
    # A refusal's start here may be an earlier one than its own (4bf63e6: a start another refusal claimed is passed
    # over), so it can predate every send taken in the span. Counted by that start, the refusals at a loaded client's
    # level over an in-flight cap fell out of the span, the level read as a rate cap's and the pace was cut to 8.4/s
    # where 14/s was the cap's: tests/run/test_loaded_client.py used 0.62-0.68 of the cap in 4 of 21 runs over HTTP
    # and failed CI (0.77-0.84 in 16 of 16 counting by the send times; 10 of 10 on 65376c9, before the claims).
    from collections import deque
    lim, _ = make(8, 256)
    levels = [1, 2, 3, 1, 2, 3, 1, 2, 3, 4]  # one taken at level 4, as a late-hearing client may
    lim._taken = deque((10.0 + i / 10, lvl) for i, lvl in enumerate(levels))  # (sent, level)
    lim._refusals = deque((9.0 + i / 10, 11.0 + i / 10, 4, 10.05 + i / 10) for i in range(4))  # (start here,
    #   answered, level, sent): four refused at level 4, all started here before the first send taken
    assert lim._refused_at_the_top(4)  # 4 refusals where 5 of 13 sends were: (5/13)^4 = 0.022, under 1 in 40
    assert not lim._refused_at_the_top(3)  # where 8 of 13 were: (8/13)^4 = 0.14, a rate cap's as well
    lim._refusals.append((10.9, 11.5, 2, 10.95))  # one refused under it: a rate cap refuses at every level
    assert not lim._refused_at_the_top(4)


def drawn_clients(family, seed, ids=True):
    """One draw of a family run to its end under the default limiter, as bench_families runs it: its clients (each
    with its limiter and its sends). ids=False: the models' ids unknown (a free model behind a gateway's alias)."""
    clock = FakeClock(0.0)
    setup = bf.draw(family, seed).make()
    if not ids:
        setup.models = None
    clients = bf.make_clients("adaptive", setup, clock)
    simulate(clients, clock, seed=seed, until=1500.0)
    return clients


def cut_paces(family, seed, after_s=1.0):
    """The pace right after each cut of a draw's rate (BETA x the ceiling the cut set), past its first `after_s`."""
    return [c.rate for c in drawn_clients(family, seed)[0].limiter.history if c.reason == "cut 429" and c.t > after_s]


def test_a_cut_counts_as_taken_only_sends_a_refusal_would_be_back_from():
    # A loaded gateway refuses as slowly as it answers (0.4 s): sends out for less than that are not known taken. Read
    # as taken, a pace over the cap measured itself (and a start's burst measured tens of thousands a second): cut
    # after cut of a tenth, each paid a round trip of refusals, 31% of this run refused.
    clock = FakeClock()
    lim = PacedLimiter(8, 256, clock=clock)
    server = Server([Cap("bucket", rate=100.0, burst=50.0)], latency=0.4, sigma=0.0, reject_latency=None)
    c = Client(lim, server, 3000)
    simulate([c], clock, until=60.0)
    cuts = [e.rate for e in lim.history if e.reason.startswith("cut")]
    assert cuts and max(cuts) < 1.25 * 100.0  # every cut to about what the bucket lets through
    assert sum(1 for s in c.sends if s[2]) / len(c.sends) < 0.08


def test_a_bucket_with_no_burst_is_cut_from_its_spacing():
    # `strict` seed 1: 68.9/s with no burst at 0.46 s. It refuses the first send of a probe that comes sooner than
    # 1/68.9 s after the last it took; the 25 sends taken before, over a round trip of the climb, average 61/s, so
    # cuts from what was taken set the ceiling there and the run used 76.9% of the cap (82.3% since). The two sends
    # before the refused one are 1/69 s apart: cuts from that spacing land at 0.9 x 67-69/s (from what was taken,
    # at 54-57/s).
    paces = sorted(cut_paces("strict", 1)[1:])  # (the first cut's refusal follows another: no spacing)
    assert len(paces) >= 15 and paces[len(paces) // 2] >= 0.87 * 68.9 and paces[0] >= 0.82 * 68.9, paces
    assert run_family("strict", 1)["util"] >= 81


def test_a_bucket_with_a_burst_is_not_cut_from_a_spacing():
    # `bucket` seed 25: 71.6/s with a burst of 112. Under its ceiling it saves tokens, which the probe spends: the
    # two sends before a refusal can be 1/88 s apart. A server that took two sends as close as one it refused (the
    # start's, at once) keeps a burst, and its cuts stay from what was taken: 0.9 x 74/s, not 0.9 x 88-93/s.
    paces = cut_paces("bucket", 25)
    assert len(paces) >= 20 and max(paces) <= 71.6, paces


def test_a_start_that_met_a_bucket_with_no_burst_climbs_per_round_trip():
    # `strict` seed 8: 79.3/s with no burst at 0.22 s. Its start's 8 sends at once get one answer: read as a spent
    # quota, a pace of a few per second. Climbing from there on the usual cycle (6 s, then doubling every 3 s) the
    # pace reached 90% of the cap at 10.2 s (the run used 81.5%); doubling per round trip until the first cut, at
    # 3.7 s (91.1%). The first cut then lands where the cap is.
    history = drawn_clients("strict", 8)[0].limiter.history
    reached = next(c.t for c in history if c.rate and c.rate >= 0.9 * 79.3)
    first_cut = next(c for c in history if c.reason.startswith("cut"))
    assert reached <= 5.0 and first_cut.rate >= 0.85 * 79.3, (reached, first_cut)


def test_the_quick_climbs_new_ceilings_wait_for_the_last_round_trip():
    # Past twice its ceiling, the quick climb takes a new ceiling only once the server took the old one. `strict`
    # seed 28, 95.1/s with no burst at 1.34 s: over the last 100 sends, most of them from the climb's slower past, the
    # pace sat at each doubling 1.3-1.6 s and reached 90% of the cap at 13.5 s (83.5% used); over the last 25, at
    # 10.1 s. `strict` seed 93, 57.7/s at 1.19 s: 25 sends at 5/s span four round trips, so over the last 25 the pace
    # doubled every 2.4-2.9 s and reached 90% at 11.4 s (85.9% used); over the last round trip, at 7.6 s
    for seed, cap, by in [(28, 95.1, 11.5), (93, 57.7, 9.0)]:
        history = drawn_clients("strict", seed)[0].limiter.history
        reached = next(c.t for c in history if c.rate and c.rate >= 0.9 * cap)
        assert reached <= by, (seed, reached)


def test_a_bucket_with_no_burst_is_cut_from_the_refused_sends_spacing():
    # `strict` seed 49: 14.5/s with no burst at 0.86 s. The quick climb's first refused send went 1/15.8 s after the
    # last send taken: the cap is under 15.8/s, and the cut is from there (14.2/s), where what the last 25 sends took,
    # the start's among them, was 5.5/s (the cut to 4.95/s took 10 s to climb back: 80.2% used, 93.7% now)
    first_cut = next(c for c in drawn_clients("strict", 49)[0].limiter.history if c.reason.startswith("cut"))
    assert 0.85 * 14.5 <= first_cut.rate <= 14.5, first_cut


def test_two_sends_taken_at_once_end_the_quick_climb():
    # A bucket with no burst never takes two sends at once; a server that took two at once keeps a burst (or caps
    # what is in flight), and the start's climb goes back to the usual cycle from where its ceiling is
    lim, clock = make(8, 256)
    ks = [lim.start() for _ in range(4)]
    clock.advance(0.001)
    for k in ks[2:]:
        lim.finish("rate", 0.001, "429", None, k)  # two of the four refused at once
    assert lim._no_burst
    clock.advance(0.3)
    lim.finish("success", 0.301, "", None, ks[0])
    assert lim._no_burst  # one taken: still what a bucket with no burst does
    lim.finish("success", 0.301, "", None, ks[1])  # a second one taken, sent at the same instant
    assert not lim._no_burst


def test_the_quick_climb_is_two_round_trips_until_the_first_cut():
    lim, clock = make()
    lim._refusal_s, lim._rtt = 0.0, 0.25
    assert lim._k(10.0) == pytest.approx(0.5)  # no burst seen, no cut yet: two round trips
    lim._cut_yet = True
    assert lim._k(10.0) == pytest.approx(6.0)  # 60 sends in PROBE_MAX_S
    lim._cut_yet, lim._taken_apart = False, 0.0  # (two taken at once: a burst)
    assert lim._k(10.0) == pytest.approx(6.0)


def test_a_round_trip_is_the_answers_smoothed_latency():
    # One slow answer from a lognormal tail (2.8 s where they take 1.3 s) set the quick climb's cycle to 5.6 s, and
    # the pace doubled every 2.8 s (`strict` seed 88: 90% of its 84.9/s cap at 13.9 s, 84.1% used; 8.5 s, 91.6% now)
    lim, clock = make()
    for _ in range(10):
        one(lim, clock, latency=1.3)
    assert lim._rtt == pytest.approx(1.3)
    one(lim, clock, latency=2.8)
    assert lim._rtt == pytest.approx(1.3 + 1.5 / 8)
    lim._refusal_s = 0.0
    assert lim._k(10.0) < 3.0  # two round trips of about 1.5 s (5.6 s while the latest answer was one)
    history = drawn_clients("strict", 88)[0].limiter.history
    assert next(c.t for c in history if c.rate and c.rate >= 0.9 * 84.9) <= 11.0


def test_a_hint_brings_a_probe_forward_until_one_it_timed_is_refused():
    lim, clock = make(8, 256)
    for _ in range(20):
        one(lim, clock)
    for _ in range(lim.REFUSED):
        clock.advance(min(lim.wait_time(), 1.0))
        one(lim, clock, "rate", 0.001, 0.05)  # a fixed small Retry-After, whatever the real wait
    assert lim.wait_time() == pytest.approx(0.05, abs=0.002)  # trusted first: an exact reset hint finds the refill
    clock.advance(lim.wait_time())
    one(lim, clock, "rate", 0.001, 0.05)  # its probe refused, and the hint does not count down: it was wrong
    assert lim.wait_time() > 0.05 + 0.01
    for _ in range(3):  # taken again, then a new pause: the hint is not trusted again
        clock.advance(lim.wait_time())
        one(lim, clock)
    for _ in range(lim.REFUSED):
        clock.advance(lim.wait_time())
        one(lim, clock, "rate", 0.001, 0.05)
    assert lim.refused and lim.wait_time() > 0.05 + 0.01


def test_history_is_bounded_observed_and_reported():
    lim, clock = make(8, 256)
    seen = []
    lim.subscribe(seen.append)
    lim.HISTORY = 5
    for _ in range(40):
        one(lim, clock, latency=0.01)
    for _ in range(3):  # (a lone refusal in slow start is noise)
        one(lim, clock, "rate", 0.001)
    assert seen and len(lim.history) <= PacedLimiter.HISTORY
    stats = lim.stats()
    assert stats["policy"] == "adaptive" and stats["limit_trace"] == lim.limit_trace
    assert {"final_limit", "peak_in_flight", "throttles", "rate_trace", "settings", "cap_rate_per_s"} <= set(stats)


def _paused_with(lim, clock, reset_at):
    """20 sends taken, then refusals in a row until paused, each naming the wait until the clock time reset_at."""
    for _ in range(20):
        one(lim, clock)
    while not lim.refused:
        clock.advance(min(lim.wait_time(), 1.0))
        one(lim, clock, "rate", 0.001, reset_at - clock())


def test_two_refusals_of_a_pause_naming_one_clock_time_wait_for_it():
    # a window's quota spent, its reset 40 s away (an exact Retry-After, or OpenRouter's X-RateLimit-Reset): the
    # first probe comes at the back-off; refused with the same reset named, the next waits for it, not 4 s
    lim, clock = make(8, 256)
    reset_at = clock() + 40.0
    _paused_with(lim, clock, reset_at)
    assert lim.wait_time() <= lim.BACKOFF_MAX_S / 4  # a first hint is no proof: the back-off's first probe
    clock.advance(lim.wait_time())
    one(lim, clock, "rate", 0.001, reset_at - clock())
    assert lim.wait_time() == pytest.approx(reset_at - clock(), abs=0.01)  # the same clock time: its reset


def _refused_once_after_20_taken(tag):
    lim, clock = make(8, 256)
    for _ in range(20):
        one(lim, clock)
    clock.advance(lim.wait_time())
    k = lim.start()
    clock.advance(0.001)
    lim.finish("rate", 0.001, tag, 37.0, k)  # refused with a Retry-After of 37 s
    return lim


def test_a_refusal_that_names_its_quota_pauses_at_once_until_its_reset():
    # OpenRouter's "free-models-per-min" 429 (tagged "429/quota" by the classifier): the quota is spent, so the
    # first refusal pauses (no REFUSED in a row) and the probe waits for the reset it gives
    lim = _refused_once_after_20_taken("429/quota")
    assert lim.refused and lim.wait_time() == pytest.approx(37.0, abs=0.01)
    lim = _refused_once_after_20_taken("429")  # the same refusal unnamed: a cut, no pause
    assert not lim.refused and lim.wait_time() < 1.0


def test_a_send_taken_at_the_instant_of_the_refused_one_ends_no_pause():
    # two sends at one instant, the first the quota's last, the second refused with its quota named (a pause to its
    # reset): the first's answer, back later, is no refill (the `hints` family's Gemini draws, seed 27: its pause
    # ended there, and the next read a spent quota over 0.04 s, 0.3/s for a 5.5/s window: 32.9% used)
    lim, clock = make(8, 256)
    for _ in range(20):
        one(lim, clock)
    first, second = lim.start(), lim.start()
    clock.advance(0.001)
    lim.finish("rate", 0.001, "429/quota", 7.0, second)
    clock.advance(0.8)
    lim.finish("success", 0.801, "success", None, first)
    assert lim.refused and lim.wait_time() == pytest.approx(7.0 - 0.8, abs=0.01)
    clock.advance(lim.wait_time())
    one(lim, clock)  # the probe at the reset, taken: the pause ends
    assert not lim.refused


def test_a_fixed_retry_after_is_no_clock_time_and_does_not_stall_the_probes():
    # "Retry-After: 30" on every refusal, whatever the real wait: each names another clock time, so the probes go
    # on at the back-off (the issue: a large fixed value stalls other sends at most about a second)
    lim, clock = make(8, 256)
    for _ in range(20):
        one(lim, clock)
    while not lim.refused:
        clock.advance(min(lim.wait_time(), 1.0))
        one(lim, clock, "rate", 0.001, 30.0)
    for _ in range(6):
        assert lim.wait_time() <= lim.BACKOFF_MAX_S
        clock.advance(lim.wait_time())
        one(lim, clock, "rate", 0.001, 30.0)


def test_a_retry_after_of_0_is_no_hint_and_the_pause_backs_off():
    # Flask-Limiter truncates its Retry-After to whole seconds: "0" for a refill under a second away. Trusted as a
    # hint, a probe went every refusal's round trip (a 1 ms one: 150 refusals in 0.3 s, `sliding` seed 71); now the
    # probes back off as with no hint, and the photo's own wait of 0 is the runner's to keep
    lim, clock = make(8, 256)
    for _ in range(20):
        one(lim, clock)
    probes = 0
    refill_at = clock() + 1.0
    while clock() < refill_at:
        clock.advance(min(lim.wait_time(), 1.0))
        if clock() >= refill_at:
            break
        one(lim, clock, "rate", 0.001, 0.0)
        probes += 1
    assert lim.refused and probes <= lim.REFUSED + 3, probes  # 3 in a row, then probes 0.25, 0.5 s apart
    one(lim, clock)  # the refill: taken
    assert not lim.refused


def test_constants_are_few():
    named = [k for k in vars(PacedLimiter) if k.isupper() and k not in ("POLICY",)]
    assert len(named) <= 8, named


# -- against modelled servers (fixed draws of the benchmark's families) ------------------------------------------
def run_family(family, seed, policy="adaptive"):
    return bf.run_draw((family, seed, policy))


# Each family's worst draw of the 100 (seeds 0-99) in docs/limiter.md, on its worst measure: the bound is today's
# figure with a small margin (a change that makes the worst draw worse fails); the target, where not met, is in the
# comment with the reason.
WORST = [
    # family, seed, util >=, throttled <=
    ("bucket", 89, 89, 4),  # 91.0% (85.0% while a bucket with no burst's refusals could read an in-flight cap;
    #                         79.9% before a refusal past the ceiling was cut from its spacing; 74.2% before a first
    #                         in-flight reading brought the pace down to what was taken; 76.0% while a spent quota
    #                         needed REFUSED sends taken first): a 14/s bucket with a burst of 1, 8 sends at once
    #                         (target 90, met)
    ("bucket", 136, 84, 6),  # 86.1% (72.0% before the spacing of a bucket with no burst; 48.9% while a spent
    #                          quota needed REFUSED sends taken first; 32.2% while a misread window's probes were
    #                          counted at its own 0.5/s): a 5.2/s bucket with a burst of 1 at 3.9 s, whose first
    #                          burst reads as a window of 2 (from seeds 100-199)
    ("noise", 101, 68, 4.5),  # 71.4% (47.1% so): 10.3/s, a window of 6 read from its first burst, then a random
    #                           402 at the window's edge
    ("bucket", 69, 98, 9.5),  # 9.4%: 5.6/s, burst 55: slow start spends the burst, ~20 refusals; target 5
    ("strict", 57, 80, 22),  # 82.3%, 21.3% (76.8%, 16.7% while the start's pace climbed on the usual cycle and
    #                          was cut from what was taken; 50.0%, 15.0% while its refusals could read an in-flight
    #                          cap): 2.2/s with no burst at 0.76 s; the start's 8 sends at once alone are 7.6%
    #                          refused, the quick climb past 2.2/s and its cuts from each refused send's spacing
    #                          (5.7, 2.7, 2.5, 2.3, 2.1/s) five more
    ("strict", 52, 76, 19),  # 78.8%, 17.5% (72.1% before its cuts were from its spacing): 2.1/s with no
    #                            burst at 0.33 s
    ("window", 82, 89, 2),  # 90.6% (99.7% with Retry-After ignored for the probes; fixed, 1.4 s: trusted once)
    ("shared", 31, 97, 4.5),  # 100%: 5 models on a 10 s window with an exact Retry-After (87.3% with it ignored)
    ("window", 2, 91, 6),  # 92.9%
    ("window", 38, 99, 7),  # 6.6% (6.0% while a long quota pause's back-off stopped at 4 s: a refill found later
    #                        once, then a stretch read as a cap passed for a moment)
    ("window", 42, 99, 6.5),  # 5.9% (7.5% before a refusal within 1.5 of a spent quota's cycles paused at once):
    #                          57 per 10 s at 5.7/s: each probe past the quota ends in a stretch of refused probes
    ("client_window", 79, 77, 6.5),  # 79.2%, 5.5%: 62 a 10 s window from the first request after the last at
    #                                  1.8 s, a fixed Retry-After of 1.5 s: each pause's back-off finds the refill
    #                                  up to 4 s late, and the window begins only then
    ("client_window", 90, 89, 10),  # 90.6%, 9.3% (92.6%, 10.3% before a quota spent again was first probed as
    #                                 far into its stretch as the last refill came): 26 a 5 s window at 1.4 s, a
    #                                 fixed Retry-After of 1.5 s
    ("sliding", 55, 52, 2.5),  # 54.5%, 1.6%: 598 a 10 s sliding-window counter at 0.24 s, exact Retry-After: past
    #                            the start's burst the counter lets the last window's weight fall away at 60/s,
    #                            and each short pause reads a spent quota of a few a second; target 90
    ("sliding", 71, 84, 2),  # 86.6%, 0.9% (22.3%, 19.2% while a Retry-After of 0 was a hint: a probe every 2 ms):
    #                          297 in any 10 s (a sliding log), Flask-Limiter's truncated Retry-After
    ("counted", 22, 58, 5.5),  # 60.4%, 4.7%: 205 a minute in a counter that counts its refusals (HAProxy's), at
    #                            0.32 s: a pause after the start's burst ends into one send taken, read as a spent
    #                            quota of 0.25/s (the floor), probed back on a 50 s scale; target 90
    ("counted", 27, 74, 11.5),  # 76.7%, 10.9%: 5 a second in such a counter, at 1.1 s; targets 90 and 5
    ("hints", 82, 98, 6),  # 100% (91.1% before a quota spent again paused at its first refusal: a 10 s window
    #                        whose refusals shortened, probed 1 s late once)
    ("hints", 60, 99, 7),  # 6.3% (8.4% before a quota spent again paused at its first refusal)
    ("inflight", 52, 98, 3),  # 99.7% (88.7% before the levels were net of refusals still out)
    ("inflight", 21, 95, 7.5),  # 97.6%, 6.2%: an in-flight cap of 5 at 1.7 s: each window probe is 1 refusal in ~20
    ("loaded", 63, 76, 4.5),  # 78.4%, 3.7% (62.3%, 2.6% while the refusals above a reading counted only at one
    #                          level: a taken send there made them a rate cap's): an in-flight cap of 5 at 0.15 s,
    #                          answers heard 28 ms late (a fifth of the latency); target 90
    ("loaded", 55, 87, 4.5),  # 89.7% (61.8% before a level above the reading, refused more than taken, read as the
    #                           cap): 5 in flight at 0.2 s, answers heard 10 ms late
    ("loaded", 0, 89, 17),  # 90.3%, 16.7% (91.3% while a round trip was the latest answer's latency): an in-flight
    #                         cap of 2 at 1.75 s: the start's 8 sends at once are 6 of 36
    ("both", 26, 77, 5),  # 79.1%, 4.1% (82.8%, 6.4% while the bucket's refusals could read an in-flight cap;
    #                       78.1%, 3.8% before its cuts were from its spacing): a 10.9/s bucket with a burst of 1 and
    #                       an in-flight cap of 41 at 4.3 s, which lets 9.5/s through: until a refusal comes at a
    #                       spacing the bucket took before, the in-flight cap's refusals are read as the bucket's
    #                       and cut the pace; targets 90 and 5
    ("both", 15, 95, 11.5),  # 10.9% (9.1% before a first in-flight reading brought the pace down to what was taken):
    #                          2.2/s and 10 in flight: 1 refusal per probe is 1 in ~12
    ("large_ra", 30, 86, 2.5),  # 88.6% (84.9% before the spacing of a bucket with no burst; 73.7% while a spent
    #                             quota needed REFUSED sends taken first): a burst-1 bucket; 22% of refusals say
    #                             wait 24 s
    ("large_ra", 62, 98, 8.5),  # 8.1%
    ("moving", 46, 85, 11.5),  # 87.4%, 8.8% (92.5%, 9.6% while a start's pace climbed on the usual cycle until
    #                            its first cut): an oscillating cap (period 17 s, to 43%), 5 of the start's 8 taken
    ("moving", 91, 85, 9.5),  # 86.9%, 6.5%: an oscillating cap (92.3%, 9.2% before a quota spent again paused at
    #                            once: its start's refusals now pause it; 84.4%, 8.5% while any refusal under the
    #                            ceiling took more than 5% of the sends since the cut to count)
    ("moving", 21, 82, 9.5),  # 84.0%: a fall to 30% and back
    ("moving", 33, 86, 12),  # 11.8%
    ("slow", 19, 85, 12),  # 87.6%, 11.5% (81.9%, 10.4% while its cuts were from what was taken; 60.2%, 9.4% before the spacing of a bucket with no burst; 50.7%,
    #                          13.4% while a probe cycle could span 6 sends): a 1.16/s bucket with a burst of 1 at
    #                          2.9 s; targets 90 and 5 (issue 10)
    ("slow", 73, 69, 30),  # 71.7%, 28.6% (66.9% before the spacing of a bucket with no burst; 54.5%, 53.7% under
    #                        the pace floor of 1 / BACKOFF_MAX_S, 0.25/s): a 0.21/s bucket with a burst of 1; the
    #                        start's 8 sends at once alone are 7 refusals of 63
    ("slow", 28, 98, 12),  # 10.3% (24.5% while a probe cycle could span 6 sends): 21 per clock minute
    ("step", 77, 88, 5),  # 90.3% (target met)
    ("latency", 25, 89, 5.5),  # 91.4%: 5.6/s at 3.6 s, latency up 51% per 100 in flight (target met)
    ("latency", 4, 96, 8.5),  # 7.6%: 5.2/s at 0.2 s
    ("free", 51, 93, 1),  # 95.8%, 0.7% (95.0%, 3.2% found from its refusals): 3 models on OpenRouter's 20 a minute
    #                       at 3.2 s, each paced at a third of 19 a minute from the first send (their ids say free)
    ("free", 1, 93, 1),  # 93.3%, 0.7%: three paces of 6.3 a minute put 21 in a clock minute now and then
    ("noise", 10, 97, 4),  # 99.1% (85.5% while its 2.0% random 402s cut the pace): 89/s, 4.6% failures
    ("noise", 57, 86, 9.5),  # 88.5%, 8.8%: 5.5/s with a burst of 2.7 and 1.6% random 402s; the start's losses
    ("noise", 15, 92, 3.5),  # 93.9% (69.6% while noise brought the ceiling down to the pace)
    ("noise", 47, 91, 3.5),  # 92.5%, 3.4% (from 77.8%, 2.3%: slow start no longer ends at one random 402)
    ("noise", 17, 96, 9.5),  # 9.2%: 6/s, 1.9% random 402s (refusals, though no longer cuts) and a fixed
    #                           Retry-After; 8.5% while 402s cut the pace (a lower pace, as many 402s per send)
    ("gateway", 11, 68, 19),  # 70.5%, 18.1% (66.2%, 17.3% before the spacing of a bucket with no burst; 69.0%
    #                           while a probe cycle could span under 12 sends): a 2.2/s bucket with a burst of 1 at
    #                           0.25 s, 87 photos; the start's 8 sends at once alone are 7.5% refused (67.6% with a
    #                           probe cycle blind to a refusal's latency)
    ("gateway", 19, 99, 21.5),  # 20.2%: 134 per clock minute, refusals saying wait 60 s
    ("own", 89, 85, 3),  # 90.3%: the worst model of 8 behind caps of their own
    ("own", 10, 97, 6.5),  # 5.6%
    ("processes", 50, 90, 7),  # 91.9% (two processes: target 85, met)
    ("processes", 67, 98, 2),  # 100.0% (87.9% before)
    ("processes", 32, 98, 9.5),  # 6.9% (8.2% before the spacing of a bucket with no burst; target 10; 11.1%
    #                              before a quota spent again paused at its first refusal, 8.6% while any refusal
    #                              under the ceiling took more than 5% of the sends since the cut to count: two
    #                              processes' refusals are each other's)
]


@pytest.mark.parametrize("family, seed, util, throttled", WORST)
def test_each_familys_worst_draw(family, seed, util, throttled):
    r = run_family(family, seed)
    assert r["util"] >= util and r["throttled"] <= throttled, r
    assert r["lost"] == 0 and r["early"] == 0  # no photo gave up, no Retry-After was cut short


def test_worst_shared_draws():
    # one key-wide cap, one process (with the coordinator): the worst draws of the 100. Fairness: seed 96 (3 models
    # on 125/s: the key's burst covered every model's first sends; now 1.00, from two members pausing while the third
    # was refused too); seeds 69, 45, 38 were 0.27-0.40 before the key's limiter. Throttled: seeds 9 and 60 (8 models
    # on a 10 s window of 120-140: 64 sends at once), 5.4% and 6.0% (14.0% and 16.3%, fairness 0.96 and 0.85, while
    # the 8 models probed the spent quota each on its own); seed 50, 15.3% (a bucket of 10/s with a burst of 5
    # against 8 first windows of 8). Two processes (no coordinator): fairness 0.81 on seeds 76 and 96 (1.00 and 0.57 before a quota spent again paused at once:
    # the process whose first sends were refused starts behind, and nothing evens the shares out in 40 s).
    for seed in (69, 45, 38):
        r = run_family("shared", seed)
        assert r["fair"] >= 0.97 and r["util"] >= 97, r
    r = run_family("shared", 96)  # (0.40 while members that slowed too much to pause hid the key's quota)
    assert r["fair"] >= 0.97 and r["util"] >= 97, r
    r = run_family("shared", 50)  # 90.3% (93.5% while a start's pace climbed on the usual cycle until its first cut)
    assert r["throttled"] <= 16.5 and r["util"] >= 89, r
    r = run_family("shared", 64)  # 90.2% (82.2% while the key's pause ended only at an answer: its cycle began late)
    assert r["util"] >= 89 and r["fair"] >= 0.97, r
    for seed, throttled in ((9, 6), (60, 7)):
        r = run_family("shared", seed)
        assert r["throttled"] <= throttled and r["util"] >= 97 and r["fair"] >= 0.97, r
    for seed in (76, 96):  # seed 76: 1.00 with the key's board (0.77 without; 0.81 while a start's pace climbed on
        #                    the usual cycle until its first cut)
        r = run_family("processes", seed)
        assert r["fair"] >= 0.75 and r["util"] >= 97, r


def test_ahead_of_the_reference_and_aws_on_a_bucket():
    ours, ref = run_family("bucket", 0), run_family("bucket", 0, "reference")
    assert ours["util"] >= ref["util"] - 1 and ours["throttled"] < ref["throttled"] / 5


def test_cap_halving_and_doubling_recovery():
    for seed in range(3):
        r = run_family("step", seed)
        assert r["down"] <= 3.0 and r["up"] <= 10.0, r
    assert run_family("step", 21)["up"] <= 9.0  # the worst doubling of the 100: 7.75 s (seed 42, 8.0 s before)
    assert run_family("step", 77)["down"] <= 3.0  # 2.0 s (3.75 s before)
    assert run_family("step", 52)["down"] <= 3.0  # 2.25 s (4.25 s before a first in-flight reading brought the pace
    #                                              down to what was taken, the worst halving of the 100 then)


def test_fixed_window_refill_is_found_and_paced():
    # 200 per clock-aligned 10 s window (20/s), no Retry-After: after the first window, whole windows are used and
    # the pace settles near 20/s instead of spending the quota at once and waiting for the boundary
    clock = FakeClock(0.0)
    lim = PacedLimiter(8, 256, clock=clock)
    cap = Cap("window", n=200, period=10.0, phase=3.0)
    c = Client(lim, Server([cap], latency=0.3, sigma=0.3), 1400)
    simulate([c], clock, seed=1)
    assert c.exhausted == 0 and c.done == 1400
    per_window = [sum(1 for t, ok, _ in c.sends if ok and 3 + 10 * k <= t < 13 + 10 * k) for k in range(1, 6)]
    assert min(per_window[3:]) >= 190 and min(per_window) >= 100, per_window  # a few windows to learn the cycle
    assert c.rejects / c.attempts <= 0.04  # (2.3%: the quota is spent before some boundaries, then probed)


def test_a_long_quota_pause_is_probed_a_few_times_and_its_refill_found():
    # 120 per clock minute (the LiteLLM case): each minute's quota runs out some 20-40 s in, and the pause until the
    # refill is probed with a back-off up to a quarter of the last such pause (at 4 s at most, 14 probes for 50 s)
    clock = FakeClock(0.0)
    lim = PacedLimiter(8, 256, clock=clock)
    c = Client(lim, Server([Cap("window", n=120, period=60.0, phase=10.0)], latency=0.3, sigma=0.3), 600)
    simulate([c], clock, seed=2)
    assert c.exhausted == 0 and c.done == 600
    minutes = range(1, 4)  # after the first: whole clock minutes, each from a refill
    taken = [sum(1 for t, ok, _ in c.sends if ok and 10 + 60 * k <= t < 70 + 60 * k) for k in minutes]
    refused = [sum(1 for t, _, r in c.sends if r and 10 + 60 * k <= t < 70 + 60 * k) for k in minutes]
    assert min(taken) >= 118, taken  # every refill found in time to spend the quota (LiteLLM: 119 of 120)
    assert max(refused) <= 6, refused  # 5, 5, 0 (8, 6, 0 while the back-off stopped at 4 s)


def test_time_budgeted_retries_outlast_a_minute_window():
    # 60 per clock minute, no Retry-After: the reference's 8 attempts give up inside the minute; a time budget
    # does not
    def go(lim, budget):
        clock = lim.clock
        c = Client(lim, Server([Cap("window", n=60, period=60.0, phase=20.0)], latency=0.2), 200,
                   retry_budget_s=budget, max_attempts=8)
        simulate([c], clock, seed=2)
        return c
    ours = go(PacedLimiter(8, 256, clock=FakeClock(0.0)), 180.0)
    ref = go(AIMDLimiter(8, 256, clock=FakeClock(0.0)), None)
    assert ours.exhausted == 0 and ours.done == 200
    assert ref.exhausted > 20


def test_a_retry_after_is_waited_in_full():
    for mode in ("exact", "large", "gateway"):
        clock = FakeClock(0.0)
        cap = Cap("bucket", rate=20, burst=5, retry_after=mode, retry_after_s=30.0, large_share=0.2)
        c = Client(PacedLimiter(8, 256, clock=clock), Server([cap], latency=0.2), 600)
        simulate([c], clock, seed=3)
        assert c.early_retries == 0 and c.exhausted == 0 and c.done == 600


def test_shared_cap_split_more_fairly_with_the_coordinator():
    # (fairness among models on one key-wide cap is not yet where issue 10 wants it: see docs/limiter.md)
    fair = {True: [], False: []}
    for seed in (2, 3, 10, 11):
        for key in (True, False):
            bf.NOKEY = not key
            try:
                r = run_family("shared", seed)
            finally:
                bf.NOKEY = False
            fair[key].append(r["fair"])
            assert r["util"] >= 85 and r["lost"] == 0
    assert sum(fair[True]) > sum(fair[False]) + 0.2, fair  # (0.57/0.59/0.62/0.24 vs 0.43/0.58/0.51/0.20)


def test_the_coordinator_does_not_slow_models_behind_caps_of_their_own():
    worse = []
    for seed in range(5):
        with_key = run_family("own", seed)
        bf.NOKEY = True
        try:
            without = run_family("own", seed)
        finally:
            bf.NOKEY = False
        worse.append(without["util"] - with_key["util"])
    assert sum(worse) / len(worse) <= 0.5 and max(worse) <= 5.0, worse  # (30 draws: mean -0.1, worst 5.1 points)


def test_a_key_s_share_counts_every_send_of_its_span():
    # The key's share (and the board's take) is what was taken over the last 3 s: at 100/s that is 300 sends, more
    # than a limiter's last PROBE_SENDS, which read 100 / 3 s = 33/s.
    from hotdogbench_core.limit.paced import taken_since
    key, clock = KeyCoordinator(), FakeClock()
    member = key.member(8, 256, clock=clock)
    for _ in range(600):
        member.start()
        clock.advance(0.01)
        member.finish("success", 0.0, "success", None, 1)
    assert taken_since(member, clock.t - 3.0) in (299, 300)  # (float steps of 0.01 s)
    assert key.share(clock.t) == pytest.approx(100.0, rel=0.02)


def test_on_a_key_the_first_cut_is_at_least_an_equal_share():
    # a model refused from its first sends (another took the key's burst) starts at an equal share of what the key
    # took, not at a probe's crawl; without a key, at what it took itself
    clock = FakeClock()
    key = KeyCoordinator()
    big, small = key.member(8, 256, clock), key.member(8, 256, clock)
    alone = PacedLimiter(8, 256, clock=clock)
    for _ in range(60):
        one(big, clock, latency=0.01)  # the key took about 100/s, all of it through `big`
    for lim in (small, alone):
        one(lim, clock, latency=0.05)
        for _ in range(1 if lim is small else 2):  # (alone, a lone refusal in slow start is noise)
            lim.finish("rate", 0.001, "429", None, lim.start())
    share = key.share(clock())
    assert 30 <= share <= 60  # (about 100/s over two models)
    assert small._r_ceiling >= share * 0.95 and alone._r_ceiling < share / 2, (small._r_ceiling, alone._r_ceiling)


def _keyed(n=2):
    clock = FakeClock()
    key = KeyCoordinator()
    return key, clock, [key.member(8, 256, clock) for _ in range(n)]


def test_the_key_s_cap_is_found_when_a_member_took_nothing_while_another_took():
    # a member refused from its first send with nothing out, while another has sends out (it took the key's burst):
    # the cap is the key's, and every member now sends through the key's limiter; refused alone (no member took
    # anything, or every member took its own burst) it is not
    for other_took in (True, False):
        key, clock, (big, small) = _keyed()
        k = big.start() if other_took else None
        one(small, clock, "rate", latency=0.001)
        assert key.shared == other_took and key.starved() == other_took
        if other_took:
            big.finish("success", 0.2, "", None, k)
            assert any("the key's cap" in c.reason for c in small.history)
            assert small.wait_time() == key.wait_time(small, clock())  # the key's gate
    key, clock, (a, b) = _keyed()
    for lim in (a, b):  # each took some of its first sends, and was refused some: caps of their own
        ks = [lim.start() for _ in range(8)]
        lim.finish("success", 0.1, "", None, ks[0])
        for k in ks[1:]:
            lim.finish("rate", 0.001, "429", None, k)
    assert not key.shared


def _spend(lim, clock, taken=8, refused=3):
    """`taken` sends answered, then `refused` in a row: the member pauses."""
    for _ in range(taken):
        one(lim, clock, latency=0.05)
    for _ in range(refused):
        one(lim, clock, "rate", latency=0.001)


def test_the_key_s_quota_is_found_when_every_member_pauses_and_its_probes_are_refused():
    # every member took its first sends (a window's quota is large), then all paused at once: while each pause's
    # probe is refused too, the quota spent is one, the key's (a window's refill does not come by the first probe)
    key, clock, members = _keyed(3)
    for m in members:
        _spend(m, clock)
    assert all(m.refused for m in members) and not key.shared  # paused, nothing probed yet: maybe buckets of their own
    for m in members[:2]:
        assert not key.shared
        clock.advance(m.wait_time())
        one(m, clock, "rate", latency=0.001)  # its probe, refused
    assert key.shared  # two members' probes refused, and the third refused since the first pause began
    assert any("the key's cap" in c.reason for c in members[0].history)
    assert key.limiter.refused  # the key's limiter heard every refused probe: the pause goes on, the key's
    # a member whose probe was taken (its bucket refilled) says the caps are their own: nothing is shared
    key, clock, members = _keyed(2)
    for m in members:
        _spend(m, clock)
    clock.advance(members[0].wait_time())
    one(members[0], clock, latency=0.05)  # taken: its pause is over
    clock.advance(members[1].wait_time())
    one(members[1], clock, "rate", latency=0.001)
    assert not members[0].refused and members[1].refused and not key.shared
    # a first window refused at the start (a small burst of its own) is no quota spent, even with every probe refused
    key, clock, members = _keyed(2)
    for m in members:
        _spend(m, clock, taken=1, refused=7)
        clock.advance(m.wait_time())
        one(m, clock, "rate", latency=0.001)
    assert not key.shared


def test_a_slow_member_refused_while_the_others_pause_does_not_hide_the_key_s_quota():
    # two members pause with their probes refused; the third sends too slowly to pause (one refusal in a row): refused
    # since the pauses began, with nothing taken, it is as spent as they are; had it taken a send since, it is not
    for slow_took in (False, True):
        key, clock, (a, b, slow) = _keyed(3)
        for m in (a, b, slow):
            _spend(m, clock, refused=0)
        for m in (a, b):
            _spend(m, clock, taken=0)
        one(slow, clock, "rate", latency=0.001)
        if slow_took:
            one(slow, clock, latency=0.05)
        for m in (a, b):
            clock.advance(m.wait_time())
            one(m, clock, "rate", latency=0.001)  # the probes, refused
        assert not slow.refused and key.shared == (not slow_took)


def test_the_key_s_pause_ends_with_its_members_before_it_decides():
    # before the key's limiter decides, its pause (it hears every member's refusals) must end when a member's would:
    # a send after it not refused in time. Waiting for an answer (a 1.7 s latency) made the key's next quota cycle
    # start late and miss what the members took (`shared` seed 64: 82.2%, 90.2% since)
    key, clock, (a, b) = _keyed(2)
    for m in (a, b):
        _spend(m, clock)
    assert key.limiter.refused and not key.shared
    clock.advance(a.wait_time())
    k = a.start()  # a probe, out (slow to answer): the window refilled, nothing is refused
    clock.advance(0.5)
    b.wait_time(), b.start()  # another send, later than REFUSED x the refusals' time
    assert not key.limiter.refused
    a.finish("success", 0.5, "", None, k)


def test_on_the_key_s_cap_each_member_sends_an_equal_slice_and_none_waits_forever():
    key, clock, members = _keyed(3)
    held = [m.start() for m in members[:2]]
    one(members[2], clock, "rate", latency=0.001)  # refused with the others' sends out: the key's cap
    assert key.shared
    for m, k in zip(members, held):
        m.finish("success", 0.1, "", None, k)
    key.limiter._cut(clock(), 30.0, "cut 429")  # the key is paced now (at 27/s, climbing back to 30/s)
    sent = {id(m): 0 for m in members}
    for _ in range(3000):  # 3 s: whoever may send, sends (answered at once: the pace is what is tested)
        for m in members:
            if m.wait_time() == 0:
                sent[id(m)] += 1
                m.finish("success", 0.0005, "", None, m.start())
        clock.advance(0.001)
    counts = sorted(sent.values())
    assert 70 <= sum(counts) <= 95 and counts[0] >= 0.9 * counts[-1], counts  # the key's pace, in equal slices
    # the key's window full of the others' sends: a member with nothing out looks again soon (no answer of its
    # own will come to wake it), one with sends out waits for them
    key.limiter.slow_start, key.limiter._window = True, 4.0  # slices of ceil(4 / 3) = 2
    for m in members[1:]:
        m.start(), m.start()
    idle, busy = members[0], members[1]
    assert idle.in_flight == 0 and 0 < idle.wait_time() < 1.0
    assert math.isinf(busy.wait_time())


def test_a_member_that_stops_asking_leaves_its_slice():
    key, clock, members = _keyed(2)
    k = members[0].start()
    one(members[1], clock, "rate", latency=0.001)
    members[0].finish("success", 0.1, "", None, k)
    for m in members:
        m.wait_time()
    assert key.active(clock()) == 2
    clock.advance(key.ACTIVE_S + 0.1)
    members[0].wait_time()  # only one still asks
    assert key.active(clock()) == 1 and members[0].rate() == key.limiter.rate() or math.isinf(key.limiter.rate())


def test_models_on_the_key_s_cap_share_it_evenly():
    # draws where each model on its own split a key-wide bucket unevenly (Jain's index 0.40, 0.46, 0.56 on the
    # limiter of 2026-12-01; the first models' sends took the key's burst and the rest started behind them)
    for seed in (38, 32, 91):
        r = run_family("shared", seed)
        assert r["fair"] >= 0.95 and r["util"] >= 90 and r["lost"] == 0, r


def throttled(clients):
    return 100 * sum(c.rejects for c in clients) / max(1, sum(c.attempts for c in clients))


def test_a_free_models_minute_quota_named_on_the_key_paces_the_key():
    # OpenRouter's free models: 20 a clock minute on the key, its 429s naming "free-models-per-min" with the count and
    # reset in the body, here behind ids the runner cannot tell free (a gateway's aliases). Read by the runner's
    # classifier, the count paces the key's limiter once the cap is found to be the key's (each model at 19 a minute
    # on its own would be 19 x k on the key: 13.0% refused for 2 and 4 models); the first refusal that names the
    # quota pauses every model at once, the key's (2.0%; 6.1% with 5.7% of it the start's sends past the quota,
    # before any refusal came back; 3.8% and 6.1% when each model paused at a refusal of its own)
    for seed, k, most in ((0, 2, 2.5), (5, 4, 6.5)):
        clients = drawn_clients("free", seed, ids=False)
        key = clients[0].limiter.key
        assert len(clients) == k and key.shared and key.limiter.max_rate == pytest.approx(19 / 60)
        assert most - 1 <= throttled(clients) <= most and sum(c.exhausted for c in clients) == 0


def test_free_models_known_by_their_ids_are_paced_under_the_key_s_minute_from_the_first_send():
    # the same draws with OpenRouter's ids ("...:free"): the 20 a minute is known before anything is sent, each model
    # paced at its slice of 19 a minute, so the start's 8 sends per model never meet the quota (2 and 4 models:
    # 0 refused, against 2.0 and 6.1% found from the refusals above)
    for seed, k in ((0, 2), (5, 4)):
        clients = drawn_clients("free", seed)
        assert len(clients) == k and throttled(clients) == 0 and not clients[0].limiter.key.shared
        for c in clients:
            assert c.limiter.max_rate == pytest.approx(19 / 60 / k)
            assert any(ch.reason.startswith("OpenRouter's free models: 20 a minute") for ch in c.limiter.history)
        r = run_family("free", seed)
        assert r["throttled"] == 0 and r["util"] >= 93 and r["fair"] >= 0.99 and r["lost"] == 0, r


def test_a_refusal_naming_its_quota_pauses_every_member_of_the_key():
    # OpenRouter counts a free model's quota per key: the first refusal that names it ("429/quota") says the cap is
    # the key's, and a member with nothing refused waits out the key's pause (to the reset the refusal named) rather
    # than spending a refusal of its own; a plain 429 says nothing about the key
    for tag, shared in (("429/quota", True), ("429", False)):
        key, clock, (a, b) = _keyed()
        ks = [a.start() for _ in range(3)]
        one(b, clock, latency=0.05)
        a.finish("rate", 0.001, tag, 42.0, ks[0])
        assert key.shared == shared
        if shared:
            assert key.limiter.refused and b.wait_time() == pytest.approx(42.0) and b.throttles == 0
            assert any("the key's cap" in c.reason for c in b.history)


def test_caps_of_their_own_are_not_taken_for_the_key_s():
    for seed in range(10):
        assert not drawn_clients("own", seed)[0].limiter.key.shared, bf.draw("own", seed).describe()


def test_a_cut_to_nothing_taken_keeps_a_probe_pace():
    # every send of a stretch refused: what was taken is 0; the pace must stay above 0 (and rate() must not recurse)
    lim, clock = make(8, 256)
    lim._cut(clock(), 0.0, "cut 429")
    clock.advance(100.0)  # long past the probe's doubling point
    assert lim.rate() >= 1 / lim.BACKOFF_MAX_S and lim.wait_time() < math.inf


def test_the_start_s_unavoidable_refusals_are_a_lower_bound_and_named_in_why():
    # k models x START sends at once against what the caps hold at t = 0: a key's bucket of burst 5 and 8 models
    # meet 64 - 5 refusals whatever the limiter; caps of their own add up; two caps on one path, the tighter counts
    def setup(caps_per_client):
        return Setup([Server(caps) for caps in caps_per_client], [100] * len(caps_per_client), caps_per_client)
    key = Cap("bucket", rate=10, burst=5.5)
    assert bf.start_refusals(setup([[key]] * 8)) == 8 * bf.START - 5
    own = [[Cap("bucket", rate=5, burst=2.5)], [Cap("bucket", rate=50, burst=25)], [Cap("inflight", n=3)]]
    assert bf.start_refusals(setup(own)) == (bf.START - 2) + 0 + (bf.START - 3)
    both = [Cap("bucket", rate=4, burst=2), Cap("inflight", n=6)]
    assert bf.start_refusals(setup([both])) == bf.START - 2
    assert bf.start_refusals(setup([[Cap("window", n=20, period=10.0)]] * 2)) == 0
    # clients paced from their first send (told their cap, or free models known by their ids) send no burst
    assert bf.start_refusals(setup([[key]] * 8), [False] * 6 + [True] * 2) == 2 * bf.START - 5
    assert bf.start_refusals(setup([[key]] * 8), [False] * 8) == 0
    # on real runs it is a lower bound (for every policy), and a draw over its target on it alone says so
    named = 0
    for seed in range(12):
        for policy in ("adaptive", "reference"):
            r = run_family("shared", seed, policy)
            assert r["throttled"] >= r["start_share"] - 1e-9, r
            over = r["start_share"] > bf.target("shared")[1]
            named += over
            assert ("the first 8 sends per model" in r["why"]) == (over and not r["why"].startswith(("a model", "15%"))), r
    assert named >= 2  # (seeds 2, 4, 11: 8 models on a bucket of 16-21/s)


def test_a_cap_under_a_request_a_second_is_probed_every_dozen_sends_or_more():
    # buckets of 0.65/s (a burst of 10), 0.3/s (3) and 0.21/s (1) at 1 s: a probe cycle of PROBE_MAX_S spans 2-4
    # sends, each probe a refusal; at least an eighth of PROBE_SENDS sends a cycle once that many were taken, and a
    # pace cut under 0.25/s where the server took something. Refused after the first minute, seeds 0-5: 13.9, 22.2
    # and 49.5% on c728fdb (the last held over its cap at the floor of 0.25/s), 5.9, 5.3 and 10.3% now
    for rate, burst, photos, most in ((0.65, 10, 200, 7.5), (0.3, 3, 90, 7.5), (0.21, 1, 60, 12.5)):
        late = []
        for seed in range(6):
            clock = FakeClock(0.0)
            c = Client(PacedLimiter(8, 256, clock=clock), Server([Cap("bucket", rate=rate, burst=burst)], latency=1.0,
                                                                 sigma=0.3), photos, retry_budget_s=3600.0)
            simulate([c], clock, seed=seed)
            assert c.exhausted == 0 and c.done == photos
            after = [refused for t, _, refused in c.sends if t > 60.0]
            late.append(100 * sum(after) / len(after))
        assert sum(late) / len(late) <= most, (rate, late)


def test_a_pace_held_at_its_max_rate_climbs_back_within_probe_max_s_after_a_cut():
    # LiteLLM's 20 a minute, stated in its answers' headers (19 a minute): a refusal cuts the pace to 0.9 of it, and
    # the climb back spans PROBE_MAX_S, not PROBE_SENDS / 8 sends (39 s at this pace): a probe can go no further than
    # the max rate, so it costs no refusal (with the long climb the first whole minute got 17 answers, not 19)
    clock = FakeClock(0.0)
    lim = PacedLimiter(8, 256, clock=clock, max_rate=19 / 60)
    for _ in range(20):
        clock.advance(lim.wait_time())
        one(lim, clock, latency=0.05)
    clock.advance(lim.wait_time())
    one(lim, clock, "rate", latency=0.05)
    assert lim.rate() < 0.95 * lim.max_rate  # cut
    clock.advance(lim.PROBE_MAX_S + 0.1)
    assert lim.rate() == pytest.approx(lim.max_rate)
