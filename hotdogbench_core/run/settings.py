"""What a run is told (RunSettings) and what it reports (events): shared by the runner, the CLI and notebooks."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..limit.adaptive import AdaptiveLimiter
from ..limit.aimd import AIMDLimiter, LimitChange
from ..store.results import Result

DEFAULT_BASE_URL = "https://openrouter.ai/api"
# In-flight limit policies: "adaptive" (AdaptiveLimiter, the default) or "reference" (the original script's AIMD).
LIMITERS = {"adaptive": AdaptiveLimiter, "reference": AIMDLimiter}
LIMITER_POLICIES = tuple(LIMITERS)


class RunError(RuntimeError):
    """A run cannot start or go on; the message says why and what to do."""


@dataclass
class RunSettings:
    api_key: str = field(repr=False)  # never printed, logged or written
    base_url: str = DEFAULT_BASE_URL
    start_concurrency: int = 8
    max_concurrency: int = 256
    request_timeout: float = 120.0
    max_attempts: int = 8
    max_backoff_s: float = 20.0
    repeats: int = 1  # ask each photo this many times (self-consistency)
    seed: int | None = None  # for the back-off jitter
    limiter: str = "adaptive"  # in-flight limit policy: "adaptive" or "reference" (see LIMITERS)

    def __post_init__(self):
        if self.start_concurrency < 1:
            raise ValueError(f"--start-concurrency must be >= 1, got {self.start_concurrency}")
        if self.max_concurrency < self.start_concurrency:
            raise ValueError(f"--max-concurrency ({self.max_concurrency}) must be >= --start-concurrency "
                             f"({self.start_concurrency})")
        if self.repeats < 1:
            raise ValueError(f"--repeats must be >= 1, got {self.repeats}")
        if self.request_timeout <= 0:
            raise ValueError(f"--request-timeout must be > 0, got {self.request_timeout}")
        if self.limiter not in LIMITERS:
            raise ValueError(f"--limiter must be one of {', '.join(LIMITERS)}, got {self.limiter!r}")
        self.base_url = self.base_url.rstrip("/")

    def public(self) -> dict:
        """The settings as they may be written down: everything but the key."""
        return {"base_url": self.base_url, "start_concurrency": self.start_concurrency,
                "max_concurrency": self.max_concurrency, "request_timeout": self.request_timeout,
                "max_attempts": self.max_attempts, "repeats": self.repeats, "limiter": self.limiter}


# -- events ------------------------------------------------------------------------------------------------
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


Event = ModelStarted | PhotoDone | LimitChanged | ModelFinished
