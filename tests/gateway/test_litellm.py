"""hotdogbench's real command line against a real OpenAI-compatible gateway: the LiteLLM proxy (see conftest.py).

What works is asserted plainly. What does not work yet is marked xfail(strict=True): each of those fails
today, and the day one passes the mark has to go.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
import pytest

from hotdogbench_core.store.rundir import RunDir

from .conftest import MINUTE_RPM, SAMPLE, SIM_UPSTREAM_KEY, loopback_env

pytestmark = pytest.mark.gateway
# today's client gives up on a photo LiteLLM keeps refusing after 15-25 s (8 attempts, measured); a refusal that
# lasts this long outlasts that with room to spare
REFUSED_FOR_S = 35


def sample_counts() -> tuple[int, int, int]:
    """(rows, scored rows, scored hot dogs) of the bundled sample."""
    return duckdb.connect().execute(
        "SELECT count(*), sum(scored::INT), sum((scored AND is_hot_dog)::INT) FROM read_parquet(?)",
        [str(SAMPLE)]).fetchone()


def run_cli(gateway, model: str, workdir: Path, *, input_path: Path = SAMPLE, key: str | None = None,
            base_url: str | None = None, run: str = "r",
            timeout: float = 300) -> tuple[subprocess.CompletedProcess, list | None, list[dict]]:
    """`hotdogbench run` through the gateway as a user types it: (process, summary.json or None, parquet rows).
    The gateway's master key goes where OpenRouter's would (OPENROUTER_API_KEY); cwd is workdir, so the repo's
    .env is not read."""
    workdir.mkdir(parents=True, exist_ok=True)
    env = loopback_env()
    env["OPENROUTER_API_KEY"] = key or gateway.master_key
    out = workdir / "out"
    proc = subprocess.run([sys.executable, "-m", "hotdogbench_core", "run", "--base-url", base_url or gateway.base_url,
                           "--models", model, "--input", str(input_path), "--run", run, "--out", str(out),
                           "--quiet"], cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)
    summary_path = out / run / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
    rows: list[dict] = []
    for p in sorted((out / run).glob("*.parquet")):
        cur = duckdb.connect().execute("SELECT * FROM read_parquet(?) ORDER BY id", [str(p)])
        names = [d[0] for d in cur.description]
        rows += [dict(zip(names, r)) for r in cur.fetchall()]
    return proc, summary, rows


def explain(proc: subprocess.CompletedProcess, gateway) -> str:
    return (f"exit {proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-2000:]}\n"
            f"gateway log:\n{gateway.log_tail(20)}")


@pytest.fixture(scope="module")
def mock_run(gateway, tmp_path_factory):
    """One run of the whole sample on mock/hotdog (a fixed answer, no upstream); several tests read it."""
    return run_cli(gateway, "mock/hotdog", tmp_path_factory.mktemp("mock-run"))


# --- what works today -------------------------------------------------------------------------------------------

def test_mock_deployment_answers_parse_and_score(mock_run, gateway):
    proc, summary, rows = mock_run
    assert proc.returncode == 0, explain(proc, gateway)
    n_rows, n_scored, n_hot_dogs = sample_counts()
    (s,) = summary
    assert s["model"] == "mock/hotdog"
    assert (s["photos"], s["answered"], s["unanswered"], s["errors"]) == (n_scored, n_scored, 0, 0)
    assert len(rows) == n_rows and all(r["error"] is None for r in rows)
    # mock_response ignores the image: every photo is called a hot dog, so accuracy is the share of hot dogs
    assert all(r["pred"] is True for r in rows)
    assert s["accuracy"] == pytest.approx(n_hot_dogs / n_scored)
    # LiteLLM's mock usage (10 prompt + 20 completion tokens) comes through; no cost, no provider in the body
    assert {(r["prompt_tokens"], r["completion_tokens"]) for r in rows} == {(10, 20)}
    assert all(r["cost_usd"] is None and r["provider"] is None for r in rows)


def test_simulator_behind_the_gateway_answers_depend_on_the_image(gateway, upstream_simulator, tmp_path):
    """sim/luna is openai/gpt-6-luna on the project's simulator: the gateway forwards the photo, the simulator
    decides by a hash of the image, so the verdicts must equal those of the same model asked directly."""
    proc, summary, rows = run_cli(gateway, "sim/luna", tmp_path / "via-gateway")
    assert proc.returncode == 0, explain(proc, gateway)
    n_rows, n_scored, _ = sample_counts()
    (s,) = summary
    assert (s["photos"], s["answered"], s["errors"]) == (n_scored, n_scored, 0)
    assert s["accuracy"] is not None and 0.5 < s["accuracy"] < 1.0
    assert len(rows) == n_rows and {r["pred"] for r in rows} == {True, False}
    # the upstream's usage.cost and provider pass through LiteLLM's body untouched
    assert s["cost_usd"] > 0 and all(r["cost_usd"] and r["cost_usd"] > 0 for r in rows)
    assert {r["provider"] for r in rows} == {"simulator"}

    # the same CLI straight at the simulator, with the model id the gateway sends upstream
    proc2, _, direct = run_cli(gateway, "openai/gpt-6-luna", tmp_path / "direct", key=SIM_UPSTREAM_KEY,
                               base_url=upstream_simulator.base_url)
    assert proc2.returncode == 0, proc2.stderr
    assert [(r["id"], r["pred"]) for r in rows] == [(r["id"], r["pred"]) for r in direct]


def test_gateway_shapes_hotdogbench_has_to_handle(gateway):
    """The LiteLLM 1.108.7 answers docs/gateways.md describes, asked directly (no CLI). If LiteLLM is upgraded
    and one changes, docs/gateways.md and the issue's plan need the new shape."""
    body = {"model": "mock/priced", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5,
            "usage": {"include": True}, "reasoning": {"effort": "minimal"}, "provider": {"only": ["x"]},
            "response_format": {"type": "json_schema", "json_schema": {"name": "v", "strict": True, "schema": {
                "type": "object", "properties": {"hot_dog": {"type": "boolean"}}, "required": ["hot_dog"]}}}}
    url = gateway.base_url + "/v1/chat/completions"
    with httpx.Client(trust_env=False, timeout=30) as c:
        ok = c.post(url, json=body, headers=gateway.headers())
        assert ok.status_code == 200, ok.text  # OpenRouter's extras are accepted
        data = ok.json()
        assert data["choices"][0]["message"]["content"] == '{"hot_dog": true}'
        assert data["usage"] == {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}  # no cost
        assert "provider" not in data
        assert float(ok.headers["x-litellm-response-cost"]) == pytest.approx(10 * 1e-6 + 20 * 2e-6)  # only here

        # past a deployment's rpm: 429, code as a string, no retry-after, a fixed llm_provider-retry-after: 60
        limited = {"model": "mock/limited-probe", "messages": [{"role": "user", "content": "hi"}]}
        statuses = [c.post(url, json=limited, headers=gateway.headers()) for _ in range(3)]
        refused = [r for r in statuses if r.status_code == 429]
        assert refused, [r.status_code for r in statuses]
        err = refused[0].json()["error"]
        assert (err["type"], err["code"]) == ("throttling_error", "429")
        assert "retry-after" not in refused[0].headers
        assert refused[0].headers["llm_provider-retry-after"] == "60"

        unknown = c.post(url, json={**body, "model": "mock/nothere"}, headers=gateway.headers())
        assert unknown.status_code == 400 and unknown.json()["error"]["type"] == "invalid_request_error"

        wrong_key = c.post(url, json=body, headers=gateway.headers("sk-wrong"))  # no database: not a 401
        assert wrong_key.status_code == 400 and wrong_key.json()["error"]["message"] == "No connected db."

        decisions = c.post(gateway.base_url + "/alpha/decisions", json={"model": "mock/hotdog"},
                           headers=gateway.headers())
        assert decisions.status_code == 404

        models = c.get(gateway.base_url + "/v1/models", headers=gateway.headers())
        assert models.status_code == 200
        listed = {m["id"]: m for m in models.json()["data"]}
        assert {"mock/hotdog", "hotdog-mock", "sim/luna"} <= set(listed)
        assert all("pricing" not in m and "architecture" not in m for m in listed.values())


