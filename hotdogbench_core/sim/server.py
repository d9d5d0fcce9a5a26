"""The OpenRouter simulator's request handling: validation, caps, faults, seeded answers, usage and cost.

SimCore.handle is an aiohttp low-level handler; hotdogbench_core.sim.app runs it in a server.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import math
import random
import time
from typing import Any

from aiohttp import web

from ..protocol.endpoint import Endpoint, RequestRejected
from ..protocol.endpoints import BY_PATH
from .config import FAULTS, MODEL_PROFILES, SimConfig, profile_for, ratelimit_fields
from .cap import Cap
from .caps import Caps
from .counters import CLIENT_GONE, DROPPED, SimStats
from .replies import Labels, Replies
from .variants import REFERENCE_TEXTS, PhotoIndex, Variant, look, provider_names, question_text

MODELS_PATH = "/v1/models"
_5XX = {500: "Internal Server Error", 502: "Provider returned error",
        503: "No available model provider that meets your routing requirements",
        524: "Provider timed out (simulated)", 529: "Provider returned error: overloaded"}
_dumps = json.JSONEncoder(separators=(",", ":")).encode


def _json(obj: Any, status: int = 200, headers: dict | None = None) -> web.Response:
    return web.Response(body=_dumps(obj).encode(), status=status, headers=headers, content_type="application/json")


def error_body(code: int, message: str, metadata: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "metadata": metadata or {}}}


def _echo_in_answer(resp: dict, auth: str, cut: bool) -> None:
    """Put the Authorization header into the answer's text and provider name (a verdict stays readable)."""
    resp["provider"] = f"echo {auth}"
    for choice in resp.get("choices") or []:
        msg = choice.get("message") or {}
        content = msg.get("content")
        if isinstance(content, str):
            pad = "x" * (500 - len(content) - 30) if cut else ""  # the key straddles 500 characters
            msg["content"] = content + f" {pad}(you sent {auth})"


def _decoded(b64) -> bytes:
    try:
        return base64.b64decode(b64)
    except (binascii.Error, ValueError):
        return b""


def _latency(cfg: SimConfig, variant: Variant | None) -> float:
    """The median latency: the provider's, when a variant is routed to one that has its own."""
    if variant is not None and variant.provider is not None:
        own = cfg.providers.get(variant.provider, {}).get("latency_s")
        if own is not None:
            return own
    return cfg.latency_s


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


