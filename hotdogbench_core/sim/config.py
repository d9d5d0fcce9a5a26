"""Settings of the OpenRouter simulator (hotdogbench_core.sim.app): answer quality, prices, caps, faults.

Every field can be changed while the simulator runs (``sim.config.rate_per_s = 20`` or
``sim.update(rate_per_s=20)``): the server reads the config afresh on every request.
"""
from __future__ import annotations

import dataclasses
import email.utils
import math
from dataclasses import dataclass, field
from typing import Any

from ..protocol.models import MODELS

RETRY_AFTER_MODES = ("none", "fixed", "exact", "large", "reset_requests", "gateway", "openrouter", "http_date",
                     "retry_after_ms", "google", "ratelimit", "flask")
QUOTA_NAMES = {60.0: "free-models-per-min", 86400.0: "free-models-per-day"}  # how OpenRouter names a free model's
#                                                                               quotas in its 429s' messages
CAPS_PER = ("key", "model")
LISTINGS = ("openrouter", "plain", "none")
# A careless server that echoes the request's Authorization header: in a 400 error body ("error"), or in the
# answer's content and provider name ("answer"), or after half the answer's content ("answer_cut": the key runs
# past the 500 characters of content a result keeps, so a cut would keep half of it). For the redaction tests.
ECHO_AUTH_MODES = (None, "error", "answer", "answer_cut")
# Fault kinds, in the order a request's single fault draw walks through them.
FAULTS = ("in_flight_402", "error_5xx", "error_in_200", "drop_connection", "malformed_body", "stall",
          "no_choices", "empty_content")
DEFAULT_ACCURACY = 0.85  # for models with no profile and no configured accuracy
# The demo's simulated provider: a hidden in-flight cap and a little noise, so the limiter has work to do.
DEMO_CONFIG = {"seed": 0, "max_in_flight": 40, "latency_s": 0.4, "latency_sigma": 0.4, "error_5xx": 0.01,
               "unanswered_rate": 0.02,
               # stated probabilities: well calibrated, but for one overconfident model (a reliability diagram
               # with something to show; --logprobs asks the chat models for theirs)
               "calibration": {"*": 1.0, "openai/gpt-6-luna": 0.3}}
# Added to the demo's settings when a run names conditions: smaller and coarser photos and reworded questions
# cost accuracy, and image tokens follow the pixels, so the conditions' numbers differ as a real model's would.
DEMO_CONDITIONS = {"size_loss_per_halving": 0.06, "quality_loss_per_10": 0.015, "prompt_accuracy": {"*": -0.03},
                   "image_tokens": "pixels"}
IMAGE_TOKENS = ("bytes", "pixels")
PROVIDER_KEYS = ("accuracy", "latency_s", "price", "quantization")


def retry_after_forms(mode: str, wait: float, now: float) -> dict:
    """A wait of `wait` s at epoch `now` in Retry-After's other forms: an HTTP-date (whole seconds, rounded up, with
    the answer's Date), or Azure's retry-after-ms beside Retry-After in whole seconds."""
    if mode == "http_date":
        return {"Retry-After": email.utils.formatdate(math.ceil(now + wait), usegmt=True),
                "Date": email.utils.formatdate(math.floor(now), usegmt=True)}
    return {"retry-after-ms": str(math.ceil(wait * 1000)), "Retry-After": str(math.ceil(wait))}


def ratelimit_fields(limit: int, period: float | None, reset: float | None, remaining: int = 0) -> dict:
    """The IETF RateLimit fields as express-rate-limit's draft-8 mode sends them: a window's policy (q requests per
    w seconds; none for a bucket or an in-flight cap, which are no window), and what is left of it with the
    seconds to its refill (whole seconds, rounded up; none where the wait is not known)."""
    fields = {} if period is None else {"RateLimit-Policy": f'"window"; q={limit}; w={math.ceil(period)}'}
    if reset is not None and math.isfinite(reset):
        fields["RateLimit"] = f'"window"; r={remaining}; t={math.ceil(reset)}'
    return fields


