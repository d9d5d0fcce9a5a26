"""One model's request: its kind and every byte of its body but the photo's, built once per run and model.

Two dialects: "openrouter" (the reference's bodies, byte for byte) and "openai" (any other OpenAI-compatible
server: the parts only OpenRouter understands, usage.include, provider routing and the reasoning object, are
left out). `Request.encode(image)` is json.dumps(body) with the reference's separators, exactly, without
scanning the base64 text for characters to escape (it has none), so a 100 KB photo costs little.
"""
from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field, replace
from functools import cached_property

from .answers import Answer, Outcome, classify, stated_rate
from .conditions import Condition
from .endpoint import Endpoint
from .endpoints import endpoint
from .models import model_spec

IMAGE_PLACEHOLDER = "<image bytes, base64>"
DIALECTS = ("openrouter", "openai")
OPENROUTER_ONLY = ("provider", "reasoning", "usage", "transforms", "route", "models", "plugins")
COST_HEADERS = ("x-litellm-response-cost",)  # gateways that report cost beside the body, not in it


def image_data_url(image: bytes, mime: str = "image/jpeg") -> str:
    # The reference labels every image image/jpeg; kept so bodies stay identical across versions.
    return f"data:{mime};base64," + base64.b64encode(image).decode()


_URL_PREFIX = image_data_url(b"")  # "data:image/jpeg;base64,"


def header_cost(headers) -> float | None:
    """USD from a gateway's cost header, when there is one and it is a finite number >= 0."""
    for name in COST_HEADERS:
        value = headers.get(name) if headers is not None else None
        try:
            cost = float(value) if value is not None else None
        except (TypeError, ValueError):
            cost = None
        if cost is not None and math.isfinite(cost) and cost >= 0:
            return cost
    return None


@dataclass(frozen=True)
class Request:
    model: str
    endpoint: Endpoint
    params: dict = field(default_factory=dict)
    dialect: str = "openrouter"
    logprobs: bool = False  # the opt-in: ask for token log-probabilities (kinds that have them; see request_for)
    # A condition's question text and provider routing (its image transform is applied to the photo before
    # encode()); None, or the reference condition: the model's own request, byte for byte.
    condition: Condition | None = None

    @property
    def path(self) -> str:
        return self.endpoint.path

    @property
    def openrouter(self) -> bool:
        return self.dialect == "openrouter"

    @property
    def _params(self) -> dict:
        params = self.params if self.condition is None else self.condition.params(self.params)
        if not self.openrouter:
            params = {k: v for k, v in params.items() if k not in OPENROUTER_ONLY}
        if self.logprobs and self.endpoint.logprobs:
            params = {**params, **self.endpoint.logprobs}  # after the model's own: the default body is untouched
        return params

    @property
    def probability(self) -> str | None:
        """Where the rows' p_hot_dog comes from: "noul" (Decisions), "logprobs" (chat, opted in), or None."""
        if self.endpoint.probability:
            return self.endpoint.probability
        return "logprobs" if self.logprobs and self.endpoint.logprobs else None

    @property
    def _prompt(self) -> str | None:
        return self.condition.prompt if self.condition is not None else None

    def _body(self, image_url: str) -> dict:
        body = self.endpoint.body(self.model, self._params, image_url, self.openrouter)
        return body if self._prompt is None else self.endpoint.reword(body, self._prompt)

    def body(self, image: bytes) -> dict:
        """The request body for one photo: the same for every run of the same model, image and dialect."""
        return self._body(image_data_url(image))

    def settings(self) -> dict:
        """Everything in the request except the model and the image: what a resume must match."""
        out = self.endpoint.settings(self._params, self.openrouter)
        if self._prompt is not None:
            out = {**out, self.endpoint.question_setting: self._prompt}
        return out if self.openrouter else {**out, "dialect": self.dialect}

    def template(self) -> dict:
        """The exact body sent for every photo, with the image's base64 replaced by a placeholder."""
        return self._body(_URL_PREFIX + IMAGE_PLACEHOLDER)

    @cached_property
    def _halves(self) -> tuple[bytes, bytes]:
        wire = json.dumps(self.body(b""), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        head, sep, tail = wire.partition(f'"{_URL_PREFIX}"')
        if not sep or f'"{_URL_PREFIX}"' in tail:
            raise AssertionError(f"cannot template the body of {self.model}")  # the image must appear exactly once
        return (head + '"' + _URL_PREFIX).encode(), ('"' + tail).encode()

    def encode(self, image: bytes) -> bytes:
        head, tail = self._halves
        return b"".join((head, base64.b64encode(image), tail))

    def classify(self, status: int, headers, body: bytes, now: float | None = None) -> Outcome:
        outcome = classify(status, headers, body, self.endpoint, now)
        if isinstance(outcome, Answer) and outcome.cost_usd is None:
            cost = header_cost(headers)
            if cost is not None:
                outcome = replace(outcome, cost_usd=cost)
        if isinstance(outcome, Answer):
            rate = stated_rate(headers)
            if rate is not None:
                outcome = replace(outcome, stated_rate=rate)
        return outcome


def request_for(model: str, dialect: str = "openrouter", condition: Condition | None = None, *,
                logprobs: bool = False) -> Request:
    """How `model` is asked: its registry entry, or a plain chat request for any other id; under `condition`,
    with its question and provider routing. logprobs: the per-model opt-in for token log-probabilities; it adds
    the kind's `logprobs` params (chat: logprobs true, top_logprobs 5) at the end of the body, and changes
    nothing for a kind without them (Decisions answers with a probability already)."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    spec = model_spec(model)
    ep = endpoint(spec.endpoint)
    cond = None if condition is None or condition.is_reference else condition
    return Request(model, ep, dict(spec.params), dialect, bool(logprobs and ep.logprobs), cond)


def body_for(model: str, image: bytes) -> dict:
    return request_for(model).body(image)
