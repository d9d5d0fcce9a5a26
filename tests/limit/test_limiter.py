"""The reference AIMD limiter, driven by a fake clock: no sleeping, fully deterministic."""
import pytest

from hotdogbench_core.limit.aimd import AIMDLimiter


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def advance(self, s):
        self.t += s


def make(start=8, cap=256):
    clock = FakeClock()
    return AIMDLimiter(start, cap, clock=clock), clock


def test_slow_start_doubles_per_window_of_successes():
    lim, clock = make(8, 256)
    for _ in range(7):
        lim.on_success()
    assert lim.limit == 8  # a window is `limit` successes
    lim.on_success()
    assert lim.limit == 16
    for _ in range(16):
        lim.on_success()
    assert lim.limit == 32
    assert [c.reason for c in lim.history] == ["slow start", "slow start"]


def test_cap_bounds_the_limit():
    lim, _ = make(8, 20)
    for _ in range(8 + 16 + 20 * 3):
        lim.on_success()
    assert lim.limit == 20
    assert max(l for _, l in lim.limit_trace) == 20


def test_throttle_cuts_to_70_percent_then_linear_increase():
    lim, clock = make(8, 256)
    for _ in range(8 + 16):
        lim.on_success()
    assert lim.limit == 32
    clock.advance(5)
    lim.on_throttle(latency=0.2)
    assert lim.limit == 22  # int(32 * 0.7) = 22.4 -> 22
    assert not lim.slow_start
    for _ in range(22):
        lim.on_success()
    assert lim.limit == 23  # +1 per window after the first cut


def test_one_cut_per_round_trip():
    lim, clock = make(100, 256)
    clock.advance(10)
    lim.on_throttle(latency=0.5)
    assert lim.limit == 70
    clock.advance(0.9)  # within max(1 s, latency)
    lim.on_throttle(latency=0.5)
    assert lim.limit == 70
    assert lim.throttles == 2
    clock.advance(0.2)  # 1.1 s after the cut
    lim.on_throttle(latency=0.5)
    assert lim.limit == 49
    clock.advance(1.5)  # a slow round trip widens the cooldown
    lim.on_throttle(latency=3.0)
    assert lim.limit == 49
    clock.advance(2.0)
    lim.on_throttle(latency=3.0)
    assert lim.limit == 34


def test_floor_is_one_and_transport_errors_are_neutral():
    lim, clock = make(1, 4)
    clock.advance(2)
    lim.on_throttle()
    assert lim.limit == 1
    lim.on_transport_error()
    assert lim.limit == 1 and lim.transport_errors == 1


def test_trace_times_and_observers():
    lim, clock = make(2, 256)
    seen = []
    lim.subscribe(seen.append)
    clock.advance(1.234)
    lim.on_success(); lim.on_success()
    assert lim.limit_trace == [(1.23, 4)]
    assert seen[0].limit == 4 and seen[0].reason == "slow start"


def test_feedback_kinds_follow_reference():
    lim, clock = make(10, 256)
    clock.advance(5)
    lim.feedback("failure", 0.1, "503")  # the reference cuts on every retryable status
    assert lim.limit == 7 and lim.failures == 1
    assert lim.history[-1].reason == "cut 503"


def test_bad_settings_rejected():
    with pytest.raises(ValueError, match="concurrency"):
        AIMDLimiter(0, 10)


def test_gate_never_exceeds_limit():
    lim, clock = make(3, 3)
    ks = [lim.start() for _ in range(3)]
    assert ks == [1, 2, 3] and lim.wait_time() == float("inf")  # full: wait for an answer
    clock.advance(0.01)
    lim.finish("success", 0.01, sent_in_flight=ks[0])
    assert lim.in_flight == 2 and lim.wait_time() == 0.0
