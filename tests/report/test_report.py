"""Runs read back for the notebooks: listing, loading, and every table the report shows."""
import json
import os
import time

import polars as pl
import pytest

from hotdogbench_core.store.dataset import SAMPLE, file_sha256

from hotdogbench_core.report import charts
from hotdogbench_core.report import runs as rp
from hotdogbench_core.report import tables as tb
from hotdogbench_core.store.results import Result, results_frame
from support.simrun import MODELS, RUN, make_run, sim_copy, sim_out  # noqa: F401 (fixtures)


def frame(rows):
    return results_frame([Result(**r) for r in rows])


def synthetic(name="r", frames=None, summaries=None, sha="abc", pairs=None):
    frames = frames or {}
    summaries = summaries or [{"model": m} for m in frames]
    return rp.RunData(name, rp.Path("/nowhere") / name, summaries, frames, pairs, sha)


def test_list_and_load(sim_out, tmp_path):
    assert rp.list_runs(sim_out) == [RUN]
    assert rp.list_runs(tmp_path / "absent") == []
    run = rp.load_run(sim_out, RUN)
    assert run.models == MODELS and set(run.frames) == set(MODELS)
    assert all(f.height == 66 for f in run.frames.values())
    assert run.dataset_sha256 == file_sha256(SAMPLE)
    assert [(p["a"], p["b"]) for p in run.pairs] == [(MODELS[0], MODELS[1])]  # pairs.json, read back
    with pytest.raises(rp.RunNotFound, match=f"runs under .*: {RUN}"):
        rp.load_run(sim_out, "nope")


