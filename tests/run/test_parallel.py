"""--parallel-models: all models at once, each with its own limiter and client; and --limiter."""
import asyncio
import json

import duckdb
import pytest

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.ui.cli import build_parser
from hotdogbench_core.run.events import ModelFinished, ModelStarted
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet

MODELS = ["openai/gpt-6-luna", "typesafe/jev-1.14"]


@pytest.fixture
def table(tmp_path):
    return write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=10))


def preds(run_dir, model):
    path = run_dir / (model.replace("/", "__") + ".parquet")
    return duckdb.sql(f"SELECT id, pred FROM '{path}' ORDER BY id").fetchall()


def test_two_models_in_parallel_match_a_sequential_run(table, tmp_path):
    ds = load_dataset(table)
    events = []
    cfg = SimConfig(seed=2, latency_s=0.01, max_in_flight=6, error_5xx=0.05)
    with Simulator(cfg, labels=labels_from_parquet(table)) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url, max_attempts=20)
        par = asyncio.run(run_models(MODELS, ds, settings, out=tmp_path / "out", run_name="par", parallel=True,
                                     on_event=events.append))
        seq = asyncio.run(run_models(MODELS, ds, settings, out=tmp_path / "out", run_name="seq"))
    kinds = [(type(e).__name__, e.model) for e in events if isinstance(e, (ModelStarted, ModelFinished))]
    assert [k for k, _ in kinds[:2]] == ["ModelStarted", "ModelStarted"]  # both started before either finished
    summary = json.loads((par.run_dir / "summary.json").read_text())
    assert [s["model"] for s in summary] == MODELS == [s["model"] for s in par.summaries]
    for s, s_seq in zip(summary, seq.summaries):
        assert s["photos"] == 30 and s["errors"] == 0 and s["answered"] == 30
        assert s["accuracy"] == s_seq["accuracy"]
        assert s["concurrency"]["policy"] == "adaptive"
    for m in MODELS:
        assert preds(par.run_dir, m) == preds(seq.run_dir, m)
    assert par.stopped is None


def test_models_on_a_key_wide_cap_share_it_evenly_over_http(tmp_path):
    # three models at once behind one key-wide bucket (12/s, a burst of 4): the first model's first sends take the
    # burst, the others' are refused whole, so the key's own limiter paces all three, an equal slice each; on caps
    # of their own (caps_per="model", 12/s each) it does not
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=15))
    ds = load_dataset(table)
    models = MODELS + ["openai/gpt-6-astra"]
    for caps_per in ("key", "model"):
        cfg = SimConfig(seed=3, latency_s=0.05, rate_per_s=12.0, burst=4, caps_per=caps_per)
        with Simulator(cfg, labels=labels_from_parquet(table)) as sim:
            settings = RunSettings(api_key="sk-test", base_url=sim.base_url)
            res = asyncio.run(run_models(models, ds, settings, out=tmp_path / "out", run_name=caps_per,
                                         parallel=True))
        shared = [s["concurrency"]["key_shared"] for s in res.summaries]
        assert shared == [caps_per == "key"] * 3, shared
        assert all(s["answered"] == 45 and s["errors"] == 0 for s in res.summaries)
        walls = [s["wall_s"] for s in res.summaries]
        if caps_per == "key":  # one cap split evenly: the models end together, at about 3 x 45 / 12 s
            assert max(walls) <= 1.3 * min(walls) and max(walls) <= 2 * 3 * 45 / 12, walls


def test_models_on_a_key_wide_window_pause_as_one_over_http(tmp_path):
    # three models at once behind one key-wide window of 24 per 2 s: the quota takes every model's first sends, so
    # none is refused whole; once it is spent, every model pauses and its probes are refused: the key's quota, so the
    # key's limiter probes it for all three (one probe at a time) and paces them evenly. Twenty runs (2026-12-02),
    # each model probing on its own: 37-43 refusals, runs of 9.7-11.7 s; through the key: 15-30 refusals, 8.7-15.1
    # s (the key's pace spreads the last window's quota over it; one probe finds a refill later than three)
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=15))
    ds = load_dataset(table)
    cfg = SimConfig(seed=3, latency_s=0.05, window_n=24, window_s=2.0, caps_per="key")
    with Simulator(cfg, labels=labels_from_parquet(table)) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url)
        res = asyncio.run(run_models(MODELS + ["openai/gpt-6-astra"], ds, settings, out=tmp_path / "out",
                                     parallel=True))
    assert [s["concurrency"]["key_shared"] for s in res.summaries] == [True] * 3
    assert all(s["answered"] == 45 and s["errors"] == 0 for s in res.summaries)
    assert sum(s["concurrency"]["throttles"] for s in res.summaries) <= 34
    walls = [s["wall_s"] for s in res.summaries]
    assert max(walls) <= 1.35 * min(walls) and max(walls) <= 2 * 3 * 45 / 12, walls


def test_a_fatal_stop_in_parallel_stops_the_others(table, tmp_path):
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=0, latency_s=0.005), labels=labels_from_parquet(table), api_key="sk-right") as sim:
        settings = RunSettings(api_key="sk-wrong", base_url=sim.base_url)
        res = asyncio.run(run_models(MODELS, ds, settings, out=tmp_path / "out", run_name="k", parallel=True))
    assert res.stopped and "401" in res.stopped and "key" in res.hint
    assert [s["model"] for s in res.summaries] == MODELS
    assert all(s.get("stopped") for s in res.summaries)


def test_reference_limiter_reproducible_by_flag(table, tmp_path):
    args = build_parser().parse_args(["demo", "--limiter", "reference", "--parallel-models"])
    assert args.limiter == "reference" and args.parallel_models
    assert build_parser().parse_args(["run"]).limiter == "adaptive"
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=0, latency_s=0.005), labels=labels_from_parquet(table)) as sim:
        settings = RunSettings(api_key="k", base_url=sim.base_url, limiter="reference")
        res = asyncio.run(run_models(MODELS[:1], ds, settings, out=tmp_path / "out", run_name="ref"))
    assert res.summaries[0]["concurrency"]["policy"] == "reference"
    with pytest.raises(ValueError, match="limiter: must be one of adaptive, reference"):
        RunSettings(api_key="k", limiter="bbr")
