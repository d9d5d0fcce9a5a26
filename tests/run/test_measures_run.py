"""Issue 16 end to end: the real runner over HTTP against the simulator -> summary.json, pairs.json,
agreement.json, the parquet and the manifest -> the report's sections (notebook and offline HTML)."""
from __future__ import annotations

import asyncio
import json

import polars as pl
import pytest

from support.tables import jpeg_bytes, make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, plan_run, run_models
from hotdogbench_core.errors import FieldError
from hotdogbench_core.protocol.chat import LOGPROBS
from hotdogbench_core.report import runs as rp
from hotdogbench_core.report import measures
from hotdogbench_core.report import tables as tb
from hotdogbench_core.report.html import build_offline_report
from hotdogbench_core.report.sections import Report, render
from hotdogbench_core.run.settings import RunError
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet
from hotdogbench_core.stats import calibration
from hotdogbench_core.stats.measures import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, compute_agreement
from hotdogbench_core.stats.pairs import compute_pairs
from hotdogbench_core.store.journal import read_journal
from hotdogbench_core.store.results import PARQUET_SCHEMA
from hotdogbench_core.ui.cli import main

CALIBRATED, OVERCONFIDENT = "sim/calibrated", "sim/overconfident"
NOT_ASKED, DECISIONS = "anthropic/claude-haiku-5.5", "typesafe/jev-1.14"
DROPS = "sim/drops-logprobs"  # asked, but its provider leaves log-probabilities out
MODELS = [CALIBRATED, OVERCONFIDENT, NOT_ASKED, DECISIONS, DROPS]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One run: 300 photos (half hot dogs) and 10 hard ones, five models 80% right (10% on the hard ones), three
    of them asked for log-probabilities: one calibrated, one overconfident (T = 0.25), one whose provider drops
    them."""
    tmp = tmp_path_factory.mktemp("measures")
    hard = [{"id": i, "image": jpeg_bytes(i), "is_hot_dog": False, "category": "hard", "scored": True,
             "open_images_id": None} for i in range(301, 311)]
    table = write_table(tmp / "photos.parquet", make_rows(n_per_cat=150, cats=("hot_dog", "taco"), extras=0) + hard)
    cfg = SimConfig(seed=7, latency_s=0.0, fenced_rate=0.1, accuracy={"*": {"hard": 0.1, "default": 0.8}},
                    extra_models={CALIBRATED: {}, OVERCONFIDENT: {}, DROPS: {"logprobs": False}},
                    calibration={CALIBRATED: 1.0, OVERCONFIDENT: 0.25, DECISIONS: 1.0, DROPS: 1.0})
    with Simulator(cfg, labels=labels_from_parquet(table)) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url, logprobs=[CALIBRATED, OVERCONFIDENT, DROPS])
        res = asyncio.run(run_models(MODELS, load_dataset(table), settings, out=tmp / "out", run_name="m"))
    return res


def _summary(res, model):
    return next(s for s in json.loads((res.run_dir / "summary.json").read_text()) if s["model"] == model)


def test_a_calibrated_model_gets_a_low_ece_and_an_overconfident_one_a_high_ece(measured):
    cal, over = _summary(measured, CALIBRATED)["calibration"], _summary(measured, OVERCONFIDENT)["calibration"]
    assert cal["photos"] == over["photos"] == 310
    assert cal["ece"] < 0.06 and over["ece"] > 0.12 and over["ece"] - cal["ece"] > 0.08
    assert cal["brier"] < over["brier"]
    assert cal["ece_bins"] == 10 and "equal-width" in cal["ece_binning"]
    # the same verdicts either way: the knob moves the stated probability, not the answers
    acc_cal, acc_over = _summary(measured, CALIBRATED)["accuracy"], _summary(measured, OVERCONFIDENT)["accuracy"]
    assert abs(acc_cal - 0.8) < 0.07 and abs(acc_over - 0.8) < 0.07
    # summary.json's numbers are the stats module's over the parquet's p_hot_dog column
    f = pl.read_parquet(measured.run_dir / "sim__calibrated.parquet").filter(pl.col("p_hot_dog").is_not_null())
    ece = calibration.expected_calibration_error(f["p_hot_dog"].to_list(), f["is_hot_dog"].to_list(), 10)
    assert cal["ece"] == round(ece.ece, 4)
    assert [b["n"] for b in cal["reliability"]] == [b.n for b in ece.bins]
    lo, hi = cal["auroc_ci95"]
    assert lo <= cal["auroc"] <= hi


def test_models_without_probabilities_are_marked_not_dropped(measured):
    s = _summary(measured, NOT_ASKED)
    assert s["calibration"] is None and "--logprobs" in s["calibration_reason"]
    assert s["probabilities"] == {"source": None, "photos": 310, "with_probability": 0}
    d = _summary(measured, DROPS)
    assert d["calibration"] is None and d["probabilities"]["source"] == "logprobs"
    assert "provider may not return" in d["calibration_reason"]
    dec = _summary(measured, DECISIONS)  # Decisions state a probability without being asked
    assert dec["probabilities"] == {"source": "noul", "photos": 310, "with_probability": 310}
    assert dec["calibration"]["ece"] < 0.08
    frame = measures.calibration_frame([rp.load_run(measured.run_dir.parent, "m")])
    assert frame["label"].to_list() == MODELS  # every model listed
    assert frame.filter(pl.col("label") == NOT_ASKED)["reason"].item().startswith("not asked")


def test_p_hot_dog_in_the_journal_and_the_last_parquet_column(measured):
    f = pl.read_parquet(measured.run_dir / "sim__calibrated.parquet")
    assert f.columns == list(PARQUET_SCHEMA) and f.columns[-1] == "p_hot_dog"
    answered = f.filter(pl.col("pred").is_not_null())
    assert answered["p_hot_dog"].null_count() == 0
    assert (answered["pred"] == (answered["p_hot_dog"] > 0.5)).all()  # the verdict token is the likelier one
    assert pl.read_parquet(measured.run_dir / "anthropic__claude-haiku-5.5.parquet")["p_hot_dog"].null_count() == 310
    journal = read_journal(measured.run_dir / "journal" / "typesafe__jev-1.14.jsonl")
    r = journal.results[(1, 0)]
    assert r.p_hot_dog == float(r.raw)  # the noul


def test_the_opt_in_is_in_the_manifest_and_the_default_body_unchanged(measured):
    m = json.loads((measured.run_dir / "manifest.json").read_text())
    for model in (CALIBRATED, OVERCONFIDENT, DROPS):
        body = m["models"][model]["body"]
        assert list(body)[-2:] == list(LOGPROBS) and m["models"][model]["request"]["top_logprobs"] == 5
    assert "logprobs" not in m["models"][NOT_ASKED]["body"] and "logprobs" not in m["models"][DECISIONS]["body"]
    assert m["settings"]["logprobs"] == [CALIBRATED, OVERCONFIDENT, DROPS]
    assert m["statistics"]["bootstrap"] == {**m["statistics"]["bootstrap"], "resamples": BOOTSTRAP_RESAMPLES,
                                            "seed": BOOTSTRAP_SEED}
    assert m["statistics"]["calibration"]["ece_bins"] == 10 and "Connor" in m["statistics"]["power"]["method"]


def test_pairs_and_agreement_files(measured):
    pairs = json.loads((measured.run_dir / "pairs.json").read_text())
    assert len(pairs) == 10
    for p in pairs:
        assert list(p)[-4:] == ["cohen_kappa", "error_overlap", "power", "bootstrap"]
        assert p["power"]["photos_have"] == p["both_answered"]
        assert p["power"]["sentence"].startswith(("To tell", p["a"]))
        assert p["bootstrap"]["resamples"] == BOOTSTRAP_RESAMPLES
        assert -1 <= p["cohen_kappa"]["kappa"] <= 1
    agree = json.loads((measured.run_dir / "agreement.json").read_text())
    assert agree["models"] == MODELS and agree["fleiss_photos"] == 310 and -1 <= agree["fleiss_kappa"] <= 1
    frames = {m: pl.read_parquet(measured.run_dir / f"{m.replace('/', '__')}.parquet") for m in MODELS}
    wrong = set.intersection(*(set(f.filter(pl.col("pred").is_not_null() & (pl.col("pred") != pl.col("is_hot_dog")))
                                   ["id"].to_list()) for f in frames.values()))
    assert agree["all_wrong"] == sorted(wrong) and wrong  # 0.9^5 of the 10 hard ones: a few
    # rebuilt from the journals alone: the same content
    assert compute_pairs(measured.run_dir) == pairs and compute_agreement(measured.run_dir) == agree


def test_the_report_shows_every_measure(measured):
    run = rp.load_run(measured.run_dir.parent, "m")
    assert run.agreement["fleiss_kappa"] is not None
    sections = {s.key: (heading, parts) for s, heading, parts in render(Report([run]))}
    assert {"power", "agreement", "calibration", "intervals"} <= set(sections)
    notes = [p.text for p in sections["power"][1] if type(p).__name__ == "Note"]
    assert sum(n.startswith("To tell") or "no gap" in n for n in notes) == 10  # one sentence per pair
    assert sum(type(p).__name__ == "Chart" for p in sections["agreement"][1]) == 2  # the two matrices
    assert sum(type(p).__name__ == "Chart" for p in sections["calibration"][1]) == 1  # the reliability diagram
    gallery = tb.gallery_rows([run], 500)
    assert [r["id"] for r in gallery if r["all_wrong"]] == run.agreement["all_wrong"]
    assert all(r["all_wrong"] for r in gallery[:len(run.agreement["all_wrong"])])  # first
    html = build_offline_report([run])
    for text in ("How many photos a claim needs", "Agreement between models", "Calibration",
                 "Bootstrap beside the closed-form intervals", "every model wrong", "To tell", "Fleiss",
                 "ECE (10 equal-width bins)"):
        assert text in html, text
    assert html.count("<svg") >= 10  # the earlier charts plus the reliability diagram and two matrices


def test_resume_refuses_a_change_of_the_opt_in_and_names_it(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=3))
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=0, latency_s=0.0), labels=labels_from_parquet(table)) as sim:
        def go(**kw):
            settings = RunSettings(api_key="sk-test", base_url=sim.base_url, **kw)
            return asyncio.run(run_models([NOT_ASKED], ds, settings, out=tmp_path / "out", run_name="r", resume=True))
        go()
        with pytest.raises(RunError, match="logprobs: the run has none, now true; top_logprobs: the run has none"):
            go(logprobs="all")
        go()  # the same settings resume
        asyncio.run(run_models([NOT_ASKED], ds, RunSettings(api_key="sk-test", base_url=sim.base_url, logprobs=True),
                               out=tmp_path / "out", run_name="asked"))
        with pytest.raises(RunError, match="logprobs: the run has true, now none"):
            asyncio.run(run_models([NOT_ASKED], ds, RunSettings(api_key="sk-test", base_url=sim.base_url),
                                   out=tmp_path / "out", run_name="asked", resume=True))


def test_old_journals_without_p_hot_dog_still_load(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"type":"header","model":"m"}\n'
                 '{"type":"result","id":1,"open_images_id":null,"category":"c","is_hot_dog":true,"pred":true}\n')
    assert read_journal(p).results[(1, 0)].p_hot_dog is None
    p.write_text('{"type":"result","id":1,"open_images_id":null,"category":"c","is_hot_dog":true,"p_hot_dog":1.5}\n')
    with pytest.raises(Exception, match="p_hot_dog is 1.5, not a probability"):
        read_journal(p)


def test_the_opt_in_is_checked_and_named(tmp_path):
    with pytest.raises(FieldError, match="names x/y, which the run does not ask") as e:
        plan_run(models="a/b", target="simulator", logprobs="x/y", out=tmp_path)
    assert e.value.field == "logprobs"
    with pytest.raises(FieldError):
        RunSettings(api_key="k", logprobs=3)
    assert RunSettings(api_key="k", logprobs="a/b, all").logprobs == ("*",)
    assert RunSettings(api_key="k", logprobs=" a/b,c/d ,a/b").logprobs == ("a/b", "c/d")
    assert main(["run", "--base-url", "http://127.0.0.1:9", "--models", "a/b", "--logprobs", "c/d", "--out",
                 str(tmp_path), "--quiet"]) == 2


def test_the_preflight_says_where_the_opt_in_cannot_work(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=2))
    cfg = SimConfig(seed=0, latency_s=0.0, extra_models={DROPS: {"logprobs": False}})
    with Simulator(cfg, labels=labels_from_parquet(table)) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url, logprobs=[DROPS, DECISIONS])
        res = asyncio.run(run_models([DROPS, DECISIONS], load_dataset(table), settings, out=tmp_path, run_name="w"))
    assert any(DROPS in w and "does not list logprobs" in w for w in res.warnings)
    assert any(DECISIONS in w and "noul" in w for w in res.warnings)


def test_cli_logprobs_flag_over_http(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=4))
    with Simulator(SimConfig(seed=1, latency_s=0.0, calibration=1.0), labels=labels_from_parquet(table)) as sim:
        assert main(["run", "--base-url", sim.base_url, "--input", str(table), "--models", f"{NOT_ASKED},{DECISIONS}",
                     "--logprobs", NOT_ASKED, "--out", str(tmp_path / "out"), "--run", "c", "--quiet"]) == 0
    summaries = json.loads((tmp_path / "out" / "c" / "summary.json").read_text())
    assert [s["probabilities"]["source"] for s in summaries] == ["logprobs", "noul"]
    assert all(s["calibration"]["photos"] == 12 for s in summaries)
    m = json.loads((tmp_path / "out" / "c" / "manifest.json").read_text())
    assert m["settings"]["logprobs"] == [NOT_ASKED] and m["models"][NOT_ASKED]["body"]["top_logprobs"] == 5
