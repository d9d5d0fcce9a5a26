"""summary.json's statistics, pairs.json and manifest.json: units, then real runs over HTTP against the simulator."""
import asyncio
import hashlib
import json
import statistics

import polars as pl
import pytest

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, __version__, load_dataset, run_models
from hotdogbench_core.protocol.chat import QUESTION, SCHEMA
from hotdogbench_core.protocol.request import request_for
from hotdogbench_core.stats.summary import summarize, summarize_statistics
from hotdogbench_core.store.results import Result
from hotdogbench_core.stats.pairs import compute_pairs, pair_stats, write_pairs
from hotdogbench_core.store.manifest import finish_manifest, git_info, public_base_url, read_manifest, start_manifest
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet
from hotdogbench_core.report.runs import RunData
from hotdogbench_core.report.tables import latency_by_in_flight
from hotdogbench_core.stats.proportions import mcnemar_exact_p, paired_diff_interval, rounded, wilson_interval

REF_KEYS = ["model", "photos", "answered", "unanswered", "errors", "accuracy", "balanced_accuracy",
            "accuracy_by_category", "false_alarms", "missed_hot_dogs", "wall_s", "photos_per_s", "latency_p50_s",
            "latency_p95_s", "cost_usd", "cost_per_1000_photos_usd", "prompt_tokens_per_photo", "reasoning_tokens",
            "requests_retried", "providers", "unscored_answers", "concurrency"]
NEW_KEYS = ["accuracy_ci95", "balanced_accuracy_ci95", "accuracy_by_category_ci95", "by_provider", "repeats",
            "self_consistency", "accuracy_over_repeats", "self_consistency_photos", "cost_usd_all_repeats", "first_error",
            # issue 16's measures, after the keys above (stats/measures.py)
            "accuracy_half_width95", "accuracy_by_category_half_width95", "bootstrap", "probabilities", "calibration",
            "calibration_reason"]
PROVIDER_KEYS = ["photos", "answered", "accuracy", "accuracy_ci95", "latency_p50_s", "latency_p95_s", "cost_usd"]
PAIR_KEYS = ["a", "b", "both_answered", "only_a_right", "only_b_right", "mcnemar_p", "accuracy_a", "accuracy_b",
             "accuracy_diff", "accuracy_diff_ci95", "both_right", "both_wrong",
             "cohen_kappa", "error_overlap", "power", "bootstrap"]  # issue 16's, after the keys above
KEY = "sk-issue6-SECRET-do-not-write-7f3a"
MODELS = ["openai/gpt-6-luna", "typesafe/jev-1.14"]


def R(i, cat="taco", hot=False, pred=None, repeat=0, **kw):
    return Result(id=i, open_images_id=None, category=cat, is_hot_dog=hot, pred=pred, repeat=repeat, **kw)


# -- units ----------------------------------------------------------------------------------------------------
def test_by_provider_groups_answers_by_provider():
    rows = [R(1, pred=False, provider="A", latency_s=1.0, cost_usd=0.01),
            R(2, pred=True, provider="A", latency_s=2.0, cost_usd=0.01),
            R(3, "hot_dog", True, pred=True, provider="B", latency_s=0.5, cost_usd=0.02),
            R(4, pred=None, provider="B", latency_s=0.7, cost_usd=0.02),  # billed, no verdict
            R(5, error="retries exhausted: 429"),  # no provider answered: not in by_provider
            R(6, pred=True, provider="A", scored=False)]  # unscored: never in a score
    bp = summarize_statistics(rows)["by_provider"]
    assert list(bp) == ["A", "B"] and list(bp["A"]) == PROVIDER_KEYS
    assert bp["A"] == {"photos": 2, "answered": 2, "accuracy": 0.5, "accuracy_ci95": rounded(wilson_interval(1, 2)),
                       "latency_p50_s": 1.5, "latency_p95_s": 1.0, "cost_usd": 0.02}
    assert bp["B"]["photos"] == 2 and bp["B"]["answered"] == 1 and bp["B"]["accuracy"] == 1.0
    assert bp["B"]["cost_usd"] == 0.04


