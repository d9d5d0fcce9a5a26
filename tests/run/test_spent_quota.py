"""A refusal asking a wait past max_wait_s (a spent hourly or daily quota, as a free model's) stops that model at
once, saying until when, instead of holding the run for hours; a resume after the refill asks only the rest. A
wait under it (a minute's window) is waited out."""
import asyncio
import time

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset
from hotdogbench_core.limit.key import KeyCoordinator
from hotdogbench_core.run.runner import ModelRun
from hotdogbench_core.sim.app import SimConfig, Simulator

MODEL = "openai/gpt-6-luna"


def _at_least_s_to_the_boundary(period: float, s: float) -> None:
    left = period - time.time() % period
    if left < s:  # (the window must not refill during the test)
        time.sleep(left + 0.2)


def test_a_spent_hourly_quota_stops_the_model_and_a_resume_asks_only_the_rest(tmp_path):
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=10, extras=0)))  # 30 photos
    _at_least_s_to_the_boundary(3600.0, 90)  # (the reset stays further off than max_wait_s, 60 s)
    cfg = SimConfig(seed=0, latency_s=0.02, window_n=10, window_s=3600.0, retry_after="exact")
    with Simulator(cfg) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url, max_wait_s=60.0)
        mr = ModelRun(MODEL, ds, settings, tmp_path / "out")
        summary = asyncio.run(asyncio.wait_for(mr.run(), 30))  # not held for the hour (TimeoutError if it were)
        assert summary["answered"] == 10 and "asks to wait" in summary["stopped"] and "UTC" in summary["stopped"]
        assert "--resume" in summary["hint"] and mr.retries_exhausted == 0
        assert len(mr.results) == 10  # the unasked 20 have no row yet: a resume asks them
        sim.update(window_n=1000)  # the quota refilled
        again = ModelRun(MODEL, ds, settings, tmp_path / "out", resume=True)
        summary = asyncio.run(again.run())
        answered = sim.stats.answered
    assert summary["answered"] == len(ds) and not summary.get("stopped")
    assert answered == len(ds)  # every photo answered once in all


def test_a_wait_under_max_wait_s_is_waited_out(tmp_path):
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=8, extras=0)))  # 24 photos
    cfg = SimConfig(seed=0, latency_s=0.02, window_n=10, window_s=1.5, retry_after="exact")
    with Simulator(cfg) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url, max_wait_s=60.0)
        summary = asyncio.run(ModelRun(MODEL, ds, settings, tmp_path / "out").run())
        refused = sim.stats.rate_limited
    assert refused > 0 and summary["answered"] == len(ds) and not summary.get("stopped")


def _run_on_a_free_models_quota(tmp_path, photos_per_cat: int, window_n: int, window_s: float, max_wait_s: float):
    """One model against OpenRouter's free-model 429s (the simulator's retry_after="openrouter"): the run, its
    summary and the refusals the simulator sent."""
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=photos_per_cat, extras=0)))
    _at_least_s_to_the_boundary(window_s, 60 if window_s > 60 else 10)
    cfg = SimConfig(seed=0, latency_s=0.02, window_n=window_n, window_s=window_s, retry_after="openrouter")
    with Simulator(cfg) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url, max_wait_s=max_wait_s)
        mr = ModelRun(MODEL, ds, settings, tmp_path / "out")
        summary = asyncio.run(asyncio.wait_for(mr.run(), 30))
        return mr, summary, sim.stats.rate_limited


