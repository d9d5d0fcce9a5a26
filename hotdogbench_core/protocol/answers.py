"""Turn one HTTP response into an outcome: an answer, a retry, a final error, or a fatal stop.

Pure: no network, no clock. Every strange response OpenRouter can send is decided here, so the runner never
crashes on a body it did not expect (the reference script died with KeyError on a 200 without `choices`).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Literal

# Statuses worth retrying, as in the reference script.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
# Statuses that say "slow down" rather than "something broke"; an adaptive limiter may treat the rest as noise.
RATE_STATUSES = frozenset({429})
RAW_CHARS = 500  # how much of an answer's text is kept
ERROR_CHARS = 300  # how much of an error object is kept

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


@dataclass(frozen=True)
class Retry:
    """Ask again later. `signal` tells the limiter what kind of push-back this was."""
    tag: str
    signal: Signal
    retry_after: float | None = None


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


def parse_verdict(text: str | None) -> bool | None:
    """{"hot_dog": true|false} as plain JSON or in a ```json fence; else the reference's substring fallback."""
    if not isinstance(text, str):
        return None
    try:
        v = json.loads(text.strip().removeprefix("```json").removesuffix("```").strip())["hot_dog"]
        return v if isinstance(v, bool) else None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        low = text.lower()
        if '"hot_dog": true' in low or '"hot_dog":true' in low:
            return True
        if '"hot_dog": false' in low or '"hot_dog":false' in low:
            return False
        return None


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header; HTTP dates and junk are ignored (the caller backs off instead)."""
    if not value:
        return None
    try:
        s = float(value.strip())
    except ValueError:
        return None
    return s if math.isfinite(s) and s >= 0 else None


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _str(v) -> str | None:
    return v if isinstance(v, str) else None


def _dict(v) -> dict:
    return v if isinstance(v, dict) else {}


def _error_text(status: int, err) -> str:
    return f"{status}: {json.dumps(err, default=str)[:ERROR_CHARS]}"


def _classify_error(status: int, err, headers: dict) -> Outcome:
    e = _dict(err)
    code = e.get("code")
    meta = _dict(e.get("metadata"))
    reason = _str(meta.get("reason")) or ""
    if status == 402 or code == 402:
        if "in_flight" in reason:  # OpenRouter reserves credit per request in flight: wait, then retry
            return Retry("402/in_flight", "rate", parse_retry_after(headers.get("retry-after")) or 2.0)
        return Fatal(_error_text(status, err), "out of credits: add credits or lower --max-concurrency, then --resume")
    if status in (401, 403) or code in (401, 403):
        if status == 403 or code == 403:
            # 403 is also OpenRouter's moderation refusal for one input: that settles one photo, not the run
            if "moderation" in json.dumps(err, default=str).lower():
                return Failed(_error_text(status, err))
        return Fatal(_error_text(status, err), "the key was refused: check OPENROUTER_API_KEY, then --resume")
    if isinstance(code, int) and code in RETRY_STATUSES:
        signal: Signal = "rate" if code in RATE_STATUSES else "failure"
        return Retry(f"{status}/err{code}", signal, parse_retry_after(headers.get("retry-after")))
    return Failed(_error_text(status, err))


def classify(status: int, headers: dict, body: bytes, *, decisions: bool) -> Outcome:
    """Decide what one HTTP response means. `headers` keys are lower-case."""
    if status in RETRY_STATUSES:
        signal: Signal = "rate" if status in RATE_STATUSES else "failure"
        return Retry(str(status), signal, parse_retry_after(headers.get("retry-after")))
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return Retry(f"{status}/badjson", "failure")
    if not isinstance(data, dict):
        if status != 200:
            return _classify_error(status, data, headers)
        return Retry(f"{status}/notobject", "failure")
    if status != 200 or "error" in data and "choices" not in data and "answers" not in data:
        return _classify_error(status, data.get("error", data), headers)
    usage = _dict(data.get("usage"))
    provider = _str(data.get("provider"))
    if decisions:
        return _decisions_answer(data, usage, provider)
    return _chat_answer(data, usage, provider)


def _decisions_answer(data: dict, usage: dict, provider: str | None) -> Outcome:
    common = dict(prompt_tokens=_int(usage.get("input_tokens")), completion_tokens=_int(usage.get("output_tokens")),
                  cost_usd=_num(usage.get("cost")), provider=provider)
    answers = data.get("answers")
    if not isinstance(answers, dict):
        if not usage:
            return Retry("200/noanswers", "failure")
        return Answer(None, None, error="decisions response without answers", **common)
    p = _dict(answers.get("hot_dog")).get("noul")
    if _num(p) is None or not 0.0 <= p <= 1.0:
        return Answer(None, None if p is None else str(p)[:RAW_CHARS],
                      error=f"decisions answer hot_dog.noul is not a probability: {str(p)[:60]}", **common)
    return Answer(p >= 0.5, str(p), **common)


def _chat_answer(data: dict, usage: dict, provider: str | None) -> Outcome:
    common = dict(prompt_tokens=_int(usage.get("prompt_tokens")),
                  completion_tokens=_int(usage.get("completion_tokens")),
                  reasoning_tokens=_int(_dict(usage.get("completion_tokens_details")).get("reasoning_tokens")),
                  cost_usd=_num(usage.get("cost")), provider=provider)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        if "error" in data:
            return _classify_error(200, data["error"], {})
        if not usage:  # nothing billed and nothing said: worth asking again
            return Retry("200/nochoices", "failure")
        return Answer(None, None, error="response without choices", **common)
    choice = choices[0]
    if choice.get("error") is not None:
        err = choice["error"]
        code = _dict(err).get("code")
        if isinstance(code, int) and code in RETRY_STATUSES and not usage:
            return Retry(f"200/err{code}", "rate" if code in RATE_STATUSES else "failure")
        content = _str(_dict(choice.get("message")).get("content"))
        return Answer(parse_verdict(content), content[:RAW_CHARS] if content else None,
                      error=_error_text(200, err), **common)
    content = _dict(choice.get("message")).get("content")
    if not isinstance(content, str):
        # null content: a reasoning model spent max_tokens thinking. Billed, unanswered, not an error (as reference)
        return Answer(None, "" if content is None else str(content)[:RAW_CHARS], **common)
    raw = content[:RAW_CHARS]
    return Answer(parse_verdict(content), raw, **common)