# --- what the gateway issue asked for -------------------------------------------------------------------------------

def test_model_id_without_a_slash(gateway, tmp_path):
    proc, summary, _ = run_cli(gateway, "hotdog-mock", tmp_path)
    assert proc.returncode == 0, explain(proc, gateway)
    assert summary[0]["model"] == "hotdog-mock"
    assert summary[0]["accuracy"] is not None and summary[0]["errors"] == 0
    assert summary[0]["answered"] == summary[0]["photos"]


def test_unknown_cost_is_null_not_zero(mock_run, gateway):
    proc, summary, _ = mock_run
    assert proc.returncode == 0, explain(proc, gateway)
    assert summary[0]["cost_usd"] is None and summary[0]["cost_per_1000_photos_usd"] is None


def test_priced_deployment_cost_comes_from_the_header(gateway, tmp_path):
    """mock/priced has a price in the gateway's config: LiteLLM says the cost only in x-litellm-response-cost."""
    proc, summary, rows = run_cli(gateway, "mock/priced", tmp_path)
    assert proc.returncode == 0, explain(proc, gateway)
    assert all(r["cost_usd"] == pytest.approx(10 * 1e-6 + 20 * 2e-6) for r in rows)
    assert summary[0]["cost_usd"] == pytest.approx(round(summary[0]["photos"] * (10 * 1e-6 + 20 * 2e-6), 5))


