"""The OpenRouter simulator, exercised over real HTTP (httpx) against a running server."""
from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import random
import subprocess
import sys
import threading
import time

import duckdb
import httpx
import pytest
from httpx_aiohttp import HttpxAiohttpClient

from hotdogbench_core.protocol.chat import CHAT as CHAT_KIND
from hotdogbench_core.protocol.decisions import DECISIONS as DECISIONS_KIND
from hotdogbench_core.protocol.models import MODELS
from hotdogbench_core.protocol.request import body_for, request_for

CHAT_PATH, DECISIONS_PATH = CHAT_KIND.path, DECISIONS_KIND.path


def endpoint_path(model):
    return request_for(model).path
from hotdogbench_core.sim.app import (MODEL_PROFILES, SimConfig, Simulator, image_digest, labels_from_parquet,
                                        serve_forever)

AUTH = {"Authorization": "Bearer test-key"}
CHAT = "openai/gpt-6-luna"  # a reasoning chat model
PLAIN = "anthropic/claude-haiku-5.5"  # a chat model without reasoning
DEC = "typesafe/jev-1.14"  # a decisions model
FAST = dict(latency_s=0.0, fenced_rate=0.0)


def fake_images(n: int, size: int = 64, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(size) for _ in range(n)]


def parse(content: str | None) -> bool | None:
    """The reference client's parse: strip a ```json fence, read hot_dog."""
    if content is None:
        return None
    try:
        v = json.loads(content.strip().removeprefix("```json").removesuffix("```").strip())["hot_dog"]
        return v if isinstance(v, bool) else None
    except (ValueError, KeyError, TypeError):
        return None


def post(sim: Simulator, model: str, image: bytes, client: httpx.Client | None = None, **kw) -> httpx.Response:
    url = sim.base_url + endpoint_path(model)
    if client is not None:
        return client.post(url, json=body_for(model, image), headers=AUTH, **kw)
    return httpx.post(url, json=body_for(model, image), headers=AUTH, **kw)


def verdict(r: httpx.Response) -> bool | None:
    d = r.json()
    if "answers" in d:
        p = d["answers"]["hot_dog"]["noul"]
        return None if p is None else p >= 0.5
    return parse(d["choices"][0]["message"]["content"])


async def post_all(sim: Simulator, model: str, images: list[bytes], workers: int = 20) -> list[httpx.Response]:
    """All images, `workers` requests in flight at a time (one connection each); responses in image order."""
    out: list[httpx.Response | None] = [None] * len(images)
    todo = iter(enumerate(images))
    url = sim.base_url + endpoint_path(model)

    async def worker(c: HttpxAiohttpClient) -> None:
        for i, im in todo:
            out[i] = await c.post(url, json=body_for(model, im), headers=AUTH)

    # httpx's API on the aiohttp transport (a project dependency): several times faster than httpcore's
    async with HttpxAiohttpClient(timeout=10) as c:
        await asyncio.gather(*[worker(c) for _ in range(min(workers, len(images)))])
    return out  # type: ignore[return-value]


