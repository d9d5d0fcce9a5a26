"""The OpenRouter simulator's request handling: validation, caps, faults, seeded answers, usage and cost.

SimCore.handle is an aiohttp low-level handler; hotdogbench_core.sim.app runs it in a server.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import itertools
import json
import math
import random
import struct
import time
from typing import Any

from aiohttp import web

from ..protocol.models import CHAT_PATH, DECISIONS_PATH
from .config import FAULTS, MODEL_PROFILES, SimConfig, accuracy_for, profile_for, unanswered_for
from .counters import CLIENT_GONE, DROPPED, SimStats

Labels = dict[str, tuple[bool, str | None]]  # sha256 hex of image bytes -> (is_hot_dog, category)

MODELS_PATH = "/v1/models"
_INV64 = 1.0 / 2.0 ** 64
_REASONING_BASE = {"none": 0, "minimal": 48, "low": 192, "medium": 640, "high": 2048, "xhigh": 4096}
_5XX = {500: "Internal Server Error", 502: "Provider returned error",
        503: "No available model provider that meets your routing requirements",
        524: "Provider timed out (simulated)", 529: "Provider returned error: overloaded"}
_NO_CREDITS = "Insufficient credits. Add more at https://openrouter.ai/settings/credits"
_dumps = json.JSONEncoder(separators=(",", ":")).encode


def _json(obj: Any, status: int = 200, headers: dict | None = None) -> web.Response:
    return web.Response(body=_dumps(obj).encode(), status=status, headers=headers, content_type="application/json")


def error_body(code: int, message: str, metadata: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "metadata": metadata or {}}}


def _secs(x: float) -> str:
    """Seconds for a Retry-After header: an integer when whole, else milliseconds rounded up ("0.125")."""
    if x == int(x):
        return str(int(x))
    return f"{math.ceil(x * 1000) / 1000:.3f}"


def _find_image(items: Any) -> tuple[Any, int]:
    """(first image_url url or None, characters of text) in a list of content parts / strings."""
    url, text = None, 0
    if isinstance(items, str):
        return None, len(items)
    if not isinstance(items, list):
        return None, 0
    for part in items:
        if isinstance(part, str):
            text += len(part)
        elif isinstance(part, dict):
            typ = part.get("type")
            if typ == "text" and isinstance(part.get("text"), str):
                text += len(part["text"])
            elif typ == "image_url" and url is None:
                iu = part.get("image_url")
                url = iu.get("url") if isinstance(iu, dict) else iu
    return url, text


def _parse(raw: bytes) -> tuple[Any, bytes | None]:
    """json.loads(raw), but with the first base64 data-URL payload cut out and returned as bytes, so the
    big string isn't scanned by the JSON parser (the hot path). As the payload has no quote or backslash
    (checked), cutting it leaves the string it was in a string, so the document stays valid or invalid; the
    payload's own characters are checked by base64 decoding when it is the image. Else a plain parse."""
    i = raw.find(b";base64,")
    if i >= 0:
        i += 8
        j = raw.find(b'"', i)
        if j > i and raw.find(b"\\", i, j) < 0:
            try:
                return json.loads(raw[:i] + raw[j:]), raw[i:j]
            except ValueError:
                pass
    return json.loads(raw), None


