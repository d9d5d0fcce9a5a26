"""Turn one HTTP response into an outcome: an answer, a retry, a final error, or a fatal stop.

Pure: no network, no clock. Statuses and error objects are decided here for every kind; the body of a 200 is
read by its kind (protocol/chat.py, protocol/decisions.py), so the runner never crashes on a body it did not
expect (the reference script died with KeyError on a 200 without `choices`).
"""
from __future__ import annotations

import datetime
import email.utils
import json
import math
import re
import zoneinfo
from dataclasses import dataclass
from typing import Literal, Protocol

from .ratelimit_fields import policy_rate, reset_in

# Statuses worth retrying, as in the reference script.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
# Statuses that say "slow down" rather than "something broke"; an adaptive limiter may treat the rest as noise.
RATE_STATUSES = frozenset({429})
# OpenRouter passes an upstream provider's rate limit on as 502 (or 503) "Provider returned error", the provider's own
# answer in `error.metadata.raw`: a 429 there, or words like these, are a rate signal whatever the status.
UPSTREAM_RATE = re.compile(r"\b429\b|rate[ _-]?limit|too many requests|resource[ _]?exhausted", re.I)
# A refusal that names the minute's quota it spent (OpenRouter: "Rate limit exceeded: free-models-per-min.")
PER_MINUTE = re.compile(r"per[ _-]?min(ute)?\b", re.I)
QUOTA_TAG = "quota"  # ends the tag of such a refusal ("429/quota"): the limiter reads it as a spent quota
RAW_CHARS = 500  # how much of an answer's text is kept
ERROR_CHARS = 300  # how much of an error object is kept
LONGEST_WAIT_S = 366 * 86400.0  # no quota resets further off than a year: a longer wait named is junk, read as this

Signal = Literal["rate", "failure", "transport"]


@dataclass(frozen=True)
class Answer:
    """A response that settles the photo: pred may be None (unanswered) but the request was paid for."""
    pred: bool | None
    raw: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    provider: str | None = None
    error: str | None = None  # e.g. "finish_reason=length: no content" alongside usage that was billed
    p_hot_dog: float | None = None  # P(hot dog): the Decisions noul, or P(true) at a chat verdict's token
    stated_rate: float | None = None  # requests per second the server says it allows (stated_rate(headers))


@dataclass(frozen=True)
class Retry:
    """Ask again later. `signal` tells the limiter what kind of push-back this was."""
    tag: str
    signal: Signal
    retry_after: float | None = None
    stated_rate: float | None = None  # a minute's quota the refusal names or states, requests per second


@dataclass(frozen=True)
class Failed:
    """A final error for this photo; other photos go on."""
    error: str


@dataclass(frozen=True)
class Fatal:
    """No photo can succeed (bad key, no credits): the model's run stops, what was saved is kept."""
    error: str
    hint: str = ""


Outcome = Answer | Retry | Failed | Fatal


class ReadsAnswers(Protocol):
    """What classify needs of a request kind (protocol.endpoint.Endpoint is one)."""

    def read_answer(self, data: dict, usage: dict, provider: str | None) -> Outcome: ...


def parse_retry_after(value: str | None, now: float | None = None, date: str | None = None) -> float | None:
    """Seconds from a Retry-After header: delay-seconds, or an HTTP-date (RFC 9110) counted from `now` (epoch
    seconds), or from the answer's own Date header where the server's clock is off ours by more than its whole
    seconds can be (a skewed server names its own clock's time). Junk, or a date with neither, gives None."""
    if not value:
        return None
    s = _number(value)
    if s is None:
        at, served = _http_date(value), _http_date(date) if date else None
        if served is not None and (now is None or abs(served - now) > 2.0):
            now = served + 0.5  # (a Date is whole seconds: on average half of one behind)
        return None if at is None or now is None else min(max(0.0, at - now), LONGEST_WAIT_S)
    return min(s, LONGEST_WAIT_S) if math.isfinite(s) and s >= 0 else None


def _number(value: str | None) -> float | None:
    try:
        return float(value.strip()) if value else None
    except ValueError:
        return None


def _http_date(value: str) -> float | None:
    """Epoch seconds of an HTTP-date ("Wed, 21 Oct 2015 07:28:00 GMT"), or None."""
    try:
        parsed = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # (RFC 9110: always GMT; the obsolete forms parse without a zone)
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp()


