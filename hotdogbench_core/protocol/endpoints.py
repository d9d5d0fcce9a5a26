"""The request kinds hotdogbench can send, by name and by path: the runner and the simulator look them up here."""
from __future__ import annotations

from .chat import CHAT
from .decisions import DECISIONS
from .endpoint import Endpoint

ENDPOINTS: dict[str, Endpoint] = {e.name: e for e in (CHAT, DECISIONS)}
BY_PATH: dict[str, Endpoint] = {e.path: e for e in ENDPOINTS.values()}


def endpoint(name: str) -> Endpoint:
    try:
        return ENDPOINTS[name]
    except KeyError:
        raise ValueError(f"unknown request kind {name!r} (known: {', '.join(ENDPOINTS)})") from None
