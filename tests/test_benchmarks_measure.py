"""The over-HTTP benchmark's measure of a fixed window: the simulator's windows are aligned to the wall clock and its
arrival times are time.monotonic(); a run starts inside a window, and only the whole windows of its span count."""
import sys
import time

import pytest

from support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_families as bf  # noqa: E402
from bench_families_http import window_utilization  # noqa: E402

from hotdogbench_core.sim.capmodel import Cap  # noqa: E402


def _arrivals(first_window: int, later: list[int], into_window_s: float = 6.0, period: float = 10.0):
    """A run whose first request comes `into_window_s` into a wall-clock window: `first_window` admitted at once,
    then `later[i]` admitted just after each following boundary. Returns the arrivals and the first boundary's
    offset from the run's start."""
    wall = time.time() - time.monotonic()
    now = time.monotonic()
    start = now - (now + wall) % period + into_window_s  # (in the past or future alike: only the phase matters)
    first_boundary = period - into_window_s
    out = [(start + i * 1e-3, 200) for i in range(first_window)]
    for w, n in enumerate(later):
        a = start + first_boundary + w * period + 0.01
        out += [(a + i * 1e-3, 200) for i in range(n)]
    out.append((start + first_boundary + 0.5, 429))  # a refusal counts for nothing
    return out, first_boundary


def test_only_whole_windows_of_the_span_count():
    cfg = {"window_n": 100, "window_s": 10.0}
    arrivals, b = _arrivals(100, [100, 100, 100])
    span = b + 2 * 10.0 + 1.0  # two whole windows, and one second of a third
    assert window_utilization(cfg, arrivals, span, per=1) == pytest.approx(100.0)
    arrivals, b = _arrivals(100, [100, 50, 100])  # the second whole window half used
    assert window_utilization(cfg, arrivals, span, per=1) == pytest.approx(75.0)
    # the first, partial window is not judged: its quota taken whole, or a tenth of it, the same
    arrivals, b = _arrivals(10, [100, 50, 100])
    assert window_utilization(cfg, arrivals, span, per=1) == pytest.approx(75.0)


def test_caps_of_their_own_allow_a_quota_each():
    cfg = {"window_n": 100, "window_s": 10.0}
    arrivals, b = _arrivals(200, [200, 200])
    assert window_utilization(cfg, arrivals, b + 20.0, per=2) == pytest.approx(100.0)
    assert window_utilization(cfg, arrivals, b + 20.0, per=4) == pytest.approx(50.0)


def test_a_sliding_window_is_judged_over_whole_periods_against_the_most_it_allowed():
    # the fake-clock benchmark's measure of a sliding window: over whole periods from the span's start, admitted
    # against what a send at every moment it allowed would have got after the run's own sends before it
    for slide in ("log", "counter"):
        cap = Cap("window", n=20, period=10.0, slide=slide)
        paced = [i * 0.5 for i in range(100)]  # 2/s = n / period, for 50 s
        assert bf._allowed(cap, 10.0, 40.0, 0.2, paced) == pytest.approx(60, abs=2)  # three periods' n
        half = [i * 1.0 for i in range(50)]  # (any whole period holds n at most, whatever room came before it)
        assert bf._allowed(cap, 10.0, 40.0, 0.2, half) == pytest.approx(60, abs=2)
    burst = [0.0] * 20  # a start's burst fills the log: nothing passes until it leaves the last period
    assert bf._allowed(Cap("window", n=20, period=10.0, slide="log"), 2.0, 12.0, 0.2, burst) == 20
    assert bf._allowed(Cap("window", n=20, period=10.0, slide="log"), 2.0, 9.0, 0.2, burst) == 0


def test_the_queue_measure_is_what_the_wait_added_to_the_median_latency():
    # three answers of a model at 1.0 s, two of them held 0.5 s and 3 s in a queue: the run's median 1.5 s against
    # the model's 1.0 s is 50% added; with none held, nothing
    from hotdogbench_core.sim.capmodel import Client
    c = Client(None, None, 3)
    c.latencies, c.held = [(0.0, 1.0), (0.1, 1.5), (0.2, 4.0)], [0.0, 0.5, 3.0]
    assert bf.queue_added([c]) == pytest.approx(50.0)
    c.held = [0.0, 0.0, 0.0]
    assert bf.queue_added([c]) == 0.0
    assert bf.queue_added([Client(None, None, 3)]) == 0.0
