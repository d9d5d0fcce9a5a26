"""The adaptive limiter on a fake clock: no sleeping, fully deterministic. Capped servers are modelled by capsim."""
import asyncio
import math

import pytest

from hotdogbench_core.sim.capmodel import FakeClock, ReferenceGate, Server, run
from hotdogbench_core.limit.adaptive import AdaptiveLimiter
from hotdogbench_core.limit.aimd import AIMDLimiter


def make(start=8, cap=256):
    clock = FakeClock()
    return AdaptiveLimiter(start, cap, clock=clock), clock


def ask(lim, clock, kind="success", latency=0.2, retry_after=None, n=1):
    """n requests sent now that come back `latency` later with `kind`."""
    ks = [lim.start() for _ in range(n)]
    clock.advance(latency)
    for k in ks:
        lim.finish(kind, latency, "429" if kind == "rate" else kind, retry_after, k)


# -- unit behaviour -------------------------------------------------------------------------------------------
def test_slow_start_doubles_per_round_trip_and_is_unpaced():
    clock = FakeClock()
    lim = AdaptiveLimiter(8, 256, clock=clock)
    assert lim.wait_time() == 0 and math.isinf(lim.current_rate())
    run(lim, clock, Server(latency=0.1, sigma=0.0), 10_000, until=0.35)  # no cap: 3 round trips and a half
    assert 64 <= lim.limit <= 72
    assert [c.reason for c in lim.history] == ["slow start"] * len(lim.history)
    assert [c.limit for c in lim.history] == [16, 32, 64]
    assert math.isinf(lim.current_rate())


def test_window_never_exceeds_max_concurrency():
    clock = FakeClock()
    lim = AdaptiveLimiter(8, 20, clock=clock)
    out = run(lim, clock, Server(latency=0.1, sigma=0.3), 2000)
    assert lim.limit == 20 and lim.peak_in_flight == 20 and out.max_in_flight_seen == 20
    for _ in range(20 - lim.in_flight):
        lim.start()
    assert math.isinf(lim.wait_time())  # full: nothing more may start


def test_failure_noise_moves_nothing():
    lim, clock = make(16, 256)
    ask(lim, clock, n=16)
    before = (lim.limit, lim.current_rate())
    for i in range(200):  # 5% failures and 2% dropped connections among successes
        kind = "failure" if i % 20 == 0 else "transport" if i % 50 == 0 else "success"
        lim.start()
        clock.advance(0.01)
        lim.finish(kind, 0.01, kind)
    assert lim.failures == 10 and lim.transport_errors == 2
    assert math.isinf(lim.current_rate()) and lim.limit >= before[0]
    assert not any("cut" in c.reason or "measure" in c.reason for c in lim.history)


def test_a_failure_storm_is_a_rate_signal():
    lim, clock = make(16, 256)
    ask(lim, clock, n=16)
    for _ in range(lim.STORM_SAMPLE):
        ask(lim, clock, kind="failure", latency=0.05)
    assert any("failure storm" in c.reason for c in lim.history)
    assert not math.isinf(lim.current_rate())  # paced from then on


def test_reference_cuts_on_noise_adaptive_does_not():
    ref = AIMDLimiter(32, 256, clock=FakeClock())
    ref.clock.advance(5)
    ref.feedback("failure", 0.1, "503")
    assert ref.limit == 22
    lim, clock = make(32, 256)
    ask(lim, clock, kind="failure")
    assert lim.limit == 32


def test_retry_after_pauses_new_sends_briefly():
    lim, clock = make(8, 256)
    ask(lim, clock, n=8)
    ask(lim, clock, kind="rate", latency=0.001, retry_after=0.3)
    assert lim.send_delay() == pytest.approx(0.3)
    clock.advance(0.3)
    assert lim.send_delay() == 0
    ask(lim, clock, kind="rate", latency=0.001, retry_after=30.0)  # a long one pauses at most PAUSE_MAX_S
    assert lim.send_delay() == pytest.approx(lim.PAUSE_MAX_S)
    assert lim.pauses == 2


def test_floor_of_one_and_slowest_rate():
    lim, clock = make(4, 256)
    for _ in range(300):
        ask(lim, clock, kind="rate", latency=0.001)
        clock.advance(0.3)
    assert lim.limit >= 1
    assert lim.current_rate() >= lim.RATE_MIN


def test_history_is_bounded_and_observed():
    lim, clock = make(1, 100_000)
    seen = []
    lim.subscribe(seen.append)
    lim.HISTORY = 5
    for _ in range(200):
        ask(lim, clock, n=lim.limit if lim.limit < 64 else 64)
    assert seen and len(lim.history) <= AdaptiveLimiter.HISTORY
    stats = lim.stats()
    assert stats["policy"] == "adaptive" and stats["limit_trace"] == lim.limit_trace
    assert set(stats) >= {"final_limit", "peak_in_flight", "throttles", "transport_errors", "rate_trace", "settings"}