# -- reading untrusted JSON ----------------------------------------------------------------------------------
_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def _duration(value: str) -> float | None:
    """Seconds from a Go-style duration ("1s", "6m0s", "1m30.5s", "250ms"), as x-ratelimit-reset-requests has."""
    total, num, i, v = 0.0, "", 0, value.strip().lower()
    if not v:
        return None
    while i < len(v):
        ch = v[i]
        if ch.isdigit() or ch == ".":
            num += ch
            i += 1
            continue
        unit = "ms" if v.startswith("ms", i) else ch
        if unit not in _DURATION_UNITS or not num:
            return None
        try:
            total += float(num) * _DURATION_UNITS[unit]
        except ValueError:
            return None
        num, i = "", i + len(unit)
    if num:  # a bare number: seconds
        try:
            total += float(num)
        except ValueError:
            return None
    return total if math.isfinite(total) else None


def retry_hint(headers: dict, now: float | None = None) -> float | None:
    """Seconds to wait before asking again, from what the server said: retry-after-ms or Retry-After (seconds or an
    HTTP-date), else a reset hint (a gateway's `llm_provider-retry-after`, the IETF RateLimit fields' reset,
    `x-ratelimit-reset-requests` like "6m0s", OpenRouter's `X-RateLimit-Reset` in epoch milliseconds, or seconds).
    `now` is the wall clock in epoch seconds: a date or an epoch without it (or the answer's Date) is no wait. None
    if nothing usable was sent."""
    ms = parse_retry_after(headers.get("retry-after-ms"))  # Azure's, to the millisecond (OpenAI's SDK reads it first)
    if ms is not None:
        return ms / 1000.0
    ra = parse_retry_after(headers.get("retry-after"), now, headers.get("date"))
    if ra is not None:
        return ra
    ra = parse_retry_after(headers.get("llm_provider-retry-after"))
    if ra is None:
        ra = reset_in(headers)  # the IETF RateLimit fields' (express-rate-limit's): seconds, never a clock time
    if ra is not None:
        return min(ra, LONGEST_WAIT_S)
    reset = headers.get("x-ratelimit-reset-requests")
    if reset:
        d = _duration(reset)
        if d is not None and d >= 0:
            return min(d, LONGEST_WAIT_S)
    reset = _number(headers.get("x-ratelimit-reset"))
    if reset is None or now is None or not reset >= 1e9:  # (a small number is no epoch, a count down maybe: ignored)
        return None
    at = reset / 1000.0 if reset > 1e11 else reset  # epoch ms (OpenRouter's), or epoch seconds (as GitHub's)
    return min(max(0.0, at - now), LONGEST_WAIT_S)


STATED_PERIOD_S = 60.0  # x-ratelimit-limit-requests counts a minute's requests: OpenAI's and LiteLLM's meaning (a
#                        server that counts a day's, as Groq, states more than it allows: a ceiling never reached)


MINUTE_COUNTS = ("x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit")  # OpenAI's and LiteLLM's;
#                 Anthropic's (its API's requests a minute, on every answer, with -remaining and an RFC 3339 -reset)


def stated_rate(headers) -> float | None:
    """Requests per second a server says it allows on its answers: a minute's count (MINUTE_COUNTS: OpenAI, the
    LiteLLM proxy for a deployment with an rpm, Anthropic) read as per minute, less one: a window counts arrivals,
    which the network brings closer than they were sent, and LiteLLM 1.108.7 lets rpm - 1 through (measured: 119
    of 120); else the tightest quota of a minute or less an IETF RateLimit-Policy states, read the same way. None
    if it says nothing usable."""
    if headers is None:
        return None
    counts = (minute_count_rate(headers.get(name)) for name in MINUTE_COUNTS)
    return next((rate for rate in counts if rate), None) or policy_rate(headers, STATED_PERIOD_S)


def minute_count_rate(value) -> float | None:
    """A count of requests a minute a server states (a header's text or a number) as the pace under it, requests
    per second: one under the count (see stated_rate). None if it is no count of at least one."""
    try:
        n = float(value) if value is not None else math.nan
    except (TypeError, ValueError):
        n = math.nan
    return max(n - 1, 1.0) / STATED_PERIOD_S if math.isfinite(n) and n >= 1 else None


