"""Before anything is paid for: what the server says it serves (GET BASE/v1/models), the dialect to speak to
it, the prices it lists, and every model that cannot be asked, reported before the first request.

A listing shaped like OpenRouter's (entries with `architecture` or `pricing`, as OpenRouter and the simulator
send) says which models take images and structured outputs; a plain listing (LiteLLM, vLLM, Ollama) only names
models. A listing with a wildcard entry is partial: an unlisted id is then a warning, not a stop.
"""
from __future__ import annotations

import difflib
import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ..errors import FieldError
from ..protocol.answers import Fatal, classify_error, unlisted
from ..protocol.request import request_for
from ..store.redact import public_url
from .settings import RunError, RunSettings, is_openrouter, url_with_path

LISTING_TIMEOUT_S = 5.0  # a server that cannot list its models in this long is run without the checks
PER_MILLION = 1e-6  # price tables are written in USD per million tokens, as providers quote them


class PreflightError(FieldError):
    """A model (or the budget) that cannot work with this server; nothing was sent."""

    field = "models"


class KeyRefusedError(RunError):
    """The server refused the key before anything was sent."""


@dataclass(frozen=True)
class Listing:
    entries: dict[str, dict]  # model id -> its /v1/models entry
    shaped: bool  # OpenRouter-shaped: modalities, parameters and prices are known
    partial: bool  # a wildcard entry: the server may serve ids it does not list


@dataclass
class Preflight:
    dialect: str
    listing: Listing | None
    prices: dict[str, dict[str, float]] = field(default_factory=dict)  # model -> USD per token/image/request
    warnings: list[str] = field(default_factory=list)


def parse_listing(body) -> Listing | None:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    entries = {m["id"]: m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)}
    shaped = any("architecture" in m or "pricing" in m for m in entries.values())
    return Listing(entries, shaped, any("*" in i for i in entries))


async def fetch_listing(base_url: str, api_key: str, timeout: float = LISTING_TIMEOUT_S) -> Listing | None:
    """GET BASE/v1/models (with the key: gateways list only for it); None when it does not answer a listing.
    A refused key (401, 403, a gateway's "No connected db.") stops the run here, before anything is paid for."""
    try:
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=True, trust_env=True) as client:
            r = await client.get(url_with_path(base_url, "/v1/models"), headers={"Authorization": f"Bearer {api_key}"})
        body = r.json()
    except (httpx.HTTPError, ValueError, OSError):
        return None
    body = unlisted(body)
    outcome = classify_error(r.status_code, body.get("error", body), {}) if r.status_code != 200 and \
        isinstance(body, dict) else None
    if isinstance(outcome, Fatal) and "key" in outcome.hint:
        raise KeyRefusedError(f"the server at {public_url(base_url)} refused the key (GET /v1/models: {outcome.error[:200]}); nothing "
                       f"was sent. {outcome.hint}")
    return parse_listing(body) if r.status_code == 200 else None


def listed_prices(listing: Listing | None) -> dict[str, dict[str, float]]:
    """USD per token / image / request from an OpenRouter-shaped listing (variable prices, -1, left out)."""
    out = {}
    for mid, m in (listing.entries if listing else {}).items():
        pricing = m.get("pricing") if isinstance(m.get("pricing"), dict) else None
        if pricing is None:
            continue
        try:
            p = {k: float(pricing.get(k) or 0) for k in ("prompt", "completion", "image", "request")}
        except (TypeError, ValueError):
            continue
        if all(math.isfinite(v) and v >= 0 for v in p.values()):
            out[mid] = p
    return out


def load_price_table(path: str | Path) -> dict[str, dict[str, float]]:
    """A price table file (JSON or TOML): {model: {prompt, completion: USD per million tokens; image, request:
    USD each}} -> USD per token / image / request."""
    path = Path(path)
    try:
        text = path.read_text()
        table = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as e:
        raise FieldError(f"cannot read the price table {path}: {e}", "prices") from None
    out = {}
    for model, p in (table.items() if isinstance(table, dict) else ()):
        try:
            prices = {"prompt": float(p.get("prompt", 0)) * PER_MILLION,
                      "completion": float(p.get("completion", 0)) * PER_MILLION,
                      "image": float(p.get("image", 0)), "request": float(p.get("request", 0))}
        except (AttributeError, TypeError, ValueError):
            raise FieldError(f"{path}: the prices of {model!r} must be numbers (USD per million tokens)",
                             "prices") from None
        if not all(math.isfinite(v) and v >= 0 for v in prices.values()):
            raise FieldError(f"{path}: the prices of {model!r} must be finite and >= 0", "prices")
        out[str(model)] = prices
    if not out:
        raise FieldError(f"{path} holds no prices ({{model: {{prompt: ..., completion: ...}}}})", "prices")
    return out


