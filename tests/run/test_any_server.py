"""Any OpenAI-compatible server: the preflight, the dialect, cost known or unknown, and models that cannot be asked
stopping early, over real HTTP (the simulator, and small servers that answer wrongly on purpose)."""
import asyncio
import json
import subprocess
import sys
import threading
import time

import polars as pl
import pytest
from aiohttp import web

from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.protocol.request import request_for
from hotdogbench_core.run.preflight import KeyRefusedError, PreflightError, load_price_table
from hotdogbench_core.sim import SimConfig, Simulator, labels_from_parquet
from hotdogbench_core.store.rundir import RunDir
from support.paths import REPO
from support.tables import make_rows, write_table

LUNA, HAIKU = "openai/gpt-6-luna", "anthropic/claude-haiku-5.5"


@pytest.fixture
def table(tmp_path):
    return write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=4))  # 12 scored + 1 unscored


def run(table, base_url, models, out, name="r", **kw):
    settings = RunSettings(api_key="sk-test", base_url=base_url, **kw.pop("settings", {}))
    return asyncio.run(run_models(models, load_dataset(table), settings, out=out, run_name=name, **kw))


def sim(table, **config):
    return Simulator(SimConfig(**{"seed": 1, "latency_s": 0.0, **config}), labels=labels_from_parquet(table))


def test_dialects_differ_only_in_openrouter_s_parts():
    ref, plain = request_for(LUNA).body(b"x"), request_for(LUNA, "openai").body(b"x")
    assert {"usage", "reasoning"} <= set(ref) and not {"usage", "reasoning", "provider"} & set(plain)
    assert {k: v for k, v in ref.items() if k not in ("usage", "reasoning")} == plain
    clef = request_for("cloudflare/clef", "openai").body(b"x")
    assert "provider" not in clef and "provider" in request_for("cloudflare/clef").body(b"x")
    assert request_for(HAIKU, "openai").body(b"x")["temperature"] == 0  # a plain parameter stays
    assert request_for(LUNA, "openai").settings()["dialect"] == "openai" and "dialect" not in request_for(LUNA).settings()


def test_an_openrouter_shaped_listing_keeps_the_reference_bodies(table, tmp_path):
    with sim(table) as s:
        res = run(table, s.base_url, [LUNA], tmp_path)
    manifest = json.loads(RunDir.at(res.run_dir).manifest.read_text())
    assert manifest["models"][LUNA]["body"] == request_for(LUNA).template() and res.warnings == []


def test_a_plain_server_gets_plain_bodies_and_an_id_without_a_slash(table, tmp_path):
    with sim(table, models_listing="plain", report_cost=False, extra_models={"llava": {}}) as s:
        res = run(table, s.base_url, ["llava", LUNA], tmp_path)
        assert s.stats.requests == 2 * 13
    manifest = json.loads(RunDir.at(res.run_dir).manifest.read_text())
    assert manifest["models"]["llava"]["body"] == request_for("llava", "openai").template()
    assert "usage" not in manifest["models"][LUNA]["body"] and manifest["settings"]["api"] == "openai"
    for summary in res.summaries:
        assert summary["answered"] == 12 and summary["cost_usd"] is None  # no cost said: unknown, not free
        assert summary["cost_per_1000_photos_usd"] is None and summary["cost_usd_all_repeats"] is None


def test_unlisted_models_and_models_without_images_stop_before_anything_is_sent(table, tmp_path):
    extra = {"acme/text-only": {"vision": False}, "acme/no-json": {"structured": False}}
    with sim(table, extra_models=extra) as s:
        with pytest.raises(PreflightError, match="'openai/gpt-6-lunna' is not among .* did you mean openai/gpt-6-luna"):
            run(table, s.base_url, [HAIKU, "openai/gpt-6-lunna"], tmp_path)
        with pytest.raises(PreflightError, match="does not take image input"):
            run(table, s.base_url, ["acme/text-only"], tmp_path, name="r2")
        with pytest.raises(PreflightError, match="does not support structured outputs"):
            run(table, s.base_url, ["acme/no-json"], tmp_path, name="r3")
        assert s.stats.requests == 0  # nothing was sent, nothing paid for


def test_a_model_the_server_does_not_know_stops_after_a_few_photos_and_the_others_run(table, tmp_path):
    with sim(table, models_listing="none") as s:  # no listing: the check happens during the run
        res = run(table, s.base_url, ["foo/bar", HAIKU], tmp_path)
        asked = s.stats.requests
    bad, good = res.summaries
    assert bad["answered"] == 0 and bad["stopped"].startswith("fail fast: the first 5 photos all failed")
    assert "404" in bad["stopped"] and "model id" in bad["hint"] and bad["first_error"].startswith("404:")
    assert good["answered"] == 12 and res.stopped is None  # one model's failure stops only that model
    assert asked <= 13 + 5 + 8  # the other model's photos, five failures, at most the start window in flight
    assert any("did not answer a model listing" in w for w in res.warnings)


