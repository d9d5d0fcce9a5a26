"""The capped-server model the limiter benchmarks run on (sim/capmodel.py): what a refusal costs in time."""
import pytest

from hotdogbench_core.limit import AIMDLimiter
from hotdogbench_core.sim.capmodel import Cap, Client, FakeClock, Server, simulate


class Recording(AIMDLimiter):
    """The reference AIMD, keeping the latency of every reply by kind."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.replies = []

    def finish(self, kind, latency, *rest):
        self.replies.append((kind, latency))
        return super().finish(kind, latency, *rest)


def refusal_latencies(reject_latency):
    clock = FakeClock(0.0)
    lim = Recording(16, 64, clock=clock)
    server = Server([Cap("bucket", rate=5.0, burst=1.0)], latency=0.8, sigma=0.0, load_latency=1.0, load_ref=10,
                    reject_latency=reject_latency)
    simulate([Client(lim, server, 40)], clock, seed=3)
    refused = [lat for kind, lat in lim.replies if kind == "rate"]
    answered = [lat for kind, lat in lim.replies if kind == "success"]
    assert refused and answered
    return refused, answered


def test_a_refusal_is_quick_by_default():
    refused, _ = refusal_latencies(0.001)
    assert set(refused) == {0.001}


def test_a_loaded_gateway_refuses_as_slowly_as_it_answers():
    # reject_latency=None: a refusal waits in the same queue as an answer, at the load of the moment: at least the
    # median latency, more with requests held
    refused, answered = refusal_latencies(None)
    assert min(refused) >= 0.8
    assert max(refused) > 0.8 and max(answered) > 0.8  # the load (requests in flight) slows both
    assert sum(refused) / len(refused) == pytest.approx(sum(answered) / len(answered), rel=0.5)


def test_a_random_402_from_a_loaded_gateway_is_as_slow_too():
    clock = FakeClock(0.0)
    lim = Recording(4, 16, clock=clock)
    server = Server([], latency=0.5, sigma=0.0, refuse_402=0.3, reject_latency=None)
    simulate([Client(lim, server, 30)], clock, seed=5)
    refused = [lat for kind, lat in lim.replies if kind == "rate"]
    assert refused and min(refused) >= 0.5


def test_a_window_from_the_first_request_starts_at_the_next_request_after_it_ended():
    # express-rate-limit's memory store (and LiteLLM's ttl): not on the clock, but from the first request after the
    # last window ended, which that request starts (and is counted in)
    cap = Cap("window", n=2, period=10.0, phase=float("-inf"), from_first=True)
    for t in (3.0, 4.0):
        assert cap.check(t) is None
        cap.take()
    assert cap.check(12.0) == pytest.approx(1.0)  # full until 3 + 10
    assert cap.check(14.5) is None  # a new window, from 14.5 (a clock-aligned one would run from 10 or 20)
    cap.take()
    assert cap.check(23.0) is None
    cap.take()
    assert cap.check(24.0) == pytest.approx(0.5)  # full until 14.5 + 10
    clock_aligned = Cap("window", n=2, period=10.0, phase=0.0)
    for t in (3.0, 4.0):
        clock_aligned.check(t)
        clock_aligned.take()
    assert clock_aligned.check(12.0) is None  # (its next window began at 10)


def test_a_sliding_log_admits_n_in_any_period_and_names_the_oldest_expiry():
    # the `limits` library's moving window (Flask-Limiter's, slowapi's): n in any `period` s, whatever the clock
    cap = Cap("window", n=3, period=1.0, slide="log")
    for t in (0.0, 0.1, 0.2):
        assert cap.check(t) is None
        cap.take()
    assert cap.check(0.3) == pytest.approx(0.7)  # until 0.0 + 1 s
    assert cap.check(1.0) is None  # (0.0 has left the last second)
    cap.take()
    assert cap.check(1.05) == pytest.approx(0.05)  # until 0.1 + 1 s
    fixed = Cap("window", n=3, period=1.0, phase=0.5)  # a clock window from 0.5 would have refilled at 0.5
    for t in (0.0, 0.1, 0.2):
        fixed.check(t)
        fixed.take()
    assert fixed.check(0.6) is None


def test_a_sliding_counter_weighs_the_last_window_by_its_share_still_inside_the_period():
    # limits' sliding-window counter (Cloudflare's): floor(last x its share left + this one's) + 1 <= n
    cap = Cap("window", n=10, period=10.0, slide="counter")
    for _ in range(10):
        assert cap.check(0.0) is None
        cap.take()
    assert cap.check(1.0) == pytest.approx(9.0)  # full in its own window: until the next
    assert cap.check(10.0) == pytest.approx(0.0, abs=1e-6)  # the last window weighs 10 x 1: one under it, at once
    assert cap.check(10.5) is None  # 10 x 0.95 = 9.5: floor 9, one more fits
    cap.take()
    assert cap.check(11.0) == pytest.approx(0.0, abs=1e-6)  # 10 x 0.9 + 1 = 10: refused, until it falls under
    assert cap.check(12.0) is None  # 8 + 1


def test_a_cap_that_counts_its_refusals_keeps_a_client_that_keeps_asking_refused():
    # HAProxy's stick table as its guides set it: the request is tracked before the deny rule, so refusals count
    counted = Cap("window", n=10, period=10.0, slide="counter", counts_refused=True)
    plain = Cap("window", n=10, period=10.0, slide="counter")
    for cap in (counted, plain):
        for _ in range(10):
            assert cap.check(0.0) is None
            cap.take()
    ask = lambda cap, t: cap.check(t) is None or (cap.counts_refused and cap.take())  # (as the server loop does)
    for t in range(1, 10):  # one request a second while full: each refused
        assert not ask(counted, float(t)) and not ask(plain, float(t))
    assert plain.check(10.5) is None  # the last window's 10 weigh 9.5: room
    assert counted.check(10.5) is not None  # its 19 weigh 18.05: still refused


def test_a_bucket_with_a_queue_holds_requests_past_its_rate_and_refuses_past_the_queue():
    # nginx's limit_req with burst=3 and no nodelay, at 10/s: one at once, the next three held 0.1, 0.2, 0.3 s (each
    # waits for its token), the fifth refused, told how long until the queue has room
    cap = Cap("bucket", rate=10.0, burst=1.0, queue=3)
    held = []
    for _ in range(4):
        assert cap.check(0.0) is None
        held.append(cap.held)
        cap.take()
    assert held == pytest.approx([0.0, 0.1, 0.2, 0.3])
    assert cap.check(0.0) == pytest.approx(0.1)
    assert cap.check(0.1) is None and cap.held == pytest.approx(0.3)  # a token came: room for one, at the back


def test_the_model_adds_a_queues_wait_to_the_answers_latency():
    clock = FakeClock(0.0)
    lim = Recording(16, 16, clock=clock)
    client = Client(lim, Server([Cap("bucket", rate=10.0, burst=1.0, queue=20)], latency=0.2, sigma=0.0), 60)
    simulate([client], clock, seed=1)
    answered = [lat for kind, lat in lim.replies if kind == "success"]
    assert len(answered) == 60 and client.rejects == 0  # 16 in flight never pass a queue of 20
    assert max(client.held) > 1.0 and max(answered) == pytest.approx(0.2 + max(client.held))
    assert min(answered) == pytest.approx(0.2)  # the first passes at once


def test_the_simulators_window_counts_its_refusals_when_told(monkeypatch):
    # over HTTP, as the model: SimConfig.window_counts_refused (HAProxy's stick table), on a fixed window and a
    # sliding counter, on the wall clock (stubbed here)
    from types import SimpleNamespace

    from hotdogbench_core.sim import caps
    from hotdogbench_core.sim.config import SimConfig

    clock = [1_800_000_000.0]
    monkeypatch.setattr(caps, "time", SimpleNamespace(time=lambda: clock[0]))

    def refused_at_half_past(**window):
        core = SimpleNamespace(_windows={}, _slides={})
        cfg = SimConfig(window_n=4, window_s=10.0, **window)
        clock[0] = 1_800_000_000.0
        outcomes = [caps.Caps._window_wait(core, cfg, "*", 4) for _ in range(8)]  # 4 taken, 4 refused
        assert [w is None for w in outcomes] == [True] * 4 + [False] * 4
        clock[0] += 15.0  # half into the next window: the last one's count weighs half
        return caps.Caps._window_wait(core, cfg, "*", 4) is not None

    assert not refused_at_half_past(window_slide="counter")  # 4 x 0.5 = 2: room
    assert refused_at_half_past(window_slide="counter", window_counts_refused=True)  # 8 x 0.5 = 4: none
    assert not refused_at_half_past(window_counts_refused=True)  # a fixed window starts afresh either way