def test_newest_run_first(tmp_path):
    for name in ("old", "new"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text("[]")
    os.utime(tmp_path / "old" / "summary.json", (time.time() - 100, time.time() - 100))
    (tmp_path / "not_a_run").mkdir()
    assert rp.list_runs(tmp_path) == ["new", "old"]


def test_leaderboard_is_the_summaries(sim_out):
    run = rp.load_run(sim_out, RUN)
    lb = tb.leaderboard([run])
    by_model = {s["model"]: s for s in run.summaries}
    assert lb["accuracy"].to_list() == sorted(lb["accuracy"].to_list(), reverse=True)
    for r in lb.iter_rows(named=True):
        s = by_model[r["model"]]
        for k in ("accuracy", "balanced_accuracy", "unanswered", "errors", "latency_p50_s", "latency_p95_s",
                  "cost_per_1000_photos_usd", "photos_per_s"):
            assert r[k] == s[k], k
        assert r["throttles"] == s["concurrency"]["throttles"]
        assert r["label"] == r["model"]
        assert [r["accuracy_lo"], r["accuracy_hi"]] == s["accuracy_ci95"]  # error bars from the summary's CI


def test_category_accuracy_and_counts(sim_out):
    run = rp.load_run(sim_out, RUN)
    cat = tb.category_accuracy([run])
    for s in run.summaries:
        mine = cat.filter(pl.col("model") == s["model"])
        assert dict(zip(mine["category"], mine["accuracy"])) == s["accuracy_by_category"]
        assert mine["n"].sum() == s["answered"]


def test_cis_and_providers_used_when_present(sim_copy):
    path = sim_copy / RUN / "summary.json"
    summaries = json.loads(path.read_text())
    s = summaries[0]
    s["accuracy_ci95"], s["balanced_accuracy_ci95"] = [0.8, 0.95], [0.75, 0.9]
    s["accuracy_by_category_ci95"] = {c: [0.5, 1.0] for c in s["accuracy_by_category"]}
    s["self_consistency"] = {"agreement": 0.97}
    summaries[1]["self_consistency"] = 0.912345
    summaries[1].pop("by_provider", None)
    s["by_provider"] = {"simulator": {"photos": 64, "answered": 64, "accuracy": 0.9, "accuracy_ci95": [0.8, 0.95],
                                      "latency_p50_s": 0.01, "latency_p95_s": 0.02, "cost_usd": 0.001}}
    path.write_text(json.dumps(summaries))
    runs = [rp.load_run(sim_copy, RUN)]
    lb = tb.leaderboard(runs).filter(pl.col("model") == s["model"]).row(0, named=True)
    assert (lb["accuracy_lo"], lb["accuracy_hi"], lb["balanced_accuracy_lo"]) == (0.8, 0.95, 0.75)
    cat = tb.category_accuracy(runs).filter(pl.col("model") == s["model"])
    assert cat["lo"].to_list() == [0.5] * cat.height
    prov = tb.providers_frame(runs)
    assert prov.height == 1 and prov.row(0, named=True)["provider"] == "simulator"
    extras = tb.extras_frame(runs)
    assert extras["value"].to_list() == ['{"agreement": 0.97}', "0.9123"]
    assert tb.extras_frame([rp.RunData("x", sim_copy, [{"model": "m/a"}])]).height == 0
    spec = charts.accuracy_bars(tb.leaderboard(runs)).to_dict()
    assert any(layer["mark"]["type"] == "rule" for layer in spec["layer"])  # error bars drawn


def test_no_error_bars_without_cis(sim_copy):
    path = sim_copy / RUN / "summary.json"
    summaries = json.loads(path.read_text())
    for s in summaries:  # as written by a version without intervals
        s.pop("accuracy_ci95", None)
    path.write_text(json.dumps(summaries))
    spec = charts.accuracy_bars(tb.leaderboard([rp.load_run(sim_copy, RUN)])).to_dict()
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["bar"]


def test_traces_and_latency(sim_out):
    run = rp.load_run(sim_out, RUN)
    trace = tb.trace_frame([run])
    for s in run.summaries:
        t = trace.filter(pl.col("model") == s["model"])
        assert t.row(0)[3:] == (0.0, 4)  # starts at the start concurrency
        assert t["t"].max() == pytest.approx(max(s["wall_s"], t["t"][-2]))
        assert t["limit"][-1] == s["concurrency"]["final_limit"]
    lat = tb.latency_frame([run])
    frames = run.frames
    ok = sum(f.filter(pl.col("latency_s").is_not_null() & pl.col("error").is_null()).height for f in frames.values())
    assert lat.height == ok


def test_latency_binned_by_in_flight():
    rows = [dict(id=i, open_images_id=None, category="c", is_hot_dog=True, pred=True, latency_s=float(i),
                 in_flight_at_send=i) for i in range(1, 9)]
    rows.append(dict(id=99, open_images_id=None, category="c", is_hot_dog=True, error="x", latency_s=50.0,
                     in_flight_at_send=8))
    b = tb.latency_by_in_flight([synthetic(frames={"m/a": frame(rows)})], bins=4)
    assert b["in_flight_lo"].to_list() == [1, 3, 5, 7] and b["in_flight_hi"].to_list() == [2, 4, 6, 8]
    assert b["n"].to_list() == [2, 2, 2, 2]  # the errored request is left out
    assert b["p95_s"].to_list() == [2.0, 4.0, 6.0, 8.0]
    assert tb.latency_by_in_flight([synthetic(frames={"m/a": frame([])})]).height == 0


def test_pairs_mirrored():
    pairs = [{"a": "m/a", "b": "m/b", "both_answered": 60, "only_a_right": 5, "only_b_right": 1, "mcnemar_p": 0.2,
              "accuracy_a": 0.9, "accuracy_b": 0.84, "accuracy_diff": 0.06, "accuracy_diff_ci95": [0.01, 0.11]}]
    df = tb.pairs_frame([synthetic(pairs=pairs)])
    fwd, back = df.row(0, named=True), df.row(1, named=True)
    assert (fwd["a"], fwd["b"], fwd["accuracy_diff"], fwd["lo"], fwd["hi"]) == ("m/a", "m/b", 0.06, 0.01, 0.11)
    assert (back["a"], back["b"], back["accuracy_diff"], back["lo"], back["hi"]) == ("m/b", "m/a", -0.06, -0.11,
                                                                                      -0.01)
    assert back["a_only_right"] == 1 and back["mcnemar_p"] == 0.2
    assert charts.pairs_heatmap(df) is not None and charts.pairs_heatmap(tb.pairs_frame([synthetic()])) is None


def _answers(preds, truth=False, cat="taco", scored=True, start_id=1):
    return [dict(id=start_id + i, open_images_id=None, category=cat, is_hot_dog=truth, scored=scored, pred=p)
            for i, p in enumerate(preds)]


def test_gallery_wrong_or_disagreeing_most_missed_first():
    a = frame(_answers([False, True, True, None]))
    b = frame(_answers([False, False, True, False]))
    rows = tb.gallery_rows([synthetic(frames={"m/a": a, "m/b": b})])
    assert [r["id"] for r in rows] == [3, 2]  # photo 1: both right; photo 4: one right, one silent
    assert rows[0]["wrong"] == ["m/a", "m/b"] and rows[1]["answers"] == {"m/a": True, "m/b": False}


def test_gallery_majority_over_repeats_and_bonus():
    rows = []
    for rep, preds in enumerate([[True, True], [True, False], [False, None]]):
        rows += [dict(r, repeat=rep) for r in _answers(preds)]
    bonus = _answers([True], truth=True, cat="magritte", scored=False, start_id=1001)
    run = synthetic(frames={"m/a": frame(rows + bonus)})
    gallery = tb.gallery_rows([run])
    assert [(r["id"], r["answers"]["m/a"]) for r in gallery] == [(1, True)]  # 2 of 3 said yes; photo 2: a tie
    assert tb.bonus_rows([run]) == [{"id": 1001, "category": "magritte", "answers": {"m/a": True}}]


def test_several_runs_are_labelled_and_other_datasets_left_out_of_the_gallery():
    a = synthetic("r1", frames={"m/a": frame(_answers([True]))})
    b = synthetic("r2", frames={"m/a": frame(_answers([False]))})
    other = synthetic("r3", frames={"m/a": frame(_answers([True]))}, sha="other")
    assert tb.leaderboard([a, b])["label"].to_list() == ["r1/m/a", "r2/m/a"]
    rows = tb.gallery_rows([a, b, other])
    assert rows[0]["answers"] == {"r1/m/a": True, "r2/m/a": False}


def test_find_dataset(sim_out, tmp_path):
    run = rp.load_run(sim_out, RUN)
    other = tmp_path / "other.parquet"
    other.write_bytes(b"not it")
    assert rp.find_dataset(run, [other, SAMPLE]) == SAMPLE
    assert rp.find_dataset(run, [other]) is None
    assert rp.find_dataset(run, [], explicit=other) == other
    assert rp.find_dataset(synthetic(sha=None), [SAMPLE]) is None
    assert rp.dataset_candidates(tmp_path)[0] == SAMPLE


def test_every_chart_builds_and_skips_empty(sim_out):
    runs = [rp.load_run(sim_out, RUN)]
    lb = tb.leaderboard(runs)
    built = [charts.accuracy_heatmap(tb.category_accuracy(runs)), charts.accuracy_bars(lb),
             charts.cost_vs_accuracy(lb), charts.limit_trace(tb.trace_frame(runs)),
             charts.latency_box(tb.latency_frame(runs)), charts.latency_vs_in_flight(tb.latency_by_in_flight(runs)),
             charts.category_counts({"hot_dog": 3, "taco": 2})]
    assert all(c is not None and c.to_dict() for c in built)
    empty = [synthetic()]
    assert charts.accuracy_heatmap(tb.category_accuracy(empty)) is None
    assert charts.limit_trace(tb.trace_frame(empty)) is None and charts.latency_box(tb.latency_frame(empty)) is None
    assert charts.cost_vs_accuracy(tb.leaderboard(empty)) is None and charts.category_counts({}) is None


def test_two_runs_compare(tmp_path):
    out = tmp_path / "out"
    make_run(out, "one", models=["typesafe/jev-1.14"])
    make_run(out, "two", models=["typesafe/jev-1.14"], seed=9)
    runs = rp.load_runs(out, ["one", "two"])
    assert set(tb.leaderboard(runs)["label"]) == {"one/typesafe/jev-1.14", "two/typesafe/jev-1.14"}
    assert set(tb.trace_frame(runs)["label"]) == {"one/typesafe/jev-1.14", "two/typesafe/jev-1.14"}


def test_values_as_tables_show_them():
    from hotdogbench_core.report.format import fmt

    assert [fmt(v, "usd") for v in (3.135e-05, 0.1234567, 12.345, 9.99996, 999.96, 1234.5, 0)] == \
        ["$0.00003135", "$0.1235", "$12.35", "$10.00", "$1,000", "$1,234", "$0"]  # 4 significant digits, no e-05
    assert fmt(0.9375, "pct") == "93.8%" and fmt(None, "usd") == "–"
