"""What a run would cost before anything is sent: prices from BASE/v1/models x requests x estimated tokens.

Token counts are guesses: a model's own average from the newest earlier run under OUT when there is one,
otherwise a round default for one photo and the question. The estimate says which it used.

Under a condition (estimate_costs(..., conditions=...)) the reference guess is split into the question's tokens
(its characters / 4, plus 8 for the message around it) and the image's (the rest), and the image's part is
scaled by the pixels the condition sends over the pixels of the photos as they are (the mean of width x height
over up to PIXEL_SAMPLE photos of the table, each scaled to the condition's longest side): image tokens are
taken to be linear in pixels, as Anthropic prices them (about width x height / 750); providers that count
fixed tiles or cap the size will differ. JPEG quality changes bytes, not pixels, so it changes no token; a
reworded question changes the question's part; provider routing changes neither (its price is the model's).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx
import polars as pl

from ..protocol.chat import QUESTION
from ..protocol.decisions import INSTRUCTIONS
from ..protocol.models import model_spec
from ..protocol.transform import image_size
from ..run.settings import DEFAULT_BASE_URL, is_loopback, url_with_path
from ..sim.app import Simulator
from ..store.journal import read_journal
from ..store.redact import public_url
from ..store.rundir import RunDir, list_runs
from .format import Col, fmt, schema

PRICE_KEYS = ("prompt", "completion", "image", "request")  # USD per token / image / request, as in /v1/models
DEFAULT_PROMPT_TOKENS = 1000  # one photo plus the question, order of magnitude for real vision models
DEFAULT_COMPLETION_TOKENS = 12  # {"hot_dog": true}
REASONING_GUESS = 64  # extra completion tokens a minimal-effort reasoning model may spend
PIXEL_SAMPLE = 256  # photos read to learn a table's pixels per photo under each condition
MESSAGE_TOKENS = 8  # the message around the question, in a chat request


class PricingUnavailable(RuntimeError):
    pass


def parse_pricing(body: dict) -> dict[str, dict[str, float]]:
    """{model id: {prompt, completion, image, request}} from a /v1/models body; models without prices skipped."""
    out: dict[str, dict[str, float]] = {}
    for m in (body or {}).get("data") or []:
        if not isinstance(m, dict) or not isinstance(m.get("pricing"), dict) or not m.get("id"):
            continue
        prices = {}
        for k in PRICE_KEYS:
            try:
                v = float(m["pricing"].get(k) or 0)
            except (TypeError, ValueError):
                v = -1.0
            prices[k] = v
        if all(v >= 0 for v in prices.values()):  # OpenRouter marks variable pricing with -1
            out[m["id"]] = prices
    return out


_CACHE: dict[str, dict[str, dict[str, float]]] = {}


def fetch_pricing(base_url: str, *, timeout: float = 5.0, use_cache: bool = True) -> dict[str, dict[str, float]]:
    """GET BASE/v1/models (no key is sent: the model list is public). Successful answers are cached."""
    base = base_url.rstrip("/")
    if use_cache and base in _CACHE:
        return _CACHE[base]
    try:
        r = httpx.get(url_with_path(base, "/v1/models"), timeout=timeout, follow_redirects=True)
        r.raise_for_status()
        prices = parse_pricing(r.json())
    except (httpx.HTTPError, ValueError, OSError) as e:
        raise PricingUnavailable(f"no prices from {public_url(base)}/v1/models ({type(e).__name__})") from None
    _CACHE[base] = prices
    return prices


def pricing_for(target: str, base_url: str | None = None, sim_config=None) -> dict[str, dict[str, float]]:
    """Prices where a run would go: OpenRouter, another base URL, or a short-lived simulator's /v1/models."""
    if target == "simulator":
        plain = sim_config is None or not sim_config.extra_models  # prices then come from the registry alone
        if plain and "simulator" in _CACHE:
            return _CACHE["simulator"]
        with Simulator(sim_config) as sim:
            prices = fetch_pricing(sim.base_url, use_cache=False)
        if plain:
            _CACHE["simulator"] = prices
        return prices
    if target == "openrouter":
        return fetch_pricing(DEFAULT_BASE_URL)
    if not base_url:
        raise PricingUnavailable("no base URL given")
    return fetch_pricing(base_url)


@dataclass(frozen=True)
class TokenGuess:
    prompt: float
    completion: float
    basis: str  # "run NAME" or "default guess"


def _endpoint_kind(base_url: str | None) -> str | None:
    """Loopback servers (the simulator) are one kind; any other base URL is its host."""
    if not base_url:
        return None
    return "loopback" if is_loopback(base_url) else httpx.URL(base_url).host


