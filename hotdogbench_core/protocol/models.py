"""The model registry, the question, and the request body each model is sent.

Bodies are byte-for-byte those of the reference script for the same model and image, so results stay
comparable with runs made before this package existed.
"""
from __future__ import annotations

import base64
import json
from functools import lru_cache

QUESTION = 'Is the food in this photo a hot dog? Answer with JSON: {"hot_dog": true} or {"hot_dog": false}.'
DECISIONS_INSTRUCTIONS = "Is the food in the photo a hot dog?"
SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "strict": True,
        "schema": {"type": "object", "properties": {"hot_dog": {"type": "boolean"}},
                   "required": ["hot_dog"], "additionalProperties": False},
    },
}
MAX_TOKENS = 1024

# OpenRouter id -> extra request params. Lowest reasoning each model allows; temperature 0 where accepted.
# "decisions": True sends the model through OpenRouter's Decisions API instead of chat completions.
MODELS: dict[str, dict] = {
    "openai/gpt-6.1-sol": {"reasoning": {"effort": "minimal"}},
    "openai/gpt-6-luna": {"reasoning": {"effort": "minimal"}},
    "openai/gpt-6-astra": {"reasoning": {"effort": "minimal"}},
    "typesafe/jev-1.14": {"decisions": True},
    # Pinned to Cloudflare's own endpoint: DeepInfra's rejects image_url parts.
    "cloudflare/clef": {"decisions": True, "provider": {"only": ["Cloudflare"], "allow_fallbacks": False}},
    "openai/gpt-6-luna-decisions": {"decisions": True},
    "perplexity/pplx-decider-v1.1-27b": {"decisions": True},
    "anthropic/claude-opus-5.5": {"temperature": 0},
    "anthropic/claude-sonnet-5.5": {"temperature": 0},
    "anthropic/claude-haiku-5.5": {"temperature": 0},
}
PRESETS: dict[str, list[str]] = {
    "all": list(MODELS),
    "cheap": ["typesafe/jev-1.14", "openai/gpt-6-luna", "anthropic/claude-haiku-5.5", "openai/gpt-6.1-sol"],
}
CHAT_PATH = "/v1/chat/completions"
DECISIONS_PATH = "/alpha/decisions"


class UnknownModelError(ValueError):
    pass


def resolve_models(spec: str | list[str]) -> list[str]:
    """'all', 'cheap', or comma-separated OpenRouter ids (registry or not) -> ordered unique ids."""
    if isinstance(spec, str):
        if spec in PRESETS:
            return list(PRESETS[spec])
        parts = [p.strip() for p in spec.split(",")]
    else:
        parts = [p.strip() for p in spec]
    ids: list[str] = []
    for p in parts:
        if not p:
            continue
        if p in PRESETS:
            ids += [m for m in PRESETS[p] if m not in ids]
            continue
        if "/" not in p:
            raise UnknownModelError(
                f"--models: {p!r} is neither a preset ({', '.join(PRESETS)}) nor an OpenRouter id like 'author/slug'")
        if p not in ids:
            ids.append(p)
    if not ids:
        raise UnknownModelError("--models: no model given")
    return ids


def model_params(model: str) -> dict:
    """Extra request params for a model; ids outside the registry are sent as plain chat models."""
    return MODELS.get(model, {})


def uses_decisions(model: str) -> bool:
    return bool(model_params(model).get("decisions"))


def endpoint_path(model: str) -> str:
    return DECISIONS_PATH if uses_decisions(model) else CHAT_PATH


def image_data_url(image: bytes, mime: str = "image/jpeg") -> str:
    # The reference labels every image image/jpeg; kept so bodies stay identical across versions.
    return f"data:{mime};base64," + base64.b64encode(image).decode()


def body_for(model: str, image: bytes) -> dict:
    """The request body for one photo: the same for every run of the same model and image."""
    url = image_data_url(image)
    params = model_params(model)
    if params.get("decisions"):
        extra = {k: v for k, v in params.items() if k != "decisions"}  # e.g. provider routing
        return {"model": model, "state": ["Photo:", {"type": "image_url", "image_url": {"url": url}}],
                "questions": {"hot_dog": {"type": "noul", "instructions": DECISIONS_INSTRUCTIONS}},
                **extra}
    return {
        "model": model,
        "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "text", "text": QUESTION},
        ]}],
        "max_tokens": MAX_TOKENS,
        "response_format": SCHEMA,
        "usage": {"include": True},
        **params,
    }


_URL_PREFIX = image_data_url(b"")  # "data:image/jpeg;base64,"


@lru_cache(maxsize=64)
def _body_halves(model: str) -> tuple[bytes, bytes]:
    """The wire body of `model` split where the image's base64 goes."""
    wire = json.dumps(body_for(model, b""), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    head, sep, tail = wire.partition(f'"{_URL_PREFIX}"')
    if not sep or f'"{_URL_PREFIX}"' in tail:
        raise AssertionError(f"cannot template the body of {model}")  # the image must appear exactly once
    return (head + '"' + _URL_PREFIX).encode(), ('"' + tail).encode()


def encode_body(model: str, image: bytes) -> bytes:
    """The request body's bytes: json.dumps(body_for(model, image)) with the reference's separators, exactly,
    without scanning the base64 text for characters to escape (it has none), so a 100 KB photo costs little."""
    head, tail = _body_halves(model)
    return b"".join((head, base64.b64encode(image), tail))


def request_settings(model: str) -> dict:
    """Everything in a model's request except the image: what a resume must match, what a manifest records."""
    params = model_params(model)
    if params.get("decisions"):
        return {"endpoint": DECISIONS_PATH, "instructions": DECISIONS_INSTRUCTIONS,
                **{k: v for k, v in params.items() if k != "decisions"}}
    return {"endpoint": CHAT_PATH, "question": QUESTION, "max_tokens": MAX_TOKENS,
            "response_format": SCHEMA, "usage": {"include": True}, **params}
