"""Runs with conditions over real HTTP against the simulator: models x conditions end to end, resume after
SIGKILL, a changed condition refused by name, parity when no condition is named, the paired statistics
against worked values."""
import asyncio
import hashlib
import json
import signal
import subprocess
import sys
import time

import duckdb
import polars as pl
import pytest

from support.cli import cli_env
from support.paths import REPO
from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, plan_run, run_models, run_plan
from hotdogbench_core.errors import RunError
from hotdogbench_core.protocol.conditions import Condition, resolve_conditions
from hotdogbench_core.protocol.transform import transform_image
from hotdogbench_core.run.preflight import PreflightError
from hotdogbench_core.sim.app import SimConfig, Simulator, image_digest, labels_from_parquet
from hotdogbench_core.stats.pairs import compute_pairs
from hotdogbench_core.store.dataset import SAMPLE
from hotdogbench_core.store.journal import Journal, read_journal
from hotdogbench_core.store.results import PARQUET_SCHEMA, Result
from hotdogbench_core.store.rundir import RunDir

MODELS = ["typesafe/jev-1.14", "anthropic/claude-haiku-5.5"]
CONDITIONS = ["reference", "small=px:32,q:40", 'terse=prompt:"Hot dog? Answer JSON {\\"hot_dog\\": true|false}."']
SIM = dict(seed=5, latency_s=0.005, size_loss_per_halving=0.12, quality_loss_per_10=0.01,
           prompt_accuracy={"*": -0.02}, image_tokens="pixels", variant_redraw=0.05)
SECRET = "sk-or-v1-CONDITIONS-SECRET"


def run(out, models=MODELS, conditions=CONDITIONS, name="c", sim=None, **kw):
    plan = plan_run(models=models, dataset=SAMPLE, target="simulator", out=out, run_name=name,
                    sim_config=sim or SIM, conditions=conditions, **kw)
    return asyncio.run(run_plan(plan))


@pytest.fixture(scope="module")
def two_by_three(tmp_path_factory):
    out = tmp_path_factory.mktemp("cond")
    return run(out), out


