"""The model registry and presets: which request kind each model is asked through, with which extra params.

Any other id is sent as given as a plain chat model (no extras).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import FieldError
from .answers import minute_count_rate


@dataclass(frozen=True)
class ModelSpec:
    endpoint: str = "chat"  # a name in protocol.endpoints.ENDPOINTS
    params: dict = field(default_factory=dict)  # extra request body params, merged in after the kind's own


# OpenRouter id -> how it is asked. Lowest reasoning each model allows; temperature 0 where accepted.
MODELS: dict[str, ModelSpec] = {
    "openai/gpt-6.1-sol": ModelSpec(params={"reasoning": {"effort": "minimal"}}),
    "openai/gpt-6-luna": ModelSpec(params={"reasoning": {"effort": "minimal"}}),
    "openai/gpt-6-astra": ModelSpec(params={"reasoning": {"effort": "minimal"}}),
    "typesafe/jev-1.14": ModelSpec("decisions"),
    # Pinned to Cloudflare's own endpoint: DeepInfra's rejects image_url parts.
    "cloudflare/clef": ModelSpec("decisions", {"provider": {"only": ["Cloudflare"], "allow_fallbacks": False}}),
    "openai/gpt-6-luna-decisions": ModelSpec("decisions"),
    "perplexity/pplx-decider-v1.1-27b": ModelSpec("decisions"),
    "anthropic/claude-opus-5.5": ModelSpec(params={"temperature": 0}),
    "anthropic/claude-sonnet-5.5": ModelSpec(params={"temperature": 0}),
    "anthropic/claude-haiku-5.5": ModelSpec(params={"temperature": 0}),
}
PRESETS: dict[str, list[str]] = {
    "all": list(MODELS),
    "cheap": ["typesafe/jev-1.14", "openai/gpt-6-luna", "anthropic/claude-haiku-5.5", "openai/gpt-6.1-sol"],
}
PLAIN = ModelSpec()
FREE_SUFFIX = ":free"  # OpenRouter's free variant of a model: "author/slug:free"
FREE_PER_MINUTE = 20  # OpenRouter's documented limit on free variants: requests a minute, counted per key
FREE_CAP = f"OpenRouter's free models: {FREE_PER_MINUTE} a minute on the key"  # the limit history's reason


def known_rates(models: list[str], together: bool) -> dict[str, float]:
    """Requests a second the models of a run are known to be allowed before anything is sent: OpenRouter's free
    variants share FREE_PER_MINUTE a minute on the key, so one under that (as a stated count,
    answers.minute_count_rate), split evenly among the free runs asked at once (`together`: models in parallel; a
    model listed twice, as under two conditions, counts twice). Other ids are absent: nothing is known."""
    free = [m for m in models if m.endswith(FREE_SUFFIX)]
    rate = minute_count_rate(FREE_PER_MINUTE) / (len(free) if together and free else 1)
    return {m: rate for m in free}


class UnknownModelError(FieldError):
    """A model choice that names no preset and no model id."""

    field = "models"


def model_spec(model: str) -> ModelSpec:
    return MODELS.get(model, PLAIN)


def resolve_models(spec: str | list[str], *, any_id: bool = False) -> list[str]:
    """'all', 'cheap', or comma-separated ids (registry or not) -> ordered unique ids. OpenRouter ids are
    'author/slug'; with any_id (a server that is not OpenRouter: vLLM, Ollama, a gateway) any name is taken."""
    parts = [p.strip() for p in (spec.split(",") if isinstance(spec, str) else spec)]
    ids: list[str] = []
    for p in parts:
        if not p:
            continue
        if p in PRESETS:
            ids += [m for m in PRESETS[p] if m not in ids]
            continue
        if "/" not in p and not any_id:
            raise UnknownModelError(
                f"{p!r} is neither a preset ({', '.join(PRESETS)}) nor an OpenRouter id like 'author/slug'")
        if p not in ids:
            ids.append(p)
    if not ids:
        raise UnknownModelError("no model given")
    return ids