def test_one_repeat_has_null_repeat_statistics():
    rows = [R(i, "hot_dog" if i % 2 else "taco", bool(i % 2), pred=i % 3 != 0) for i in range(1, 21)]
    s = summarize_statistics(rows, repeats=1)
    assert list(s) == NEW_KEYS
    assert s["repeats"] == 1 and s["self_consistency"] is None and s["accuracy_over_repeats"] is None
    right = sum(r.pred == r.is_hot_dog for r in rows)
    assert s["accuracy_ci95"] == rounded(wilson_interval(right, 20))
    assert set(s["accuracy_by_category_ci95"]) == {"hot_dog", "taco"}


def test_repeat_statistics_by_hand():
    truth = {1: True, 2: False, 3: False, 4: True}
    answers = {1: [True, True, True], 2: [False, True, False], 3: [False, False, False], 4: [None, True, True]}
    rows = [R(i, "hot_dog" if truth[i] else "taco", truth[i], pred=answers[i][k], repeat=k)
            for i in truth for k in range(3)]
    s = summarize_statistics(rows, repeats=3)
    assert s["self_consistency"] == round(2 / 3, 4) and s["self_consistency_photos"] == 3  # photo 4 not counted
    per = [3 / 3, 3 / 4, 4 / 4]
    assert s["accuracy_over_repeats"] == {"mean": round(statistics.fmean(per), 4),
                                          "std": round(statistics.stdev(per), 4), "min": 0.75, "max": 1.0,
                                          "per_repeat": [1.0, 0.75, 1.0]}
    # the interval is over repeat 0, like the reference accuracy
    assert s["accuracy_ci95"] == rounded(wilson_interval(3, 3))
    assert summarize("m", [r for r in rows if r.repeat == 0], 1.0)["accuracy"] == 1.0


def test_pair_stats_by_hand():
    a = [R(1, pred=False), R(2, pred=False), R(3, pred=True), R(4, pred=None), R(5, pred=False),
         R(6, pred=False, repeat=1), R(7, pred=True, scored=False)]
    b = [R(1, pred=False), R(2, pred=True), R(3, pred=False), R(4, pred=False), R(5, pred=True)]
    p = pair_stats("x/a", "x/b", a, b)
    assert list(p) == PAIR_KEYS
    # both answered: 1, 2, 3, 5. a right on 1, 2, 5; b right on 1, 3.
    assert (p["both_answered"], p["both_right"], p["only_a_right"], p["only_b_right"], p["both_wrong"]) == \
        (4, 1, 2, 1, 0)
    assert p["mcnemar_p"] == mcnemar_exact_p(2, 1) == 1.0
    assert (p["accuracy_a"], p["accuracy_b"], p["accuracy_diff"]) == (0.75, 0.5, 0.25)
    assert p["accuracy_diff_ci95"] == rounded(paired_diff_interval(1, 2, 1, 0))
    empty = pair_stats("x/a", "x/b", [], b)
    assert empty["both_answered"] == 0 and empty["accuracy_diff"] is None and empty["accuracy_diff_ci95"] is None
    assert empty["mcnemar_p"] == 1.0


def test_public_base_url_drops_credentials():
    assert public_base_url("https://user:sk-abc@openrouter.ai/api?key=sk-abc#x") == "https://openrouter.ai/api"
    assert public_base_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000"
    assert public_base_url("http://[::1]:9/api") == "http://[::1]:9/api"


def test_git_info_only_for_the_package_checkout(tmp_path):
    assert git_info(tmp_path) == {"commit": None, "dirty": None}
    info = git_info()
    assert info["commit"] is None or len(info["commit"]) == 40


