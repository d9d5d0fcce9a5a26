"""One model's request: its kind and every byte of its body but the photo's, built once per run and model.

`Request.encode(image)` is json.dumps(body) with the reference's separators, exactly, without scanning the
base64 text for characters to escape (it has none), so a 100 KB photo costs little.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from functools import cached_property

from .answers import Outcome, classify
from .endpoint import Endpoint
from .endpoints import endpoint
from .models import model_spec

IMAGE_PLACEHOLDER = "<image bytes, base64>"


def image_data_url(image: bytes, mime: str = "image/jpeg") -> str:
    # The reference labels every image image/jpeg; kept so bodies stay identical across versions.
    return f"data:{mime};base64," + base64.b64encode(image).decode()


_URL_PREFIX = image_data_url(b"")  # "data:image/jpeg;base64,"


@dataclass(frozen=True)
class Request:
    model: str
    endpoint: Endpoint
    params: dict = field(default_factory=dict)

    @property
    def path(self) -> str:
        return self.endpoint.path

    def body(self, image: bytes) -> dict:
        """The request body for one photo: the same for every run of the same model and image."""
        return self.endpoint.body(self.model, self.params, image_data_url(image))

    def settings(self) -> dict:
        """Everything in the request except the model and the image: what a resume must match."""
        return self.endpoint.settings(self.params)

    def template(self) -> dict:
        """The exact body sent for every photo, with the image's base64 replaced by a placeholder."""
        return self.endpoint.body(self.model, self.params, _URL_PREFIX + IMAGE_PLACEHOLDER)

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

    def classify(self, status: int, headers, body: bytes) -> Outcome:
        return classify(status, headers, body, self.endpoint)


def request_for(model: str) -> Request:
    """How `model` is asked: its registry entry, or a plain chat request for any other id."""
    spec = model_spec(model)
    return Request(model, endpoint(spec.endpoint), dict(spec.params))


def body_for(model: str, image: bytes) -> dict:
    return request_for(model).body(image)
