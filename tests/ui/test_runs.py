"""ui/runs.py: the run notebook's runs as CLI processes, followed through their folders (no browser here)."""
import json
import os
import signal
import time

import pytest

from support.waiting import wait_until
from hotdogbench_core.run.plan import plan_run
from hotdogbench_core.sim.config import DEMO_CONFIG
from hotdogbench_core.store.dataset import SAMPLE
from hotdogbench_core.store.journal import read_journal
from hotdogbench_core.store.rundir import RunDir
from hotdogbench_core.ui import notebook as nbargs
from hotdogbench_core.ui.cli import _plan, build_parser
from hotdogbench_core.ui.live import bar_html, verdict
from hotdogbench_core.ui.launch import changes, launch_argv, launch_labels, next_name, start_error_field, with_run
from hotdogbench_core.ui.runs import RunRegistry

pytestmark = pytest.mark.slow
MODEL = "openai/gpt-6-luna"


def sim_argv(out, name, models=MODEL, **sim):
    config = {**DEMO_CONFIG, "latency_s": 0.02, "error_5xx": 0.0, "unanswered_rate": 0.0, **sim}
    return ["demo", "--models", models, "--input", str(SAMPLE), "--out", str(out), "--run", name,
            "--sim-config", json.dumps(config)]


def settled(out, name, model=MODEL) -> list[tuple[int, int]]:
    """Every result line of the model's journal, as (photo id, repeat), in order (a photo twice shows twice)."""
    path = RunDir(out, name).journal(model)
    return [(o["id"], o.get("repeat", 0)) for o in map(json.loads, path.read_text().splitlines())
            if o.get("type") == "result"]


@pytest.fixture
def reg(tmp_path):
    r = RunRegistry(tmp_path / "out")
    yield r
    for name in list(r._children):  # nothing left running after a failing test
        child = r._children[name]
        if child.proc.poll() is None:
            os.killpg(child.proc.pid, signal.SIGKILL)
            child.proc.wait(5)


def test_the_form_plan_becomes_the_cli_command_with_the_same_plan(tmp_path):
    knobs = {"latency_s": 0.05, "max_in_flight": 0}
    plan = plan_run(models=["cheap", "foo/bar"], dataset=SAMPLE, target="simulator", out=tmp_path, run_name="r",
                    sim_config=nbargs.sim_config(knobs, conditions=True), start_concurrency=3, max_concurrency=30,
                    max_cost_usd=1.25, conditions=["reference", "small=px:256,q:70"], max_rate="20/min")
    argv = launch_argv(plan)
    args = build_parser().parse_args(argv)
    again = _plan(args, target="simulator", sim_config=json.loads(args.sim_config))
    assert [str(c) for c in again.conditions] == [str(c) for c in plan.conditions] == ["reference",
                                                                                        "small=px:256,q:70"]
    assert launch_labels(argv)[:2] == ["typesafe/jev-1.14", "typesafe/jev-1.14@small"] == plan.labels[:2]
    for attr in ("models", "target", "max_cost_usd", "sim_config", "resume"):
        assert getattr(again, attr) == getattr(plan, attr), attr
    assert again.settings.public() == plan.settings.public() and again.rundir.path == plan.rundir.path
    assert again.settings.max_rate == pytest.approx(1 / 3)  # the form's max rate reaches the run's command line
    assert again.dataset.sha256 == plan.dataset.sha256
    assert with_run(argv, tmp_path / "o", "s", True)[-5:] == ["--out", str(tmp_path / "o"), "--run", "s", "--resume"]
    assert "--run" not in with_run(argv, tmp_path, "s", False)[:-4]


def test_changes_are_said_in_the_form_words(tmp_path):
    a = sim_argv(tmp_path, "first")
    b = sim_argv(tmp_path, "second", models=f"{MODEL},foo/bar", latency_s=0.5)
    assert changes(a, b) == ["Models: openai/gpt-6-luna → openai/gpt-6-luna, foo/bar", "Run name: first → second",
                             "Simulator, median latency, s: 0.02 → 0.5"]
    assert changes(a, a) == [] and changes(None, a) == []
    assert changes(a, [*a, "--max-rate", "0.5"]) == ["Max rate per model: none → 0.5/s"]
    assert next_name(tmp_path, "mine", lambda n: n == "mine-2") == "mine-3"
    assert next_name(tmp_path, "run_20200101_000000") != "run_20200101_000000"


