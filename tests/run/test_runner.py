"""The real runner over real HTTP on loopback, against the simulator."""
import asyncio
import json

import duckdb
import pytest

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.store.journal import read_journal
from hotdogbench_core.store.rundir import RunDir
from hotdogbench_core.run.settings import RunError
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet

REF_KEYS = ["model", "photos", "answered", "unanswered", "errors", "accuracy", "balanced_accuracy",
            "accuracy_by_category", "false_alarms", "missed_hot_dogs", "wall_s", "photos_per_s", "latency_p50_s",
            "latency_p95_s", "cost_usd", "cost_per_1000_photos_usd", "prompt_tokens_per_photo", "reasoning_tokens",
            "requests_retried", "providers", "unscored_answers", "concurrency"]


def run(ds, sim, models, tmp_path, run_name="r", **kw):
    settings = RunSettings(api_key="sk-test", base_url=sim.base_url, **{k: kw.pop(k) for k in list(kw)
                           if k in ("start_concurrency", "max_concurrency", "request_timeout", "max_attempts")})
    return asyncio.run(run_models(models, ds, settings, out=tmp_path / "out", run_name=run_name, **kw))


@pytest.fixture
def table(tmp_path):
    return write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=10))


def test_run_writes_reference_outputs(table, tmp_path):
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=1, latency_s=0.01), labels=labels_from_parquet(table)) as sim:
        res = run(ds, sim, ["openai/gpt-6-luna", "typesafe/jev-1.14"], tmp_path)
    summary = json.loads((res.run_dir / "summary.json").read_text())
    assert [s["model"] for s in summary] == ["openai/gpt-6-luna", "typesafe/jev-1.14"]
    for s in summary:
        assert list(s)[:len(REF_KEYS)] == REF_KEYS
        assert s["photos"] == 30 and s["answered"] == 30 and s["errors"] == 0
        assert set(s["unscored_answers"]) == {"1001"}
        assert s["providers"] == ["simulator"]
        assert set(s["concurrency"]) >= {"start", "cap", "final_limit", "peak_in_flight", "throttles",
                                         "transport_errors", "limit_trace"}
        path = res.run_dir / (s["model"].replace("/", "__") + ".parquet")
        rows = duckdb.sql(f"SELECT id, pred, is_hot_dog, category, scored FROM '{path}' ORDER BY id").fetchall()
        assert [r[0] for r in rows] == sorted(r["id"] for r in make_rows(n_per_cat=10))
        scored = [r for r in rows if r[4]]
        acc = sum(r[1] == r[2] for r in scored) / len(scored)
        assert s["accuracy"] == round(acc, 4)  # summary agrees with the per-photo file


def test_same_seed_same_answers(table, tmp_path):
    ds = load_dataset(table)
    preds = []
    for i in range(2):
        with Simulator(SimConfig(seed=5, latency_s=0.005), labels=labels_from_parquet(table)) as sim:
            res = run(ds, sim, ["anthropic/claude-haiku-5.5"], tmp_path, run_name=f"r{i}", start_concurrency=1 + 7 * i)
        path = res.run_dir / "anthropic__claude-haiku-5.5.parquet"
        preds.append(duckdb.sql(f"SELECT id, pred FROM '{path}' ORDER BY id").fetchall())
    assert preds[0] == preds[1]


def test_retries_and_faults_settle_every_photo(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=40))
    ds = load_dataset(table)
    cfg = SimConfig(seed=3, latency_s=0.01, max_in_flight=6, error_5xx=0.1, error_in_200=0.05, drop_connection=0.05,
                    malformed_body=0.05, in_flight_402=0.03)
    with Simulator(cfg, labels=labels_from_parquet(table)) as sim:
        res = run(ds, sim, ["openai/gpt-6-luna"], tmp_path, max_concurrency=32)
    s = res.summaries[0]
    st = read_journal(RunDir.at(res.run_dir).journal("openai/gpt-6-luna"))
    lines = [json.loads(x) for x in RunDir.at(res.run_dir).journal("openai/gpt-6-luna").read_text().splitlines()]
    settled = sorted(x["id"] for x in lines if x["type"] == "result")
    assert settled == sorted(p.id for p in ds.photos)  # each photo settled exactly once
    assert s["requests_retried"] > 0
    assert s["concurrency"]["throttles"] > 0 and s["concurrency"]["transport_errors"] > 0
    assert s["errors"] == sum(1 for r in st.results.values() if r.error and r.scored)


def test_retry_after_is_honoured(table, tmp_path):
    ds = load_dataset(table)
    cfg = SimConfig(seed=0, latency_s=0.005, rate_per_s=40, burst=5, retry_after="fixed", retry_after_s=0.3)
    with Simulator(cfg, labels=labels_from_parquet(table)) as sim:
        run(ds, sim, ["openai/gpt-6-luna"], tmp_path, max_concurrency=32)
        gaps = []
        for digest, arrivals in sim.stats.by_digest.items():
            for (t0, status, ra), (t1, _, _) in zip(arrivals, arrivals[1:]):
                if status == 429 and ra is not None:
                    gaps.append(t1 - t0 - ra)
    assert gaps, "the bucket should have answered some 429s"
    assert min(gaps) >= -0.01  # nothing re-sent before Retry-After passed (10 ms clock slack)


def test_bad_key_stops_early_and_resume_finishes(table, tmp_path):
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=0, latency_s=0.005), labels=labels_from_parquet(table), api_key="sk-right") as sim:
        settings = RunSettings(api_key="sk-wrong", base_url=sim.base_url)
        res = asyncio.run(run_models(["openai/gpt-6-luna"], ds, settings, out=tmp_path / "out", run_name="k"))
        assert res.stopped and "401" in res.stopped and "key" in res.hint
        assert sim.stats.requests <= 16  # stopped at once, not 8 tries for each of 31 photos
        assert "sk-wrong" not in (res.run_dir / "summary.json").read_text()
        with pytest.raises(RunError, match="resume that run"):
            asyncio.run(run_models(["openai/gpt-6-luna"], ds, RunSettings(api_key="sk-right", base_url=sim.base_url),
                                   out=tmp_path / "out", run_name="k"))
        res2 = asyncio.run(run_models(["openai/gpt-6-luna"], ds, RunSettings(api_key="sk-right", base_url=sim.base_url),
                                      out=tmp_path / "out", run_name="k", resume=True))
    assert res2.stopped is None and res2.summaries[0]["answered"] == 30


def test_resume_refuses_another_dataset(table, tmp_path):
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=0, latency_s=0.005), labels=labels_from_parquet(table)) as sim:
        run(ds, sim, ["openai/gpt-6-luna"], tmp_path)
        other = load_dataset(write_table(tmp_path / "other.parquet", make_rows(n_per_cat=3)))
        with pytest.raises(RunError, match="dataset"):
            run(other, sim, ["openai/gpt-6-luna"], tmp_path, resume=True)