def test_manifest_start_and_finish_without_a_run(small_table, tmp_path):
    ds = load_dataset(small_table)
    settings = RunSettings(api_key=KEY, base_url="https://example.test/api?key=" + KEY)  # (user:pass@ is refused)
    times = iter(["2026-01-01T00:00:00+00:00", "2026-01-01T00:01:00+00:00", "2026-01-02T00:00:00+00:00",
                  "2026-01-02T00:05:00+00:00"])
    start_manifest(tmp_path, ds, settings, ["openai/gpt-6-luna"], now=lambda: next(times))
    m = read_manifest(tmp_path)
    assert m["ended_at"] is None and m["sessions"][-1]["ended_at"] is None
    assert m["base_url"] == "https://example.test/api" and m["settings"]["base_url"] == "https://example.test/api"
    finish_manifest(tmp_path, {"openai/gpt-6-luna": {"status": "stopped"}}, stopped="openai/gpt-6-luna: fatal",
                    now=lambda: next(times))
    start_manifest(tmp_path, ds, settings, ["typesafe/jev-1.14"], now=lambda: next(times))  # a resumed session
    finish_manifest(tmp_path, {"typesafe/jev-1.14": {"status": "finished"}}, now=lambda: next(times))
    m = read_manifest(tmp_path)
    assert m["started_at"] == "2026-01-01T00:00:00+00:00" and m["ended_at"] == "2026-01-02T00:05:00+00:00"
    assert [s["stopped"] for s in m["sessions"]] == ["openai/gpt-6-luna: fatal", None]
    assert list(m["models"]) == ["openai/gpt-6-luna", "typesafe/jev-1.14"]
    assert m["outcomes"] == {"openai/gpt-6-luna": {"status": "stopped"}, "typesafe/jev-1.14": {"status": "finished"}}
    assert KEY not in (tmp_path / "manifest.json").read_text()


# -- real runs --------------------------------------------------------------------------------------------------
@pytest.fixture
def table(tmp_path):
    return write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=10))


def _run(ds, sim, models, out, name, *, key=KEY, resume=False, repeats=1, **kw):
    settings = RunSettings(api_key=key, base_url=sim.base_url, repeats=repeats, **kw)
    return asyncio.run(run_models(models, ds, settings, out=out, run_name=name, resume=resume))


def _acc(frame: pl.DataFrame) -> float:
    ans = frame.filter(pl.col("scored") & pl.col("pred").is_not_null())
    return ans.filter(pl.col("pred") == pl.col("is_hot_dog")).height / ans.height


