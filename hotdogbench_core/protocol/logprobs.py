"""P(hot dog) from the token log-probabilities of a chat answer (OpenAI's `choices[0].logprobs.content`).

Pure: no network, no clock. Reading an answer is the protocol's job (protocol/chat.py calls this for every
answer that carries log-probabilities); stats/calibration.py re-exports it beside the measures it feeds.
"""
from __future__ import annotations

import math
import re
from typing import Any

_VERDICT = re.compile(r"(true|false)(?![a-z0-9_])")


def _verdict(token: Any) -> str | None:
    """'true' / 'false' when the token's text, without leading spaces, quotes or a colon, starts with that word."""
    if not isinstance(token, str):
        return None
    m = _VERDICT.match(token.lstrip(" \t\r\n\"':").lower())
    return m.group(1) if m else None


def _logprob(entry: Any) -> tuple[str, float] | None:
    if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
        return None
    lp = entry.get("logprob")
    if isinstance(lp, bool) or not isinstance(lp, (int, float)):
        return None
    try:
        lp = float(lp)
    except OverflowError:
        return None
    return (entry["token"], lp) if lp <= 0.0 else None  # NaN and impossible positive values fail the test


def p_true_from_logprobs(content: Any) -> float | None:
    """P(true) = sum exp(lp_true) / (sum exp(lp_true) + sum exp(lp_false)) at the verdict token of an answer like
    {"hot_dog": true}, from the OpenAI-style logprobs.content list (a {"content": [...]} object is accepted too).

    The verdict token is the first token after the text "hot_dog" whose text starts with true or false (see _verdict);
    its top_logprobs, plus the chosen token itself, are summed over the spellings of each word (" true", "True",
    '"true', ...). A word absent from the top list counts 0. None when the answer has no hot_dog key or verdict
    token, when that token has no top_logprobs list, when neither word has a usable log-probability, or when
    anything is not the shape expected: this parses what servers send, and never raises.
    """
    if isinstance(content, dict):
        content = content.get("content")
    if not isinstance(content, list):
        return None
    text, after_key = "", False
    for entry in content:
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            return None
        if after_key and _verdict(entry["token"]):
            top = entry.get("top_logprobs")
            if not isinstance(top, list):
                return None
            seen: dict[str, float] = {}
            for tok, lp in filter(None, map(_logprob, top + [entry])):
                seen.setdefault(tok, lp)
            words = [(_verdict(tok), lp) for tok, lp in seen.items() if _verdict(tok)]
            if not words:
                return None
            top_lp = max(lp for _, lp in words)
            if top_lp == -math.inf:
                return None
            true_mass = math.fsum(math.exp(lp - top_lp) for w, lp in words if w == "true")
            return true_mass / math.fsum(math.exp(lp - top_lp) for _, lp in words)
        text = text[-6:] + entry["token"]  # enough to catch "hot_dog" split across tokens
        after_key = after_key or "hot_dog" in text.lower()
    return None
