"""What a request kind is: the client's side (path, body, settings, reading the answer) and the server's side
(reading a request, shaping a reply), so that the runner and the simulator both dispatch on one object.

A kind is a subclass of Endpoint with a unique `name` and `path`, registered in protocol/endpoints.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from .answers import Outcome


class RequestRejected(ValueError):
    """A server of this kind would refuse the request (the simulator answers 400 with this message)."""


@dataclass(frozen=True)
class Asked:
    """What a server reads from one request: the photo, how much text came with it, and the kind's options."""
    image_url: Any
    text_chars: int
    max_tokens: int | None = None
    reasoning: dict | None = None  # the body's reasoning object, where the kind has one
    questions: tuple[str, ...] = ()  # question ids, where the kind asks several
    top_logprobs: int | None = None  # token log-probabilities asked for (logprobs: true), with this many alternatives


@dataclass(frozen=True)
class Reply:
    """What a server decided to answer, before the kind gives it its wire shape."""
    id: str
    model: str
    provider: str
    verdict: bool  # what it says (True: a hot dog)
    p: float  # its confidence in that verdict (> 0.5): P(hot dog) is p for a "yes", 1 - p for a "no"
    prompt_tokens: int
    reasoning_tokens: int = 0
    unanswered: str | None = None  # a text that gives no verdict ("I cannot tell."), instead of one
    fenced: bool = False  # the verdict wrapped in a ```json fence
    empty: bool = False  # billed, but no content at all
    extra: dict = field(default_factory=dict)
    logprobs: bool = True  # token log-probabilities come back when asked (False: a provider that drops them)


class Endpoint:
    """One request kind. Subclasses set name and path and implement the five methods."""

    name: ClassVar[str]
    path: ClassVar[str]
    # Body params that ask for token log-probabilities (the per-model opt-in adds them after the kind's own and
    # the model's params), or None for a kind that cannot be asked for them.
    logprobs: ClassVar[dict | None] = None
    # Where an answer's P(hot dog) comes from without asking ("noul": the Decisions API's probability), or None.
    probability: ClassVar[str | None] = None

    # -- the client's side ---------------------------------------------------------------------------------
    def body(self, model: str, params: dict, image_url: str, openrouter: bool = True) -> dict:
        """The request body for one photo (image_url: a data: URL); openrouter=False leaves out the parts only
        OpenRouter understands."""
        raise NotImplementedError

    def settings(self, params: dict, openrouter: bool = True) -> dict:
        """Everything in the body but the model and the photo: what a resume must match."""
        raise NotImplementedError

    def read_answer(self, data: dict, usage: dict, provider: str | None) -> Outcome:
        """A 200 body without a top-level error, as an outcome."""
        raise NotImplementedError

    # the settings key that holds the question's text (what a prompt condition changes)
    question_setting: ClassVar[str] = "question"

    def reword(self, body: dict, text: str) -> dict:
        """The body with its question's text replaced by `text` (a prompt condition); the rest unchanged."""
        raise NotImplementedError

    # -- the server's side (the simulator) ------------------------------------------------------------------
    def read_request(self, body: dict) -> Asked:
        """The photo and options of a request body; raises RequestRejected for one the kind cannot take."""
        raise NotImplementedError

    def reply(self, asked: Asked, reply: Reply, price) -> tuple[dict, float, bool]:
        """(response body, its cost, whether it carries a verdict); price(prompt, completion tokens) -> USD."""
        raise NotImplementedError


def find_image(items: Any) -> tuple[Any, int]:
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
