"""plan_run: everything a run needs checked before anything is sent, shared by the CLI, notebooks and API."""
import asyncio
import os
from pathlib import Path

import pytest
from support.tables import make_rows, write_table

from hotdogbench_core.run.plan import plan_run, run_plan
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet
from hotdogbench_core.store.dataset import load_dataset
from hotdogbench_core.run.live import Heartbeat, LiveRun, read_live
from hotdogbench_core.run.settings import RunError


@pytest.fixture
def small(tmp_path):
    return load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=4)))


def test_run_plan_on_the_simulator_reports_live(small, tmp_path):
    plan = plan_run(models=["typesafe/jev-1.14", "anthropic/claude-haiku-5.5"], dataset=small, target="simulator",
                    out=tmp_path / "out", run_name="r1", sim_config=SimConfig(latency_s=0.005, max_in_flight=3),
                    start_concurrency=2)
    live = LiveRun(plan.models, plan.requests_per_model)
    result = asyncio.run(run_plan(plan, on_event=live.on_event, on_model=live.on_model))
    assert result.run_dir == tmp_path / "out" / "r1" and (result.run_dir / "summary.json").is_file()
    assert live.finished and all(r["done"] == r["total"] == len(small) for r in live.status().values())
    assert all(r["in_flight"] == 0 and r["limit"] >= 1 for r in live.status().values())
    assert plan.endpoint() == "the built-in simulator"
    beat = read_live(plan.rundir)  # the heartbeat another process follows the run by
    assert (beat["state"], beat["reason"], beat["pid"], beat["launch"]) == ("done", None, os.getpid(), None)
    assert beat["models"] == live.status()


def test_live_json_while_running_and_when_stopped(small, tmp_path):
    plan = plan_run(models=["typesafe/jev-1.14"], dataset=small, target="simulator", out=tmp_path, run_name="s",
                    sim_config=SimConfig(latency_s=0.05, max_in_flight=2), start_concurrency=1, max_concurrency=2)
    seen = []

    async def go():
        runs = []
        task = asyncio.create_task(run_plan(plan, on_model=runs.append, launch={"command": "demo", "argv": ["x"]}))
        while not (read_live(plan.rundir) or {}).get("models", {}).get("typesafe/jev-1.14", {}).get("done"):
            await asyncio.sleep(0.05)
        seen.append(read_live(plan.rundir))
        runs[0].stop("interrupted")
        seen.append(read_live(plan.rundir))
        await asyncio.sleep(Heartbeat.EVERY_S * 1.5)
        seen.append(read_live(plan.rundir))
        return await task

    result = asyncio.run(go())
    running, _, stopping = seen
    assert running["state"] == "running" and running["launch"] == {"command": "demo", "argv": ["x"]}
    assert stopping["state"] in ("stopping", "stopped")
    end = read_live(plan.rundir)
    assert result.stopped and (end["state"], end["reason"]) == ("stopped", result.stopped)
    model = end["models"]["typesafe/jev-1.14"]
    assert model["state"] == "stopped" and 0 < model["done"] < len(small) and model["stop_reason"] == "interrupted"


def test_live_json_is_written_only_by_the_run_that_holds_the_folder(small, tmp_path):
    plan = plan_run(models=["typesafe/jev-1.14"], dataset=small, target="simulator", out=tmp_path, run_name="f",
                    sim_config=SimConfig(latency_s=0.0))
    asyncio.run(run_plan(plan))
    other = load_dataset(write_table(tmp_path / "other.parquet", make_rows(n_per_cat=2)))
    again = plan_run(models=["typesafe/jev-1.14"], dataset=other, target="simulator", out=tmp_path, run_name="f",
                     resume=True, sim_config=SimConfig(latency_s=0.0))
    before = read_live(plan.rundir)
    with pytest.raises(RunError, match="the dataset differ"):  # refused before a model starts
        asyncio.run(run_plan(again))
    assert read_live(plan.rundir) == before and before["state"] == "done"  # the earlier run's file, untouched


