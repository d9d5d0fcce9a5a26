"""The simulator's stated probabilities: the calibration knob, and log-probabilities over real HTTP."""
from __future__ import annotations

import math
import random

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdogbench_core.protocol.chat import CHAT, LOGPROBS, token_logprobs
from hotdogbench_core.protocol.logprobs import p_true_from_logprobs
from hotdogbench_core.protocol.request import request_for
from hotdogbench_core.sim.app import SimConfig, Simulator, image_digest
from hotdogbench_core.sim.replies import Replies, calibrated_confidence, stated_confidence

AUTH = {"Authorization": "Bearer test-key"}
CHAT_MODEL, DEC = "anthropic/claude-haiku-5.5", "typesafe/jev-1.14"


def images(n: int, seed: int = 5) -> list[bytes]:
    rng = random.Random(seed)
    return [b"\xff\xd8\xff" + rng.randbytes(40) for _ in range(n)]


@settings(max_examples=50, deadline=None)
@given(st.floats(0.5, 1.0), st.booleans(), st.floats(0.0, 1.0))
def test_a_calibrated_confidence_lies_in_its_range(acc, right, u):
    c = calibrated_confidence(acc, right, u)
    w = min(acc - 0.5, 1 - acc)
    assert acc - w - 1e-12 <= c <= acc + w + 1e-12


def test_a_calibrated_confidence_is_right_as_often_as_it_says():
    """Monte Carlo over the construction: right with probability acc, then c given right or wrong; in every bin
    of c the share right is the bin's mean c (what calibration means), and E[c] = acc."""
    rng = random.Random(1)
    acc, n = 0.8, 200_000
    draws = []
    for _ in range(n):
        right = rng.random() < acc
        draws.append((calibrated_confidence(acc, right, rng.random()), right))
    assert sum(c for c, _ in draws) / n == pytest.approx(acc, abs=0.003)
    for lo in (0.6, 0.7, 0.8, 0.9):
        bin_ = [(c, r) for c, r in draws if lo <= c < lo + 0.1]
        mean_c = sum(c for c, _ in bin_) / len(bin_)
        assert sum(r for _, r in bin_) / len(bin_) == pytest.approx(mean_c, abs=0.01)


def test_stated_confidence_temperature():
    assert stated_confidence(0.8, 1.0) == pytest.approx(0.8)
    assert stated_confidence(0.5, 0.3) == pytest.approx(1 - 0.5 ** (1 / 0.3))  # ~0.90: a coin flip stated sure
    assert stated_confidence(0.8, 0.3) > stated_confidence(0.8, 0.6) > 0.8
    assert 0.5 < stated_confidence(0.6, 4.0) < 0.6
    assert 0.5 < stated_confidence(1.0, 1.0) < 1.0 and 0.5 < stated_confidence(0.5, 1.0)  # inside (0.5, 1)


def test_precisions_follow_the_base_rate():
    labels = {f"h{i}": (True, "hot_dog") for i in range(10)} | {f"t{i}": (False, "taco") for i in range(30)}
    r = Replies(labels)
    cfg = SimConfig(accuracy=0.8)
    prof = {"accuracy": 0.8}
    yes, no = r.precisions(cfg, prof, "m/x")
    assert yes == pytest.approx(8 / (8 + 6)) and no == pytest.approx(24 / (24 + 2))
    r.labels = {}
    assert r.precisions(cfg, prof, "m/x") == (0.5, 0.5)


def test_config_checks_calibration():
    SimConfig(calibration={"*": 1.0, "a/b": 0.3})
    for bad in (0, -1.0, float("inf"), True, "x"):
        with pytest.raises(ValueError, match="calibration"):
            SimConfig(calibration=bad)
    with pytest.raises(ValueError, match="model ids"):
        SimConfig(calibration={"hot_dog": 1.0})