def wait_until(cond, timeout: float = 2.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


# --- response shapes -------------------------------------------------------------------------------------
def test_chat_response_shape_usage_and_cost():
    small, big = b"s" * 300, b"b" * 75_000
    with Simulator(SimConfig(**FAST)) as sim, httpx.Client() as c:
        r = post(sim, CHAT, small, c)
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        d = r.json()
        assert d["id"].startswith("gen-") and d["model"] == CHAT and d["provider"] == "simulator"
        assert d["object"] == "chat.completion" and isinstance(d["created"], int)
        ch = d["choices"][0]
        assert ch["finish_reason"] == "stop" and ch["native_finish_reason"] == "stop"
        assert ch["message"]["content"] in ('{"hot_dog": true}', '{"hot_dog": false}')
        u = d["usage"]
        assert u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"]
        assert u["completion_tokens_details"]["reasoning_tokens"] > 0  # luna has a "reasoning" param
        assert u["prompt_tokens_details"]["cached_tokens"] == 0
        p = MODEL_PROFILES[CHAT]
        assert u["cost"] == pytest.approx(u["prompt_tokens"] * p["prompt"] + u["completion_tokens"] * p["completion"]
                                          + p["image"] + p["request"])
        u_big = post(sim, CHAT, big, c).json()["usage"]
        assert u_big["prompt_tokens"] - u["prompt_tokens"] == pytest.approx(100, abs=2)  # ~ bytes / 750
        plain = post(sim, PLAIN, small, c).json()["usage"]
        assert plain["completion_tokens_details"]["reasoning_tokens"] == 0
        assert plain["completion_tokens"] == 7 and plain["cost"] > 0


def test_decisions_response_shape():
    with Simulator(SimConfig(**FAST)) as sim:
        d = post(sim, DEC, b"img").json()
        assert d["id"].startswith("gen-dec-") and d["model"] == DEC and d["provider"] == "simulator"
        a = d["answers"]["hot_dog"]
        assert a["type"] == "noul" and 0.0 <= a["noul"] <= 1.0
        assert set(d["usage"]) == {"input_tokens", "output_tokens", "cost"} and d["usage"]["cost"] > 0


def test_every_registry_model_answers_the_reference_body():
    im = b"any photo"
    with Simulator(SimConfig(latency_s=0)) as sim, httpx.Client() as c:
        for m in MODELS:
            r = post(sim, m, im, c)
            assert r.status_code == 200, (m, r.text)
            assert verdict(r) is not None, (m, r.text)  # fenced answers included


def test_models_endpoint_lists_registry_and_extra_models():
    cfg = SimConfig(extra_models={"acme/vision-1": {"prompt": 2e-6, "completion": 8e-6, "image": 0.001}})
    with Simulator(cfg) as sim:
        data = httpx.get(sim.base_url + "/v1/models").json()["data"]
        by_id = {m["id"]: m for m in data}
        assert set(MODELS) | {"acme/vision-1"} == set(by_id)
        for m in data:
            assert "image" in m["architecture"]["input_modalities"]
            assert m["architecture"]["output_modalities"] == ["text"]
            assert all(isinstance(v, str) and float(v) >= 0 for v in m["pricing"].values())
            assert set(m["pricing"]) == {"prompt", "completion", "image", "request"}
        assert float(by_id["acme/vision-1"]["pricing"]["image"]) == 0.001
        assert float(by_id[CHAT]["pricing"]["prompt"]) == MODEL_PROFILES[CHAT]["prompt"]
        assert post(sim, "acme/vision-1", b"x").status_code == 200  # extra models are servable


def test_registry_models_have_distinct_plausible_accuracies():
    accs = [MODEL_PROFILES[m]["accuracy"] for m in MODELS]
    assert len(set(accs)) == len(accs) and all(0.8 <= a <= 0.97 for a in accs)


# --- request validation ------------------------------------------------------------------------------------
def assert_error(r: httpx.Response, status: int) -> dict:
    assert r.status_code == status, r.text
    e = r.json()["error"]
    assert e["code"] == status and isinstance(e["message"], str) and isinstance(e["metadata"], dict)
    return e


def test_auth_unknown_model_and_bad_bodies():
    url_body = body_for(CHAT, b"x")
    with Simulator(SimConfig(**FAST), api_key="right") as sim, httpx.Client() as c:
        url = sim.base_url + CHAT_PATH
        assert_error(c.post(url, json=url_body), 401)
        assert_error(c.post(url, json=url_body, headers={"Authorization": "Basic right"}), 401)
        assert_error(c.post(url, json=url_body, headers={"Authorization": "Bearer"}), 401)
        assert_error(c.post(url, json=url_body, headers={"Authorization": "Bearer wrong"}), 401)
        ok = {"Authorization": "Bearer right"}
        assert c.post(url, json=url_body, headers=ok).status_code == 200
        e = assert_error(c.post(url, json={**url_body, "model": "nobody/none"}, headers=ok), 404)
        assert e["message"].startswith("No endpoints found")
        assert_error(c.post(url, content=b"{not json", headers=ok), 400)
        no_image = {**url_body, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
        assert_error(c.post(url, json=no_image, headers=ok), 400)
        bad_b64 = json.loads(json.dumps(url_body).replace(";base64,", ";base64,!!"))
        assert_error(c.post(url, json=bad_b64, headers=ok), 400)
        dec = body_for(DEC, b"x")
        assert c.post(sim.base_url + DECISIONS_PATH, json=dec, headers=ok).status_code == 200
        assert_error(c.post(sim.base_url + DECISIONS_PATH, json={**dec, "state": ["no photo"]}, headers=ok), 400)
        assert sim.stats.by_status == {401: 4, 200: 2, 404: 1, 400: 4}


def test_image_found_in_unusual_but_valid_json():
    # the same body sent plainly and with JSON-escaped slashes must read as the same photo and question; a text
    # part before the image changes the question (a prompt variant, whose answer may be re-drawn), so the plain
    # body carries it too
    rng = random.Random(7)
    images = [rng.randbytes(3000) for _ in range(20)]
    with Simulator(SimConfig(**FAST)) as sim:
        for im in images:
            body = body_for(CHAT, im)
            body["messages"][0]["content"].insert(0, {"type": "text", "text": 'say ";base64," twice'})
            plain = httpx.post(sim.base_url + CHAT_PATH, json=body, headers=AUTH)
            escaped = httpx.post(sim.base_url + CHAT_PATH, content=json.dumps(body).replace("/", "\\/").encode(),
                                 headers=AUTH)
            assert escaped.status_code == 200, escaped.text
            assert escaped.json()["choices"][0]["message"] == plain.json()["choices"][0]["message"]
        assert sorted(sim.stats.by_digest) == sorted(hashlib.sha256(im).hexdigest() for im in images)
        assert all(len(v) == 2 for v in sim.stats.by_digest.values())


# --- answers ------------------------------------------------------------------------------------------------
def test_same_seed_same_answers_regardless_of_order_and_concurrency():
    images = fake_images(60)
    labels = {image_digest(im): (i % 2 == 0, "x") for i, im in enumerate(images)}

    def answers(seed: int, order: list[int], concurrent: bool, model: str) -> dict[int, object]:
        # concurrent: random latencies, so requests finish in a shuffled order
        cfg = SimConfig(seed=seed, latency_s=0.01 if concurrent else 0, latency_sigma=1.0, fenced_rate=0.3)
        with Simulator(cfg, labels=labels) as sim:
            ims = [images[i] for i in order]
            if concurrent:
                rs = asyncio.run(post_all(sim, model, ims))
            else:
                with httpx.Client() as c:
                    rs = [post(sim, model, im, c) for im in ims]
        out = {}
        for i, r in zip(order, rs):
            d = r.json()
            out[i] = d["answers"] if "answers" in d else (d["choices"][0]["message"]["content"],
                                                          d["usage"]["completion_tokens"])
        return out

    fwd, rev = list(range(60)), list(reversed(range(60)))
    for model in (CHAT, DEC):
        a = answers(7, fwd, False, model)
        assert a == answers(7, rev, True, model)
        assert a != answers(8, fwd, False, model)


def test_accuracy_near_configured_and_per_category():
    images = fake_images(1200, seed=2)
    labels = {image_digest(im): (i % 2 == 0, "dog" if i % 3 else "cat") for i, im in enumerate(images)}
    cfg = SimConfig(seed=3, latency_s=0, accuracy={CHAT: 0.8, DEC: {"cat": 1.0, "default": 0.0}})
    with Simulator(cfg, labels=labels) as sim:
        rs = asyncio.run(post_all(sim, CHAT, images))
        correct = [verdict(r) == labels[image_digest(im)][0] for r, im in zip(rs, images)]
        assert abs(sum(correct) / len(correct) - 0.8) < 0.045  # ~4 sigma
        rs = asyncio.run(post_all(sim, DEC, images[:90]))
        for r, im in zip(rs, images[:90]):
            truth, cat = labels[image_digest(im)]
            noul = r.json()["answers"]["hot_dog"]["noul"]
            assert (noul >= 0.5) == (truth if cat == "cat" else not truth)
            assert abs(noul - (0.9 if noul >= 0.5 else 0.1)) <= cfg.noul_spread + 1e-9
        # unlabelled photos: a coin flip
        sim.labels = {}
        rs = asyncio.run(post_all(sim, CHAT, images[:400]))
        assert 0.4 < sum(verdict(r) for r in rs) / 400 < 0.6


def test_consistency_redraws_answers_per_request():
    images = fake_images(40, seed=4)
    labels = {image_digest(im): (True, "x") for im in images}
    with Simulator(SimConfig(latency_s=0, accuracy=0.5), labels=labels) as sim:
        first = [verdict(r) for r in asyncio.run(post_all(sim, PLAIN, images))]
        assert first == [verdict(r) for r in asyncio.run(post_all(sim, PLAIN, images))]
        sim.update(consistency=0.0)
        again = [verdict(r) for r in asyncio.run(post_all(sim, PLAIN, images))]
        assert again != first and 8 < sum(again) < 32


def test_unanswered_rate_cannot_tell_or_length_still_billed():
    images = fake_images(60, seed=5)
    with Simulator(SimConfig(latency_s=0, unanswered_rate={CHAT: 1.0})) as sim:
        kinds = set()
        for r in asyncio.run(post_all(sim, CHAT, images)):
            d = r.json()
            ch, u = d["choices"][0], d["usage"]
            assert verdict(r) is None and u["cost"] > 0
            if ch["message"]["content"] is None:
                assert ch["finish_reason"] == "length"
                assert u["completion_tokens"] == u["completion_tokens_details"]["reasoning_tokens"] == 1024
                kinds.add("length")
            else:
                assert ch["message"]["content"] == "I cannot tell." and ch["finish_reason"] == "stop"
                kinds.add("cannot tell")
        assert kinds == {"length", "cannot tell"}
        assert sim.stats.unanswered == 60 and sim.stats.answered == 0
        assert verdict(post(sim, PLAIN, images[0])) is not None  # the rate is per model


# --- caps -------------------------------------------------------------------------------------------------
def test_in_flight_cap_rejects_the_overflow_at_once():
    # 1 s of latency leaves room for a loaded machine to send all 20 while the first 5 are still served
    cfg = SimConfig(latency_s=1.0, latency_sigma=0, max_in_flight=5, retry_after="fixed", retry_after_s=2)
    with Simulator(cfg) as sim:
        t0 = time.monotonic()
        rs = asyncio.run(post_all(sim, CHAT, fake_images(20)))
        assert time.monotonic() - t0 < 3.0  # the overflow was answered at once, not queued behind the 5
        limited = [r for r in rs if r.status_code == 429]
        assert len(limited) == 15 and sum(r.status_code == 200 for r in rs) == 5
        r = limited[0]
        assert_error(r, 429)
        assert r.headers["Retry-After"] == "2" and r.headers["X-RateLimit-Limit"] == "5"
        assert r.headers["X-RateLimit-Remaining"] == "0"
        assert abs(int(r.headers["X-RateLimit-Reset"]) - (time.time() + 2) * 1000) < 3000
        s = sim.stats
        assert s.peak_in_flight == 5 and s.rate_limited == 15 and s.in_flight == 0 and s.requests == 20


def test_token_bucket_burst_then_rate():
    with Simulator(SimConfig(latency_s=0, rate_per_s=5, burst=5)) as sim, httpx.Client() as c:
        codes = [post(sim, PLAIN, b"x", c).status_code for _ in range(8)]
        assert codes == [200] * 5 + [429] * 3
        time.sleep(0.45)  # ~2.25 tokens
        codes = [post(sim, PLAIN, b"x", c).status_code for _ in range(4)]
        assert codes == [200, 200, 429, 429]
        assert "Retry-After" not in c.post(sim.base_url + CHAT_PATH, json=body_for(PLAIN, b"x"),
                                           headers=AUTH).headers  # retry_after="none"


def test_a_bucket_with_a_queue_holds_requests_until_their_token_and_refuses_past_it():
    # nginx's limit_req burst=3 without nodelay, at 10/s: six at once: one answered at once, three held 0.1-0.3 s,
    # two refused at once
    with Simulator(SimConfig(latency_s=0, rate_per_s=10, burst=1, bucket_queue=3)) as sim, httpx.Client() as c:
        async def six():
            async with httpx.AsyncClient(timeout=10) as ac:
                async def one():
                    t0 = time.monotonic()
                    r = await ac.post(sim.base_url + CHAT_PATH, json=body_for(PLAIN, b"q"), headers=AUTH)
                    return r.status_code, time.monotonic() - t0
                return await asyncio.gather(*(one() for _ in range(6)))
        replies = sorted(asyncio.run(six()), key=lambda r: r[1])
        assert sorted(code for code, _ in replies) == [200] * 4 + [429] * 2
        held = sorted(took for code, took in replies if code == 200)
        assert held[0] < 0.08 and held[3] >= 0.28  # the last held waited for the third token to come
        time.sleep(0.5)  # the queue is empty again, the bucket refilled to its one token
        assert post(sim, PLAIN, b"x", c).status_code == 200


def test_retry_after_exact_is_the_wait_for_a_token_and_is_recorded():
    im = b"retry me"
    with Simulator(SimConfig(latency_s=0, rate_per_s=4, burst=1, retry_after="exact")) as sim, httpx.Client() as c:
        t0 = time.monotonic()
        assert post(sim, PLAIN, im, c).status_code == 200
        r = post(sim, PLAIN, im, c)
        elapsed = time.monotonic() - t0  # bounds the time between the two arrivals, however loaded the machine
        assert r.status_code == 429
        ra = float(r.headers["Retry-After"])
        assert 0.25 - elapsed - 0.001 <= ra <= 0.25  # a token every 0.25 s, less what already passed
        assert abs(int(r.headers["X-RateLimit-Reset"]) / 1000 - (time.time() + ra)) < 0.1 + elapsed
        time.sleep(ra)
        assert post(sim, PLAIN, im, c).status_code == 200
        ev = sim.stats.by_digest[image_digest(im)]
        assert [(s, ra_) for _, s, ra_ in ev] == [(200, None), (429, ra), (200, None)]
        assert ev[2][0] - ev[1][0] >= ra


def test_retry_after_as_an_http_date_or_in_milliseconds_names_the_exact_wait():
    import email.utils
    im = b"retry me in another form"
    with Simulator(SimConfig(latency_s=0, rate_per_s=1, burst=1, retry_after="http_date")) as sim, \
            httpx.Client() as c:
        assert post(sim, PLAIN, im, c).status_code == 200
        r = post(sim, PLAIN, im, c)
        at = email.utils.parsedate_to_datetime(r.headers["Retry-After"]).timestamp()
        served = email.utils.parsedate_to_datetime(r.headers["Date"]).timestamp()
        assert r.status_code == 429 and at == int(at) and 0 < at - served <= 2  # whole seconds, a token's 1 s
        assert "X-RateLimit-Reset" not in r.headers  # (another server's form: none of OpenRouter's headers)
        ra = sim.stats.by_digest[image_digest(im)][1][2]
        assert abs(time.time() + ra - at) < 0.5  # the stats record the wait the date names
        sim.update(retry_after="retry_after_ms")
        r = post(sim, PLAIN, im, c)
        assert r.status_code == 429 and 0 < int(r.headers["retry-after-ms"]) <= 1000
        assert r.headers["Retry-After"] == "1"  # whole seconds, rounded up


# --- faults -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", [CHAT, DEC])
def test_faults_produce_their_symptoms(model):
    with Simulator(SimConfig(**FAST)) as sim, httpx.Client(timeout=5) as c:
        def once(**fault) -> httpx.Response:
            sim.update(**fault)
            try:
                return post(sim, model, b"faulty", c)
            finally:
                sim.update(**{k: 0.0 for k in fault})

        r = once(error_5xx=1.0)
        assert r.status_code in (500, 502, 503, 524, 529)
        assert_error(r, r.status_code)
        sim.update(error_5xx_codes=[529])
        assert once(error_5xx=1.0).status_code == 529

        r = once(error_in_200=1.0)
        assert r.status_code == 200 and r.json()["error"]["code"] == 502 and "choices" not in r.json()

        r = once(in_flight_402=1.0)
        e = assert_error(r, 402)
        assert e["metadata"] == {"reason": "in_flight_budget_exhausted", "limit_source": "openrouter_in_flight_budget"}
        assert r.headers["Retry-After"] == "1"

        r = once(malformed_body=1.0)
        assert r.status_code == 200
        with pytest.raises(ValueError):
            r.json()

        r = once(no_choices=1.0)
        assert r.status_code == 200 and list(r.json()) == ["id"]

        d = once(empty_content=1.0).json()
        if model == DEC:
            assert d["answers"]["hot_dog"]["noul"] is None
        else:
            assert d["choices"][0]["message"]["content"] is None and d["usage"]["cost"] > 0

        sim.update(drop_connection=1.0)
        with pytest.raises(httpx.TransportError):
            post(sim, model, b"faulty", c)
        sim.update(drop_connection=0.0)

        sim.update(stall=1.0, stall_s=30.0)
        t0 = time.monotonic()
        with pytest.raises(httpx.TimeoutException):
            post(sim, model, b"faulty", c, timeout=0.3)
        assert time.monotonic() - t0 < 2
        sim.update(stall=0.0)
        assert wait_until(lambda: sim.stats.in_flight == 0)  # the client went away: the handler ended

        assert post(sim, model, b"fine", c).status_code == 200
        s = sim.stats
        assert s.dropped == 1 and s.by_status[0] == 1 and s.by_status[499] == 1
        assert s.faults == {"error_5xx": 2, "error_in_200": 1, "in_flight_402": 1, "malformed_body": 1,
                            "no_choices": 1, "empty_content": 1, "drop_connection": 1, "stall": 1}
        assert s.answered == 1 and s.unanswered == 1


def test_fault_rates_are_probabilities():
    with Simulator(SimConfig(latency_s=0, error_5xx=0.3, error_5xx_codes=[503])) as sim:
        rs = asyncio.run(post_all(sim, PLAIN, fake_images(300)))
        n503 = sum(r.status_code == 503 for r in rs)
        assert 60 < n503 < 120 and n503 + sum(r.status_code == 200 for r in rs) == 300


def test_credits_exhaustion_gives_402_without_in_flight_reason():
    with Simulator(SimConfig(latency_s=0, credits_usd=0.0005)) as sim, httpx.Client() as c:
        codes = [post(sim, PLAIN, b"x" * 1000, c).status_code for _ in range(5)]
        assert codes[0] == 200 and codes[-1] == 402
        r = post(sim, PLAIN, b"x", c)
        e = assert_error(r, 402)
        assert "Insufficient credits" in e["message"] and "reason" not in e["metadata"]
        assert sim.stats.spent_usd >= 0.0005
        sim.reset_stats()  # refills the credits
        assert post(sim, PLAIN, b"x", c).status_code == 200


# --- stats and runtime changes ------------------------------------------------------------------------------
def test_stats_counters_and_reset():
    with Simulator(SimConfig(latency_s=0.05, latency_sigma=0)) as sim:
        asyncio.run(post_all(sim, DEC, fake_images(12)))
        httpx.post(sim.base_url + CHAT_PATH, json=body_for(CHAT, b"x"))  # 401
        httpx.get(sim.base_url + "/v1/models")  # not an API request: not counted
        s = sim.stats
        assert s.requests == 13 and s.by_status == {200: 12, 401: 1} and s.answered == 12
        assert 1 < s.peak_in_flight <= 12 and s.in_flight == 0 and len(s.by_digest) == 12
        snap = s.snapshot()
        assert snap["requests"] == 13 and snap["spent_usd"] > 0 and json.dumps(snap, default=str)
        sim.reset_stats()
        assert (s.requests, s.by_status, s.answered, s.peak_in_flight, s.spent_usd, s.by_digest) == \
            (0, {}, 0, 0, 0.0, {})
        assert snap["requests"] == 13  # the snapshot is a copy


def test_runtime_config_changes():
    with Simulator(SimConfig(latency_s=0, rate_per_s=0.001, burst=1)) as sim, httpx.Client() as c:
        assert [post(sim, PLAIN, b"x", c).status_code for _ in range(2)] == [200, 429]
        sim.update(rate_per_s=None)
        assert post(sim, PLAIN, b"x", c).status_code == 200
        sim.config.max_in_flight = 0  # plain attribute assignment works too
        assert post(sim, PLAIN, b"x", c).status_code == 429
        sim.config.max_in_flight = None
        sim.config.latency_s = 0.3
        t0 = time.monotonic()
        assert post(sim, PLAIN, b"x", c).status_code == 200 and time.monotonic() - t0 > 0.1
        with pytest.raises(TypeError):
            sim.update(no_such_field=1)
        with pytest.raises(ValueError):
            sim.update(retry_after="sometimes")
        with pytest.raises(ValueError):
            sim.update(stall=1.5)
        assert sim.config.retry_after == "none" and sim.config.stall == 0.0


def test_stop_with_a_stalled_request_is_quick():
    sim = Simulator(SimConfig(latency_s=0, stall=1.0, stall_s=300)).start()
    errors: list[BaseException] = []

    def client() -> None:
        try:
            post(sim, CHAT, b"stuck", timeout=30)
        except BaseException as e:  # noqa: BLE001 - anything but a hang is fine
            errors.append(e)

    th = threading.Thread(target=client)
    th.start()
    assert wait_until(lambda: sim.stats.in_flight == 1)
    t0 = time.monotonic()
    sim.stop()
    assert time.monotonic() - t0 < 1.0
    th.join(2)
    assert not th.is_alive() and isinstance(errors[0], httpx.TransportError)
    assert not any(t.name == "hotdogbench-simulator" for t in threading.enumerate())
    with pytest.raises(RuntimeError):
        sim.base_url
    with sim:  # restartable
        assert sim.base_url.startswith("http://127.0.0.1:")


def test_async_with_inside_a_running_loop():
    async def main() -> int:
        async with Simulator(SimConfig(**FAST)) as sim:
            async with httpx.AsyncClient() as c:
                r = await c.post(sim.base_url + CHAT_PATH, json=body_for(CHAT, b"x"), headers=AUTH)
                return r.status_code

    assert asyncio.run(main()) == 200


# --- config, labels, standalone server ----------------------------------------------------------------------
def test_simconfig_dict_roundtrip_and_validation():
    cfg = SimConfig(seed=3, max_in_flight=20, accuracy={CHAT: {"hot_dog": 0.9, "default": 0.8}}, retry_after="exact")
    d = json.loads(json.dumps(cfg.to_dict()))
    assert SimConfig.from_dict(d) == cfg
    assert SimConfig.from_dict({}) == SimConfig()
    with pytest.raises(ValueError):
        SimConfig.from_dict({"max_inflight": 3})
    with pytest.raises(ValueError):
        SimConfig(error_5xx=2.0)
    with pytest.raises(ValueError):  # categories must sit under a model id or "*"
        SimConfig(accuracy={"hot_dog": 0.9, "default": 0.8})
    assert SimConfig(accuracy={"*": {"hot_dog": 0.9, "default": 0.8}}).accuracy["*"]["default"] == 0.8
    default = SimConfig()
    assert default.max_in_flight is None and default.rate_per_s is None and default.credits_usd is None
    assert all(getattr(default, k) == 0.0 for k in ("error_5xx", "drop_connection", "stall", "in_flight_402"))


def test_labels_from_parquet(tmp_path):
    images = fake_images(20, seed=9)
    path = tmp_path / "photos.parquet"
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER, image BLOB, is_hot_dog BOOLEAN, category VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)",
                    [(i, im, i < 10, "hot_dog" if i < 10 else "taco") for i, im in enumerate(images)])
    con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    labels = labels_from_parquet(path)
    assert labels[hashlib.sha256(images[0]).hexdigest()] == (True, "hot_dog")
    assert labels[image_digest(images[15])] == (False, "taco") and len(labels) == 20
    with Simulator(SimConfig(latency_s=0, accuracy=1.0), labels=labels) as sim:
        rs = asyncio.run(post_all(sim, CHAT, images))
        assert [verdict(r) for r in rs] == [i < 10 for i in range(20)]


def test_serve_forever_prints_url_and_serves():
    code = ("from hotdogbench_core.sim.app import serve_forever, SimConfig;"
            "serve_forever(SimConfig(latency_s=0), port=0, api_key='k')")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        url = ""
        for _ in range(5):  # skip anything else the package prints on import
            url = p.stdout.readline().strip()
            if url.startswith("http://"):
                break
        assert url.startswith("http://127.0.0.1:")
        r = httpx.post(url + CHAT_PATH, json=body_for(CHAT, b"x"), headers={"Authorization": "Bearer k"})
        assert r.status_code == 200
        p.terminate()
        assert p.wait(5) == 0
    finally:
        p.kill()
    assert callable(serve_forever)


def test_data_url_base64_is_what_is_hashed():
    im = os.urandom(500)
    url = "data:image/png;base64," + base64.b64encode(im).decode()
    part = {"type": "image_url", "image_url": {"url": url}}
    body = {"model": PLAIN, "messages": [{"role": "user", "content": [part]}]}
    with Simulator(SimConfig(**FAST)) as sim:
        assert httpx.post(sim.base_url + CHAT_PATH, json=body, headers=AUTH).status_code == 200
        assert list(sim.stats.by_digest) == [image_digest(im)]
