"""Secrets out of everything a run writes down: the API key and any credential in the base URL.

One Redactor per run, made from its settings (`Redactor.for_settings`), is applied where a result is made
(the response body before it is read, so a cut at a length limit never keeps half a key; then the result's
texts) and once more by the journal writer on every line, as the last defence. Anything written from a
Result (parquet, summary, pairs, report) comes from the journal's lines, so it is clean too.

What counts as a secret: the key; the user name and password of a base URL (user:pass@host); the value of
every query parameter of the base URL (?token=..., ?key=...). A secret shorter than MIN_SECRET characters is
not searched for in free text (it would blot out ordinary words); such a URL credential is still never
written, as every URL written down is public_url(...) of it. The JSON-escaped and percent-encoded forms of
each secret are searched for too.
"""
from __future__ import annotations

import json
from typing import Iterable
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

MASK = "[REDACTED]"
MIN_SECRET = 6


def public_url(url: str) -> str:
    """A URL as it may be written down: scheme, host, port and path (no user, password, query or fragment)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # a malformed port or host: keep the scheme only
        return (url.split("://", 1)[0] + "://") if "://" in url else ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    netloc = host + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def url_secrets(url: str) -> list[str]:
    """The credentials a URL carries: user, password, user:password, and every query value."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    out = []
    for s in (user, password):
        if s:
            out += [s, unquote(s)]
    if user and password:
        out.append(f"{user}:{password}")
    for _, value in parse_qsl(parts.query, keep_blank_values=False):
        out.append(value)
    if parts.query:
        out.append(parts.query)
    return out


class Redactor:
    """Replaces every known secret in a text (or bytes) with MASK."""

    def __init__(self, secrets: Iterable[str | None] = ()):
        forms: set[str] = set()
        for s in secrets:
            if not isinstance(s, str) or len(s) < MIN_SECRET:
                continue
            forms |= {s, json.dumps(s)[1:-1], quote(s, safe=""), s.replace("/", "\\/")}
        self._texts = sorted((f for f in forms if len(f) >= MIN_SECRET), key=len, reverse=True)
        self._bytes = [f.encode() for f in self._texts]
        self._mask_b = MASK.encode()

    @classmethod
    def for_settings(cls, settings) -> "Redactor":
        """The run's secrets: RunSettings.api_key and the credentials of RunSettings.base_url."""
        return cls([getattr(settings, "api_key", None), *url_secrets(getattr(settings, "base_url", "") or "")])

    def __bool__(self) -> bool:
        return bool(self._texts)

    def text(self, value):
        """`value` with every secret masked (non-strings are returned as they are)."""
        if not isinstance(value, str) or not self._texts:
            return value
        for s in self._texts:
            if s in value:
                value = value.replace(s, MASK)
        return value

    def bytes(self, data: bytes) -> bytes:
        for s in self._bytes:
            if s in data:
                data = data.replace(s, self._mask_b)
        return data

    def result(self, res) -> None:
        """Mask the free-text fields of a Result in place (what a server wrote or an exception said)."""
        for name in ("raw", "error", "provider", "open_images_id"):
            v = getattr(res, name)
            if v is not None:
                setattr(res, name, self.text(v))
        if res.retries:
            res.retries = tuple(self.text(t) for t in res.retries)


NO_SECRETS = Redactor()