def _run_endpoint(rundir: RunDir, model: str, condition: str | None = None) -> str | None:
    sessions = read_journal(rundir.journal(model, condition)).sessions
    return _endpoint_kind((sessions[-1].get("settings") or {}).get("base_url")) if sessions else None


def past_tokens(out: str | Path, base_url: str | None = None) -> dict[str, TokenGuess]:
    """Per model, the average tokens per answered photo in the newest run under OUT that has the model
    (only runs against the same kind of endpoint as base_url, when given: simulated tokens say nothing
    about real ones)."""
    want = _endpoint_kind(base_url)
    found: dict[str, TokenGuess] = {}
    for name in list_runs(out):
        rundir = RunDir(out, name)
        for model in rundir.models():
            if model in found or not rundir.results(model).is_file():
                continue
            if want is not None and _run_endpoint(rundir, model) != want:
                continue
            try:
                frame = pl.read_parquet(rundir.results(model), columns=["prompt_tokens", "completion_tokens"])
            except (OSError, pl.exceptions.PolarsError):
                continue
            answered = frame.filter(pl.col("prompt_tokens").is_not_null())
            if not answered.height:
                continue
            completion = answered["completion_tokens"].fill_null(0).mean()
            found[model] = TokenGuess(float(answered["prompt_tokens"].mean()), float(completion), f"run {name}")
    return found


def past_condition_tokens(out: str | Path, base_url: str | None = None) -> dict[tuple[str, dict], TokenGuess]:
    """Per (model, condition spec as JSON), the average tokens per answered photo in the newest run under OUT
    that ran the model under a condition of that spec (by spec, not name: names are each run's own)."""
    import json

    want = _endpoint_kind(base_url)
    found: dict = {}
    for name in list_runs(out):
        rundir = RunDir(out, name)
        for s in rundir.summaries() or []:
            spec = s.get("condition_spec")
            if not isinstance(spec, dict) or not isinstance(s.get("condition"), str):
                continue
            key = (s["model"], json.dumps(spec, sort_keys=True))
            path = rundir.results(s["model"], s["condition"])
            if key in found or not path.is_file():
                continue
            if want is not None and _run_endpoint(rundir, s["model"], s["condition"]) != want:
                continue
            try:
                frame = pl.read_parquet(path, columns=["prompt_tokens", "completion_tokens"])
            except (OSError, pl.exceptions.PolarsError):
                continue
            answered = frame.filter(pl.col("prompt_tokens").is_not_null())
            if answered.height:
                found[key] = TokenGuess(float(answered["prompt_tokens"].mean()),
                                        float(answered["completion_tokens"].fill_null(0).mean()),
                                        f"run {name}, same condition")
    return found


def guess_tokens(model: str, past: dict[str, TokenGuess] | None = None) -> TokenGuess:
    if past and model in past:
        return past[model]
    reasoning = "reasoning" in model_spec(model).params
    return TokenGuess(DEFAULT_PROMPT_TOKENS, DEFAULT_COMPLETION_TOKENS + (REASONING_GUESS if reasoning else 0),
                      "default guess")


ESTIMATE = (Col("model", "model", "text"), Col("requests", "requests", "count"),
            Col("prompt_tokens", "prompt tokens per photo", "tokens"),
            Col("completion_tokens", "completion tokens per photo", "tokens"),
            Col("tokens_from", "tokens from", "text"),
            Col("usd_per_photo", "USD per photo", "usd"), Col("cost_usd", "estimated cost (USD)", "usd"))


def estimate_costs(models: list[str], requests_per_model: int, pricing: dict[str, dict[str, float]],
                   past: dict[str, TokenGuess] | None = None, *, conditions=None, dataset=None,
                   past_conditions: dict | None = None) -> pl.DataFrame:
    """One row per model: the tokens assumed, USD per photo and in all; cost_usd is null where no price is known.
    With conditions: one row per (model, condition), columns ESTIMATE_BY_CONDITION (estimate_condition_costs)."""
    if conditions:
        return estimate_condition_costs(models, requests_per_model, pricing, past, conditions, dataset,
                                        past_conditions)
    rows = []
    for m in models:
        g = guess_tokens(m, past)
        p = pricing.get(m)
        per = None if p is None else (g.prompt * p["prompt"] + g.completion * p["completion"] + p["image"]
                                      + p["request"])
        rows.append({"model": m, "requests": requests_per_model, "prompt_tokens": round(g.prompt, 1),
                     "completion_tokens": round(g.completion, 1), "tokens_from": g.basis,
                     "usd_per_photo": per, "cost_usd": None if per is None else per * requests_per_model})
    return pl.DataFrame(rows, schema=schema(ESTIMATE), orient="row" if not rows else None)