def test_two_models_three_repeats_over_http(table, tmp_path):
    ds = load_dataset(table)
    cfg = SimConfig(seed=11, latency_s=0.01, consistency=0.6, unanswered_rate=0.05)
    with Simulator(cfg, labels=labels_from_parquet(table), api_key=KEY) as sim:
        res = _run(ds, sim, MODELS, tmp_path / "out", "rep", repeats=3)
        base_url = sim.base_url
    assert res.stopped is None
    run_dir = res.run_dir
    summary = json.loads((run_dir / "summary.json").read_text())
    frames = {s["model"]: pl.read_parquet(run_dir / (s["model"].replace("/", "__") + ".parquet")) for s in summary}

    for s in summary:
        assert list(s) == REF_KEYS + NEW_KEYS  # the reference's keys first and unchanged in order
        f = frames[s["model"]]
        assert f.height == 31 * 3 and sorted(set(f["repeat"])) == [0, 1, 2]
        first = f.filter(pl.col("repeat") == 0)
        ans0 = first.filter(pl.col("scored") & pl.col("pred").is_not_null())
        # reference keys over repeat 0 only
        assert s["photos"] == 30 and s["answered"] == ans0.height
        assert s["accuracy"] == round(_acc(first), 4)
        right0 = ans0.filter(pl.col("pred") == pl.col("is_hot_dog")).height
        assert s["accuracy_ci95"] == rounded(wilson_interval(right0, ans0.height))
        assert s["accuracy_ci95"][0] <= s["accuracy"] <= s["accuracy_ci95"][1]
        lo, hi = s["balanced_accuracy_ci95"]
        assert lo <= s["balanced_accuracy"] <= hi
        assert set(s["accuracy_by_category_ci95"]) == set(s["accuracy_by_category"])
        # repeat statistics over every repeat, consistent with the parquet
        assert s["repeats"] == 3
        per = [round(_acc(f.filter(pl.col("repeat") == k)), 4) for k in range(3)]
        aor = s["accuracy_over_repeats"]
        assert aor["per_repeat"] == per and per[0] == s["accuracy"]
        assert aor["min"] == min(per) and aor["max"] == max(per)
        assert aor["mean"] == pytest.approx(statistics.fmean(per), abs=1e-4)
        assert aor["std"] == pytest.approx(statistics.stdev(per), abs=1e-4)
        verdicts = (f.filter(pl.col("scored")).group_by("id")
                    .agg(pl.col("pred").null_count().alias("missing"), pl.col("pred").n_unique().alias("kinds")))
        full = verdicts.filter(pl.col("missing") == 0)
        assert s["self_consistency_photos"] == full.height
        assert s["self_consistency"] == round(full.filter(pl.col("kinds") == 1).height / full.height, 4)
        assert 0 < s["self_consistency"] < 1  # consistency 0.6: some photos change their answer
        # by provider: the simulator is the only provider; it answered everything answered
        assert list(s["by_provider"]) == ["simulator"]
        bp = s["by_provider"]["simulator"]
        assert list(bp) == PROVIDER_KEYS
        assert (bp["answered"], bp["accuracy"], bp["accuracy_ci95"]) == \
               (s["answered"], s["accuracy"], s["accuracy_ci95"])
        assert bp["cost_usd"] == s["cost_usd"] and bp["latency_p50_s"] == s["latency_p50_s"]
        assert s["cost_usd_all_repeats"] == pytest.approx(f.filter(pl.col("scored"))["cost_usd"].sum(), abs=1e-5)
        # photos_per_s: every request over the wall time (wall_s is rounded to 0.01 s)
        assert 93 / (s["wall_s"] + 0.006) - 0.01 <= s["photos_per_s"] <= 93 / max(s["wall_s"] - 0.006, 1e-3) + 0.01
        # latency under load, from the parquet
        curve = latency_by_in_flight([RunData("r", run_dir, [{"model": "m"}], {"m": f})], 4)
        assert curve["n"].sum() == f.filter(pl.col("latency_s").is_not_null() & pl.col("error").is_null()
                                                      & pl.col("in_flight_at_send").is_not_null()).height
        assert f["in_flight_at_send"].min() >= 1 and f["limit_at_send"].min() >= 1

    # pairs.json
    pairs = json.loads((run_dir / "pairs.json").read_text())
    assert len(pairs) == 1 and list(pairs[0]) == PAIR_KEYS
    p = pairs[0]
    assert (p["a"], p["b"]) == tuple(MODELS)
    a0, b0 = (frames[m].filter((pl.col("repeat") == 0) & pl.col("scored") & pl.col("pred").is_not_null())
              .select("id", (pl.col("pred") == pl.col("is_hot_dog")).alias("right")) for m in MODELS)
    j = a0.join(b0, on="id", suffix="_b")
    assert p["both_answered"] == j.height
    only_a = j.filter(pl.col("right") & ~pl.col("right_b")).height
    only_b = j.filter(~pl.col("right") & pl.col("right_b")).height
    assert (p["only_a_right"], p["only_b_right"]) == (only_a, only_b)
    assert p["mcnemar_p"] == pytest.approx(mcnemar_exact_p(only_a, only_b), rel=1e-5)
    assert p["accuracy_diff"] == round((only_a - only_b) / j.height, 4)
    assert p["accuracy_diff_ci95"][0] <= p["accuracy_diff"] <= p["accuracy_diff_ci95"][1]
    # rebuilt from the journals alone: the same bytes
    before = (run_dir / "pairs.json").read_bytes()
    (run_dir / "pairs.json").unlink()
    write_pairs(run_dir)
    assert (run_dir / "pairs.json").read_bytes() == before

    # manifest.json
    m = json.loads((run_dir / "manifest.json").read_text())
    assert m["dataset"]["sha256"] == hashlib.sha256(table.read_bytes()).hexdigest()
    assert m["dataset"]["rows"] == 31
    assert m["dataset"]["rows_per_category"] == {"hot_dog": 10, "magritte": 1, "sandwich": 10, "taco": 10}
    assert m["dataset"]["unscored_ids"] == [1001]
    assert m["question"] == QUESTION and m["schema"] == SCHEMA
    assert list(m["models"]) == MODELS
    for model in MODELS:
        assert m["models"][model]["request"] == request_for(model).settings()
        assert m["models"][model]["body"]["model"] == model
        assert m["outcomes"][model]["status"] == "finished"
        assert m["outcomes"][model]["done"] == m["outcomes"][model]["total"] == 93
    assert m["base_url"] == base_url
    assert m["settings"]["repeats"] == 3 and m["settings"]["max_concurrency"] == 256
    assert "max_cost_usd" in m["settings"] and m["settings"]["max_cost_usd"] is None
    assert m["limiter"]["start_concurrency"] == 8 and m["limiter"]["policy"]
    assert m["hotdogbench_version"] == __version__
    assert m["python"]["version"] and m["packages"]["polars"] == pl.__version__
    assert m["started_at"] <= m["ended_at"] and len(m["sessions"]) == 1
    assert m["git_commit"] is None or len(m["git_commit"]) == 40

    # the key is in no file of the run
    files = [x for x in run_dir.rglob("*") if x.is_file()]
    assert {x.name for x in files} >= {"summary.json", "pairs.json", "manifest.json", "openai__gpt-6-luna.parquet"}
    for x in files:
        assert KEY.encode() not in x.read_bytes(), x


