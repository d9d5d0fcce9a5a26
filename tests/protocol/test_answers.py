"""classify(): every response ends as an answer, a retry, a final error or a fatal stop, never an exception."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdogbench_core.protocol.answers import Answer, Failed, Fatal, Retry, classify, parse_retry_after
from hotdogbench_core.protocol.chat import CHAT
from hotdogbench_core.protocol.decisions import DECISIONS

CHAT_OK = {"id": "gen-1", "provider": "OpenAI", "choices": [{"message": {"content": '{"hot_dog": true}'},
           "finish_reason": "stop"}], "usage": {"prompt_tokens": 100, "completion_tokens": 5, "cost": 0.0001,
           "completion_tokens_details": {"reasoning_tokens": 3}}}


def chat(status=200, body=None, headers=None):
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return classify(status, headers or {}, raw, CHAT)


def test_chat_answer_fields():
    a = chat(body=CHAT_OK)
    assert a == Answer(True, '{"hot_dog": true}', 100, 5, 3, 0.0001, "OpenAI")


def test_decisions_answer_threshold():
    def dec(p):
        return classify(200, {}, json.dumps({"answers": {"hot_dog": {"type": "noul", "noul": p}},
                                             "usage": {"input_tokens": 9, "output_tokens": 1, "cost": 0.5},
                                             "provider": "X"}).encode(), DECISIONS)
    assert dec(0.5).pred is True and dec(0.4999).pred is False
    a = dec(0.96)
    assert (a.prompt_tokens, a.completion_tokens, a.cost_usd, a.raw) == (9, 1, 0.5, "0.96")
    for bad in (1.5, -0.1, "0.9", None, True):
        out = dec(bad)
        assert isinstance(out, Answer) and out.pred is None and out.error, bad


@pytest.mark.parametrize("status", [408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529])
def test_retry_statuses(status):
    out = chat(status, {"error": {"code": status}}, {"retry-after": "3"})
    assert isinstance(out, Retry) and out.tag == str(status) and out.retry_after == 3.0
    assert out.signal == ("rate" if status == 429 else "failure")


def test_retry_after_parsing():
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") is None  # a date, and no clock to count from
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("1e23") == 366 * 86400.0  # junk past a year: read as a year (a clock reaches it)
    assert parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now=1445412470.0) == 366 * 86400.0
    assert parse_retry_after("-3") is None and parse_retry_after("nan") is None and parse_retry_after(None) is None


def test_openai_s_spent_account_is_fatal_not_a_rate():
    spent = {"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                       "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
    for status in (429, 200):  # (as a 429, and as an error object in a 200)
        out = chat(status, spent)
        assert isinstance(out, Fatal) and out.error.startswith(f"{status}:") and "billing" in out.hint
    out = chat(429, {"error": {"message": "Rate limit reached for requests", "type": "requests",
                               "code": "rate_limit_exceeded"}})
    assert isinstance(out, Retry) and out.signal == "rate"  # a rate limit stays one


def test_google_s_refusal_of_the_key_is_fatal_as_a_401_is():
    body = [{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                       "status": "INVALID_ARGUMENT", "details": [
                           {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                            "domain": "googleapis.com"}]}}]  # (Gemini's OpenAI-compatible endpoint: in a list)
    out = chat(400, body)
    assert isinstance(out, Fatal) and "key was refused" in out.hint and "API key not valid" in out.error
    other = [{"error": {"code": 400, "message": "Invalid JSON payload", "status": "INVALID_ARGUMENT"}}]
    assert isinstance(chat(400, other), Failed)  # any other 400 settles one photo


def test_402_in_flight_backs_off_but_402_credits_is_fatal():
    inflight = {"error": {"code": 402, "message": "x", "metadata": {"reason": "in_flight_budget_exhausted"}}}
    out = chat(402, inflight)
    assert out == Retry("402/in_flight", "rate", 2.0)
    assert chat(402, inflight, {"retry-after": "5"}).retry_after == 5.0
    out = chat(402, {"error": {"code": 402, "message": "Insufficient credits"}})
    assert isinstance(out, Fatal) and "credits" in out.hint


def test_bad_key_is_fatal_moderation_is_not():
    assert isinstance(chat(401, {"error": {"code": 401, "message": "No auth"}}), Fatal)
    assert isinstance(chat(403, {"error": {"code": 403, "message": "Key disabled"}}), Fatal)
    assert isinstance(chat(403, {"error": {"code": 403, "message": "flagged by moderation"}}), Failed)


def test_200_with_retryable_error_code_is_retried():
    out = chat(200, {"error": {"code": 502, "message": "Provider returned error"}})
    assert out == Retry("200/err502", "failure", None)
    out = chat(200, {"error": {"code": 429, "message": "rate limited upstream"}})
    assert out.signal == "rate"


def test_final_errors_keep_the_error_object():
    out = chat(400, {"error": {"code": 400, "message": "bad image"}})
    assert isinstance(out, Failed) and out.error.startswith('400: {"code": 400')
    out = chat(404, {"error": {"code": 404, "message": "No endpoints found that support image input"}})
    assert isinstance(out, Failed) and "image input" in out.error


@pytest.mark.parametrize("body,expect", [
    ({"id": "gen-1"}, Retry),                                   # 200 without choices, nothing billed
    ({"id": "gen-1", "usage": {"cost": 0.1}}, Answer),          # billed: kept as an unanswered row
    ({"choices": []}, Retry),
    ({"choices": [None]}, Retry),
    ({"choices": [{"message": None}], "usage": {"cost": 1}}, Answer),
    ({"choices": [{"message": {"content": None}, "finish_reason": "length"}]}, Answer),
    ([1, 2, 3], Retry), ("a string", Retry), (None, Retry), (42, Retry),
])
def test_strange_200_bodies(body, expect):
    out = chat(200, body)
    assert isinstance(out, expect)
    if isinstance(out, Answer):
        assert out.pred is None


def test_choice_error_with_partial_content():
    body = {"choices": [{"message": {"content": '{"hot_dog": false}'}, "error": {"code": 500, "message": "cut"}}],
            "usage": {"cost": 0.2}}
    out = chat(200, body)
    assert isinstance(out, Answer) and out.pred is False and out.error.startswith("200:")
    body["usage"] = {}
    assert isinstance(chat(200, body), Retry)


@pytest.mark.parametrize("raw", [b"<html>Bad gateway</html>", b"\xff\xfe\x00garbage", b"", b'{"choices": [',
                                 b'{"hot_dog": true}'[:5]])
def test_non_json_200_is_retried(raw):
    out = classify(200, {}, raw, CHAT)
    assert isinstance(out, Retry) and out.tag.startswith("200/")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["choices", "message", "content", "error", "code", "usage", "answers", "hot_dog", "noul",
                         "metadata", "reason", "cost", "prompt_tokens", "provider", "finish_reason"]) | st.text(max_size=8),
        inner, max_size=5),
    max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(status=st.sampled_from([200, 400, 401, 402, 403, 404, 429, 500, 502, 418]), body=json_values,
       decisions=st.booleans(), ra=st.one_of(st.none(), st.text(max_size=6)))
def test_classify_never_raises_on_any_json(status, body, decisions, ra):
    raw = json.dumps(body).encode()
    out = classify(status, {"retry-after": ra} if ra is not None else {}, raw, DECISIONS if decisions else CHAT)
    assert isinstance(out, (Answer, Retry, Failed, Fatal))
    if isinstance(out, Answer):
        assert out.pred in (True, False, None)
        assert out.cost_usd is None or isinstance(out.cost_usd, float)
        assert status == 200
    if isinstance(out, Retry):
        assert out.retry_after is None or out.retry_after >= 0


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=200), decisions=st.booleans())
def test_classify_never_raises_on_any_bytes(raw, decisions):
    assert isinstance(classify(200, {}, raw, DECISIONS if decisions else CHAT), (Answer, Retry, Failed, Fatal))


UPSTREAM_429 = {"error": {"code": 502, "message": "Provider returned error", "metadata": {
    "provider_name": "Venice", "raw": '{"error":{"code":429,"message":"Resource exhausted"}}'}}}


def test_an_upstream_rate_limit_passed_on_as_502_is_a_rate_signal():
    # OpenRouter passes a provider's rate limit on as 502 "Provider returned error" with the provider's own answer
    # in metadata.raw: the limiter must hear it as a rate, not as a failure it ignores
    out = chat(502, UPSTREAM_429, {"retry-after": "2"})
    assert out == Retry("502/upstream_rate", "rate", 2.0)
    worded = {"error": {"code": 503, "message": "Provider returned error", "metadata": {
        "raw": "qwen/qwen3-coder:free is temporarily rate-limited upstream. Please retry shortly"}}}
    assert chat(503, worded).signal == "rate"
    assert chat(200, UPSTREAM_429) == Retry("200/err502/upstream_rate", "rate", None)  # (an error inside a 200)
    raw_obj = {"error": {"code": 502, "metadata": {"raw": {"error": {"code": 429}}}}}  # raw as an object
    assert chat(502, raw_obj).signal == "rate"


@pytest.mark.parametrize("body", [
    {"error": {"code": 502, "message": "Provider returned error", "metadata": {"raw": "simulated upstream 502"}}},
    {"error": {"code": 502, "message": "rate limit"}},  # (the words in the message only: no upstream answer)
    {"error": {"code": 502, "metadata": {"raw": "error 4290 at line 12"}}},
    b"<html>502 Bad Gateway: rate limit</html>", b"", b"[1, 2]", b'{"error": "rate limit"}',
    b'{"error": {"metadata": {"raw": "' + b"x" * 70_000 + b' 429"}}}',  # (too large to read)
])
def test_other_502s_stay_failures(body):
    out = chat(502, body)
    assert out == Retry("502", "failure", None)


def test_openrouter_s_rate_limit_error_type_is_a_rate_signal_in_a_200_too():
    # many of OpenRouter's errors come as HTTP 200 with choices[0].error; metadata.error_type names a rate limit
    limited = {"code": 502, "message": "Provider returned error", "metadata": {"error_type": "rate_limit_exceeded"}}
    body = {"choices": [{"message": {"content": ""}, "finish_reason": "error", "error": limited}]}
    assert chat(200, body) == Retry("200/err502/upstream_rate", "rate", None)
    body["choices"][0]["error"] = {**limited, "code": "provider_error"}  # (a code that is no status)
    assert chat(200, body) == Retry("200/errprovider_error/upstream_rate", "rate", None)
    body["choices"][0]["error"] = {**limited, "metadata": {"error_type": "provider_overloaded"}}
    assert chat(200, body) == Retry("200/err502", "failure", None)
    assert chat(200, {"error": limited}).signal == "rate"