def describe_total(costs: pl.DataFrame) -> str:
    """One line: the known total, and which models have no price."""
    if not costs.height:
        return "no models chosen"
    known = costs.filter(pl.col("cost_usd").is_not_null())
    unknown = list(dict.fromkeys(costs.filter(pl.col("cost_usd").is_null())["model"].to_list()))
    arms = f"{known['model'].n_unique()} model(s) × {known['condition'].n_unique()} condition(s)" \
        if "condition" in costs.columns else f"{known.height} model(s)"
    text = f"about {fmt(known['cost_usd'].sum(), 'usd')} for {costs['requests'][0]} photos × {arms}" \
        if known.height else "no price known for the chosen models"
    if unknown and known.height:
        text += f"; no price known for {', '.join(unknown)}"
    return text


# -- under conditions -------------------------------------------------------------------------------------
ESTIMATE_BY_CONDITION = (*ESTIMATE[:1], Col("condition", "condition", "text"), *ESTIMATE[1:4],
                         Col("pixels", "pixels sent, share of the photos'", "pct"), *ESTIMATE[4:])
_PIXELS: dict[tuple, float | None] = {}


def pixel_share(dataset, px: int | None, sample: int = PIXEL_SAMPLE) -> float | None:
    """Mean pixels per photo under a longest side of px over the mean as they are (1.0 without px), over the
    first `sample` photos of the table; None when no photo could be measured."""
    if px is None:
        return 1.0
    key = (getattr(dataset, "sha256", None), px, sample)
    if key[0] is not None and key in _PIXELS:
        return _PIXELS[key]
    sizes = []
    for photo in dataset.stream():
        size = image_size(photo.image)
        if size:
            sizes.append(size)
        if len(sizes) >= sample:
            break
    share = None
    if sizes:
        full = sum(w * h for w, h in sizes)
        scaled = 0.0
        for w, h in sizes:
            f = min(1.0, px / max(w, h))
            scaled += max(1, round(w * f)) * max(1, round(h * f))
        share = scaled / full
    if key[0] is not None:
        _PIXELS[key] = share
    return share


def _question_tokens(model: str, text: str | None) -> float:
    kind = model_spec(model).endpoint
    reference = INSTRUCTIONS if kind == "decisions" else QUESTION
    return len(text if text is not None else reference) / 4 + MESSAGE_TOKENS


def condition_tokens(model: str, guess: TokenGuess, condition, share: float | None) -> TokenGuess:
    """The reference guess moved to a condition: the image's tokens times its pixel share, the question's
    tokens for its text."""
    if condition is None or condition.is_reference or not (condition.px or condition.prompt):
        return guess
    text = _question_tokens(model, None)
    image = max(0.0, guess.prompt - text)
    basis = guess.basis
    if condition.px:
        if share is None:
            basis += "; pixels unknown, as the photos"
        else:
            image *= share
            basis += f"; image tokens x {share:.3g} (pixels)"
    if condition.prompt:
        basis += "; its question's length"
    return TokenGuess(image + _question_tokens(model, condition.prompt), guess.completion, basis)


def estimate_condition_costs(models: list[str], requests_per_model: int, pricing: dict[str, dict[str, float]],
                             past: dict[str, TokenGuess] | None, conditions, dataset=None,
                             past_conditions: dict | None = None) -> pl.DataFrame:
    """One row per (model, condition): the tokens assumed (an earlier run's average under the same spec, else
    the reference guess scaled as the module says), USD per photo and in all; cost_usd is null where no price
    is known."""
    import json

    rows = []
    shares = {c.name: pixel_share(dataset, c.px) if dataset is not None else (1.0 if not c.px else None)
              for c in conditions}
    for m in models:
        base = guess_tokens(m, past)
        p = pricing.get(m)
        for c in conditions:
            same = (past_conditions or {}).get((m, json.dumps(c.spec(), sort_keys=True))) \
                if not c.is_reference else None
            g = same or condition_tokens(m, base, c, shares[c.name])
            per = None if p is None else (g.prompt * p["prompt"] + g.completion * p["completion"] + p["image"]
                                          + p["request"])
            rows.append({"model": m, "condition": c.name, "requests": requests_per_model,
                         "prompt_tokens": round(g.prompt, 1), "completion_tokens": round(g.completion, 1),
                         "pixels": shares[c.name], "tokens_from": g.basis, "usd_per_photo": per,
                         "cost_usd": None if per is None else per * requests_per_model})
    return pl.DataFrame(rows, schema=schema(ESTIMATE_BY_CONDITION), orient="row" if not rows else None)
