"""The simulator's caps, hidden from the client: credits, an in-flight cap, fixed windows and token buckets
(key-wide or per model), moved by a cap schedule, refused with the Retry-After or reset hint a server of the
chosen kind sends (a SimCore mixin)."""
from __future__ import annotations

import json
import math
import time

from aiohttp import web

from .cap import Cap
from .config import QUOTA_NAMES, SimConfig, google_refusal, ratelimit_fields, retry_after_forms

_NO_CREDITS = "Insufficient credits. Add more at https://openrouter.ai/settings/credits"


def _secs(x: float) -> str:
    """Seconds for a Retry-After header: an integer when whole, else milliseconds rounded up ("0.125")."""
    if x == int(x):
        return str(int(x))
    return f"{math.ceil(x * 1000) / 1000:.3f}"


class Caps:
    """The cap state and checks of SimCore: _check_caps answers a refusal or None (admitted)."""

    def _check_caps(self, cfg: SimConfig, digest: str, t: float, model: str = "*") -> web.Response | None:
        """The refusal of a request over a cap (credits, in flight, fixed window, token bucket), or None."""
        stats = self.stats
        if cfg.credits_usd is not None and stats.spent_usd >= cfg.credits_usd:
            return self._reject(digest, t, 402, _NO_CREDITS,
                                {"spent_usd": stats.spent_usd, "limit_usd": cfg.credits_usd})
        scale = self._scale(cfg, t)
        self._held_s = 0.0
        if cfg.max_in_flight is not None and stats.in_flight >= round(cfg.max_in_flight * scale):
            return self._rate_limited(digest, t, None, cfg.max_in_flight)
        key = model if cfg.caps_per == "model" else "*"
        if cfg.window_n is not None:
            wait = self._window_wait(cfg, key, round(cfg.window_n * scale))
            if wait is not None:
                return self._rate_limited(digest, t, wait, cfg.window_n, QUOTA_NAMES.get(cfg.window_s), cfg.window_s)
        if cfg.rate_per_s is None:
            self._buckets.clear()
        else:
            self._tokens, self._bucket_t = self._buckets.get(key, (None, 0.0))
            wait = self._take_token(cfg, t, scale)
            self._buckets[key] = (self._tokens, self._bucket_t)
            if wait is not None:
                return self._rate_limited(digest, t, wait, cfg.burst)
        return None

    def _rate_limited(self, digest, t, wait: float | None, limit: int, quota: str | None = None,
                      period: float | None = None) -> web.Response:
        cfg = self.config
        mode = cfg.retry_after
        known = wait is not None and wait != math.inf
        other = mode in ("http_date", "retry_after_ms")  # the exact wait in another server's form
        ra = None if mode in ("none", "reset_requests", "gateway", "openrouter", "google", "ratelimit", "flask") else \
            wait if (mode == "exact" or other) and known else cfg.retry_after_s
        if mode == "large" and self._rng.random() >= cfg.retry_after_share:
            ra = None
        reset_in = wait if known else cfg.retry_after_s
        rl = {} if other or mode in ("ratelimit", "flask") else {"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": "0",
                                                      "X-RateLimit-Reset": str(int((time.time() + reset_in) * 1000))}
        headers = dict(rl)
        if other:
            now = time.time()
            headers.update(retry_after_forms(mode, ra, now))
            ra = math.ceil(ra * 1000) / 1000 if mode == "retry_after_ms" else math.ceil(now + ra) - now  # (named)
        elif ra is not None:
            ra = float(_secs(ra))
            headers["Retry-After"] = _secs(ra)
        elif mode == "reset_requests":
            m, sec = divmod(math.ceil(reset_in), 60)
            headers["x-ratelimit-reset-requests"] = f"{m}m{sec}s" if m else f"{sec}s"
            ra = float(math.ceil(reset_in))  # (what the client should wait, for the stats)
        elif mode == "gateway":
            headers["llm_provider-retry-after"] = _secs(cfg.retry_after_s)
            ra = cfg.retry_after_s
        elif mode == "flask":  # Flask-Limiter's: the reset's epoch second + 1, and Retry-After the whole seconds
            now = time.time()  # from the clock's second now to the reset's (0 for a wait that ends within it)
            at = now + reset_in
            headers.update({"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": "0",
                            "X-RateLimit-Reset": str(math.floor(at) + 1),
                            "Retry-After": str(math.floor(at) - math.floor(now))})
            ra = float(headers["Retry-After"])
        elif mode == "ratelimit":
            headers.update(ratelimit_fields(limit, period, wait if known else None))
            ra = float(math.ceil(wait)) if known else None
        if mode == "google":
            ra = math.ceil(reset_in * 1000) / 1000
            self.stats._finish(digest, t, 429, ra, refused=True)
            return web.json_response(google_refusal(reset_in, limit, period), status=429)
        if cfg.refusal_status == "502":  # an upstream provider's limit, passed on by OpenRouter
            raw = json.dumps({"error": {"code": 429, "message": "Resource exhausted (simulated upstream)"}})
            return self._reject(digest, t, 502, "Provider returned error", {"provider_name": "simulator", "raw": raw},
                                headers, ra, refused=True)
        if mode == "openrouter":  # a free model's 429: the quota named, its X-RateLimit-* in the body only
            message = f"Rate limit exceeded: {quota}." if quota else "Rate limit exceeded (simulated)"
            return self._reject(digest, t, 429, message, {"headers": rl}, None, reset_in)
        return self._reject(digest, t, 429, "Rate limit exceeded (simulated)", {"headers": rl}, headers, ra)

    def _scale(self, cfg: SimConfig, t: float) -> float:
        """The cap_schedule's factor at monotonic time t (1 before its first entry)."""
        if not cfg.cap_schedule:
            return 1.0
        if self._t_first is None:
            self._t_first = t
        factor = 1.0
        for at, f in cfg.cap_schedule:
            if t - self._t_first >= at:
                factor = f
        return factor

    def _window_wait(self, cfg: SimConfig, key: str, n: int) -> float | None:
        """None if the model's (or key's) window has room (and counts the request), else the wait. A fixed window
        starts on the wall clock, or (window_from_first) at the first request after the last one ended; a sliding
        one (window_slide) holds n in any window_s seconds (a log) or weighs the last clock window (a counter)."""
        now = time.time()
        if cfg.window_slide:  # (the fake-clock model's window, on the wall clock: a counter's windows on its seconds)
            cap = self._slides.setdefault(key, Cap("window", period=cfg.window_s, slide=cfg.window_slide))
            cap.n = n
            wait = cap.check(now)
            if wait is None or cfg.window_counts_refused:
                cap.take()
            return wait
        start, used = self._windows.get(key, (-math.inf, 0))
        if cfg.window_from_first:
            if now >= start + cfg.window_s:
                start, used = now, 0
        elif start != math.floor(now / cfg.window_s) * cfg.window_s:
            start, used = math.floor(now / cfg.window_s) * cfg.window_s, 0
        if used >= n:
            self._windows[key] = (start, used + cfg.window_counts_refused)
            return start + cfg.window_s - now
        self._windows[key] = (start, used + 1)
        return None

    def _take_token(self, cfg: SimConfig, now: float, scale: float = 1.0) -> float | None:
        """None if a token was taken (or a place in the bucket's queue: self._held_s, the seconds until its token
        comes), else seconds until the bucket holds one (or its queue has room)."""
        rate, burst = cfg.rate_per_s * scale, cfg.burst
        if self._tokens is None:
            self._tokens = float(burst)
        else:
            self._tokens = min(float(burst), self._tokens + (now - self._bucket_t) * rate)
        self._bucket_t = now
        floor = 1.0 - cfg.bucket_queue  # (nginx's limit_req burst without nodelay: held until the token comes)
        if self._tokens >= floor - 1e-9:
            self._held_s = max(0.0, 1.0 - self._tokens) / rate if rate > 0 else 0.0
            self._tokens = max(floor - 1.0, self._tokens - 1.0)
            return None
        return (floor - self._tokens) / rate if rate > 0 else math.inf
