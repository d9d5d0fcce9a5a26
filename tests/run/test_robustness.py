"""Nothing lost, nothing paid twice, nothing hangs: faults, stops, budgets, kills and resumes."""
import asyncio
import json
import signal
import subprocess
import sys
import time

import duckdb
import pytest
from aiohttp import web

from support.cli import cli_env
from support.paths import REPO
from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.store.journal import read_journal
from hotdogbench_core.store.rundir import RunDir
from hotdogbench_core.sim.config import FAULTS
from hotdogbench_core.sim.app import SimConfig, Simulator, image_digest, labels_from_parquet

MODEL = "openai/gpt-6-luna"
SECRET = "sk-or-v1-ROBUSTNESS-SECRET"


@pytest.fixture
def table(tmp_path):
    return write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=10))


def settings(base_url, **kw):
    kw.setdefault("max_backoff_s", 0.5)  # short back-off keeps the suite quick; the rules are the same
    return RunSettings(api_key=SECRET, base_url=base_url, **kw)


def run(ds, base_url, tmp_path, run_name="r", models=(MODEL,), bound_s=90, **kw):
    """A run that must end within bound_s: a hang fails the test instead of blocking it."""
    opts = {k: kw.pop(k) for k in ("resume", "max_cost_usd") if k in kw}
    coro = run_models(list(models), ds, settings(base_url, **kw), out=tmp_path / "out", run_name=run_name, **opts)
    return asyncio.run(asyncio.wait_for(coro, bound_s))


def journal_lines(run_dir, model=MODEL):
    return [json.loads(x) for x in RunDir.at(run_dir).journal(model).read_text().splitlines() if x.strip()]


def assert_settled_once_and_counts_match(res, ds, model=MODEL):
    lines = journal_lines(res.run_dir, model)
    settled = [x["id"] for x in lines if x["type"] == "result"]
    assert sorted(settled) == sorted(p.id for p in ds.photos)  # every photo exactly once
    st = read_journal(RunDir.at(res.run_dir).journal(model))
    s = next(s for s in res.summaries if s["model"] == model)
    scored = [r for r in st.results.values() if r.scored]
    assert s["photos"] == len(scored)
    assert s["answered"] == sum(r.pred is not None for r in scored)
    assert s["errors"] == sum(r.error is not None for r in scored)
    assert s["requests_retried"] == sum(bool(r.retries) for r in scored)
    assert s["cost_usd"] == round(sum(r.cost_usd or 0 for r in scored), 5)
    for f in res.run_dir.rglob("*"):
        if f.is_file():
            assert SECRET not in f.read_text(errors="ignore"), f


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_alone(fault, table, tmp_path):
    ds = load_dataset(table)
    cfg = SimConfig(seed=11, latency_s=0.01, stall_s=5.0, **{fault: 0.25})
    with Simulator(cfg, labels=labels_from_parquet(table)) as sim:
        res = run(ds, sim.base_url, tmp_path, max_concurrency=16, request_timeout=0.5)
        assert sim.stats.faults.get(fault, 0) > 0, "the fault should have fired"
    assert res.stopped is None
    assert_settled_once_and_counts_match(res, ds)


def test_all_faults_together_and_caps(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=20))
    ds = load_dataset(table)
    cfg = SimConfig(seed=12, latency_s=0.01, stall_s=5.0, max_in_flight=8, rate_per_s=200, burst=20,
                    retry_after="exact", **{f: 0.04 for f in FAULTS})
    with Simulator(cfg, labels=labels_from_parquet(table)) as sim:
        res = run(ds, sim.base_url, tmp_path, models=(MODEL, "typesafe/jev-1.14"), request_timeout=0.5)
    for m in (MODEL, "typesafe/jev-1.14"):
        assert_settled_once_and_counts_match(res, ds, m)


async def _weird_server(bodies):
    """A provider from hell: each request gets the next strange body."""
    n = {"i": 0}

    async def handle(request):
        await request.read()
        status, ctype, body = bodies[n["i"] % len(bodies)]
        n["i"] += 1
        return web.Response(status=status, body=body, content_type=ctype)

    app = web.Application(client_max_size=1 << 26)
    app.router.add_post("/v1/chat/completions", handle)
    app.router.add_post("/alpha/decisions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, runner.addresses[0][1]


WEIRD = [
    (200, "text/html", b"<html><body>502 Bad Gateway</body></html>"),
    (200, "application/json", b"\xff\xfe\xfa not utf-8"),
    (200, "application/json", b"[1, 2, 3]"),
    (200, "application/json", b'"just a string"'),
    (200, "application/json", b'{"id": "gen-1", "choices": []}'),
    (200, "application/json", b'{"id": "gen-1", "choices": [{"message": {"content": null}, "finish_reason": "length"}],'
                              b' "usage": {"prompt_tokens": 10, "completion_tokens": 1024, "cost": 0.01}}'),
    (200, "application/json", b'{"choices": [{"error": {"code": 502, "message": "upstream"}}]}'),
    (200, "application/json", b'{"id": "x", "choices": [{"message": {"content": "' + b"a" * (5 << 20) + b'"}}]}'),
    (200, "application/json", b'{"answers": {"hot_dog": {"noul": 7}}, "usage": {"cost": 0.001}}'),
    (200, "application/json", b'{"id": "ok", "choices": [{"message": {"content": "{\\"hot_dog\\": true}"}}],'
                              b' "usage": {"cost": 0.001}}'),
]


@pytest.mark.parametrize("model", [MODEL, "typesafe/jev-1.14"])
def test_strange_bodies_over_http_settle_as_answers_or_errors(model, table, tmp_path):
    ds = load_dataset(table)

    async def main():
        runner, port = await _weird_server(WEIRD)
        try:
            return await run_models([model], ds, settings(f"http://127.0.0.1:{port}", start_concurrency=2),
                                    out=tmp_path / "out", run_name="w")
        finally:
            await runner.cleanup()

    res = asyncio.run(asyncio.wait_for(main(), 90))
    assert_settled_once_and_counts_match(res, ds, model)
    st = read_journal(RunDir.at(res.run_dir).journal(model))
    errors = " ".join(r.error or "" for r in st.results.values())
    if model == MODEL:
        assert "response body over" in errors  # the 5 MB body was refused, not held


def test_stall_times_out_and_is_retried(table, tmp_path):
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=1, latency_s=0.01, stall=0.3, stall_s=30), labels=labels_from_parquet(table)) as sim:
        t0 = time.monotonic()
        res = run(ds, sim.base_url, tmp_path, request_timeout=0.3, bound_s=60)
        assert time.monotonic() - t0 < 30  # never waited for a 30 s stall
    assert res.summaries[0]["concurrency"]["transport_errors"] > 0
    assert_settled_once_and_counts_match(res, ds)