def test_bars_never_call_a_model_without_answers_done():
    failed = {"total": 66, "done": 66, "answered": 0, "errors": 66, "first_error": "404: No endpoints found",
              "state": "done"}
    assert verdict(failed, "done") == ("failed", "failed: no answers")
    assert verdict({**failed, "done": 5, "errors": 5, "state": "running"}, "running") == ("failed",
                                                                                          "no answers so far")
    html = bar_html("foo/bar", failed, "done")
    assert 'data-verdict="failed"' in html and "66 errors: 404: No endpoints found" in html and "#2b8a3e" not in html
    assert verdict({**failed, "answered": 60, "errors": 6}, "done") == ("warn", "done, with errors")
    assert verdict({"total": 66, "done": 10, "answered": 10, "state": "running"}, "interrupted")[0] == "stopped"


def test_start_refuses_a_second_run_and_a_name_with_results_then_resumes(reg, tmp_path):
    out = reg.out
    assert reg.start("a", sim_argv(out, "a", rate_per_s=40)) is None
    assert reg.info("a").state == "starting"
    assert "already starting" in reg.start("a", sim_argv(out, "a"))  # a second press
    assert "one run at a time" in reg.start("b", sim_argv(out, "b"))
    info = wait_until(lambda: (i := reg.info("a")).state == "running" and i, what="a heartbeat")
    assert info.pid == reg._children["a"].proc.pid and info.launch["argv"][0] == "demo"
    wait_until(lambda: sum(m["done"] for m in reg.info("a").models.values()) > 8, what="photos settled")
    assert "Stop ignored" not in (reg.stop("a") or "")
    end = wait_until(lambda: (i := reg.info("a")).state == "stopped" and i, timeout=20, what="the stop")
    first = settled(out, "a")
    assert 0 < len(first) < 66 and end.reason and "interrupted" in end.reason and not end.complete
    assert reg._children["a"].proc.wait(10) == 130
    time.sleep(0.5)
    assert settled(out, "a") == first  # nothing more was sent after the stop
    assert "already holds results" in reg.start("a", sim_argv(out, "a"))
    assert reg.start("a", ["demo", "--models", "foo/other"], resume=True) is None  # resumes with its own settings
    done = wait_until(lambda: (i := reg.info("a")).state == "done" and i, what="the resumed run")
    photos = settled(out, "a")
    assert photos[:len(first)] == first and sorted(photos) == sorted(set(photos)) and len(photos) == 66
    assert done.complete and list(done.models) == [MODEL]
    assert len(read_journal(RunDir(out, "a").journal(MODEL)).sessions) == 2


def test_a_run_that_cannot_start_says_why_and_an_unknown_model_fails_out_loud(reg):
    out = reg.out
    bad = sim_argv(out, "bad")
    bad[bad.index("--sim-config") + 1] = '{"no_such_knob": 1}'
    assert reg.start("bad", bad) is None
    info = wait_until(lambda: (i := reg.info("bad")).start_error and i, what="the exit")
    assert "no_such_knob" in info.start_error and info.state == "not started" and not info.live
    assert reg.start("listed", sim_argv(out, "listed", models="foo/bar")) is None  # the preflight refuses it
    info = wait_until(lambda: (i := reg.info("listed")).start_error and i, what="the refusal")
    assert start_error_field(info.start_error)[0] == "models" and "not among" in info.start_error
    assert not RunDir(out, "listed").live.exists()  # nothing was sent, and no heartbeat claims the folder
    # a server that lists nothing: foo/bar is asked, every photo a 404, and it fails fast, said out loud
    assert reg.start("typo", sim_argv(out, "typo", models="foo/bar", models_listing="none")) is None
    end = wait_until(lambda: (i := reg.info("typo")).state not in ("starting", "running", "stopping", "finishing")
                   and i, what="the run's end")
    m = end.models["foo/bar"]
    assert m["answered"] == 0 and m["errors"] == m["done"] > 0 and "No endpoints found" in m["first_error"]
    assert verdict(m, end.state)[0] == "failed" and "fail fast" in m["stop_reason"]
    assert "stopped early: fail fast" in bar_html("foo/bar", m, end.state)


def test_a_killed_run_is_interrupted_and_seen_by_another_registry(reg, tmp_path):
    out = reg.out
    assert reg.start("k", sim_argv(out, "k", rate_per_s=30)) is None
    wait_until(lambda: sum(m["done"] for m in reg.info("k").models.values()) > 3, what="photos settled")
    other = RunRegistry(out)  # another kernel: a new tab of `marimo run`, a restarted kernel
    assert other.info("k").state == "running" and other.snapshot()["k"].live
    os.killpg(reg._children["k"].proc.pid, signal.SIGKILL)
    reg._children["k"].proc.wait(5)
    info = wait_until(lambda: (i := other.info("k")).state == "interrupted" and i, timeout=10, what="interrupted")
    assert "resume" in info.reason and info.holds_results