class SimCore(Caps):
    """Per-server state: config, labels, stats, the per-request RNG, the token bucket, the digest cache."""

    def __init__(self, config: SimConfig, labels: Labels | None, api_key: str | None):
        self.config = config
        self.replies = Replies(labels)
        self.index = PhotoIndex(getattr(labels, "source", None))  # finds the labelled photo a variant shows
        self._seen: dict[str, object] = {}  # digest -> what was seen of it (image_tokens "pixels")
        self.api_key = api_key
        self.stats = SimStats()
        self._rng_seed = config.seed
        self._rng = random.Random(config.seed)
        self._tokens: float | None = None  # token bucket level (None: bucket off or not started)
        self._bucket_t = 0.0
        self._buckets: dict[str, tuple[float | None, float]] = {}  # "*" or model id -> (tokens, last time)
        self._windows: dict[str, tuple[float, int]] = {}  # "*" or model id -> (window's start, admitted in it)
        self._slides: dict[str, Cap] = {}  # "*" or model id -> its sliding window (window_slide)
        self._t_first: float | None = None  # the first request's time, for cap_schedule
        self._digests: dict[tuple[int, int], tuple[str, int]] = {}  # (len, hash) of base64 -> (sha256, bytes)

    @property
    def labels(self) -> Labels:
        return self.replies.labels

    @labels.setter
    def labels(self, labels: Labels) -> None:
        self.replies.labels = dict(labels)
        self.index = PhotoIndex(getattr(labels, "source", None))

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

    # --- HTTP ----------------------------------------------------------------------------------------
    def models_body(self) -> dict:
        cfg = self.config
        ids = list(MODEL_PROFILES) + [m for m in cfg.extra_models if m not in MODEL_PROFILES]
        if cfg.models_listing == "plain":
            return {"object": "list", "data": [{"id": m, "object": "model", "created": 1767225600,
                                                "owned_by": "simulator"} for m in ids]}
        data = []
        for m in ids:
            prof = profile_for(cfg, m)
            data.append({
                "id": m, "name": f"{m} (simulated)", "created": 1767225600, "context_length": 200000,
                "architecture": {"input_modalities": ["text", "image"] if prof.get("vision", True) else ["text"],
                                 "output_modalities": ["text"], "modality": "text+image->text"},
                "pricing": {k: format(float(prof[k]), ".12f").rstrip("0").rstrip(".") or "0"
                            for k in ("prompt", "completion", "image", "request")},
                "supported_parameters": (["max_tokens"]
                                         + (["response_format", "structured_outputs"] if prof.get("structured", True)
                                            else [])
                                         + (["reasoning"] if prof["reasoning"] else ["temperature"])
                                         + (["logprobs", "top_logprobs"] if prof.get("logprobs", True) else [])),
            })
        return {"data": data}

    def _reject(self, digest, t, status, message, metadata=None, headers=None, retry_after=None, refused=False):
        self.stats._finish(digest, t, status, retry_after, refused=refused)
        return _json(error_body(status, message, metadata), status, headers)

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        if path.startswith("/api/"):
            path = path[4:]
        endpoint = BY_PATH.get(path)
        if endpoint is None:
            if path == MODELS_PATH and request.method == "GET" and self.config.models_listing != "none":
                return _json(self.models_body())
            return _json(error_body(404, f"Not Found: {request.method} {request.path}"), 404)
        if request.method != "POST":
            return _json(error_body(405, "Method Not Allowed"), 405)
        t = time.monotonic()
        self.stats._arrive()
        try:
            raw = await request.read()
        except web.HTTPException as e:  # e.g. body too large
            return self._reject(None, t, e.status, e.reason)
        except BaseException:  # the client went away mid-body, or the server is stopping
            self.stats._finish(None, t, CLIENT_GONE)
            raise
        cfg = self.config
        read = self._read(endpoint, request, raw, cfg, t)
        if isinstance(read, web.Response):
            return read
        model, prof, asked, digest, n_bytes, variant = read
        refused = self._check_caps(cfg, digest, t, model)
        if refused is not None:
            return refused
        if self._held_s > 1e-6:  # in the bucket's queue, before the model sees it (nginx holds it in front)
            await asyncio.sleep(self._held_s)
        return await self._serve(cfg, endpoint, request, asked, model, prof, digest, n_bytes, t, variant)

    def _read(self, endpoint: Endpoint, request: web.BaseRequest, raw: bytes, cfg: SimConfig, t: float):
        """(model, profile, what was asked, image digest, image bytes), or the 4xx response that refuses it."""
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
        try:
            asked = endpoint.read_request(body)
        except RequestRejected as e:
            return self._reject(None, t, 400, str(e))
        url = asked.image_url
        if url is None:
            return self._reject(None, t, 400, "No image_url part in the request: the simulator needs a photo")
        found = None
        if isinstance(url, str) and url.startswith("data:"):
            head, _, b64 = url.partition(",")
            if head.endswith(";base64"):
                found = self.image_digest(payload if payload is not None and not b64 else b64)
        if found is None:
            return self._reject(None, t, 400, "image_url must be a non-empty base64 data: URL")
        variant = self._variant(cfg, body, found[0], payload if payload is not None and not b64 else b64)
        if isinstance(variant, str):
            return self._reject(found[0], t, 404, variant)
        return model, prof, asked, *found, variant

    def _variant(self, cfg: SimConfig, body: dict, digest: str, b64) -> Variant | str | None:
        """What a condition's request changed (None: nothing, the reference request), or the 404 message of a
        provider routing no simulated provider serves."""
        text = question_text(body)
        prompt = None if text is None or text in REFERENCE_TEXTS else text
        provider = None
        if cfg.providers:
            names, quants = provider_names(body)
            if names:
                ok = [n for n in names if n in cfg.providers and
                      (quants is None or cfg.providers[n].get("quantization") in quants)]
                if not ok:
                    return "No allowed providers are available for the selected model."
                provider = ok[0]
        original, seen, scale, quality = digest, None, 1.0, None
        if digest not in self.replies.labels and self.index.source is not None:
            found = self.index.match(digest, _decoded(b64))
            if found is not None:
                original, seen = found
                photo = self.index.original(original)
                scale = min(1.0, max(seen.width, seen.height) / max(photo.width, photo.height))
                quality = seen.quality
        if seen is None and cfg.image_tokens == "pixels":
            seen = self._seen.get(digest)
            if seen is None:
                seen = look(_decoded(b64))
                if len(self._seen) >= 20_000:
                    self._seen.clear()
                self._seen[digest] = seen
        if original == digest and prompt is None and provider is None and seen is None:
            return None
        return Variant(original, seen.width if seen else None, seen.height if seen else None, scale, quality,
                       prompt, provider)

    def _draw_fault(self, cfg: SimConfig) -> str | None:
        """One draw from the seeded per-request RNG: which fault, if any, this request gets."""
        if cfg.seed != self._rng_seed:
            self._rng_seed, self._rng = cfg.seed, random.Random(cfg.seed)
        r = self._rng.random()
        for kind in FAULTS:
            p = getattr(cfg, kind)
            if p:
                if r < p:
                    self.stats._fault(kind)
                    return kind
                r -= p
        return None

    async def _serve(self, cfg, endpoint: Endpoint, request, asked, model, prof, digest, n_bytes, t, variant=None):
        fault = self._draw_fault(cfg)
        if cfg.echo_auth == "error":  # a leaky server: the caller's credentials back in an error body
            auth = request.headers.get("Authorization", "")
            return self._reject(digest, t, 400, f"Invalid request for {auth}",
                                {"raw": f"upstream said: Authorization: {auth}", "provider_name": auth})
        if fault == "in_flight_402":
            return self._reject(digest, t, 402, "Request exceeds the in-flight budget for this key (simulated)",
                                {"reason": "in_flight_budget_exhausted", "limit_source": "openrouter_in_flight_budget"},
                                {"Retry-After": "1"}, 1.0)
        stats, rng = self.stats, self._rng
        stats._admit()
        status, cost, verdict, held = CLIENT_GONE, 0.0, None, True
        try:
            if fault == "stall":
                delay = cfg.stall_s
            elif (median := _latency(cfg, variant)) > 0:
                delay = rng.lognormvariate(math.log(median), cfg.latency_sigma)
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
                return _json({"id": endpoint.id_prefix + self.replies.next_id()})
            resp, c, ok = self.replies.reply(cfg, rng, endpoint, asked, prof, model, digest, n_bytes,
                                             empty=fault == "empty_content", variant=variant)
            status = 200
            if cfg.echo_auth in ("answer", "answer_cut"):
                _echo_in_answer(resp, request.headers.get("Authorization", ""), cfg.echo_auth == "answer_cut")
            if fault == "malformed_body":
                s = _dumps(resp)
                return web.Response(body=s[: len(s) // 2].encode(), content_type="application/json")
            cost, verdict = c, ok
            stated = {"x-ratelimit-limit-requests": str(cfg.window_n)} if cfg.state_limit and cfg.window_n else None
            if cfg.retry_after == "ratelimit" and cfg.window_n:  # (the IETF fields' policy on every answer)
                stated = {**(stated or {}), **ratelimit_fields(cfg.window_n, cfg.window_s, None)}
            if cfg.release_early_s > 0:  # out of the in-flight count now, heard by the client later
                stats._release()
                held = False
                await asyncio.sleep(rng.expovariate(1 / cfg.release_early_s))
            return _json(resp, headers=stated)
        finally:
            stats._finish(digest, t, status, None, admitted=held, cost=cost, verdict=verdict)