def test_unknown_model_stops_before_anything_is_sent(gateway, tmp_path):
    proc, summary, rows = run_cli(gateway, "mock/nothere", tmp_path)
    assert proc.returncode == 2, explain(proc, gateway)
    assert "--models: 'mock/nothere' is not among the" in proc.stderr and "mock/hotdog" in proc.stderr  # close match
    assert rows == [] and summary is None


def test_wrong_key_stops_the_run(gateway, tmp_path):
    proc, _, rows = run_cli(gateway, "mock/hotdog", tmp_path, key="sk-wrong-key")
    assert proc.returncode == 3, explain(proc, gateway)
    assert "refused the key" in proc.stderr and "sk-wrong-key" not in proc.stderr + proc.stdout
    assert rows == []


def test_rate_limited_deployment_finishes_every_photo(gateway, tmp_path):
    """mock/limited takes 1 request per UTC clock minute; two photos are sent at once: one is answered, the other
    is refused until the minute is over (LiteLLM's 429 carries only llm_provider-retry-after: 60). It starts with
    at least REFUSED_FOR_S left in the minute (waiting for the next one otherwise), so 8 attempts in 15-25 s (the
    reference's count) would give up before the window reopens; retries budgeted in time wait for it (issue 10)."""
    subset = tmp_path / "two.parquet"
    duckdb.connect().execute(f"COPY (SELECT * FROM read_parquet('{SAMPLE}') WHERE scored ORDER BY id LIMIT 2) "
                             f"TO '{subset}' (FORMAT parquet)")
    left = 60 - time.time() % 60
    if left < REFUSED_FOR_S:
        time.sleep(left + 0.5)
    proc, summary, rows = run_cli(gateway, "mock/limited", tmp_path, input_path=subset)
    assert proc.returncode == 0, explain(proc, gateway)
    exhausted = [r["id"] for r in rows if r["error"] and "retries exhausted" in r["error"]]
    assert not exhausted, f"{len(exhausted)} of {len(rows)} photos: retries exhausted"
    assert summary[0]["errors"] == 0 and summary[0]["answered"] == 2


def test_a_per_minute_limit_is_used_again_every_minute(gateway, tmp_path):
    """Issue 10's real-world failure: against LiteLLM's rpm counted per clock minute, whose 429s carry only
    llm_provider-retry-after: 60, the limiter of 2026-11-30 took the first minute's quota, then held 8-11% of it for
    the next 13 minutes, never noticing the refill. Now the first whole minute of the run (the one after the minute
    it starts in) gets at least 90% of the quota, and no photo is lost. Two quotas and two more photos: the run
    spans at least one whole minute (60-125 s)."""
    photos = 2 * (MINUTE_RPM - 1) + 2
    subset = tmp_path / "some.parquet"
    duckdb.connect().execute(f"COPY (SELECT * FROM read_parquet('{SAMPLE}') ORDER BY id LIMIT {photos}) "
                             f"TO '{subset}' (FORMAT parquet)")
    proc, summary, rows = run_cli(gateway, "mock/minute", tmp_path, input_path=subset)
    assert proc.returncode == 0, explain(proc, gateway)
    assert summary[0]["errors"] == 0 and summary[0]["answered"] == photos
    assert summary[0]["concurrency"]["retries_exhausted"] == 0
    journal = RunDir(tmp_path / "out", "r").journal("mock/minute")
    minutes = sorted(int(obj["at"] // 60) for obj in map(json.loads, journal.read_text().splitlines())
                     if obj.get("type") == "result")
    whole = range(minutes[0] + 1, minutes[-1])  # after the minute the run started in, before the one it ended in
    assert whole, f"the run spanned no whole clock minute: answers in minutes {minutes}"
    per_minute = {m: minutes.count(m) for m in whole}
    assert min(per_minute.values()) >= 0.9 * MINUTE_RPM, \
        f"answers per whole clock minute {per_minute}, of a {MINUTE_RPM} per minute limit; {explain(proc, gateway)}"