def test_resumed_run_writes_the_same_pairs(table, tmp_path):
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=4, latency_s=0.005), labels=labels_from_parquet(table), api_key=KEY) as sim:
        full = _run(ds, sim, MODELS, tmp_path / "out", "full")
        stopped = _run(ds, sim, MODELS, tmp_path / "out", "resumed", key="sk-wrong")
        assert stopped.stopped and "401" in stopped.stopped
        m = read_manifest(stopped.run_dir)
        assert m["ended_at"] and m["sessions"][0]["stopped"] == stopped.stopped
        assert m["outcomes"][MODELS[0]]["status"] == "stopped"
        assert m["outcomes"][MODELS[1]]["status"] == "not started"
        assert json.loads((stopped.run_dir / "pairs.json").read_text()) == []  # one model so far
        resumed = _run(ds, sim, MODELS, tmp_path / "out", "resumed", resume=True)
    assert resumed.stopped is None
    assert (resumed.run_dir / "pairs.json").read_bytes() == (full.run_dir / "pairs.json").read_bytes()
    assert compute_pairs(resumed.run_dir) == json.loads((full.run_dir / "pairs.json").read_text())
    m2 = read_manifest(resumed.run_dir)
    assert m2["started_at"] == m["started_at"] and len(m2["sessions"]) == 2
    assert [s["stopped"] for s in m2["sessions"]] == [stopped.stopped, None]
    assert {o["status"] for o in m2["outcomes"].values()} == {"finished"}
    for x in resumed.run_dir.rglob("*"):
        if x.is_file():
            assert KEY.encode() not in x.read_bytes() and b"sk-wrong" not in x.read_bytes(), x