def test_async_gate_paces_and_never_exceeds_window():
    async def main():
        lim = AdaptiveLimiter(3, 3)
        lim.current_rate = lambda now=None: 200.0  # paced at 200/s, as after a measurement
        peak = active = 0
        loop = asyncio.get_running_loop()
        starts = []

        async def job():
            nonlocal peak, active
            k = await lim.acquire()
            starts.append(loop.time())
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.001)
            active -= 1
            await lim.release("success", 0.001, sent_in_flight=k)

        await asyncio.wait_for(asyncio.gather(*(job() for _ in range(30))), 10)
        return peak, lim.in_flight, starts

    peak, in_flight, starts = asyncio.run(main())
    assert peak <= 3 and in_flight == 0
    assert starts[-1] - starts[0] >= (30 - 1 - AdaptiveLimiter.PACE_BURST) / 200 * 0.9  # paced, not all at once


# -- against a modelled capped server ------------------------------------------------------------------------
def scenario(server, photos, seed=0, policy="adaptive", **kw):
    clock = FakeClock()
    lim = AdaptiveLimiter(8, 256, clock=clock) if policy == "adaptive" else \
        ReferenceGate(AIMDLimiter(8, 256, clock=clock))
    out = run(lim, clock, server, photos, seed=seed, **kw)
    return lim, out


def test_converges_under_a_rate_cap():
    lim, out = scenario(Server(rate=100, burst=10, latency=0.2, sigma=0.5), 3000)
    ideal = 3000 / 100 + 0.2
    assert ideal / out.wall >= 0.96
    assert out.rejects / out.attempts <= 0.04
    assert 90 <= lim.cap_rate <= 110  # the cap was measured, not guessed


def test_converges_under_an_in_flight_cap():
    lim, out = scenario(Server(max_in_flight=20, latency=0.2, sigma=0.2), 3000)
    assert lim.limit in (20, 21)  # the window found the cap (probing one above it now and then)
    assert out.max_in_flight_seen <= 20
    assert (3000 / (20 / 0.2) + 0.2) / out.wall >= 0.94
    assert out.rejects / out.attempts <= 0.03


def test_bucket_with_a_big_burst_is_not_mistaken_for_its_rate():
    lim, out = scenario(Server(rate=10, burst=100, latency=0.3, sigma=0.5), 400)
    assert ((400 - 100) / 10 + 0.3) / out.wall >= 0.95
    assert out.rejects / out.attempts <= 0.10
    assert 8 <= lim.cap_rate <= 12


def test_retry_after_is_never_beaten_and_throttling_stays_low():
    lim, out = scenario(Server(rate=100, burst=10, latency=0.2, sigma=0.5, retry_after="exact"), 3000)
    assert out.early_retries == 0
    assert out.rejects / out.attempts <= 0.03


def test_random_failures_do_not_collapse_the_rate():
    server = dict(rate=100, burst=10, latency=0.2, sigma=0.5, error_5xx=0.04, drop=0.02)
    lim, out = scenario(Server(**server), 3000)
    _, ref = scenario(Server(**server), 3000, policy="reference")
    ideal = 3000 / 100 + 0.2
    assert ideal / out.wall >= 0.88
    assert out.wall < 0.8 * ref.wall  # the reference cuts 30% on every 5xx


def test_recovers_after_the_cap_rises():
    clock = FakeClock()
    lim = AdaptiveLimiter(8, 256, clock=clock)
    server = Server(rate=50, burst=10, latency=0.2, sigma=0.5)
    out = run(lim, clock, server, 6000, changes={20.0: {"rate": 150}})
    assert 135 <= lim.cap_rate <= 165  # found the new cap
    # 1000 photos at 50/s, then the rest at 150/s: well under what staying at 50/s would take
    assert out.wall < 20 + (6000 - 1000) / 150 * 1.25


def test_deterministic():
    a = scenario(Server(rate=100, burst=10, latency=0.2, sigma=0.5), 1000, seed=3)[1]
    b = scenario(Server(rate=100, burst=10, latency=0.2, sigma=0.5), 1000, seed=3)[1]
    assert a == b


def test_rejects_of_requests_sent_before_a_measurement_do_not_stall_the_gate():
    # The runner times a request from a moment a little after the gate let it go, so a reject's send time can
    # look later than it was: rejects of sends the measurement never counted must not drive the pace to zero.
    lim, clock = make(16, 256)
    ks = [lim.start() for _ in range(16)]
    clock.advance(0.1)
    for k in ks:
        lim.finish("rate", 0.0, "429", None, k)  # all "sent" now, after the measurement began
    assert lim.current_rate() >= 10
    assert lim.send_delay() <= 1.0