def test_two_models_three_conditions_end_to_end(two_by_three):
    res, out = two_by_three
    rd = RunDir.at(res.run_dir)
    ds = load_dataset(SAMPLE)
    images = {p.id: p.image for p in ds.stream()}
    assert res.stopped is None
    # files: the reference keeps a plain run's names, each condition adds <stem>@<name>
    assert sorted(p.name for p in rd.journal_dir.iterdir()) == sorted(
        f"{m.replace('/', '__')}{s}.jsonl" for m in MODELS for s in ("", "@small", "@terse"))
    assert sorted(rd.arms()) == sorted((m, c) for m in MODELS for c in ("reference", "small", "terse"))
    # summary: one entry per (model, condition), in run order; the reference's names no condition
    summaries = json.loads(rd.summary.read_text())
    assert [(s["model"], s.get("condition")) for s in summaries] == [
        (m, c) for m in MODELS for c in (None, "small", "terse")]
    by = {(s["model"], s.get("condition", "reference")): s for s in summaries}
    for m in MODELS:
        ref, small, terse = by[(m, "reference")], by[(m, "small")], by[(m, "terse")]
        assert list(small)[:3] == ["model", "condition", "condition_spec"] and "condition_spec" not in ref
        assert small["condition_spec"] == {"px": 32, "q": 40} and set(terse["condition_spec"]) == {"prompt"}
        assert all(s["photos"] == 64 and s["answered"] == 64 for s in (ref, small, terse))
        # 96-320 px photos at 32 px: 1.6 to 3.3 halvings at 0.12 each; tokens follow the pixels
        assert small["accuracy"] < ref["accuracy"] - 0.1
        assert small["prompt_tokens_per_photo"] < ref["prompt_tokens_per_photo"] - 40
        assert small["image_pixels_per_photo"] <= 32 * 32 and small["cost_per_photo_usd"] < ref["cost_per_photo_usd"]
        spread = ref["prompt_spread"]
        assert spread == small["prompt_spread"] == terse["prompt_spread"]
        assert set(spread["conditions"]) == {"reference", "terse"}
        assert spread["spread"] == round(spread["max"] - spread["min"], 4)
    # parquet: the reference's columns, then the condition's at the end; each row's digest is what was sent
    for m in MODELS:
        assert pl.read_parquet(rd.results(m)).columns == list(PARQUET_SCHEMA)
        frame = pl.read_parquet(rd.results(m, "small"))
        assert frame.columns == [*PARQUET_SCHEMA, "condition", "image_sha256", "image_width", "image_height",
                                 "image_bytes"]
        for r in frame.iter_rows(named=True):
            sent = transform_image(images[r["id"]], 32, 40)
            assert r["condition"] == "small" and r["image_sha256"] == hashlib.sha256(sent).hexdigest()
            assert r["image_bytes"] == len(sent) and max(r["image_width"], r["image_height"]) == 32
        terse = pl.read_parquet(rd.results(m, "terse"))
        assert terse["image_sha256"].to_list() == [image_digest(images[i]) for i in terse["id"]]
    # pairs: the reference's model pair first (as a plain run's), then each condition's, then each model's
    pairs = json.loads(rd.pairs.read_text())
    assert [(p["a"], p.get("condition_a"), p["b"], p.get("condition_b")) for p in pairs] == [
        (MODELS[0], None, MODELS[1], None),
        (MODELS[0], "small", MODELS[1], "small"), (MODELS[0], "terse", MODELS[1], "terse"),
        *[(m, a, m, b) for m in MODELS for a, b in (("reference", "small"), ("reference", "terse"),
                                                   ("small", "terse"))]]
    for p in pairs[3:]:
        x, y = by[(p["a"], p["condition_a"])], by[(p["b"], p["condition_b"])]
        assert p["both_answered"] == 64 and p["accuracy_a"] == x["accuracy"] and p["accuracy_b"] == y["accuracy"]
    ref_small = pairs[3]
    assert ref_small["accuracy_diff"] > 0.1 and ref_small["mcnemar_p"] < 0.01
    assert ref_small["only_a_right"] > ref_small["only_b_right"]
    # manifest: each condition's spec, transform and exact bodies
    manifest = json.loads(rd.manifest.read_text())
    conds = manifest["conditions"]
    assert list(conds) == ["reference", "small", "terse"]
    assert conds["small"]["transform"]["longest_side_px"] == 32 and conds["small"]["transform"]["jpeg_quality"] == 40
    assert conds["reference"]["transform"] is None and conds["terse"]["transform"] is None
    haiku = conds["terse"]["models"][MODELS[1]]["body"]["messages"][0]["content"][1]["text"]
    assert haiku == resolve_conditions([CONDITIONS[2]])[0].prompt
    assert conds["reference"]["models"][MODELS[1]]["body"] == manifest["models"][MODELS[1]]["body"]
    assert set(manifest["outcomes"]) == {f"{m}{s}" for m in MODELS for s in ("", "@small", "@terse")}


def test_the_report_and_the_estimate_of_a_run_with_conditions(two_by_three):
    from hotdogbench_core.report.html import write_offline_report
    from hotdogbench_core.report.runs import load_run
    from hotdogbench_core.report import experiments, tables  # noqa: F401
    from hotdogbench_core.report.estimate import past_condition_tokens

    res, out = two_by_three
    run_data = load_run(out, "c")
    cond = experiments.conditions_frame([run_data])
    assert cond.height == 6 and cond.filter(pl.col("condition") == "small")["vs_reference"].max() < -0.1
    for m in MODELS:  # the cheapest condition is always on its model's frontier
        rows = cond.filter(pl.col("model") == m).sort("usd_per_photo")
        assert rows["frontier"][0] is True
    assert experiments.condition_pairs_frame([run_data]).height == 6
    assert experiments.prompt_spread_frame([run_data]).height == 2
    assert {"typesafe/jev-1.14@small", "anthropic/claude-haiku-5.5@small"} <= set(tables.pairs_frame([run_data])["a"])
    html = write_offline_report(out, ["c"], path=out / "r.html").read_text()
    assert "Cost against accuracy, by condition" in html and "Prompt spread" in html
    past = past_condition_tokens(out)
    assert (MODELS[1], json.dumps({"px": 32, "q": 40})) in past


