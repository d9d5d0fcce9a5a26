"""A cap the user knows (RunSettings.max_rate, --max-rate): the pace never goes over it, from the first send, and a
lower hidden cap is still found. Fake clock (sim/capmodel.py)."""
import pytest

from hotdogbench_core.limit import PacedLimiter
from hotdogbench_core.limit.key import KeyCoordinator
from hotdogbench_core.sim.capmodel import Cap, Client, FakeClock, Server, simulate


def run_one(cap: Cap, max_rate: float | None, photos: int = 120, latency: float = 1.0, seed: int = 0) -> Client:
    clock = FakeClock(0.0)
    c = Client(PacedLimiter(8, 256, clock=clock, max_rate=max_rate), Server([cap], latency=latency), photos)
    simulate([c], clock, seed=seed, until=3600.0)
    return c


def gaps(c: Client) -> list[float]:
    times = [t for t, _, _ in c.sends]
    return [b - a for a, b in zip(times, times[1:])]


@pytest.mark.parametrize("phase", [0.0, 17.3, 41.9])
def test_a_known_window_of_20_a_minute_is_never_refused(phase):
    # a free model's 20 requests a minute, counted per clock minute: found, ~1 request in 5 is refused; known, none
    known = run_one(Cap("window", n=20, period=60.0, phase=phase, retry_after="reset_ms"), 20 / 60)
    found = run_one(Cap("window", n=20, period=60.0, phase=phase, retry_after="reset_ms"), None)
    assert known.rejects == 0 and known.done == 120, (known.rejects, known.done)
    assert min(gaps(known)) >= 3.0 - 1e-9  # the first 8 sends too: no burst at the start
    assert known.finished_at <= 120 / 20 * 60 + 60 + 5  # as soon as the quota allows (one minute's phase, a latency)
    assert found.rejects >= 5  # what the limiter pays to find the cap alone (the comparison could fail)
    assert known.limiter.stats()["max_rate_per_s"] == pytest.approx(1 / 3, abs=1e-3)


def test_a_lower_hidden_cap_is_still_found():
    # told 5/s, the server takes 1.5/s (a bucket with a burst of 3): the limiter cuts under what it was told
    c = run_one(Cap("bucket", rate=1.5, burst=3.0, retry_after="exact"), 5.0, photos=200, latency=0.3)
    assert c.done == 200 and c.exhausted == 0
    late = [t for t, ok, _ in c.sends if ok and t >= 60]
    assert len(late) / (c.sends[-1][0] - 60) == pytest.approx(1.5, rel=0.05)  # running at the hidden cap
    assert c.limiter.rate() < 1.7
    plain = run_one(Cap("bucket", rate=1.5, burst=3.0, retry_after="exact"), None, photos=200, latency=0.3)
    assert c.rejects <= plain.rejects  # 23 and 29 of ~225 attempts


def test_over_a_cap_it_does_not_know_it_is_the_limiter_as_before():
    cap = lambda: Cap("bucket", rate=4.0, burst=4.0, retry_after="exact")  # noqa: E731
    told = run_one(cap(), 40.0, photos=300, latency=0.4, seed=3)
    plain = run_one(cap(), None, photos=300, latency=0.4, seed=3)
    assert abs(told.finished_at - plain.finished_at) <= 0.15 * plain.finished_at
    assert told.rejects <= plain.rejects + 5


def test_models_on_one_key_each_stay_under_their_max_rate():
    clock, key = FakeClock(0.0), KeyCoordinator()
    bucket = Cap("bucket", rate=30.0, burst=5.0, retry_after="exact")  # the key's: more than the three may take
    clients = [Client(key.member(8, 256, clock, max_rate=2.0), Server([bucket], latency=0.5), 60) for _ in range(3)]
    simulate(clients, clock, seed=1, until=600.0)
    for c in clients:
        assert c.done == 60 and c.rejects == 0
        assert min(gaps(c)) >= 0.5 - 1e-9, min(gaps(c))
        assert 60 / 2.0 - 1 <= c.finished_at <= 60 / 2.0 + 5


def test_the_benchmark_s_told_policy_tells_each_model_its_cap():
    import sys

    from support.paths import REPO

    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_families as bf

    told, alone = bf.run_draw(("slow", 11, "told")), bf.run_draw(("slow", 11, "adaptive"))  # 15 a minute
    assert told["throttled"] == 0 and told["util"] >= 95, told
    assert alone["throttled"] >= 10, alone  # 28.6%: what telling the cap spares
    shared = bf.run_draw(("shared", 2, "told"))  # 8 models on one key-wide bucket: each told an eighth of it
    assert shared["throttled"] <= 1 and shared["fair"] >= 0.99 and shared["util"] >= 90, shared


def test_a_cap_the_server_states_on_its_answers_is_kept_under():
    # the LiteLLM proxy (and OpenAI) answer with x-ratelimit-limit-requests: a minute's requests. A window of 120 per
    # clock minute, latency 0.3 s: found alone, each minute's quota is spent at full speed and its refill probed;
    # stated, the pace stays at 2/s from the first answer on
    def run(states):
        clock = FakeClock(0.0)
        cap = Cap("window", n=120, period=60.0, phase=23.0, retry_after="gateway", retry_after_s=60.0)
        c = Client(PacedLimiter(8, 256, clock=clock), Server([cap], latency=0.3, states=states), 480)
        simulate([c], clock, seed=2, until=3600.0)
        return c

    stated, alone = run(120), run(None)
    assert stated.done == alone.done == 480 and stated.exhausted == 0
    assert stated.rejects / stated.attempts <= 0.02, stated.rejects  # the window's count lets 120 through
    assert alone.rejects / alone.attempts >= 0.04, alone.rejects  # what reading the header spares (4.8%: each
    #                                       minute's refill is first probed where the last came; 5%+ before)
    assert stated.limiter.max_rate == pytest.approx(119 / 60)  # one under: see stated_rate
    assert any(e.reason == "the server's stated cap: at most 119 a minute" for e in stated.limiter.history)
    assert stated.finished_at <= 480 / (119 / 60) + 60


def test_stated_rates_are_read_as_a_minute_s_requests():
    from hotdogbench_core.protocol.answers import stated_rate

    assert stated_rate({"x-ratelimit-limit-requests": "120"}) == pytest.approx(119 / 60)  # one under, per minute
    assert stated_rate({"x-ratelimit-limit-requests": "1"}) == pytest.approx(1 / 60)
    for junk in ("", "abc", "0", "-5", "nan", "inf"):
        assert stated_rate({"x-ratelimit-limit-requests": junk}) is None, junk
    assert stated_rate({}) is None and stated_rate(None) is None
    # Anthropic's API states its requests a minute on every answer in a header of its own
    assert stated_rate({"anthropic-ratelimit-requests-limit": "50"}) == pytest.approx(49 / 60)
    assert stated_rate({"anthropic-ratelimit-requests-limit": "junk", "x-ratelimit-limit-requests": "120"}) == \
        pytest.approx(119 / 60)
    lim = PacedLimiter(8, 256, clock=FakeClock(0.0))
    lim.stated(2.0)
    assert lim.rate() == 2.0 and lim.stats()["max_rate_per_s"] == 2.0
    told = PacedLimiter(8, 256, clock=FakeClock(0.0), max_rate=5.0)  # the user's word wins, either way: a server
    told.stated(2.0)  # that states a second's requests in this header would otherwise be paced 60 times too slow
    assert told.rate() == 5.0
    told.stated(9.0)
    assert told.rate() == 5.0