def google_refusal(wait: float, limit: int, period: float | None) -> list:
    """A Google API 429 as Gemini's OpenAI-compatible endpoint sends it (a list around the error object, no rate
    headers): RetryInfo's retryDelay the wait, and for a window a QuotaFailure naming a minute's or a day's quota."""
    details: list = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                      "retryDelay": f"{math.ceil(wait * 1000) / 1000:g}s"}]
    if period is not None:
        per = {60.0: "PerMinute", 86400.0: "PerDay"}.get(period, "")
        details.insert(0, {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
            {"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
             "quotaId": f"GenerateRequests{per}PerProjectPerModel", "quotaValue": str(limit)}]})
    return [{"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                       "status": "RESOURCE_EXHAUSTED", "details": details}}]


# Simulated behaviour of the registry models. Prices are USD per unit (token, image, request), as in
# OpenRouter's /v1/models. Accuracies differ per model (0.80-0.97) so runs show differences.
_PROFILES: dict[str, dict] = {
    "openai/gpt-6.1-sol": {"accuracy": 0.93, "prompt": 1.25e-6, "completion": 10e-6},
    "openai/gpt-6-luna": {"accuracy": 0.88, "prompt": 0.25e-6, "completion": 2e-6},
    "openai/gpt-6-astra": {"accuracy": 0.95, "prompt": 2.5e-6, "completion": 15e-6},
    "typesafe/jev-1.14": {"accuracy": 0.86, "prompt": 0.1e-6, "completion": 0.4e-6, "request": 2e-5},
    "cloudflare/clef": {"accuracy": 0.80, "prompt": 0.05e-6, "completion": 0.2e-6},
    "openai/gpt-6-luna-decisions": {"accuracy": 0.89, "prompt": 0.25e-6, "completion": 2e-6},
    "perplexity/pplx-decider-v1.1-27b": {"accuracy": 0.83, "prompt": 0.2e-6, "completion": 0.8e-6},
    "anthropic/claude-opus-5.5": {"accuracy": 0.97, "prompt": 15e-6, "completion": 75e-6},
    "anthropic/claude-sonnet-5.5": {"accuracy": 0.94, "prompt": 3e-6, "completion": 15e-6},
    "anthropic/claude-haiku-5.5": {"accuracy": 0.91, "prompt": 0.8e-6, "completion": 4e-6, "image": 1e-5},
}
_BASE_PROFILE = {"accuracy": DEFAULT_ACCURACY, "unanswered_rate": 0.0, "prompt": 1e-6, "completion": 4e-6,
                 "image": 0.0, "request": 0.0, "reasoning": False, "decisions": False,
                 "vision": True, "structured": True,  # listed as taking images / structured outputs
                 "logprobs": True}  # answers a request for log-probabilities with them (False: leaves them out)


def _registry_profile(model: str) -> dict:
    spec = MODELS[model]
    return {**_BASE_PROFILE, "reasoning": "reasoning" in spec.params, "decisions": spec.endpoint == "decisions",
            **_PROFILES.get(model, {})}


# model id -> full profile (accuracy, unanswered_rate, prompt, completion, image, request, reasoning, decisions)
MODEL_PROFILES: dict[str, dict] = {m: _registry_profile(m) for m in MODELS}


@dataclass
class SimConfig:
    """How the simulator behaves. Defaults: every registry model, no caps, no faults, ~50 ms latency.

    Rates are probabilities per request in [0, 1]. "Per model" settings take a float (all models) or a dict
    {model id or "*": value}; accuracy values may themselves be {category: acc, "default": acc}.
    """
    seed: int = 0  # seeds the answer hashes and the per-request RNG (latency, faults, re-draws)

    # --- answers -------------------------------------------------------------------------------------
    # Probability a labelled photo is answered correctly; overrides the model profile (MODEL_PROFILES).
    accuracy: float | dict[str, Any] = field(default_factory=dict)
    # Chat models only: probability of no verdict ("I cannot tell." or, for reasoning models, content null
    # with finish_reason "length": reasoning used up max_tokens, still billed). Default 0 for every model.
    unanswered_rate: float | dict[str, float] = field(default_factory=dict)
    # Probability the hash-decided answer (fixed per seed, model, photo) is used; otherwise the answer is
    # re-drawn with the same accuracy from the per-request RNG (for self-consistency experiments).
    consistency: float = 1.0
    fenced_rate: float = 0.05  # chat content wrapped in ```json ... ``` (decided per model and photo)
    noul_spread: float = 0.08  # calibration None: noul is 0.9 +- spread for "yes", 0.1 +- spread for "no"
    # How the stated probability (the Decisions noul; chat log-probabilities when asked) relates to being right.
    # None: a confidence of 0.9 +- noul_spread whatever the answer (it says nothing). A number T > 0: first a
    # calibrated confidence c in the verdict, P(right | c, verdict) = c, so that P(hot dog | stated p) = p (c is
    # drawn given right or wrong from a prior uniform on [a - w, a + w], a = how often that verdict of the model
    # is right over the labelled photos, w = min(a - 0.5, 1 - a); a verdict right less than half the time is
    # stated at 0.5), then stated as 1 - (1 - c) ** (1 / T): its chance of being wrong raised to 1 / T. T = 1
    # well calibrated, T < 1 overconfident (0.3: a coin flip is stated as 0.90), T > 1 underconfident. Per
    # model: {model id or "*": T}. The verdicts are the same whatever T.
    calibration: float | dict[str, float] | None = None
    # Extra simulated models, or overrides of a registry model's profile: id -> any of {"accuracy",
    # "unanswered_rate", "prompt", "completion", "image", "request" (USD per unit), "reasoning": bool,
    # "decisions": bool}. Extra models are listed by /v1/models and accepted on both endpoints.
    extra_models: dict[str, dict] = field(default_factory=dict)

    # --- latency: lognormal with this median (0 = answer at once) and sigma ---------------------------
    latency_s: float = 0.05
    latency_sigma: float = 0.5

    # --- caps the client cannot see --------------------------------------------------------------------
    max_in_flight: int | None = None  # admitted requests being served beyond this get 429 at once
    # an answered request leaves max_in_flight's count a mean of this many seconds (exponential) before its answer
    # is sent: the client hears it late, as a loaded client does, and meanwhile counts one more in flight
    release_early_s: float = 0.0
    rate_per_s: float | None = None  # token bucket refill rate; None = no bucket
    burst: int = 10  # token bucket capacity (the bucket starts full)
    # requests past the bucket's tokens held until their token comes, up to this many at once, refused only past
    # them (nginx's limit_req with a burst and no `nodelay`, its default): the wait is added to the answer's latency
    bucket_queue: int = 0
    # at most window_n admitted requests per fixed window of window_s seconds, clock-aligned (boundaries at whole
    # multiples of window_s of the wall clock, as "per clock minute"), refused past it, refilled at the boundary
    window_n: int | None = None
    window_s: float = 60.0
    # a window starts at the first request after the last one ended (express-rate-limit's store, LiteLLM's ttl),
    # not on the wall clock
    window_from_first: bool = False
    # "log": window_n in any window_s seconds (a sliding log: the `limits` library's moving window, Flask-Limiter's);
    # "counter": the clock window's count plus the last one's weighted by its share still in the last window_s
    # seconds (limits' sliding-window counter, Cloudflare's); "": a fixed window
    window_slide: str = ""
    # the window counts its refused requests too (HAProxy's stick table, tracked before its deny rule)
    window_counts_refused: bool = False
    # answers say the window's count as `x-ratelimit-limit-requests: window_n` (a minute's requests, as the LiteLLM
    # proxy and OpenAI do): the runner paces under it
    state_limit: bool = False
    # "key": the bucket and the window count every model's requests (a key-wide cap); "model": each model has
    # its own bucket and window (max_in_flight stays key-wide)
    caps_per: str = "key"
    # caps that move: [[seconds since the first request, factor], ...]; from each time on, rate_per_s, window_n
    # and max_in_flight are multiplied by its factor (until the next entry)
    cap_schedule: list = field(default_factory=list)
    # What a 429 carries: "none", "fixed" (Retry-After: retry_after_s), "exact" (the time until the bucket has
    # a token or the window refills; in-flight 429s can't know that and use retry_after_s), "large"
    # (Retry-After: retry_after_s on a retry_after_share of the 429s, nothing on the others), "reset_requests"
    # (x-ratelimit-reset-requests with the exact wait, like "6s" or "1m0s", and no Retry-After) or "gateway"
    # (llm_provider-retry-after: retry_after_s and no Retry-After, as the LiteLLM proxy sends) or "openrouter" (as
    # OpenRouter's free-model 429s: no rate headers, X-RateLimit-* in the body's error.metadata.headers, a window of
    # 60 s or a day named "free-models-per-min" or "free-models-per-day" in the message), or the exact wait in
    # Retry-After's other forms: "http_date" (an HTTP-date, whole seconds, beside the answer's Date) or
    # "retry_after_ms" (Azure's retry-after-ms, with Retry-After in whole seconds rounded up), or "google" (Gemini's
    # 429: a list around the error, RetryInfo's retryDelay the wait, a window's quota named in a QuotaFailure), or
    # "ratelimit" (the IETF RateLimit fields, as express-rate-limit's draft-8 mode sends them: a window's policy on
    # every answer and refusal, and on a refusal the seconds to its refill; no Retry-After), or "flask"
    # (Flask-Limiter's: X-RateLimit-Limit, -Remaining, -Reset in epoch seconds, and Retry-After in whole seconds,
    # truncated: 0 for a refill within the clock's second).
    retry_after: str = "none"
    retry_after_s: float = 1.0
    retry_after_share: float = 1.0
    # How a cap's refusal comes: "429", or "502" ("Provider returned error" with the provider's own 429 in
    # error.metadata.raw, as OpenRouter passes an upstream provider's rate limit on), the same hints on both
    refusal_status: str = "429"
    credits_usd: float | None = None  # 402 "Insufficient credits" once stats.spent_usd reaches this

    # --- how OpenRouter-like it is ----------------------------------------------------------------------
    # GET /v1/models: "openrouter" (entries with architecture, pricing, supported_parameters), "plain" (ids only,
    # as LiteLLM, vLLM and Ollama list them), or "none" (404, a server without a listing)
    models_listing: str = "openrouter"
    report_cost: bool = True  # usage.cost in answers (False: tokens only, as most servers but OpenRouter)

    # --- faults: probability per request, drawn from the seeded per-request RNG --------------------------
    error_5xx: float = 0.0  # status chosen from error_5xx_codes, after the latency
    error_5xx_codes: list[int] = field(default_factory=lambda: [500, 502, 503, 524, 529])
    error_in_200: float = 0.0  # HTTP 200, top-level {"error": {"code": 502, ...}}, no choices
    in_flight_402: float = 0.0  # 402 reason "in_flight_budget_exhausted", Retry-After: 1, at once
    drop_connection: float = 0.0  # TCP connection closed without a response, after the latency
    malformed_body: float = 0.0  # HTTP 200 with a truncated, non-JSON body
    stall: float = 0.0  # hold the request for stall_s seconds, then answer normally
    stall_s: float = 300.0
    no_choices: float = 0.0  # HTTP 200 with {"id": ...} only (chat: no choices; decisions: no answers)
    empty_content: float = 0.0  # billed answer with content null (decisions: noul null)
    echo_auth: str | None = None  # one of ECHO_AUTH_MODES: echo the Authorization header back (a leaky server)

    # --- conditions (hotdogbench's experiments, docs/experiments.md): how a variant changes the answers ----
    # A variant is a request whose photo is a labelled photo re-encoded (found by its fingerprint: sim/variants.py),
    # whose question is not the reference's, or that is routed to one of `providers`. The reference request
    # never is one, so none of these settings changes a run without conditions.
    size_loss_per_halving: float = 0.0  # accuracy lost per halving of the longest side (against the photo's own)
    quality_loss_per_10: float = 0.0  # accuracy lost per 10 points of JPEG quality below quality_ref
    quality_ref: int = 90
    # accuracy change by question text: {exact text, or "*" for any text but the reference question: change}
    prompt_accuracy: dict[str, float] = field(default_factory=dict)
    # simulated providers a body may route to (provider.only / provider.order): {name: {"accuracy": change,
    # "latency_s": median latency, "price": factor on the model's prices, "quantization": "fp8"}}; a body naming
    # none of them gets OpenRouter's 404. Empty: provider objects are ignored, as before.
    providers: dict[str, dict] = field(default_factory=dict)
    # share of photos a variant answers with a fresh draw instead of the reference's (so a paired comparison
    # sees photos gained as well as lost); decided per (seed, model, photo, variant)
    variant_redraw: float = 0.1
    # prompt tokens of the image: "bytes" (85 + bytes / 750 + text / 4 + 8, as before) or "pixels"
    # (85 + ceil(width x height / pixels_per_token) + text / 4 + 8: a smaller photo costs fewer tokens)
    image_tokens: str = "bytes"
    pixels_per_token: float = 750.0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if self.models_listing not in LISTINGS:
            raise ValueError(f"models_listing must be one of {LISTINGS}, not {self.models_listing!r}")
        for f in dataclasses.fields(self):  # every number finite (NaN passes every comparison below)
            v = getattr(self, f.name)
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError(f"{f.name} must be a finite number, not {v!r}")
            if isinstance(v, bool) or (f.name in _NUMBERS and v is not None and not isinstance(v, (int, float))):
                if f.name in _NUMBERS:
                    raise ValueError(f"{f.name} must be a number, not {v!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"seed must be a whole number, not {self.seed!r}")
        if self.echo_auth not in ECHO_AUTH_MODES:
            raise ValueError(f"echo_auth must be one of {ECHO_AUTH_MODES}, not {self.echo_auth!r}")
        if self.retry_after not in RETRY_AFTER_MODES:
            raise ValueError(f"retry_after must be one of {RETRY_AFTER_MODES}, not {self.retry_after!r}")
        for name in (*FAULTS, "consistency", "fenced_rate"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], not {v!r}")
        cal = self.calibration
        for t in (cal.values() if isinstance(cal, dict) else [cal]):
            if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t)
                                  or t <= 0):
                raise ValueError(f"calibration must be a temperature above 0 (1: well calibrated), or None, "
                                 f"not {t!r}")
        for name in ("accuracy", "unanswered_rate", "calibration"):
            v = getattr(self, name)
            bad = [k for k in v if k != "*" and "/" not in k] if isinstance(v, dict) else []
            if bad:  # e.g. {"hot_dog": 0.9} meant as categories: that's {"*": {"hot_dog": 0.9, "default": ...}}
                raise ValueError(f"{name} keys are model ids or '*', not {bad}; per-category values go one "
                                 f"level down: {{'*': {{'hot_dog': 0.9, 'default': 0.85}}}}")
        if not self.error_5xx_codes:
            raise ValueError("error_5xx_codes must not be empty")
        self._validate_conditions()
        if self.max_in_flight is not None and self.max_in_flight < 0:
            raise ValueError("max_in_flight must be >= 0 or None")
        if self.rate_per_s is not None and self.rate_per_s < 0:
            raise ValueError("rate_per_s must be >= 0 or None")
        if self.burst < 1:
            raise ValueError("burst must be >= 1")
        if self.bucket_queue < 0:
            raise ValueError("bucket_queue must be >= 0")
        if self.caps_per not in CAPS_PER:
            raise ValueError(f"caps_per must be one of {CAPS_PER}, not {self.caps_per!r}")
        if self.window_n is not None and (self.window_n < 0 or self.window_s <= 0):
            raise ValueError("window_n must be >= 0 (or None) and window_s > 0")
        if self.window_slide not in ("", "log", "counter"):
            raise ValueError(f"window_slide must be '', 'log' or 'counter', not {self.window_slide!r}")
        if self.refusal_status not in ("429", "502"):
            raise ValueError(f"refusal_status must be '429' or '502', got {self.refusal_status!r}")
        if not 0.0 <= self.retry_after_share <= 1.0:
            raise ValueError("retry_after_share must be a probability in [0, 1]")
        if any(not isinstance(e, (list, tuple)) or len(e) != 2 or e[1] < 0 for e in self.cap_schedule):
            raise ValueError("cap_schedule entries are [seconds since the first request, factor >= 0]")
        if min(self.latency_s, self.latency_sigma, self.stall_s, self.retry_after_s, self.release_early_s) < 0:
            raise ValueError("latency_s, latency_sigma, stall_s, retry_after_s and release_early_s must be >= 0")

    def _validate_conditions(self) -> None:
        for name in ("size_loss_per_halving", "quality_loss_per_10", "variant_redraw"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], not {getattr(self, name)!r}")
        if isinstance(self.quality_ref, bool) or not isinstance(self.quality_ref, int) or \
                not 1 <= self.quality_ref <= 100:
            raise ValueError(f"quality_ref must be a whole number from 1 to 100, not {self.quality_ref!r}")
        if self.image_tokens not in IMAGE_TOKENS:
            raise ValueError(f"image_tokens must be one of {IMAGE_TOKENS}, not {self.image_tokens!r}")
        if not self.pixels_per_token > 0:
            raise ValueError(f"pixels_per_token must be above 0, not {self.pixels_per_token!r}")
        if not isinstance(self.prompt_accuracy, dict):
            raise ValueError("prompt_accuracy must be {question text or '*': accuracy change}")
        for text, v in self.prompt_accuracy.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not -1 <= v <= 1:
                raise ValueError(f"prompt_accuracy[{text[:40]!r}] must be a number in [-1, 1], not {v!r}")
        if not isinstance(self.providers, dict):
            raise ValueError("providers must be {name: {accuracy, latency_s, price, quantization}}")
        for name, p in self.providers.items():
            if not isinstance(p, dict) or set(p) - set(PROVIDER_KEYS):
                raise ValueError(f"providers[{name!r}] takes {', '.join(PROVIDER_KEYS)}, not {p!r}")
            for k in ("accuracy", "latency_s", "price"):
                v = p.get(k)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
                                      or (k != "accuracy" and v < 0) or (k == "accuracy" and not -1 <= v <= 1)):
                    raise ValueError(f"providers[{name!r}].{k} must be a finite number"
                                     f"{' in [-1, 1]' if k == 'accuracy' else ' >= 0'}, not {v!r}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SimConfig":
        """Build from a plain dict (e.g. parsed from a CLI's --config JSON); unknown keys raise ValueError."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown SimConfig keys: {sorted(unknown)}; valid: {sorted(names)}")
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy; SimConfig.from_dict(c.to_dict()) == c."""
        return dataclasses.asdict(self)


_NUMBERS = {"consistency", "fenced_rate", "noul_spread", "latency_s", "latency_sigma", "max_in_flight", "rate_per_s",
            "release_early_s", "burst", "bucket_queue", "retry_after_s", "credits_usd", "stall_s", "size_loss_per_halving",
            "quality_loss_per_10", "variant_redraw", "pixels_per_token", *FAULTS}


def demo_config(conditions: bool = False) -> dict:
    """The demo's simulator settings; with conditions, DEMO_CONDITIONS too."""
    return {**DEMO_CONFIG, **(DEMO_CONDITIONS if conditions else {})}


def profile_for(cfg: SimConfig, model: str) -> dict | None:
    """The model's simulated profile, or None if the simulator doesn't know the model (-> 404)."""
    extra = cfg.extra_models.get(model) if cfg.extra_models else None
    base = MODEL_PROFILES.get(model)
    if extra is None:
        return base
    return {**(base or _BASE_PROFILE), **extra}


def _per_model(setting: Any, model: str) -> Any:
    if isinstance(setting, dict):
        return setting.get(model, setting.get("*"))
    return setting


def accuracy_for(cfg: SimConfig, prof: dict, model: str, category: str | None) -> float:
    acc = _per_model(cfg.accuracy, model)
    if acc is None:
        acc = prof["accuracy"]
    if isinstance(acc, dict):
        default = acc.get("default", DEFAULT_ACCURACY)
        acc = acc.get(category, default) if category is not None else default
    return float(acc)


def calibration_for(cfg: SimConfig, model: str) -> float | None:
    """The model's calibration temperature, or None (the fixed 0.9 +- noul_spread confidence)."""
    t = _per_model(cfg.calibration, model)
    return None if t is None else float(t)


def unanswered_for(cfg: SimConfig, prof: dict, model: str) -> float:
    rate = _per_model(cfg.unanswered_rate, model)
    return float(prof.get("unanswered_rate", 0.0) if rate is None else rate)