def test_token_logprobs_give_back_the_probability():
    for content in ('{"hot_dog": true}', '{"hot_dog":false}', '```json\n{"hot_dog": true}\n```'):
        for p in (0.01, 0.5, 0.83, 0.999):
            tokens = token_logprobs(content, p, 5)
            assert p_true_from_logprobs(tokens) == pytest.approx(p, abs=1e-9)
            assert all(len(t["top_logprobs"]) <= 5 and t["logprob"] <= 0 for t in tokens)
            assert "".join(t["token"] for t in tokens) == content
    assert p_true_from_logprobs(token_logprobs("I cannot tell.", 0.9, 5)) is None


def _ask(sim, model, image, logprobs):
    request = request_for(model, logprobs=logprobs)
    return httpx.post(sim.base_url + request.path, content=request.encode(image),
                      headers={**AUTH, "Content-Type": "application/json"}).json()


def test_chat_answers_a_logprobs_request_with_them_over_http():
    pics = images(20)
    labels = {image_digest(im): (i % 2 == 0, "hot_dog" if i % 2 == 0 else "taco") for i, im in enumerate(pics)}
    cfg = SimConfig(seed=2, latency_s=0.0, fenced_rate=0.3, calibration=1.0,
                    extra_models={"x/drops-logprobs": {"logprobs": False}})
    with Simulator(cfg, labels=labels) as sim:
        for im in pics:
            plain = _ask(sim, CHAT_MODEL, im, False)
            assert plain["choices"][0]["logprobs"] is None  # not asked: none (the reference's body)
            d = _ask(sim, CHAT_MODEL, im, True)
            choice = d["choices"][0]
            content = choice["message"]["content"]
            assert content == plain["choices"][0]["message"]["content"]  # the same answer either way
            answer = request_for(CHAT_MODEL, logprobs=True).classify(200, {}, httpx.Response(200, json=d).content)
            p = answer.p_hot_dog
            assert p is not None and (p > 0.5) == answer.pred
            entry = next(e for e in choice["logprobs"]["content"] if e["token"].strip() in ("true", "false"))
            assert {"token", "logprob", "bytes", "top_logprobs"} <= set(entry) and len(entry["top_logprobs"]) == 5
            dec = _ask(sim, DEC, im, True)  # decisions: the noul, with or without the opt-in
            assert "logprobs" not in request_for(DEC, logprobs=True).template()
            noul = dec["answers"]["hot_dog"]["noul"]
            assert request_for(DEC).classify(200, {}, httpx.Response(200, json=dec).content).p_hot_dog == noul
            dropped = _ask(sim, "x/drops-logprobs", im, True)
            assert dropped["choices"][0]["logprobs"] is None
        listed = {m["id"]: m for m in httpx.get(sim.base_url + "/v1/models").json()["data"]}
    assert "logprobs" in listed[CHAT_MODEL]["supported_parameters"]
    assert "logprobs" not in listed["x/drops-logprobs"]["supported_parameters"]


def test_request_body_opt_in():
    default = request_for(CHAT_MODEL)
    asked = request_for(CHAT_MODEL, logprobs=True)
    assert "logprobs" not in default.template() and default.probability is None
    body = asked.template()
    assert list(body)[-2:] == list(LOGPROBS) and body["logprobs"] is True and body["top_logprobs"] == 5
    assert {k: v for k, v in body.items() if k not in LOGPROBS} == default.template()
    assert asked.settings() == {**default.settings(), **LOGPROBS} and asked.probability == "logprobs"
    assert request_for("x/y", "openai", logprobs=True).template()["top_logprobs"] == 5  # kept off OpenRouter
    read = CHAT.read_request(body)
    assert read.top_logprobs == 5 and CHAT.read_request(default.template()).top_logprobs is None
    assert request_for(DEC, logprobs=True) == request_for(DEC)
    assert request_for(DEC).probability == "noul"
    assert math.isclose(p_true_from_logprobs(token_logprobs('{"hot_dog": true}', 0.7, 2)), 0.7)
