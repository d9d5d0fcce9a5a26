"""The command line as a user runs it: real subprocesses, real HTTP, real files."""
import json
import socket
import subprocess
import sys
import time

import duckdb
import httpx
import pytest

from support.cli import cli_env
from support.paths import REPO
from support.tables import make_rows, write_table
from hotdogbench_core.protocol.models import PRESETS
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet

SECRET = "sk-or-v1-TESTSECRET-0123456789"


def cli(*args, env=None, cwd=None, timeout=120):
    e = cli_env(**(env or {}))
    return subprocess.run([sys.executable, "-m", "hotdogbench_core", *args], capture_output=True, text=True,
                          env=e, cwd=cwd or REPO, timeout=timeout)


def files_under(d):
    return [p for p in d.rglob("*") if p.is_file()]


def test_run_cheap_against_simulator_writes_reference_outputs(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=6))
    with Simulator(SimConfig(seed=2, latency_s=0.01), labels=labels_from_parquet(table), api_key=SECRET) as sim:
        p = cli("run", "--models", "cheap", "--input", str(table), "--base-url", sim.base_url,
                "--out", str(tmp_path / "out"), "--run", "r1", env={"OPENROUTER_API_KEY": SECRET})
    assert p.returncode == 0, p.stderr
    run_dir = tmp_path / "out" / "r1"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [s["model"] for s in summary] == PRESETS["cheap"]
    for s in summary:
        f = run_dir / (s["model"].replace("/", "__") + ".parquet")
        assert duckdb.sql(f"SELECT count(*) FROM '{f}'").fetchone()[0] == 19
        assert s["answered"] == 18
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    assert [l["model"] for l in lines] == PRESETS["cheap"]  # the reference's one line per model
    for f in files_under(run_dir):
        assert SECRET not in f.read_text(errors="ignore"), f
    assert SECRET not in p.stdout + p.stderr