def test_parity_without_conditions(tmp_path):
    """No condition named: every file, key and column is a plain run's; a run naming conditions keeps the
    reference's request bytes and file names."""
    plain = run(tmp_path, conditions=None, name="plain")
    rd = RunDir.at(plain.run_dir)
    assert sorted(p.name for p in plain.run_dir.iterdir()) == sorted(
        ["agreement.json", "journal", "live.json", "manifest.json", "pairs.json", "run.lock", "summary.json"]
        + [m.replace("/", "__") + ".parquet" for m in MODELS])
    for m in MODELS:
        lines = [json.loads(x) for x in rd.journal(m).read_text().splitlines()]
        assert set(lines[0]) == {"type", "model", "dataset_sha256", "dataset_rows", "request", "repeats"}
        results = [x for x in lines if x["type"] == "result"]
        assert {k for x in results for k in x} == set(Result.__dataclass_fields__) | {"type", "at"}
        assert pl.read_parquet(rd.results(m)).columns == list(PARQUET_SCHEMA)
    summaries = json.loads(rd.summary.read_text())
    condition_keys = {"condition", "condition_spec", "prompt_spread", "cost_per_photo_usd",
                      "image_pixels_per_photo", "image_bytes_per_photo"}
    assert all(not condition_keys & set(s) for s in summaries)
    pairs = json.loads(rd.pairs.read_text())
    assert len(pairs) == 1 and not {"condition_a", "condition_b"} & set(pairs[0])
    manifest = json.loads(rd.manifest.read_text())
    assert "conditions" not in manifest and set(manifest["outcomes"]) == set(MODELS)
    from hotdogbench_core.report.runs import load_run
    from hotdogbench_core.report.sections import Report, render
    assert "conditions" not in [s.key for s, _, _ in render(Report([load_run(tmp_path, "plain")]))]
    # the same models under conditions: the reference's journal header and answers are the plain run's
    cond = run(tmp_path, name="cond")
    for m in MODELS:
        a, b = read_journal(rd.journal(m)), read_journal(RunDir.at(cond.run_dir).journal(m))
        assert a.header == b.header
        assert {k: (r.pred, r.prompt_tokens, r.cost_usd) for k, r in a.results.items()} == \
            {k: (r.pred, r.prompt_tokens, r.cost_usd) for k, r in b.results.items()}


def test_resume_refuses_a_changed_condition_by_name_and_adds_a_new_one(tmp_path):
    run(tmp_path, models=MODELS[:1], conditions=["small=px:64"], name="r")
    with pytest.raises(RunError) as e:
        run(tmp_path, models=MODELS[:1], conditions=["small=px:128"], name="r", resume=True)
    text = str(e.value)
    assert "under condition small" in text and "'px:64'" in text and "'px:128'" in text
    res = run(tmp_path, models=MODELS[:1], conditions=["small=px:64", "q50=q:50"], name="r", resume=True)
    assert [s.get("condition") for s in json.loads(RunDir.at(res.run_dir).summary.read_text())] == ["small", "q50"]
    with pytest.raises(Exception, match="already holds results for typesafe/jev-1.14@small"):
        run(tmp_path, models=MODELS[:1], conditions=["small=px:64"], name="r")


def test_provider_routing_needs_openrouters_dialect(tmp_path):
    with Simulator(SimConfig(seed=0, models_listing="plain"), labels=labels_from_parquet(SAMPLE)) as sim:
        settings = RunSettings(api_key="sk-x", base_url=sim.base_url)
        with pytest.raises(PreflightError) as e:
            asyncio.run(run_models(MODELS[1:], load_dataset(SAMPLE), settings, out=tmp_path, run_name="p",
                                   conditions=[Condition("pinned", provider={"only": ["Cloudflare"]})]))
        assert e.value.field == "conditions" and "pinned" in str(e.value) and sim.stats.requests == 0


