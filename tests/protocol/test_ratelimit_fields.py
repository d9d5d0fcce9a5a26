"""The IETF RateLimit header fields, in the forms express-rate-limit 8.7 sends them (draft 6, 7 and 8)."""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hotdogbench_core.protocol.answers import Answer, Retry, classify, retry_hint, stated_rate
from hotdogbench_core.protocol.chat import CHAT
from hotdogbench_core.protocol.ratelimit_fields import policy_rate, reset_in

MINUTE = 60.0
DRAFT6 = {"ratelimit-policy": "100;w=60", "ratelimit-limit": "100", "ratelimit-remaining": "0",
          "ratelimit-reset": "37"}
DRAFT7 = {"ratelimit-policy": "100;w=60", "ratelimit": "limit=100, remaining=0, reset=37"}
DRAFT8 = {"ratelimit-policy": '"perminute"; q=100; w=60; pk=:NDJmZTdkNDQ4YjQz:',
          "ratelimit": '"perminute"; r=0; t=37'}


@pytest.mark.parametrize("headers", [DRAFT6, DRAFT7, DRAFT8], ids=["draft6", "draft7", "draft8"])
def test_each_draft_states_its_pace_and_its_reset(headers):
    assert policy_rate(headers, MINUTE) == pytest.approx(99 / 60)  # one under the count, as a minute's count is read
    assert reset_in(headers) == 37.0
    assert retry_hint(headers) == 37.0
    assert stated_rate(headers) == pytest.approx(99 / 60)


def test_the_tightest_quota_of_a_minute_or_less_is_the_pace():
    # 10 a second, but 50 a minute: the minute's binds; an hour's (or a day's) is a quota to wait out, not a pace
    assert policy_rate({"ratelimit-policy": "10;w=1, 50;w=60"}, MINUTE) == pytest.approx(49 / 60)
    both = {"ratelimit-policy": '"permin";q=50;w=60,"perhr";q=1000;w=3600'}
    assert policy_rate(both, MINUTE) == pytest.approx(49 / 60)
    assert policy_rate({"ratelimit-policy": '"daily";q=1000;w=86400'}, MINUTE) is None


def test_quotas_of_bytes_or_of_requests_in_flight_are_no_pace():
    assert policy_rate({"ratelimit-policy": '"b";q=65535;qu="content-bytes";w=10'}, MINUTE) is None
    assert policy_rate({"ratelimit-policy": '"c";q=8;qu="concurrent-requests";w=1'}, MINUTE) is None
    assert policy_rate({"ratelimit-policy": '"r";q=8;qu="requests";w=2'}, MINUTE) == pytest.approx(7 / 2)


def test_the_reset_is_the_latest_of_the_spent_quotas():
    # a quota with some left is no wait; of two spent ones, the later refill is the one that lets a send through
    assert reset_in({"ratelimit": '"a";r=5;t=2, "b";r=0;t=40, "c";r=0;t=12'}) == 40.0
    assert reset_in({"ratelimit": '"a";r=5;t=2'}) is None
    assert reset_in({"ratelimit": '"a";r=0'}) is None  # spent, with no time given


@pytest.mark.parametrize("junk", ["", "soon", '"unclosed;r=0;t=5', "limit=100, reset=-3", "r=0;t=nan",
                                  "100;w=0", "100;w=-60", "0;w=60", '"x";q=1e999;w=60', ",,,"])
def test_junk_says_nothing(junk):
    headers = {"ratelimit": junk, "ratelimit-policy": junk, "ratelimit-reset": junk}
    assert reset_in(headers) is None
    assert policy_rate(headers, MINUTE) is None


@given(st.dictionaries(st.sampled_from(["ratelimit", "ratelimit-policy", "ratelimit-reset"]), st.text(max_size=80)))
def test_no_field_value_raises(headers):
    wait, rate = reset_in(headers), policy_rate(headers, MINUTE)
    assert wait is None or wait >= 0
    assert rate is None or 0 < rate


def test_retry_after_wins_over_the_fields():
    # express-rate-limit sends both on a 429; RFC 9110's header is the server's own word for this request
    assert retry_hint({**DRAFT8, "retry-after": "5"}) == 5.0


def test_a_refusal_stating_its_policy_is_a_named_quota_with_its_pace_and_reset():
    body = json.dumps({"error": {"message": "Too many requests, please try again later."}}).encode()
    out = classify(429, DRAFT8, body, CHAT)
    assert isinstance(out, Retry) and out.signal == "rate"
    assert out.retry_after == 37.0
    assert out.stated_rate == pytest.approx(99 / 60)
    assert out.tag.endswith("/quota")  # the limiter pauses at once and waits the reset out
    # without the fields, the same refusal is a plain 429: no wait, no pace, no quota named
    plain = classify(429, {}, body, CHAT)
    assert plain.retry_after is None and plain.stated_rate is None and not plain.tag.endswith("/quota")


def test_an_answer_carries_the_stated_pace():
    body = json.dumps({"choices": [{"message": {"content": "yes"}, "finish_reason": "stop"}]}).encode()
    from hotdogbench_core.protocol.request import request_for
    out = request_for("some/vision-model").classify(200, DRAFT7, body)
    assert isinstance(out, Answer) and out.stated_rate == pytest.approx(99 / 60)
    assert request_for("some/vision-model").classify(200, {}, body).stated_rate is None
