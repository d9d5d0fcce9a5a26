"""A refusal asking a wait past max_wait_s (a spent hourly or daily quota, as a free model's) stops that model at
once, saying until when, instead of holding the run for hours; a resume after the refill asks only the rest. A
wait under it (a minute's window) is waited out."""
import asyncio
import time

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset
from hotdogbench_core.run.runner import ModelRun
from hotdogbench_core.sim.app import SimConfig, Simulator

MODEL = "openai/gpt-6-luna"


def test_a_spent_hourly_quota_stops_the_model_and_a_resume_asks_only_the_rest(tmp_path):
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=10, extras=0)))  # 30 photos
    if time.time() % 3600 > 3590:  # (the hour's window must not refill during the test)
        time.sleep(11)
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