def test_key_from_dotenv(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=2))
    (tmp_path / ".env").write_text(f'OPENROUTER_API_KEY="{SECRET}"\n')
    with Simulator(SimConfig(latency_s=0.005), labels=labels_from_parquet(table), api_key=SECRET) as sim:
        p = cli("run", "--models", "openai/gpt-6-luna", "--input", str(table), "--base-url", sim.base_url,
                "--out", "out", "--run", "r", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert sim.stats.by_status.get(200, 0) == 7


def test_demo_runs_offline_and_says_it_is_simulated(tmp_path):
    p = cli("demo", "--out", str(tmp_path / "out"), "--run", "d", "--quiet")
    assert p.returncode == 0, p.stderr
    assert "simulat" in p.stdout.lower()
    summary = json.loads((tmp_path / "out" / "d" / "summary.json").read_text())
    assert [s["model"] for s in summary] == PRESETS["cheap"]
    assert all(s["photos"] == 64 and s["answered"] > 50 for s in summary)
    assert all(set(s["unscored_answers"]) == {"1001", "1002"} for s in summary)


def test_demo_takes_the_simulator_settings_and_leaves_a_heartbeat(tmp_path):
    # a simulator that lists no models: the preflight cannot check foo/bar, so it is asked, and fails fast
    config = '{"seed": 1, "latency_s": 0.0, "accuracy": 1.0, "max_in_flight": 5, "models_listing": "none"}'
    p = cli("demo", "--models", "openai/gpt-6-luna,foo/bar", "--out", str(tmp_path), "--run", "d", "--quiet",
            "--sim-config", config)
    summary = {s["model"]: s for s in json.loads((tmp_path / "d" / "summary.json").read_text())}
    assert summary["openai/gpt-6-luna"]["accuracy"] == 1.0  # the simulator ran with the given settings
    live = json.loads((tmp_path / "d" / "live.json").read_text())
    assert live["launch"] == {"command": "demo", "argv": ["demo", "--models", "openai/gpt-6-luna,foo/bar", "--out",
                                                          str(tmp_path), "--run", "d", "--quiet", "--sim-config",
                                                          config]}
    bar = live["models"]["foo/bar"]  # an id the simulator does not know: every photo a 404, said so
    assert bar["answered"] == 0 and bar["errors"] == bar["done"] > 0 and bar["first_error"].startswith("404")
    assert bar["state"] == "stopped" and "fail fast" in bar["stop_reason"]
    assert p.returncode != 0 and "Traceback" not in p.stderr  # a model with no answer: not a success
    listed = cli("demo", "--models", "foo/bar", "--out", str(tmp_path), "--run", "e", "--quiet")
    assert listed.returncode != 0 and "foo/bar" in listed.stderr and not (tmp_path / "e" / "live.json").exists()
    bad = cli("demo", "--out", str(tmp_path), "--run", "f", "--sim-config", "{not json")
    assert bad.returncode == 2 and "--sim-config: is not JSON" in bad.stderr


def test_a_spent_quota_stops_the_model_with_exit_3_and_says_until_when(tmp_path):
    # a window of 10 per clock hour whose 429s say the exact wait: past --max-wait-s, the model stops at once
    config = '{"seed": 1, "latency_s": 0.0, "window_n": 10, "window_s": 3600, "retry_after": "exact"}'
    if time.time() % 3600 > 3540:  # (the hour's window must not refill within the test)
        time.sleep(61)
    p = cli("demo", "--models", "openai/gpt-6-luna", "--out", str(tmp_path), "--run", "q", "--quiet",
            "--sim-config", config, "--max-wait-s", "30", timeout=60)
    assert p.returncode == 3, p.stderr
    assert "asks to wait" in p.stderr and "UTC" in p.stderr and "--max-wait-s" in p.stderr
    assert "finish with: hotdogbench demo ... --run q --resume" in p.stderr and "Traceback" not in p.stderr
    summary = json.loads((tmp_path / "q" / "summary.json").read_text())
    assert summary[0]["answered"] == 10 and "asks to wait" in summary[0]["stopped"]


@pytest.mark.parametrize("args,expect", [
    (["--models", "cheapest", "--base-url", "https://openrouter.ai/api"], "--models: 'cheapest' is neither a preset"),
    (["--input", "/nonexistent/x.parquet"], "does not exist"),
    (["--start-concurrency", "0"], "--start-concurrency"),
    (["--max-concurrency", "4", "--start-concurrency", "8"], "--max-concurrency"),
    (["--repeats", "0"], "--repeats"),
    (["--models", "cheap,noslash", "--base-url", "https://openrouter.ai/api"], "--models: 'noslash'"),
    (["--input", "/nonexistent/x.parquet"], "--input: /nonexistent/x.parquet does not exist"),
    (["--run", "../escape"], "--run: '../escape' must be a plain folder name"),
    (["--run", "/abs/path"], "--run: "),
    (["--request-timeout", "nan"], "--request-timeout: must be a number of seconds above 0"),
    (["--max-cost-usd", "inf"], "--max-cost-usd: must be"),
    (["--max-wait-s", "0"], "--max-wait-s: must be a number of seconds above 0"),
])
def test_bad_flags_named(args, expect, tmp_path):
    p = cli("run", "--base-url", "http://127.0.0.1:9", "--out", str(tmp_path),
            "--input", str(REPO / "data" / "sample.parquet"), *args)
    assert p.returncode == 2
    assert expect in p.stderr
    assert "Traceback" not in p.stderr


def test_missing_key_for_openrouter_is_an_error(tmp_path):
    p = cli("run", "--input", str(REPO / "data" / "sample.parquet"), "--out", str(tmp_path), cwd=tmp_path)
    assert p.returncode == 2 and "OPENROUTER_API_KEY" in p.stderr
    assert not any(tmp_path.rglob("*.parquet"))  # nothing sent, nothing written


def test_bad_table_named_before_any_request(tmp_path):
    rows = make_rows()
    rows[0]["image"] = b"not an image"
    table = write_table(tmp_path / "bad.parquet", rows)
    with Simulator(SimConfig(latency_s=0.005)) as sim:
        p = cli("run", "--input", str(table), "--base-url", sim.base_url, "--out", str(tmp_path / "out"))
        assert p.returncode == 2 and "ids 1" in p.stderr
        assert sim.stats.requests == 0


def test_build_dataset_command(tmp_path):
    from PIL import Image
    for cat in ("hot_dog", "taco"):
        (tmp_path / "f" / cat).mkdir(parents=True)
        for i in range(3):
            Image.new("RGB", (8, 8), (i * 40, 10, 10)).save(tmp_path / "f" / cat / f"{cat}{i}.jpg")
    p = cli("build-dataset", str(tmp_path / "f"), "-o", str(tmp_path / "d.parquet"), "--per-group", "2")
    assert p.returncode == 0, p.stderr
    assert duckdb.sql(f"SELECT category, count(*) FROM '{tmp_path / 'd.parquet'}' GROUP BY 1 ORDER BY 1").fetchall() \
        == [("hot_dog", 2), ("taco", 2)]


def test_simulate_command_serves_openrouter_shapes(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "hotdogbench_core", "simulate", "--port", str(port),
                             "--config", '{"latency_s": 0}'], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert f"127.0.0.1:{port}" in line
        r = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5)
        ids = {m["id"] for m in r.json()["data"]}
        assert set(PRESETS["all"]) <= ids
    finally:
        proc.terminate()
        proc.wait(5)