def test_run_plan_to_a_loopback_base_url_needs_no_key(small, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.delenv("OPENROUTER_TOKEN", raising=False)
    monkeypatch.chdir(tmp_path)
    with Simulator(SimConfig(latency_s=0.0), labels=labels_from_parquet(small.path)) as sim:
        plan = plan_run(models=["typesafe/jev-1.14"], dataset=small, target="base_url", out=tmp_path / "out",
                        run_name="r2", base_url=sim.base_url + "/")
        result = asyncio.run(run_plan(plan))
        assert sim.stats.requests >= len(small)
    assert result.summaries[0]["answered"] == result.summaries[0]["photos"]
    with pytest.raises(ValueError, match="api_key: no key: set OPENROUTER_API_KEY"):
        plan_run(models=["typesafe/jev-1.14"], dataset=small, target="openrouter", out=tmp_path, run_name="r3")


@pytest.mark.parametrize("kw, msg", [
    (dict(models=[]), "models: no model given"), (dict(target="base_url", base_url="ftp://x"), "base_url: must start"),
    (dict(target="base_url"), "base_url: give the server's base URL"),
    (dict(target="elsewhere"), "target: must be one of"), (dict(run_name="a/b"), "plain folder name"),
    (dict(run_name="../up"), "plain folder name"), (dict(run_name=str(Path("/abs/x"))), "plain folder name"),
    (dict(start_concurrency=9, max_concurrency=4), "max_concurrency"),
    (dict(request_timeout=float("nan")), "request_timeout: must be a number of seconds above 0"),
    (dict(max_cost_usd=float("inf")), "max_cost_usd"),
])
def test_plan_checks(small, tmp_path, kw, msg):
    args = dict(models=["m/a"], dataset=small, target="simulator", out=tmp_path, run_name="r") | kw
    with pytest.raises(ValueError, match=msg):
        plan_run(**args)


def test_plan_refuses_an_existing_run_unless_resumed(small, tmp_path):
    plan = plan_run(models=["typesafe/jev-1.14"], dataset=small, target="simulator", out=tmp_path, run_name="r",
                    sim_config=SimConfig(latency_s=0.0))
    asyncio.run(run_plan(plan))
    with pytest.raises(ValueError, match="already holds results for typesafe/jev-1.14"):
        plan_run(models=["typesafe/jev-1.14"], dataset=small, target="simulator", out=tmp_path, run_name="r")
    again = plan_run(models=["typesafe/jev-1.14"], dataset=small, target="simulator", out=tmp_path, run_name="r",
                     resume=True, sim_config=SimConfig(latency_s=0.0))
    live = LiveRun(again.models, again.requests_per_model)
    result = asyncio.run(run_plan(again, on_event=live.on_event, on_model=live.on_model))
    assert result.summaries[0]["photos"] == 12 and live.status()["typesafe/jev-1.14"]["done"] == len(small)  # nothing left to ask


def test_plan_budget_stops_the_run(small, tmp_path):
    with pytest.raises(ValueError, match="max_cost_usd"):
        plan_run(models=["typesafe/jev-1.14"], dataset=small, target="simulator", out=tmp_path, run_name="b",
                 max_cost_usd=-1)
    plan = plan_run(models=["openai/gpt-6-luna"], dataset=small, target="simulator", out=tmp_path, run_name="b",
                    max_cost_usd=0.0003, sim_config=SimConfig(latency_s=0.0))
    result = asyncio.run(run_plan(plan))
    assert result.stopped and "budget" in result.stopped
    assert 0 < result.summaries[0]["cost_usd"] <= 0.0003


def test_live_json_says_a_run_that_raised_failed(small, tmp_path):
    plan = plan_run(models=["typesafe/jev-1.14"], dataset=small, target="simulator", out=tmp_path, run_name="x",
                    sim_config=SimConfig(latency_s=0.0))

    def broken(run):
        raise RuntimeError("a display that broke")

    with pytest.raises(RuntimeError):
        asyncio.run(run_plan(plan, on_model=broken))
    end = read_live(plan.rundir)
    assert end["state"] == "failed" and "a display that broke" in end["reason"] and end["pid"] == os.getpid()