def test_a_free_models_day_quota_named_in_the_body_stops_the_model(tmp_path):
    """OpenRouter's free-model 429s carry no Retry-After and give their reset only in the body's metadata.headers;
    read there, a spent day's quota stops the model at once instead of each photo trying for the retry budget."""
    _at_least_s_to_the_boundary(86400.0, 70)
    max_wait_s = min(900.0, 86400.0 - time.time() % 86400.0 - 60)  # under the wait to the day's reset, which in
    #                                                              the last 15 minutes of a UTC day is under 900 s
    mr, summary, refused = _run_on_a_free_models_quota(tmp_path, 6, 5, 86400.0, max_wait_s)  # 18 photos, 5 a day
    assert summary["answered"] == 5 and "asks to wait" in summary["stopped"] and "--resume" in summary["hint"]
    assert 1 <= refused <= 8 and mr.retries_exhausted == 0  # stopped on the first refusals, none given up


def test_a_free_models_minute_quota_named_in_the_body_paces_the_model(tmp_path):
    """free-models-per-min with X-RateLimit-Limit: 6 in the body: the pace is held at 5 a minute from then on
    (max_wait_s under the wait to the next minute stops the model there, so the test need not wait for it)."""
    mr, summary, _ = _run_on_a_free_models_quota(tmp_path, 4, 6, 60.0, 5.0)  # 12 photos, 6 a minute
    assert summary["answered"] == 6 and "asks to wait" in summary["stopped"]
    assert summary["concurrency"]["max_rate_per_s"] == round(5 / 60, 3)
    assert any("stated cap: at most 5 a minute" in change.reason for change in mr.limiter.history)


def test_models_on_a_free_models_key_quota_share_its_stated_pace(tmp_path):
    """Two models at once on one key's free-models-per-min quota (OpenRouter's free limits are the key's): the
    refusals name the quota, whose first one pauses both models (the cap is the key's), and the key's
    limiter (not only each model's) is held to one under the stated count. max_wait_s under the wait to the next
    minute stops both there, so the test need not wait for it."""
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=4, extras=0)))  # 12 photos
    _at_least_s_to_the_boundary(60.0, 15)
    cfg = SimConfig(seed=0, latency_s=0.05, window_n=10, window_s=60.0, retry_after="openrouter", caps_per="key")
    key = KeyCoordinator()
    with Simulator(cfg) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url, max_wait_s=5.0)
        runs = [ModelRun(m, ds, settings, tmp_path / "out" / m.replace("/", "_"), key=key)
                for m in (MODEL, "openai/gpt-6.1-sol")]

        async def both():
            return await asyncio.gather(*(asyncio.wait_for(r.run(), 30) for r in runs))
        summaries = asyncio.run(both())
        answered, refused = sim.stats.answered, sim.stats.rate_limited
    assert answered == 10 and sum(s["answered"] for s in summaries) == 10  # the key's 10, between the two
    assert all("asks to wait" in s["stopped"] for s in summaries)
    assert key.shared and key.limiter.max_rate == 9 / 60  # the key paced at 9 a minute, not 9 for each model
    assert refused <= 16 - 10  # only the first sends past the key's 10: the first refusal naming the quota paused
    #                            both models (the other one stops at the key's pause, with no refusal of its own)


def test_a_model_held_by_the_key_s_pause_past_max_wait_s_stops_without_a_request(tmp_path):
    """Another model of the run was refused by a quota it named (the key's) with 42 s to its reset: this model
    waits at the key's pause without a refusal of its own, and a wait past max_wait_s stops it as a refusal would."""
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=2, extras=0)))
    key = KeyCoordinator()
    other = key.member(8, 256)
    sent = [other.start() for _ in range(3)]
    other.finish("rate", 0.001, "429/quota", 42.0, sent[0])
    assert key.shared
    with Simulator(SimConfig(seed=0, latency_s=0.02)) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url, max_wait_s=5.0)
        mr = ModelRun(MODEL, ds, settings, tmp_path / "out", key=key)
        summary = asyncio.run(asyncio.wait_for(mr.run(), 30))
        requests = sim.stats.requests
    assert "asks to wait 0 h 01 min" in summary["stopped"] and "--resume" in summary["hint"]
    assert requests == 0 and summary["answered"] == 0 and mr.retries_exhausted == 0