def as_int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def as_num(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def as_str(v) -> str | None:
    return v if isinstance(v, str) else None


def as_dict(v) -> dict:
    return v if isinstance(v, dict) else {}


def as_list(v) -> list:
    return v if isinstance(v, list) else []


def rate_signal(code: int) -> Signal:
    return "rate" if code in RATE_STATUSES else "failure"


def upstream_rate_limited(err) -> bool:
    """An error object that says an upstream provider rate limited the request: OpenRouter's
    `metadata.error_type: rate_limit_exceeded`, or the provider's own answer in `metadata.raw`."""
    meta = as_dict(as_dict(err).get("metadata"))
    if meta.get("error_type") == "rate_limit_exceeded":
        return True
    raw = meta.get("raw")
    if raw is None:
        return False
    text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
    return UPSTREAM_RATE.search(text[:2000]) is not None


def hint_headers(headers, err) -> dict:
    """The HTTP headers (lower-case) over the rate-limit headers OpenRouter puts in a refusal's body: its free-model
    429s carry X-RateLimit-Limit, -Remaining and -Reset in `error.metadata.headers`, and no Retry-After."""
    body = as_dict(as_dict(as_dict(err).get("metadata")).get("headers"))
    merged = {str(k).lower(): str(v) for k, v in body.items() if isinstance(v, (str, int, float))}
    merged.update((str(k).lower(), v) for k, v in headers.items())
    return merged


def quota_rate(err, headers) -> float | None:
    """The quota a refusal names, when it is a minute's (OpenRouter: "Rate limit exceeded: free-models-per-min"
    with X-RateLimit-Limit: 20), as requests per second, read as stated_rate reads a minute's count. None for any
    other: a day's quota (free-models-per-day) is no pace; its reset hint stops the model (max_wait_s)."""
    message = as_str(as_dict(err).get("message")) or ""
    if PER_MINUTE.search(message) is None:
        return None
    return minute_count_rate(headers.get("x-ratelimit-limit"))


def google_quota(err, now: float | None) -> tuple[float | None, float | None, bool]:
    """What a Google API refusal's details say (Gemini's OpenAI-compatible endpoint sends them, with no rate
    headers): its wait (RetryInfo's retryDelay, "37s"; for a day's quota the time to its reset at midnight Pacific
    time, as Google documents, where its retryDelay says seconds), the pace under a minute's request quota its
    QuotaFailure names (quotaValue a minute, as requests per second), and whether it names a quota at all."""
    details = [(as_str(d.get("@type")) or "", d) for d in as_list(as_dict(err).get("details")) if isinstance(d, dict)]
    wait = next((_duration(as_str(d.get("retryDelay")) or "") for t, d in details if t.endswith("RetryInfo")), None)
    violations = [v for t, d in details if t.endswith("QuotaFailure") for v in as_list(d.get("violations"))]
    ids = [(as_str(as_dict(v).get("quotaId")) or "", as_dict(v).get("quotaValue")) for v in violations]
    if now is not None and any("PerDay" in q for q, _ in ids):
        wait = max(wait or 0.0, _to_midnight_pacific(now))
    rate = next((minute_count_rate(n) for q, n in ids if "PerMinute" in q and "Requests" in q), None)
    return wait, rate, bool(ids)


def _to_midnight_pacific(now: float) -> float:
    """Seconds from epoch `now` to the next midnight in Los Angeles (UTC-8 without a time zone database: the later)."""
    try:
        zone = zoneinfo.ZoneInfo("America/Los_Angeles")
    except zoneinfo.ZoneInfoNotFoundError:
        zone = datetime.timezone(datetime.timedelta(hours=-8))
    local = datetime.datetime.fromtimestamp(now, zone)
    midnight = datetime.datetime.combine(local.date() + datetime.timedelta(days=1), datetime.time(), zone)
    return midnight.timestamp() - now


def names_quota(tag: str) -> bool:
    """A refusal's tag says it named the quota it spent (retry_for tags it so): a quota, not a rate."""
    return tag.endswith("/" + QUOTA_TAG)


def retry_for(code: int, err, headers, now: float | None, tag: str) -> Retry:
    """A retryable status or error code: a rate signal if it is 429 or an upstream provider's rate limit; its wait
    and a minute's quota it names (or states) read from the headers and the body's `error.metadata.headers`."""
    hints = hint_headers(headers, err)
    if code not in RATE_STATUSES and upstream_rate_limited(err):
        return Retry(f"{tag}/upstream_rate", "rate", retry_hint(hints, now))
    signal = rate_signal(code)
    google_wait, google_rate, named = google_quota(err, now)
    wait = retry_hint(hints, now)
    wait = google_wait if wait is None else max(wait, google_wait or 0.0)  # (never the earlier of two)
    wait = None if wait is None else min(wait, LONGEST_WAIT_S)
    stated = policy_rate(hints, STATED_PERIOD_S)  # (an IETF RateLimit-Policy on the refusal)
    quota = (quota_rate(err, hints) or google_rate or stated) if signal == "rate" else None
    named = signal == "rate" and (named or quota is not None)
    return Retry(f"{tag}/{QUOTA_TAG}" if named else tag, signal, wait, quota)


def _account_spent(status: int, err) -> Fatal | None:
    """OpenAI's "insufficient_quota" (a 429 whose code or type says the account's billing quota is spent, "You
    exceeded your current quota, please check your plan and billing details"): no wait makes it answer."""
    e = as_dict(err)
    if "insufficient_quota" not in (e.get("code"), e.get("type")):
        return None
    return Fatal(error_text(status, err), "the account's quota is spent (insufficient_quota: its plan and billing, not "
                                       "a rate): add credits or raise the plan's limit, then resume the run")


def error_text(status: int, err) -> str:
    return f"{status}: {json.dumps(err, default=str)[:ERROR_CHARS]}"


def _google_refused_key(e: dict) -> bool:
    """Google answers a key it does not take with 400 INVALID_ARGUMENT, its details' reason API_KEY_INVALID."""
    return any(as_dict(d).get("reason") == "API_KEY_INVALID" for d in as_list(e.get("details")))


def _gateway_refused_key(e: dict) -> bool:
    """LiteLLM's proxy without a database answers a key it does not know with 400 "No connected db.", not 401."""
    return e.get("type") == "no_db_connection" or as_str(e.get("message")) == "No connected db."


def classify_error(status: int, err, headers: dict, now: float | None = None) -> Outcome:
    """An error object (or a non-200 body) as an outcome: later, stop, or a final error for this photo."""
    e = as_dict(err)
    code = e.get("code")
    meta = as_dict(e.get("metadata"))
    reason = as_str(meta.get("reason")) or ""
    if status == 402 or code == 402:
        if "in_flight" in reason:  # OpenRouter reserves credit per request in flight: wait, then retry
            return Retry("402/in_flight", "rate", retry_hint(headers, now) or 2.0)
        return Fatal(error_text(status, err), "out of credits: add credits or lower the maximum concurrency, then resume the run")
    if _gateway_refused_key(e):
        return Fatal(error_text(status, err), "the gateway could not check the key (LiteLLM without its database "
                                              "answers so for a key it does not know): check the key, then resume")
    if status in (401, 403) or code in (401, 403) or _google_refused_key(e):
        if status == 403 or code == 403:
            # 403 is also OpenRouter's moderation refusal for one input: that settles one photo, not the run
            if "moderation" in json.dumps(err, default=str).lower():
                return Failed(error_text(status, err))
        return Fatal(error_text(status, err), "the key was refused: check OPENROUTER_API_KEY, then resume the run")
    if isinstance(code, int) and code in RETRY_STATUSES or code == "insufficient_quota":
        return _account_spent(status, e) or retry_for(code, e, headers, now, f"{status}/err{code}")
    return Failed(error_text(status, err))


def _error_object(body: bytes) -> dict:
    """The error object of a small JSON error body, else {} (a retryable status's body need not be JSON)."""
    if len(body) > 64_000:
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    data = unlisted(data)
    return as_dict(data.get("error")) if isinstance(data, dict) else {}


def unlisted(data):
    """A body whose error object comes in a list of one ([{"error": {...}}], as Google's OpenAI-compatible endpoint
    sends it) as that object's body; any other body as it is."""
    if isinstance(data, list) and len(data) == 1 and isinstance(data[0], dict) and "error" in data[0]:
        return data[0]
    return data


def classify(status: int, headers: dict, body: bytes, endpoint: ReadsAnswers, now: float | None = None) -> Outcome:
    """Decide what one HTTP response to a request of kind `endpoint` means. `headers` keys are lower-case; `now`
    (epoch seconds, optional) lets an epoch reset hint count as a wait (see retry_hint)."""
    if status in RETRY_STATUSES:
        err = _error_object(body)
        return _account_spent(status, err) or retry_for(status, err, headers, now, str(status))
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return Retry(f"{status}/badjson", "failure")
    data = unlisted(data)
    if not isinstance(data, dict):
        if status != 200:
            return classify_error(status, data, headers, now)
        return Retry(f"{status}/notobject", "failure")
    if status != 200 or "error" in data and "choices" not in data and "answers" not in data:
        return classify_error(status, data.get("error", data), headers, now)
    return endpoint.read_answer(data, as_dict(data.get("usage")), as_str(data.get("provider")))