class Wrong:
    """A loopback server that answers every chat request the same wrong way: HTML with 200, 500, OpenAI's 429 of a
    spent account, or headers then a body that drips one byte a second."""

    def __init__(self, kind: str):
        self.kind, self.requests = kind, 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.kind == "google_key":  # Gemini's OpenAI-compatible endpoint on a key it does not take
            self.requests += not request.path.endswith("/models")
            return web.json_response([{"error": {"code": 400, "message": "API key not valid. Please pass a valid API "
                                                 "key.", "status": "INVALID_ARGUMENT", "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}], status=400)
        if request.path.endswith("/models"):
            return web.Response(status=404)
        self.requests += 1
        await request.read()
        if self.kind == "html":
            return web.Response(text="<html><body>Welcome to nginx</body></html>", content_type="text/html")
        if self.kind == "500":
            return web.json_response({"error": {"code": 500, "message": "boom"}}, status=500)
        if self.kind in ("maintenance", "forever"):  # a 503 "back in two hours"; a 429 whose wait is junk
            status, wait = (503, "7200") if self.kind == "maintenance" else (429, "1e23")
            return web.json_response({"error": {"code": status, "message": "later"}}, status=status,
                                     headers={"Retry-After": wait})
        if self.kind == "quota":  # OpenAI's answer once an account's billing quota is spent
            return web.json_response({"error": {"message": "You exceeded your current quota, please check your plan "
                                                "and billing details.", "type": "insufficient_quota", "param": None,
                                                "code": "insufficient_quota"}}, status=429)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        for b in b'{"choices": []}':
            await resp.write(bytes([b]))
            await asyncio.sleep(1.0)
        return resp

    def __enter__(self):
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def serve():
            asyncio.set_event_loop(self.loop)
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self.handle)
            self.runner = web.AppRunner(app)
            self.loop.run_until_complete(self.runner.setup())
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            self.loop.run_until_complete(site.start())
            self.port = self.runner.addresses[0][1]
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        started.wait(10)
        self.base_url = f"http://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc):
        async def close():
            await self.runner.cleanup()
        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.mark.parametrize("kind", ["html", "500"])
def test_a_wrong_base_url_or_a_broken_server_stops_after_twenty_attempts(table, tmp_path, kind):
    with Wrong(kind) as server:
        t0 = time.monotonic()
        res = run(table, server.base_url, [LUNA], tmp_path, settings={"max_backoff_s": 0.05})
        took = time.monotonic() - t0
    (s,) = res.summaries
    assert s["answered"] == 0 and "none of the first 20 requests was answered" in s["stopped"]
    assert server.requests <= 20 + 8  # not 8 attempts for each of 13 photos (104)
    if kind == "html":
        assert "check the base URL" in s["hint"] and f"{server.base_url}/v1/chat/completions" in s["hint"]
    assert took < 30


def test_a_spent_account_s_429_stops_the_model_at_once_saying_so_not_retried_as_a_rate(table, tmp_path):
    with Wrong("quota") as server:
        res = run(table, server.base_url, [LUNA], tmp_path)
    (s,) = res.summaries
    assert s["answered"] == 0 and "insufficient_quota" in s["stopped"] and "billing" in s["hint"]
    assert server.requests <= 8  # the start's sends at most, not each photo's retry budget of 180 s
    assert res.stopped  # said out loud for the run, not a model that looks done


@pytest.mark.parametrize("kind", ["maintenance", "forever"])
def test_a_wait_past_max_wait_s_stops_the_model_whatever_the_status_or_the_number(table, tmp_path, kind):
    # a 503 asking two hours is no shorter a stall than a 429 asking them; a Retry-After of 1e23 s is junk, not a
    # crash (no clock reaches it)
    with Wrong(kind) as server:
        t0 = time.monotonic()
        res = run(table, server.base_url, [LUNA], tmp_path, settings={"max_wait_s": 60.0})
        took = time.monotonic() - t0
    (s,) = res.summaries
    assert s["answered"] == 0 and "asks to wait" in s["stopped"] and "--resume" in s["hint"]
    assert server.requests <= 8 and took < 30  # stopped at the start's answers, not held for hours


def test_google_s_refusal_of_the_key_stops_the_run_before_anything_is_sent(table, tmp_path):
    with Wrong("google_key") as server:
        with pytest.raises(KeyRefusedError, match="refused the key .*API key not valid"):
            run(table, server.base_url, [LUNA], tmp_path)
    assert server.requests == 0  # only the listing was asked


def test_a_dripping_body_is_a_stalled_attempt_long_before_the_request_deadline(table, tmp_path):
    with Wrong("drip") as server:
        t0 = time.monotonic()
        res = run(table, server.base_url, [LUNA], tmp_path,
                  settings={"request_timeout": 120, "body_timeout": 0.5, "max_backoff_s": 0.05,
                            "start_concurrency": 4, "max_concurrency": 4})
        took = time.monotonic() - t0
    (s,) = res.summaries
    assert "BodyStalled" in s["stopped"] and s["answered"] == 0
    assert took < 20  # 20 stalled attempts of 0.5 s, four at a time: not 20 x 120 s


def test_budget_and_cost_on_servers_that_report_none(table, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({LUNA: {"prompt": 0.25, "completion": 2.0}}))  # USD per million tokens
    with sim(table, models_listing="plain", report_cost=False) as s:
        with pytest.raises(PreflightError, match="max_cost_usd: .* no price is known for openai/gpt-6-luna"):
            run(table, s.base_url, [LUNA], tmp_path, max_cost_usd=1.0)
        assert s.stats.requests == 0
        res = run(table, s.base_url, [LUNA], tmp_path, name="priced", max_cost_usd=1.0,
                  prices=load_price_table(prices))
    (summary,) = res.summaries
    assert summary["answered"] == 12 and summary["cost_usd"] > 0 and res.stopped is None
    # a listing with prices prices the answers that come without a cost
    with sim(table, report_cost=False) as s:
        res = run(table, s.base_url, [LUNA], tmp_path, name="listed", max_cost_usd=1.0)
        spent = s.stats.spent_usd
    rows = pl.read_parquet(RunDir.at(res.run_dir).results(LUNA))
    assert rows["cost_usd"].null_count() == 0 and rows["cost_usd"].sum() == pytest.approx(spent) and spent > 0
    # spoken to as OpenRouter but no cost in the answers and no price anywhere: the budget stops, not serializes
    with sim(table, report_cost=False, models_listing="plain") as s:
        res = run(table, s.base_url, [LUNA], tmp_path, name="unpriced", max_cost_usd=1.0,
                  settings={"api": "openrouter"})
        asked = s.stats.requests
    assert "cannot be kept" in res.stopped and asked <= 4


def test_the_cli_says_the_errors_and_exits_6_when_a_model_got_no_answer(table, tmp_path):
    with sim(table, models_listing="none") as s:
        p = subprocess.run([sys.executable, "-m", "hotdogbench_core", "run", "--base-url", s.base_url, "--models",
                            f"foo/bar,{HAIKU}", "--input", str(table), "--out", str(tmp_path), "--run", "c",
                            "--quiet"], capture_output=True, text=True, cwd=REPO, timeout=120,
                           env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert p.returncode == 6, p.stderr
    assert "foo/bar: 5 of 12 photos errored; the first: 404:" in p.stderr or "foo/bar:" in p.stderr
    assert "no answer at all from foo/bar" in p.stderr and "fail fast" in p.stderr


def test_the_cli_takes_a_price_table_and_a_dialect(table, tmp_path):
    prices = tmp_path / "prices.toml"
    prices.write_text('["openai/gpt-6-luna"]\nprompt = 0.25\ncompletion = 2.0\n')
    with sim(table, models_listing="plain", report_cost=False) as s:
        args = [sys.executable, "-m", "hotdogbench_core", "run", "--base-url", s.base_url, "--models", LUNA,
                "--input", str(table), "--out", str(tmp_path), "--quiet", "--max-cost-usd", "1"]
        refused = subprocess.run(args + ["--run", "a"], capture_output=True, text=True, cwd=REPO, timeout=120)
        assert refused.returncode == 2 and "--max-cost-usd: " in refused.stderr and s.stats.requests == 0
        ok = subprocess.run(args + ["--run", "b", "--prices", str(prices), "--api", "openai"], capture_output=True,
                            text=True, cwd=REPO, timeout=120)
    assert ok.returncode == 0, ok.stderr
    (summary,) = json.loads(RunDir(tmp_path, "b").summary.read_text())
    assert summary["cost_usd"] > 0 and summary["answered"] == 12
    bad = tmp_path / "bad.json"
    bad.write_text('{"m/x": {"prompt": "lots"}}')
    p = subprocess.run(args + ["--run", "c", "--prices", str(bad)], capture_output=True, text=True, cwd=REPO,
                       timeout=60)
    assert p.returncode == 2 and "--prices: " in p.stderr and "USD per million tokens" in p.stderr