def test_follows_a_cap_that_falls():
    clock = FakeClock()
    lim = AdaptiveLimiter(8, 256, clock=clock)
    out = run(lim, clock, Server(rate=100, burst=10, latency=0.2, sigma=0.5), 3000, changes={10.0: {"rate": 40}})
    assert 34 <= lim.cap_rate <= 46
    assert out.rejects / out.attempts <= 0.08
    assert out.wall < 10 + (3000 - 1000) / 40 * 1.1


def test_a_rate_caps_first_reject_mistaken_for_an_in_flight_cap_is_not_kept():
    # Under a 100/s bucket with a burst of 10, seed 4's slow start meets its first 429 at 19 in flight, which
    # looks like an in-flight cap of 18. The window held the rate under the cap while it was measured, so no
    # rate cap was seen; before the fix the pace was then guessed from the window and crept up for ~10 s (93.6%).
    lim, out = scenario(Server(rate=100, burst=10, latency=0.2, sigma=0.5), 2000, seed=4)
    reasons = [c.reason for c in lim.history]
    assert "measured under the window" in reasons
    after = reasons[reasons.index("measured under the window"):]
    assert "measured" in after  # the rate cap was then found and measured
    assert (2000 / 100 + 0.2) / out.wall >= 0.96
    assert 90 <= lim.cap_rate <= 110


@pytest.mark.parametrize("name, server, photos, ideal, floor", [
    ("rate", dict(rate=100, burst=10, latency=0.2, sigma=0.5), 2000, 2000 / 100 + 0.2, 0.96),
    ("retry-after", dict(rate=100, burst=10, latency=0.2, sigma=0.5, retry_after="exact"), 2000, 2000 / 100 + 0.2,
     0.96),
    ("inflight", dict(max_in_flight=20, latency=0.2, sigma=0.2), 2000, 2000 / 100 + 0.2, 0.95),
])
def test_no_seed_falls_far_short(name, server, photos, ideal, floor):
    # The worst of 10 seeds, not the median: before the fix, 3 of 30 rate-cap seeds fell under 96% (93.6% worst)
    worst = min(ideal / scenario(Server(**server), photos, seed=seed)[1].wall for seed in range(10))
    assert worst >= floor


def test_a_reject_sent_above_the_window_after_a_cut_changes_nothing_more():
    # An in-flight cap: a cut to 19 answers every reject of the requests sent at 20 and more before it.
    lim, clock = make(32, 256)
    ks = [lim.start() for _ in range(24)]
    clock.advance(0.2)
    for k in ks[:19]:
        lim.finish("success", 0.2, "", None, k)
    lim.finish("rate", 0.001, "429", None, ks[19])  # sent at 20 in flight: the cap is 19
    assert lim.limit == 19
    history = len(lim.history)
    for k in ks[20:]:  # sent at 21..24, before the cut: old news
        lim.finish("rate", 0.001, "429", None, k)
    assert lim.limit == 19 and len(lim.history) == history


@pytest.mark.parametrize("start, cap", [(16, 40), (19, 40), (19, 20)])
def test_an_in_flight_cap_met_early_is_not_paced_at_what_slow_start_sent(start, cap):
    # Slow start from near the cap meets the first 429 before it sends at full speed; the rate measurement that
    # follows then sees no rate cap (nothing rejected at a level the server takes). Before the fix it paced at
    # what slow start had sent: 76% at worst here (16 -> 40), 90% median (19 -> 40).
    worst, reasons = 1.0, set()
    for seed in range(5):
        clock = FakeClock()
        lim = AdaptiveLimiter(start, 256, clock=clock)
        out = run(lim, clock, Server(max_in_flight=cap, latency=0.2, sigma=0.2), 2000, seed=seed, max_attempts=20)
        worst = min(worst, (2000 / (cap / 0.2) + 0.2) / out.wall)
        reasons |= {c.reason for c in lim.history}
        assert out.max_in_flight_seen <= cap
    assert worst >= 0.95
    assert "measured" not in reasons  # no rate was measured: there is no rate cap


def test_the_model_can_hold_a_throttled_requests_slot_until_its_retry():
    # (the variant bench_model.py --hold-slots measures) a 429 then leaves the reference AIMD's slot taken, so the
    # next send cannot take it at once: throttling falls; every photo still settles and nothing is stuck
    server = dict(rate=100, burst=10, latency=0.2, sigma=0.5)
    _, free = scenario(Server(**server), 1000, policy="reference")
    lim, held = scenario(Server(**server), 1000, policy="reference", hold_slots=True)
    assert free.rejects / free.attempts > 0.10 and held.rejects / held.attempts < 0.05
    assert lim.lim.in_flight == 0  # every held slot was taken back by its retry
