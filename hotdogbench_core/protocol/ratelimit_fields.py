"""The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers), in the three forms servers send.

What they say that the limiter can use: a quota policy's pace (q requests per w seconds: a stated rate) and, on a
refusal, when a spent quota refills (a reset hint). express-rate-limit, the Node middleware, sends any of:

    draft 6:  RateLimit-Policy: 100;w=60   RateLimit-Limit: 100   RateLimit-Remaining: 0   RateLimit-Reset: 37
    draft 7:  RateLimit-Policy: 100;w=60   RateLimit: limit=100, remaining=0, reset=37
    draft 8+: RateLimit-Policy: "perminute";q=100;w=60   RateLimit: "perminute";r=0;t=37   (lists of such items)

Every time in them is seconds from now (delay-seconds), never a clock time. Pure, and never raises on junk: a field
it cannot read says nothing.
"""
from __future__ import annotations

import math
import re

# One member of a structured-field list: a bare item (a quoted string, a number or a token) and its parameters.
_MEMBER = re.compile(r'\s*("(?:[^"\\]|\\.)*"|[^;,"]*)((?:\s*;\s*[A-Za-z*][\w.*-]*(?:=(?:"(?:[^"\\]|\\.)*"|[^;,"]*))?)*)'
                     r'\s*(?:,|$)')
_PARAM = re.compile(r';\s*([A-Za-z*][\w.*-]*)(?:=("(?:[^"\\]|\\.)*"|[^;,"]*))?')
_REQUESTS = "requests"  # the default quota unit; "content-bytes" and "concurrent-requests" are no request pace


def _members(value: str | None) -> list[tuple[str, dict[str, str]]]:
    """A field's list members as (bare item, {parameter: value}), quotes taken off; [] for junk."""
    if not value or not isinstance(value, str):
        return []
    out, pos = [], 0
    while pos < len(value):
        m = _MEMBER.match(value, pos)
        if m is None or m.end() == pos:
            return []
        item, params = m.group(1).strip(), m.group(2)
        out.append((item.strip('"'), {k.lower(): (v or "").strip().strip('"') for k, v in _PARAM.findall(params)}))
        pos = m.end()
    return out


def _seconds(value) -> float | None:
    """A non-negative finite count of seconds (or requests), or None."""
    try:
        n = float(str(value).strip())
    except (TypeError, ValueError):
        return None
    return n if math.isfinite(n) and n >= 0 else None


def policy_rate(headers, longest_window_s: float) -> float | None:
    """The pace a server's RateLimit-Policy allows, requests per second: of its request quotas whose window is at
    most `longest_window_s` (a day's quota is no pace: its spent quota's reset is waited for, or stops the model),
    the tightest, one request under its count (a window counts arrivals, which the network brings closer than they
    were sent). None if it states none."""
    paces = []
    for item, params in _members(headers.get("ratelimit-policy") if headers is not None else None):
        quota = _seconds(params["q"]) if "q" in params else _seconds(item)  # draft 8+: q=; draft 6-7: the item
        window = _seconds(params.get("w"))
        unit = params.get("qu", _REQUESTS)
        if quota is not None and quota >= 1 and window and window <= longest_window_s and unit == _REQUESTS:
            paces.append(max(quota - 1, 1.0) / window)
    return min(paces, default=None)


def reset_in(headers) -> float | None:
    """Seconds until a spent quota refills, from the RateLimit fields: draft 8+'s items with nothing left (r=0),
    the latest of their t; draft 7's `reset=`; draft 6's RateLimit-Reset. None if they say nothing usable."""
    if headers is None:
        return None
    members = _members(headers.get("ratelimit"))
    spent = [_seconds(p.get("t")) for _, p in members if "r" in p and _seconds(p["r"]) == 0]
    if any(t is not None for t in spent):
        return max(t for t in spent if t is not None)
    draft7 = dict(item.split("=", 1) for item, _ in members if "=" in item)
    reset = _seconds(draft7.get("reset"))
    return reset if reset is not None else _seconds(headers.get("ratelimit-reset"))