def test_a_photo_that_cannot_be_reencoded_is_an_error_row_never_sent(tmp_path):
    table = write_table(tmp_path / "fake.parquet", make_rows(n_per_cat=2))  # JPEG magic bytes, no image
    with Simulator(SimConfig(seed=0, latency_s=0.0), labels=labels_from_parquet(table)) as sim:
        settings = RunSettings(api_key="sk-x", base_url=sim.base_url)
        res = asyncio.run(run_models(MODELS[1:], load_dataset(table), settings, out=tmp_path, run_name="f",
                                     conditions=resolve_conditions(["reference", "small=px:64"])))
        ref, small = res.summaries
        assert ref["answered"] == ref["photos"] and small["answered"] == 0 and sim.stats.requests == len(
            load_dataset(table))  # only the reference's requests went out
        assert small["first_error"].startswith("condition small: cannot decode the photo")


def test_budgets_count_every_condition(tmp_path):
    res = run(tmp_path, models=MODELS[1:], name="b", max_cost_usd=0.004)
    assert res.stopped and "budget" in res.stopped
    rd = RunDir.at(res.run_dir)
    spent = sum(r.cost_usd or 0 for p in rd.arms().values() for r in read_journal(p).results.values())
    assert 0 < spent <= 0.004


# -- SIGKILL and resume ---------------------------------------------------------------------------------------
def _cli(base_url, out, *extra):
    env = cli_env(SECRET)
    return subprocess.Popen([sys.executable, "-m", "hotdogbench_core", "run", "--models", MODELS[1], "--input",
                             str(SAMPLE), "--base-url", base_url, "--out", str(out), "--run", "k",
                             "--start-concurrency", "4", "--max-concurrency", "4", "--condition", "reference",
                             "--condition", "small=px:48", "--condition", "coarse=q:30", *extra],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _results(run_dir) -> int:
    d = RunDir.at(run_dir).journal_dir
    return sum(p.read_text().count('"type":"result"') for p in d.glob("*.jsonl")) if d.is_dir() else 0


def test_killed_run_with_conditions_resumes_without_paying_twice(tmp_path):
    out, run_dir = tmp_path / "out", tmp_path / "out" / "k"
    with Simulator(SimConfig(seed=0, latency_s=0.05, latency_sigma=0.1, **{k: v for k, v in SIM.items()
                                                                          if k not in ("seed", "latency_s")}),
                   labels=labels_from_parquet(SAMPLE)) as sim:
        proc = _cli(sim.base_url, out)
        deadline = time.monotonic() + 60
        while _results(run_dir) < 90:  # the reference's 66, then part of small's
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        rd = RunDir.at(run_dir)
        before = {arm: read_journal(p).results for arm, p in rd.arms().items()}
        assert len(before[(MODELS[1], "reference")]) == 66 and 0 < len(before[(MODELS[1], "small")]) < 66
        proc2 = _cli(sim.base_url, out, "--resume")
        _, err = proc2.communicate(timeout=120)
        assert proc2.returncode == 0, err
        images = {p.id: p.image for p in load_dataset(SAMPLE).stream()}
        for (model, cond), results in before.items():
            for (pid, _), r in results.items():
                digest = image_digest(images[pid]) if cond == "reference" else r.image_sha256
                assert len(sim.stats.by_digest[digest]) == 1, f"{cond} photo {pid} was asked twice"
    summaries = json.loads((run_dir / "summary.json").read_text())
    assert [s.get("condition") for s in summaries] == [None, "small", "coarse"]
    for m, c in ((MODELS[1], None), (MODELS[1], "small"), (MODELS[1], "coarse")):
        f = RunDir.at(run_dir).results(m, c)
        assert duckdb.sql(f"SELECT count(DISTINCT id), count(*) FROM '{f}' WHERE error IS NULL").fetchone() == (66, 66)
    small = read_journal(RunDir.at(run_dir).journal(MODELS[1], "small"))
    assert len(small.sessions) == 2 and small.sessions[0]["stop_reason"] == "killed"
    assert len(json.loads((run_dir / "pairs.json").read_text())) == 3


# -- the paired statistics against worked values --------------------------------------------------------------
def _journal(rd: RunDir, model: str, cond: str | None, right: list[bool]) -> None:
    header = {"model": model, "dataset_sha256": "d", "dataset_rows": len(right), "request": {}, "repeats": 1}
    if cond:
        header = {"model": model, "condition": {"name": cond, "spec": {"px": 256}}, **header}
    with Journal(rd.journal(model, cond)) as j:
        j.header(**header)
        for i, ok in enumerate(right):
            j.result(Result(id=i, open_images_id=None, category="c", is_hot_dog=True, pred=ok))


def test_condition_pairs_against_the_cavo_worked_example(tmp_path):
    """Fagerland, Lydersen & Laake (2014): 59 both right, 6 only A, 16 only B, 80 neither: A minus B is
    -10/161 = -0.0621 with Newcombe's interval [-0.1186, -0.0046]; McNemar's exact p = 2 P(X <= 6), X ~ B(22, 1/2)."""
    rd = RunDir(tmp_path, "w").create()
    a = [True] * 59 + [True] * 6 + [False] * 16 + [False] * 80
    b = [True] * 59 + [False] * 6 + [True] * 16 + [False] * 80
    _journal(rd, "x/m", None, a)
    _journal(rd, "x/m", "small", b)
    (pair,) = compute_pairs(rd.path)[0:]
    from math import comb
    p = 2 * sum(comb(22, k) for k in range(7)) / 2 ** 22
    assert pair["a"] == pair["b"] == "x/m" and (pair["condition_a"], pair["condition_b"]) == ("reference", "small")
    assert (pair["both_answered"], pair["both_right"], pair["only_a_right"], pair["only_b_right"],
            pair["both_wrong"]) == (161, 59, 6, 16, 80)
    assert pair["accuracy_diff"] == -0.0621 and pair["accuracy_diff_ci95"] == [-0.1186, -0.0046]
    # 1 + 22 + 231 + 1540 + 7315 + 26334 + 74613 = 110056 tables of 22 at least as extreme on one side
    assert pair["mcnemar_p"] == float(f"{p:.6g}") == float(f"{2 * 110056 / 2 ** 22:.6g}") == 0.0524788
    assert (pair["accuracy_a"], pair["accuracy_b"]) == (round(65 / 161, 4), round(75 / 161, 4))


def test_prompt_spread_and_frontier_worked_values():
    from hotdogbench_core.stats.conditions import add_condition_keys, pareto_front

    entries = [{"model": "m", "accuracy": 0.9},
               {"model": "m", "condition": "terse", "condition_spec": {"prompt": "?"}, "accuracy": 0.74},
               {"model": "m", "condition": "polite", "condition_spec": {"prompt": "Please?"}, "accuracy": 0.95},
               {"model": "m", "condition": "small", "condition_spec": {"px": 256}, "accuracy": 0.5},
               {"model": "n", "accuracy": 0.8}]
    add_condition_keys(entries)
    spread = entries[0]["prompt_spread"]
    assert spread == {"conditions": {"reference": 0.9, "terse": 0.74, "polite": 0.95}, "min": 0.74, "max": 0.95,
                      "spread": 0.21, "lowest": "terse", "highest": "polite"}
    assert all(e["prompt_spread"] == spread for e in entries[:4]) and "prompt_spread" not in entries[4]
    assert pareto_front([(1.0, 0.9), (0.5, 0.8), (0.5, 0.7), (2.0, 0.9), (None, 1.0), (0.2, 0.6)]) == \
        [True, True, False, False, None, True]
