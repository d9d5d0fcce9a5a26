"""Retry-After and the reset hints servers send instead: what the runner waits before asking a photo again."""
import json

import pytest

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


def test_retry_after_ms_first_then_retry_after_in_seconds_or_as_an_http_date():
    assert retry_hint({"retry-after-ms": "1234", "retry-after": "2"}) == 1.234  # Azure's, to the millisecond
    assert retry_hint({"retry-after-ms": "soon", "retry-after": "2"}) == 2.0  # junk: the next form
    date = {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}
    assert retry_hint(date) is None  # a date with no clock to count from is no wait
    assert retry_hint(date, 1445412470.0) == 10.0
    assert retry_hint(date, 1445412490.0) == 0.0  # already past
    assert retry_hint({"retry-after": "Wed, 21 Oct 2015 07:28:00"}, 1445412470.0) == 10.0  # (no zone: GMT)
    assert retry_hint({"retry-after": "Wed, 32 Foo 2015 07:28:00 GMT"}, 1445412470.0) is None


def test_an_http_date_is_counted_from_the_answers_date_only_where_the_servers_clock_is_off():
    date = {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT", "date": "Wed, 21 Oct 2015 07:27:50 GMT"}
    assert retry_hint(date, 1445412470.3) == pytest.approx(9.7)  # the clocks agree: ours, to the ms
    # the server's clock 5 minutes behind ours: its date names its own clock's time (9.5 s from its Date's
    # whole second, on average half a second old), not one 290 s in the past
    assert retry_hint(date, 1445412770.0) == pytest.approx(9.5)
    assert retry_hint(date) == pytest.approx(9.5)  # and with no clock of ours
    assert retry_hint({**date, "date": "garbage"}, 1445412470.0) == 10.0


def test_openrouter_epoch_ms_reset_needs_the_clock():
    headers = {"x-ratelimit-reset": str(int((1_800_000_000 + 7.5) * 1000))}
    assert retry_hint(headers) is None  # no clock: not a wait
    assert abs(retry_hint(headers, 1_800_000_000.0) - 7.5) < 1e-6
    assert retry_hint(headers, 1_800_000_100.0) == 0.0  # already past
    assert retry_hint({"x-ratelimit-reset": "5"}, 1_800_000_000.0) is None  # not an epoch
    assert retry_hint({"x-ratelimit-reset": "1800000012"}, 1_800_000_000.0) == 12.0  # epoch seconds
    assert retry_hint({"x-ratelimit-reset": "inf"}, 1_800_000_000.0) == 366 * 86400.0  # (junk: a year)
    assert retry_hint({"x-ratelimit-reset": "nan"}, 1_800_000_000.0) is None


def test_classify_carries_the_hint_and_plain_values_are_unchanged():
    body = json.dumps({"error": {"code": 429, "message": "No deployments available", "type": "throttling_error"}})
    req = request_for("openai/gpt-6-luna")
    out = req.classify(429, {"llm_provider-retry-after": "60"}, body.encode())
    assert isinstance(out, Retry) and out.signal == "rate" and out.retry_after == 60.0
    out = req.classify(429, {"x-ratelimit-reset": str(int(1_800_000_003_000))}, b"{}", now=1_800_000_000.0)
    assert abs(out.retry_after - 3.0) < 1e-6
    assert parse_retry_after("1.5") == 1.5 and parse_retry_after("soon") is None


def _free_model_429(quota: str, limit: str, reset_ms: int) -> bytes:
    """An OpenRouter free model's 429 as users report it: X-RateLimit-* in the body's metadata.headers only."""
    return json.dumps({"error": {"message": f"Rate limit exceeded: {quota}.", "code": 429, "metadata": {
        "headers": {"X-RateLimit-Limit": limit, "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset_ms)},
        "provider_name": None}}}).encode()


def test_a_free_models_minute_quota_in_the_body_is_a_wait_and_a_stated_cap():
    now = 1_800_000_000.0
    out = request_for("openai/gpt-6-luna").classify(429, {}, _free_model_429("free-models-per-min", "20",
                                                                                 int((now + 42) * 1000)), now=now)
    assert isinstance(out, Retry) and out.signal == "rate" and out.tag == "429/quota"  # the limiter: spent
    assert abs(out.retry_after - 42.0) < 1e-3  # the reset the body gives (there is no Retry-After)
    assert out.stated_rate == 19 / 60  # a minute's 20, one under as every stated count


def test_a_free_models_day_quota_is_a_long_wait_and_no_pace():
    now = 1_800_000_000.0
    out = request_for("openai/gpt-6-luna").classify(429, {}, _free_model_429("free-models-per-day", "50",
                                                                                 int((now + 5 * 3600) * 1000)), now=now)
    assert abs(out.retry_after - 5 * 3600) < 1e-3 and out.stated_rate is None  # max_wait_s stops the model on it
    assert out.tag == "429"


def test_the_http_headers_win_over_the_body_and_odd_bodies_give_nothing():
    now = 1_800_000_000.0
    body = _free_model_429("free-models-per-min", "20", int((now + 42) * 1000))
    req = request_for("openai/gpt-6-luna")
    out = req.classify(429, {"retry-after": "3", "x-ratelimit-limit": "10"}, body, now=now)
    assert out.retry_after == 3.0 and out.stated_rate == 9 / 60
    odd = json.dumps({"error": {"message": "Rate limit exceeded: per-minute", "code": 429,
                                "metadata": {"headers": ["X-RateLimit-Limit", "20"]}}}).encode()
    out = req.classify(429, {}, odd, now=now)
    assert out.retry_after is None and out.stated_rate is None  # a list is no headers; no count, no cap
    plain = json.dumps({"error": {"message": "Too many requests", "code": 429}}).encode()
    assert req.classify(429, {"x-ratelimit-limit": "20"}, plain, now=now).stated_rate is None  # no period named
    out = req.classify(503, {}, _free_model_429("free-models-per-min", "20", int((now + 4) * 1000)), now=now)
    assert out.signal == "failure" and out.stated_rate is None  # a 503 is no quota's refusal


def _gemini(quota_id: str | None, delay: str = "37s", value: str = "15") -> bytes:
    """A 429 of Gemini's OpenAI-compatible endpoint: the error object in a list, the hints in its details."""
    details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]
    if quota_id:
        details.insert(0, {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
            {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
             "quotaId": quota_id, "quotaValue": value}]})
    return json.dumps([{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                                  "status": "RESOURCE_EXHAUSTED", "details": details}}]).encode()


