"""--max-rate over real HTTP: the runner, the simulator's clock-aligned window, the summary; the flag as a user
types it (a subprocess), bad values named by the flag before anything is sent."""
import asyncio
import json
import subprocess
import sys

import pytest

from support.cli import cli_env
from support.paths import REPO
from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset
from hotdogbench_core.run.runner import ModelRun
from hotdogbench_core.sim.app import SimConfig, Simulator

MODEL = "openai/gpt-6-luna"


def run(tmp_path, name, **settings):
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=8, extras=0)))  # 24 photos
    cfg = SimConfig(seed=0, latency_s=0.05, window_n=6, window_s=2.0, retry_after="exact")  # 3/s, per clock window
    with Simulator(cfg) as sim:
        s = RunSettings(api_key="sk-test", base_url=sim.base_url, **settings)
        summary = asyncio.run(asyncio.wait_for(ModelRun(MODEL, ds, s, tmp_path / name).run(), 120))
        return summary, sim.stats.rate_limited, sim.stats.answered


def test_a_known_cap_is_never_refused_and_the_summary_says_it(tmp_path):
    summary, refused, answered = run(tmp_path, "known", max_rate="2.8/s")
    assert refused == 0 and answered == 24 and summary["answered"] == 24
    assert summary["concurrency"]["max_rate_per_s"] == pytest.approx(2.8)
    assert summary["concurrency"]["throttles"] == 0
    found, refused_found, _ = run(tmp_path, "found")  # the same server, the cap not told: the start's burst of 8
    assert refused_found > 0 and found["answered"] == 24  # alone meets the window's 6 (the test could fail)
    assert found["concurrency"]["max_rate_per_s"] is None


def test_a_cap_the_server_states_is_read_from_its_answers(tmp_path):
    # x-ratelimit-limit-requests on every answer, as the LiteLLM proxy sends for a deployment with an rpm
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=8, extras=0)))  # 24 photos
    cfg = SimConfig(seed=0, latency_s=0.05, window_n=600, window_s=60.0, state_limit=True)
    with Simulator(cfg) as sim:
        for name, told, pace in (("stated", None, 599 / 60), ("told", "30/s", 30.0)):  # the user's word wins
            s = RunSettings(api_key="sk-test", base_url=sim.base_url, max_rate=told)
            summary = asyncio.run(asyncio.wait_for(ModelRun(MODEL, ds, s, tmp_path / name).run(), 60))
            assert summary["answered"] == 24
            assert summary["concurrency"]["max_rate_per_s"] == pytest.approx(pace, abs=1e-3)
            rates = [r for _, r in summary["concurrency"]["rate_trace"] if r is not None]
            assert max(rates, default=0.0) <= pace + 1e-6, rates
            assert bool(rates) == (told is None)  # the statement is on the trace


def cli(*args):
    env = cli_env()
    return subprocess.run([sys.executable, "-m", "hotdogbench_core", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=180)


def test_the_flag_paces_a_demo_run(tmp_path):
    p = cli("demo", "--models", "anthropic/claude-haiku-5.5", "--out", str(tmp_path / "out"), "--run", "d",
            "--quiet", "--max-rate", "1200/min")
    assert p.returncode in (0, 6), p.stderr  # 6: a demo's simulated 5xx may leave a model without an answer
    summary = json.loads((tmp_path / "out" / "d" / "summary.json").read_text())[0]
    assert summary["concurrency"]["max_rate_per_s"] == pytest.approx(20.0)
    assert max(r for _, r in summary["concurrency"]["rate_trace"] if r is not None) <= 20.0 + 1e-6
    manifest = json.loads((tmp_path / "out" / "d" / "manifest.json").read_text())
    assert manifest["settings"]["max_rate_per_s"] == pytest.approx(20.0)  # how the run was told to pace


@pytest.mark.parametrize("args,message", [
    (["--max-rate", "20/day"], "--max-rate: must be requests per second above 0, or N/s, N/min, N/h (as 20/min), "
                               "got '20/day'"),
    (["--max-rate", "0"], "--max-rate: must be requests per second above 0"),
    (["--max-rate", "1/day"], "--max-rate: must be requests per second above 0"),
    (["--max-rate", "0.5/h"], "--max-rate: must be at least 1/h, got '0.5/h' (a daily quota: leave it out"),
    (["--max-rate", "5/s", "--limiter", "reference"], "--max-rate: paces the adaptive limiter, not 'reference'"),
])
def test_a_bad_max_rate_is_named_by_its_flag_and_nothing_is_sent(tmp_path, args, message):
    p = cli("demo", "--out", str(tmp_path / "out"), "--run", "x", *args)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()


def test_a_policy_stated_in_the_ietf_ratelimit_fields_paces_the_run(tmp_path):
    # express-rate-limit's draft-8 fields: `RateLimit-Policy: "window"; q=6; w=2` on every answer, and on a refusal
    # `RateLimit: "window"; r=0; t=...` with no Retry-After. The policy is a pace of 5 / 2 s from the first answer.
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=8, extras=0)))  # 24 photos
    cfg = SimConfig(seed=0, latency_s=0.05, window_n=6, window_s=2.0, retry_after="ratelimit")
    with Simulator(cfg) as sim:
        s = RunSettings(api_key="sk-test", base_url=sim.base_url)
        summary = asyncio.run(asyncio.wait_for(ModelRun(MODEL, ds, s, tmp_path / "ietf").run(), 60))
        refused = sim.stats.rate_limited
    assert summary["answered"] == 24
    assert summary["concurrency"]["max_rate_per_s"] == pytest.approx(2.5)
    assert refused <= 2  # at most the start's 8 sends at once past the window's 6: none once the pace was read