def _problem(model: str, listing: Listing, dialect: str) -> str | None:
    """Why `model` cannot be asked on this server, or None."""
    entry = listing.entries.get(model)
    if entry is None:
        close = difflib.get_close_matches(model, list(listing.entries), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"{model!r} is not among the {len(listing.entries)} models the server lists{hint}"
    if not listing.shaped:
        return None
    modalities = (entry.get("architecture") or {}).get("input_modalities")
    if isinstance(modalities, list) and "image" not in modalities:
        return f"{model!r} does not take image input (its /v1/models entry lists {', '.join(map(str, modalities))})"
    body = request_for(model, dialect).template()
    supported = entry.get("supported_parameters")
    if "response_format" in body and isinstance(supported, list) and \
            not {"response_format", "structured_outputs"} & set(supported):
        return f"{model!r} does not support structured outputs, which its request asks for (response_format)"
    return None


def logprobs_warnings(models: list[str], settings: RunSettings, listing: Listing | None) -> list[str]:
    """The log-probability opt-in said where it cannot work: a kind that answers with a probability already, or
    an OpenRouter-shaped listing whose entry does not list logprobs among the model's supported parameters (the
    rows then say no probability, and the summary says why)."""
    out = []
    for m in models:
        if not settings.wants_logprobs(m):
            continue
        request = request_for(m)
        if not request.endpoint.logprobs:
            if settings.logprobs != ("*",):
                out.append(f"{m} answers through {request.path}, which states a probability of its own "
                           f"({request.endpoint.probability}): no log-probabilities are asked of it")
            continue
        entry = listing.entries.get(m) if listing is not None and listing.shaped else None
        supported = entry.get("supported_parameters") if isinstance(entry, dict) else None
        if isinstance(supported, list) and "logprobs" not in supported:
            out.append(f"{m} does not list logprobs among its supported parameters: it is asked for them, but its "
                       f"rows may come back without a probability")
    return out

def check_conditions(conditions, dialect: str, base_url: str) -> None:
    """A condition that routes providers needs OpenRouter: other servers never see the provider object."""
    routed = [c.name for c in conditions or () if c.provider]
    if routed and dialect != "openrouter":
        raise PreflightError(f"condition(s) {', '.join(routed)} route providers (provider:), which only OpenRouter "
                             f"understands; the server at {public_url(base_url)} speaks the plain OpenAI dialect, "
                             f"which leaves the provider object out (nothing was sent)", "conditions")


def check(models: list[str], settings: RunSettings, listing: Listing | None, *,
          price_table: dict | None = None, max_cost_usd: float | None = None) -> Preflight:
    """The dialect, prices and warnings for this run; raises PreflightError for a model that cannot work."""
    if settings.api != "auto":
        dialect = settings.api
    else:
        dialect = "openrouter" if is_openrouter(settings.base_url) or (listing and listing.shaped) else "openai"
    pre = Preflight(dialect, listing, {**listed_prices(listing), **(price_table or {})})
    if listing is None:
        pre.warnings.append(f"{public_url(settings.base_url)}/v1/models did not answer a model listing: the models are not "
                            f"checked before the run")
    else:
        problems = [(m, p) for m in models if (p := _problem(m, listing, dialect))]
        stop = [f"{p}" for m, p in problems if not (listing.partial and m not in listing.entries)]
        pre.warnings += [f"{p} (the listing has wildcards: asked anyway)" for m, p in problems
                         if listing.partial and m not in listing.entries]
        if stop:
            raise PreflightError("; ".join(stop) + f" (from {public_url(settings.base_url)}/v1/models; nothing was sent)")
    pre.warnings += logprobs_warnings(models, settings, listing)
    if max_cost_usd is not None and dialect != "openrouter":
        unpriced = [m for m in models if m not in pre.prices]
        if unpriced:
            raise PreflightError(f"the server at {public_url(settings.base_url)} may report no cost, and no price is known for "
                                 f"{', '.join(unpriced)}: give a price table, or run without a budget",
                                 "max_cost_usd")
    return pre
