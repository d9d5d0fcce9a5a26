"""OpenRouter's free models (ids ending ":free") share 20 requests a minute on the key, a limit known before anything
is sent: a run paces each at its slice from the first send, says why in its limit trace, and the user's --max-rate
still wins. Over real HTTP against the simulator's key-wide window with OpenRouter's free-model 429s."""
import asyncio
import json
import time

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.sim.app import SimConfig, Simulator

FREE = [f"vendor/vision-{i}:free" for i in range(4)]


def _run(tmp_path, models, name, **settings):
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=1, cats=("hot_dog", "taco"),
                                                                         extras=0)))  # 2 photos a model
    cfg = SimConfig(seed=0, latency_s=0.02, window_n=20, window_s=60.0, retry_after="openrouter", caps_per="key",
                    extra_models={m: {} for m in models})
    with Simulator(cfg) as sim:
        s = RunSettings(api_key="sk-test", base_url=sim.base_url, **settings)
        runs, t0 = [], time.monotonic()
        result = asyncio.run(asyncio.wait_for(run_models(models, ds, s, out=tmp_path / "out", run_name=name,
                                                         parallel=True, on_model=runs.append), 60))
        result.reasons = [[change.reason for change in mr.limiter.history] for mr in runs]
        return result, time.monotonic() - t0, sim.stats.rate_limited


def test_free_models_at_once_are_paced_at_their_slice_of_the_key_s_minute(tmp_path):
    result, took, refused = _run(tmp_path, FREE, "free")
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert [s["answered"] for s in summary] == [2] * 4 and refused == 0
    for s in summary:  # each of the four: a quarter of 19 a minute, 4.75 a minute, from the first send
        assert s["concurrency"]["max_rate_per_s"] == round(19 / 60 / 4, 3)
    assert len(result.reasons) == 4 and all(
        "OpenRouter's free models: 20 a minute on the key: at most 4.75 a minute" in r for r in result.reasons)
    assert took >= 60 / 4.75 - 0.5  # each model's second photo a slice's spacing after its first, not at once


def test_the_user_s_max_rate_wins_over_the_known_one(tmp_path):
    result, _, refused = _run(tmp_path, FREE[:2], "told", max_rate="30/min")
    summary = json.loads((result.run_dir / "summary.json").read_text())
    assert [s["answered"] for s in summary] == [2, 2] and refused == 0
    assert all(s["concurrency"]["max_rate_per_s"] == 0.5 for s in summary)
    assert len(result.reasons) == 2 and not any("free models" in r for rs in result.reasons for r in rs)
