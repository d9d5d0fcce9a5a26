"""Retry-After and the reset hints servers send instead: what the runner waits before asking a photo again."""
import json

from hotdogbench_core.protocol.answers import Retry, parse_retry_after, retry_hint
from hotdogbench_core.protocol.request import request_for


def test_retry_after_first_then_the_hints():
    assert retry_hint({"retry-after": "2", "llm_provider-retry-after": "60"}) == 2.0
    assert retry_hint({"llm_provider-retry-after": "60"}) == 60.0  # LiteLLM's 429s carry only this
    assert retry_hint({"x-ratelimit-reset-requests": "6m0s"}) == 360.0
    assert retry_hint({"x-ratelimit-reset-requests": "1s"}) == 1.0
    assert retry_hint({"x-ratelimit-reset-requests": "1m30.5s"}) == 90.5
    assert abs(retry_hint({"x-ratelimit-reset-requests": "250ms"}) - 0.25) < 1e-12
    assert retry_hint({"x-ratelimit-reset-requests": "soon"}) is None
    assert retry_hint({}) is None


def test_openrouter_epoch_ms_reset_needs_the_clock():
    headers = {"x-ratelimit-reset": str(int((1_800_000_000 + 7.5) * 1000))}
    assert retry_hint(headers) is None  # no clock: not a wait
    assert abs(retry_hint(headers, 1_800_000_000.0) - 7.5) < 1e-6
    assert retry_hint(headers, 1_800_000_100.0) == 0.0  # already past
    assert retry_hint({"x-ratelimit-reset": "5"}, 1_800_000_000.0) is None  # not an epoch


def test_classify_carries_the_hint_and_plain_values_are_unchanged():
    body = json.dumps({"error": {"code": 429, "message": "No deployments available", "type": "throttling_error"}})
    req = request_for("openai/gpt-6-luna")
    out = req.classify(429, {"llm_provider-retry-after": "60"}, body.encode())
    assert isinstance(out, Retry) and out.signal == "rate" and out.retry_after == 60.0
    out = req.classify(429, {"x-ratelimit-reset": str(int(1_800_000_003_000))}, b"{}", now=1_800_000_000.0)
    assert abs(out.retry_after - 3.0) < 1e-6
    assert parse_retry_after("1.5") == 1.5 and parse_retry_after("soon") is None