class SimCore:
    """Per-server state: config, labels, stats, the per-request RNG, the token bucket, the answer cache."""

    def __init__(self, config: SimConfig, labels: Labels | None, api_key: str | None):
        self.config = config
        self.labels: Labels = dict(labels or {})
        self.api_key = api_key
        self.stats = SimStats()
        self._rng_seed = config.seed
        self._rng = random.Random(config.seed)
        self._tokens: float | None = None  # token bucket level (None: bucket off or not started)
        self._bucket_t = 0.0
        self._draw_cache: dict[tuple, tuple[float, ...]] = {}
        self._digests: dict[tuple[int, int], tuple[str, int]] = {}  # (len, hash) of base64 -> (sha256, bytes)
        self._ids = itertools.count(1)

    def image_digest(self, b64: str | bytes) -> tuple[str, int] | None:
        """(sha256 hex, byte count) of a base64 payload, or None if it isn't valid non-empty base64. Cached by
        the payload's (length, 64-bit hash): repeated photos skip the base64 decode and the sha256."""
        key = (len(b64), hash(b64))
        hit = self._digests.get(key)
        if hit is None:
            try:
                image = base64.b64decode(b64, validate=True)
            except (binascii.Error, ValueError):
                return None
            if not image:
                return None
            hit = (hashlib.sha256(image).hexdigest(), len(image))
            if len(self._digests) >= 100_000:
                self._digests.clear()
            self._digests[key] = hit
        return hit

    # --- answers -------------------------------------------------------------------------------------
    def draws(self, model: str, digest: str) -> tuple[float, ...]:
        """Seven uniforms in [0, 1) fixed by (seed, model, image digest): correct?, spread, unanswered?,
        unanswered kind, fenced?, reasoning amount, spare. Independent of request order and concurrency."""
        key = (self.config.seed, model, digest)
        d = self._draw_cache.get(key)
        if d is None:
            h = hashlib.blake2b(f"{key[0]}\x1f{model}\x1f{digest}".encode(), digest_size=56).digest()
            d = tuple(x * _INV64 for x in struct.unpack("<7Q", h))
            if len(self._draw_cache) >= 200_000:
                self._draw_cache.clear()
            self._draw_cache[key] = d
        return d

    def _verdict(self, cfg: SimConfig, prof: dict, model: str, digest: str, u: tuple) -> tuple[bool, float]:
        """(says hot dog?, spread uniform) for one request."""
        uc, us = u[0], u[1]
        if cfg.consistency < 1.0 and self._rng.random() >= cfg.consistency:
            uc, us = self._rng.random(), self._rng.random()  # re-drawn for this request only
        label = self.labels.get(digest)
        if label is None:  # truth unknown: a (seeded) coin flip
            return uc < 0.5, us
        truth, category = label
        truth = bool(truth)
        return (truth if uc < accuracy_for(cfg, prof, model, category) else not truth), us

    def _chat(self, cfg, prof, model, digest, n_bytes, text_chars, body, empty) -> tuple[dict, float, bool]:
        u = self.draws(model, digest)
        yes, _ = self._verdict(cfg, prof, model, digest, u)
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
        if not isinstance(max_tokens, int) or max_tokens <= 0:
            max_tokens = None
        reasoning = 0
        if prof["reasoning"]:
            r = body.get("reasoning")
            r = r if isinstance(r, dict) else {}
            base = r.get("max_tokens") if isinstance(r.get("max_tokens"), int) else \
                _REASONING_BASE.get(r.get("effort", "medium"), 640)
            reasoning = 0 if r.get("enabled") is False else int(base * (0.5 + u[5]))
        finish, answered = "stop", False
        if empty:
            content, out = None, 0
        elif u[2] < unanswered_for(cfg, prof, model):
            if prof["reasoning"] and max_tokens and u[3] < 0.5:
                reasoning = max_tokens  # reasoning ran out of tokens before any answer
            content, out = "I cannot tell.", 5
        else:
            content, out, answered = ('{"hot_dog": true}' if yes else '{"hot_dog": false}'), 7, True
            if u[4] < cfg.fenced_rate:
                content, out = f"```json\n{content}\n```", out + 4
        if max_tokens and reasoning + out > max_tokens:
            content, out, reasoning, finish, answered = None, 0, max_tokens, "length", False
        prompt = 85 + n_bytes // 750 + text_chars // 4 + 8
        completion = reasoning + out
        cost = prompt * prof["prompt"] + completion * prof["completion"] + prof["image"] + prof["request"]
        now = int(time.time())
        resp = {
            "id": f"gen-{now}-{next(self._ids):010d}", "provider": "simulator", "model": model,
            "object": "chat.completion", "created": now,
            "choices": [{"logprobs": None, "finish_reason": finish, "native_finish_reason": finish, "index": 0,
                         "message": {"role": "assistant", "content": content, "refusal": None, "reasoning": None}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                      "cost": cost, "is_byok": False, "prompt_tokens_details": {"cached_tokens": 0},
                      "completion_tokens_details": {"reasoning_tokens": reasoning}},
        }
        return resp, cost, answered

    def _decision(self, cfg, prof, model, digest, n_bytes, text_chars, questions, empty) -> tuple[dict, float, bool]:
        u = self.draws(model, digest)
        yes, us = self._verdict(cfg, prof, model, digest, u)
        p = min(1.0, max(0.0, 0.9 + cfg.noul_spread * (2.0 * us - 1.0)))
        noul = None if empty else (p if yes else 1.0 - p)
        inp, out = 85 + n_bytes // 750 + text_chars // 4 + 8, 3 * len(questions)
        cost = inp * prof["prompt"] + out * prof["completion"] + prof["image"] + prof["request"]
        resp = {"id": f"gen-dec-{int(time.time())}-{next(self._ids):010d}", "model": model, "provider": "simulator",
                "answers": {q: {"type": "noul", "noul": noul} for q in questions},
                "usage": {"input_tokens": inp, "output_tokens": out, "cost": cost}}
        return resp, cost, noul is not None

    # --- HTTP ----------------------------------------------------------------------------------------
    def models_body(self) -> dict:
        cfg = self.config
        ids = list(MODEL_PROFILES) + [m for m in cfg.extra_models if m not in MODEL_PROFILES]
        data = []
        for m in ids:
            prof = profile_for(cfg, m)
            data.append({
                "id": m, "name": f"{m} (simulated)", "created": 1767225600, "context_length": 200000,
                "architecture": {"input_modalities": ["text", "image"], "output_modalities": ["text"],
                                 "modality": "text+image->text"},
                "pricing": {k: format(float(prof[k]), ".12f").rstrip("0").rstrip(".") or "0"
                            for k in ("prompt", "completion", "image", "request")},
                "supported_parameters": (["max_tokens", "response_format", "structured_outputs"]
                                         + (["reasoning"] if prof["reasoning"] else ["temperature"])),
            })
        return {"data": data}

    def _reject(self, digest, t, status, message, metadata=None, headers=None, retry_after=None):
        self.stats._finish(digest, t, status, retry_after)
        return _json(error_body(status, message, metadata), status, headers)

    def _rate_limited(self, digest, t, wait: float | None, limit: int) -> web.Response:
        cfg = self.config
        mode = cfg.retry_after
        ra = None if mode == "none" else (wait if mode == "exact" and wait is not None and wait != math.inf
                                          else cfg.retry_after_s)
        reset_in = wait if wait is not None and wait != math.inf else cfg.retry_after_s
        rl = {"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": "0",
              "X-RateLimit-Reset": str(int((time.time() + reset_in) * 1000))}
        headers = dict(rl)
        if ra is not None:
            ra = float(_secs(ra))
            headers["Retry-After"] = _secs(ra)
        return self._reject(digest, t, 429, "Rate limit exceeded (simulated)", {"headers": rl}, headers, ra)

    def _take_token(self, cfg: SimConfig, now: float) -> float | None:
        """None if a token was taken, else seconds until the bucket holds one."""
        rate, burst = cfg.rate_per_s, cfg.burst
        if self._tokens is None:
            self._tokens = float(burst)
        else:
            self._tokens = min(float(burst), self._tokens + (now - self._bucket_t) * rate)
        self._bucket_t = now
        if self._tokens >= 1.0 - 1e-9:
            self._tokens = max(0.0, self._tokens - 1.0)
            return None
        return (1.0 - self._tokens) / rate if rate > 0 else math.inf

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        if path.startswith("/api/"):
            path = path[4:]
        if path == CHAT_PATH:
            chat = True
        elif path == DECISIONS_PATH:
            chat = False
        elif path == MODELS_PATH and request.method == "GET":
            return _json(self.models_body())
        else:
            return _json(error_body(404, f"Not Found: {request.method} {request.path}"), 404)
        if request.method != "POST":
            return _json(error_body(405, "Method Not Allowed"), 405)
        stats = self.stats
        t = time.monotonic()
        stats._arrive()
        try:
            raw = await request.read()
        except web.HTTPException as e:  # e.g. body too large
            return self._reject(None, t, e.status, e.reason)
        except BaseException:  # the client went away mid-body, or the server is stopping
            stats._finish(None, t, CLIENT_GONE)
            raise
        cfg = self.config

        auth = request.headers.get("Authorization", "")
        key = auth[7:].strip() if auth.startswith("Bearer ") else ""
        if not key:
            return self._reject(None, t, 401, "No auth credentials found")
        if self.api_key is not None and key != self.api_key:
            return self._reject(None, t, 401, "User not found.")
        try:
            body, payload = _parse(raw)
        except ValueError:
            return self._reject(None, t, 400, "Invalid JSON in request body")
        if not isinstance(body, dict):
            return self._reject(None, t, 400, "Request body must be a JSON object")
        model = body.get("model")
        if not isinstance(model, str) or not model:
            return self._reject(None, t, 400, "Missing model")
        prof = profile_for(cfg, model)
        if prof is None:
            return self._reject(None, t, 404, f"No endpoints found for {model}.")
        questions = None
        if chat:
            url, text_chars = None, 0
            msgs = body.get("messages")
            for msg in msgs if isinstance(msgs, list) else ():
                if isinstance(msg, dict):
                    u, n = _find_image(msg.get("content"))
                    url, text_chars = url or u, text_chars + n
        else:
            url, text_chars = _find_image(body.get("state"))
            questions = body.get("questions")
            if not isinstance(questions, dict) or not questions:
                return self._reject(None, t, 400, "questions must be a non-empty object")
            for q in questions.values():
                if not isinstance(q, dict) or q.get("type") != "noul":
                    return self._reject(None, t, 400, "unsupported question type (the simulator answers noul)")
        if url is None:
            return self._reject(None, t, 400, "No image_url part in the request: the simulator needs a photo")
        found = None
        if isinstance(url, str) and url.startswith("data:"):
            head, _, b64 = url.partition(",")
            if head.endswith(";base64"):
                found = self.image_digest(payload if payload is not None and not b64 else b64)
        if found is None:
            return self._reject(None, t, 400, "image_url must be a non-empty base64 data: URL")
        digest, n_bytes = found

        # --- caps ------------------------------------------------------------------------------------
        if cfg.credits_usd is not None and stats.spent_usd >= cfg.credits_usd:
            return self._reject(digest, t, 402, _NO_CREDITS,
                                {"spent_usd": stats.spent_usd, "limit_usd": cfg.credits_usd})
        if cfg.max_in_flight is not None and stats.in_flight >= cfg.max_in_flight:
            return self._rate_limited(digest, t, None, cfg.max_in_flight)
        if cfg.rate_per_s is None:
            self._tokens = None
        else:
            wait = self._take_token(cfg, t)
            if wait is not None:
                return self._rate_limited(digest, t, wait, cfg.burst)

        # --- faults (one draw from the seeded per-request RNG) ---------------------------------------
        if cfg.seed != self._rng_seed:
            self._rng_seed, self._rng = cfg.seed, random.Random(cfg.seed)
        rng = self._rng
        fault, r = None, rng.random()
        for kind in FAULTS:
            p = getattr(cfg, kind)
            if p:
                if r < p:
                    fault = kind
                    stats._fault(kind)
                    break
                r -= p
        if fault == "in_flight_402":
            return self._reject(digest, t, 402, "Request exceeds the in-flight budget for this key (simulated)",
                                {"reason": "in_flight_budget_exhausted", "limit_source": "openrouter_in_flight_budget"},
                                {"Retry-After": "1"}, 1.0)

        stats._admit()
        status, cost, verdict = CLIENT_GONE, 0.0, None
        try:
            if fault == "stall":
                delay = cfg.stall_s
            elif cfg.latency_s > 0:
                delay = rng.lognormvariate(math.log(cfg.latency_s), cfg.latency_sigma)
            else:
                delay = 0.0
            if delay > 0:
                await asyncio.sleep(delay)
            if fault == "drop_connection":
                if request.transport is not None:
                    request.transport.close()
                status = DROPPED
                return web.Response()  # never sent: aiohttp drops the write on the closed transport
            if fault == "error_5xx":
                status = rng.choice(cfg.error_5xx_codes)
                return _json(error_body(status, _5XX.get(status, "Provider returned error"),
                                        {"provider_name": "simulator", "raw": f"simulated upstream {status}"}), status)
            if fault == "error_in_200":
                status = 200
                return _json(error_body(502, "Provider returned error",
                                        {"provider_name": "simulator", "raw": "simulated upstream error"}))
            if fault == "no_choices":
                status = 200
                return _json({"id": f"gen-{'' if chat else 'dec-'}{int(time.time())}-{next(self._ids):010d}"})
            empty = fault == "empty_content"
            if chat:
                resp, c, ok = self._chat(cfg, prof, model, digest, n_bytes, text_chars, body, empty)
            else:
                resp, c, ok = self._decision(cfg, prof, model, digest, n_bytes, text_chars, questions, empty)
            status = 200
            if fault == "malformed_body":
                s = _dumps(resp)
                return web.Response(body=s[: len(s) // 2].encode(), content_type="application/json")
            cost, verdict = c, ok
            return _json(resp)
        finally:
            stats._finish(digest, t, status, None, admitted=True, cost=cost, verdict=verdict)
