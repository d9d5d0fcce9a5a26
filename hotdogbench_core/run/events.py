"""What a run reports as it goes: a UI subscribes to these (run_models(on_event=...)) and draws them."""
from __future__ import annotations

from dataclasses import dataclass

from ..limit.aimd import LimitChange
from ..store.results import Result


@dataclass(frozen=True)
class ModelStarted:
    model: str
    total: int
    already_done: int


@dataclass(frozen=True)
class PhotoDone:
    model: str
    result: Result
    done: int
    total: int


@dataclass(frozen=True)
class LimitChanged:
    model: str
    change: LimitChange


@dataclass(frozen=True)
class ModelFinished:
    model: str
    summary: dict


@dataclass(frozen=True)
class Notice:
    """Something the user should read before or during the run (a warning), for one model or the whole run."""
    model: str | None
    text: str


Event = ModelStarted | PhotoDone | LimitChanged | ModelFinished | Notice