def test_a_google_refusal_s_details_are_its_wait_and_its_quota():
    req, now = request_for("openai/gpt-6-luna"), 1_800_000_000.0  # (2027-01-15 00:00 in Los Angeles)
    minute = req.classify(429, {}, _gemini("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"), now=now)
    assert minute == Retry("429/quota", "rate", 37.0, 14 / 60)  # a minute's 15 requests: paced under them
    tokens = req.classify(429, {}, _gemini("GenerateContentInputTokensPerModelPerMinute", "1.5s", "250000"), now=now)
    assert tokens == Retry("429/quota", "rate", 1.5, None)  # a quota of tokens is named, but is no pace
    day = req.classify(429, {}, _gemini("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "43s"), now=now + 3600)
    assert day.retry_after == 23 * 3600.0  # a day's quota: to its reset at midnight Pacific time, not 43 s
    assert req.classify(429, {"retry-after": "3"}, _gemini(None), now=now).retry_after == 37.0  # the later wait
    plain = json.dumps([{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                                   "status": "RESOURCE_EXHAUSTED"}}]).encode()
    assert req.classify(429, {}, plain, now=now) == Retry("429", "rate", None, None)
    odd = json.dumps([{"error": {"code": 429, "details": ["x", {"@type": 5}, {"violations": "no"}]}}]).encode()
    assert req.classify(429, {}, odd, now=now) == Retry("429", "rate", None, None)