def test_out_of_credits_is_fatal_then_resume(table, tmp_path):
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=0, latency_s=0.01, credits_usd=0.0005), labels=labels_from_parquet(table)) as sim:
        res = run(ds, sim.base_url, tmp_path)
        assert res.stopped and "402" in res.stopped and "credits" in res.hint
        asked = sim.stats.requests
        assert asked < 31 + 16  # stopped at the first 402s, not 8 tries for every photo
        kept = len(read_journal(RunDir.at(res.run_dir).journal(MODEL)).results)
        assert 0 < kept < 31
        sim.update(credits_usd=None)
        res2 = run(ds, sim.base_url, tmp_path, resume=True)
    assert res2.stopped is None and res2.summaries[0]["answered"] == 30
    assert_settled_once_and_counts_match(res2, ds)


def test_budget_stops_then_resume_finishes(table, tmp_path):
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=0, latency_s=0.02), labels=labels_from_parquet(table)) as sim:
        res = run(ds, sim.base_url, tmp_path, max_cost_usd=0.002)
        assert res.stopped and "budget" in res.stopped
        spent = sum(r.cost_usd or 0 for r in read_journal(RunDir.at(res.run_dir).journal(MODEL)).results.values())
        assert 0 < spent <= 0.002
        assert sim.stats.spent_usd == pytest.approx(spent)  # nothing paid for went unrecorded
        res2 = run(ds, sim.base_url, tmp_path, resume=True, max_cost_usd=1.0)
    assert res2.stopped is None
    assert_settled_once_and_counts_match(res2, ds)


def _cli_run(table, base_url, out, *extra):
    env = cli_env(SECRET)
    return subprocess.Popen([sys.executable, "-m", "hotdogbench_core", "run", "--models", MODEL, "--input", str(table),
                             "--base-url", base_url, "--out", str(out), "--run", "k", "--start-concurrency", "4",
                             "--max-concurrency", "4", *extra],
                            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_results(run_dir, n, proc, timeout=60):
    path = RunDir.at(run_dir).journal(MODEL)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count('"type":"result"') >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the run made no progress")


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT", "SIGTERM"])
def test_killed_or_interrupted_run_resumes_without_paying_twice(how, tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=20))
    ds = load_dataset(table)
    images = {p.id: p.image for p in ds.stream()}
    with Simulator(SimConfig(seed=0, latency_s=0.15, latency_sigma=0.1), labels=labels_from_parquet(table)) as sim:
        proc = _cli_run(table, sim.base_url, tmp_path / "out")
        _wait_for_results(tmp_path / "out" / "k", 10, proc)
        proc.send_signal(getattr(signal, how))
        out, err = proc.communicate(timeout=30)
        settled_before = read_journal(RunDir.at(tmp_path / "out" / "k").journal(MODEL)).results
        assert 10 <= len(settled_before) < 61
        if how in ("SIGINT", "SIGTERM"):  # SIGTERM is the same graceful stop as Ctrl-C, exit 128 + 15
            assert proc.returncode == {"SIGINT": 130, "SIGTERM": 143}[how] and "--resume" in err, err
            assert "Traceback" not in err
            assert (tmp_path / "out" / "k" / "summary.json").exists()
            # the grace period let every request in flight come back: all that was sent is saved
            assert sim.stats.requests == len(settled_before)
        else:
            assert proc.returncode == -signal.SIGKILL
            # its lock file still names it, but the kernel dropped the flock: the resume below is not blocked
            assert json.loads((tmp_path / "out" / "k" / "run.lock").read_text())["pid"] == proc.pid
        proc2 = _cli_run(table, sim.base_url, tmp_path / "out", "--resume")
        out2, err2 = proc2.communicate(timeout=60)
        assert proc2.returncode == 0, err2
        for (pid, _), r in settled_before.items():
            assert len(sim.stats.by_digest[image_digest(images[pid])]) == 1, f"photo {pid} was asked twice"
    run_dir = tmp_path / "out" / "k"
    f = run_dir / (MODEL.replace("/", "__") + ".parquet")
    assert duckdb.sql(f"SELECT count(DISTINCT id), count(*) FROM '{f}' WHERE error IS NULL").fetchone() == (61, 61)
    st = read_journal(RunDir.at(run_dir).journal(MODEL))
    summary = json.loads((run_dir / "summary.json").read_text())[0]
    assert len(st.sessions) == 2 and summary["wall_s"] == round(sum(s["wall_s"] for s in st.sessions), 2)
    assert summary["wall_s"] >= st.sessions[0]["wall_s"] > 0
    assert summary["answered"] == 60
