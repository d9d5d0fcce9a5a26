"""What a run is told (RunSettings), made by one function (build_settings) that the CLI, the notebooks and
the Python API share: defaults, the key rule (a loopback server needs none) and every check live here."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from urllib.parse import urlsplit, urlunsplit

from ..errors import FieldError, RunError  # noqa: F401 (RunError: callers import it from here too)
from ..limit.aimd import AIMDLimiter
from ..limit.paced import PacedLimiter
from ..protocol.models import FREE_CAP
from ..protocol.request import DIALECTS, Request, request_for
from ..store.redact import public_url
from .keys import find_key

DEFAULT_BASE_URL = "https://openrouter.ai/api"
LOCAL_KEY = "sk-local-no-key"  # sent to a loopback server when no key is set (it needs one only in form)
# In-flight limit policies: "adaptive" (PacedLimiter, the default) or "reference" (the original script's AIMD).
LIMITERS = {"adaptive": PacedLimiter, "reference": AIMDLimiter}
LIMITER_POLICIES = tuple(LIMITERS)


class SettingsError(FieldError):
    """A setting that cannot be used; `field` names it."""


def is_openrouter(url: str) -> bool:
    """Is this base URL OpenRouter's own API?"""
    host = (urlsplit(url).hostname or "").lower()
    return host == "openrouter.ai" or host.endswith(".openrouter.ai")


def is_loopback(url: str) -> bool:
    """Does this base URL point at this machine (the simulator, a local gateway)?"""
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


@dataclass
class RunSettings:
    api_key: str = field(repr=False)  # never printed, logged or written
    base_url: str = DEFAULT_BASE_URL
    start_concurrency: int = 8
    max_concurrency: int = 256
    request_timeout: float = 120.0
    max_attempts: int = 8  # attempts per photo for the reference; for adaptive, failed ones (5xx, timeouts) only
    max_backoff_s: float = 20.0
    # adaptive: a photo gives up only after the server refused it for this long, plus the longest wait it asked
    # (Retry-After or a reset hint). 180 s outlasts a minute's window three times over; 8 attempts ran out in ~25 s.
    retry_budget_s: float = 180.0
    # A refusal that asks for a longer wait than this (Retry-After or a reset hint: a spent hourly or daily quota,
    # as a free model's) stops the model instead of holding the run for it: its answers are kept and a resume asks
    # the rest. 15 minutes: five retry budgets; a minute's window, or a gateway's fixed 60 s, is far under it.
    max_wait_s: float = 900.0
    repeats: int = 1  # ask each photo this many times (self-consistency)
    seed: int | None = None  # for the back-off jitter
    limiter: str = "adaptive"  # in-flight limit policy: "adaptive" or "reference" (see LIMITERS)
    # The server's dialect: "openrouter" (the reference's bodies), "openai" (any other OpenAI-compatible server:
    # no OpenRouter-only body parts), or "auto": OpenRouter's host, or a /v1/models listing shaped like its own.
    api: str = "auto"
    # A body still arriving this long after its headers is a stalled attempt (retried), whatever the deadline
    # of the whole exchange: a verdict is a few hundred bytes, so even a slow server sends it within seconds.
    body_timeout: float = 10.0
    # The per-model opt-in for token log-probabilities: model ids (or "*" for every model) whose chat body asks
    # for them (logprobs true, top_logprobs 5), so each row gets p_hot_dog for the calibration measures. It
    # changes those bodies, so it is part of the request settings a resume must match. Given as a tuple, a
    # list, "id,id", "all", or True (every model).
    logprobs: tuple[str, ...] = ()
    # A cap the user knows, requests per second per model (None: none known): the pace never goes over it, from
    # the first send. The adaptive limiter finds a hidden cap by going over it now and then (at 20 a minute about
    # one request in five is refused); told the cap, it need not (a free model's is known: protocol.models). Given
    # as a number or as "20/min", "5/s", "300/h". The adaptive limiter only (the reference has no pacer).
    max_rate: float | None = None

    def __post_init__(self):
        self.logprobs = parse_logprobs(self.logprobs)
        self.max_rate = parse_rate(self.max_rate)
        if self.max_rate is not None and self.limiter != "adaptive":
            raise SettingsError(f"paces the adaptive limiter, not {self.limiter!r}: drop it, or use the adaptive "
                                "limiter", "max_rate")
        for name in ("start_concurrency", "max_concurrency", "max_attempts", "repeats"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise SettingsError(f"must be a whole number, got {value!r}", name)
        for name in ("request_timeout", "max_backoff_s", "body_timeout", "retry_budget_s", "max_wait_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value <= 0:
                raise SettingsError(f"must be a number of seconds above 0, got {value!r}", name)
        if self.start_concurrency < 1:
            raise SettingsError(f"must be at least 1, got {self.start_concurrency}", "start_concurrency")
        if self.max_concurrency < self.start_concurrency:
            raise SettingsError(f"({self.max_concurrency}) must be at least the start concurrency "
                                f"({self.start_concurrency})", "max_concurrency")
        if self.repeats < 1:
            raise SettingsError(f"must be at least 1, got {self.repeats}", "repeats")
        if self.max_attempts < 1:
            raise SettingsError(f"must be at least 1, got {self.max_attempts}", "max_attempts")
        if self.api not in ("auto", *DIALECTS):
            raise SettingsError(f"must be one of auto, {', '.join(DIALECTS)}, got {self.api!r}", "api")
        if self.limiter not in LIMITERS:
            raise SettingsError(f"must be one of {', '.join(LIMITERS)}, got {self.limiter!r}", "limiter")
        if not isinstance(self.base_url, str) or not self.base_url.startswith(("http://", "https://")):
            raise SettingsError(f"must start with http:// or https://, got {_scheme(self.base_url)!r}", "base_url")
        _check_url(self.base_url)
        self.base_url = self.base_url.rstrip("/")

    def limiter_for(self, key=None, known_rate: float | None = None):
        """A model's limiter: this run's policy; on `key` (adaptive policy only: a limit.KeyCoordinator of models
        sharing a key, or the limit.KeyBoard of the processes on it), a member of it. known_rate: requests a second
        the model is known to be allowed (protocol.models.known_rates: a free model's slice of its 20 a minute), its
        max rate from the first send unless the user gave one."""
        start, cap = self.start_concurrency, self.max_concurrency
        if self.limiter != "adaptive":
            return LIMITERS[self.limiter](start, cap)
        limiter = PacedLimiter(start, cap, max_rate=self.max_rate) if key is None else \
            key.member(start, cap, max_rate=self.max_rate)
        if known_rate:
            limiter.stated(known_rate, FREE_CAP)
        return limiter

    def wants_logprobs(self, model: str) -> bool:
        return "*" in self.logprobs or model in self.logprobs

    def request(self, model: str, condition=None) -> Request:
        """How `model` is asked in this run: its registry entry, in this run's dialect, with log-probabilities
        when it is opted in; under `condition` (protocol/conditions.py), with its question and provider."""
        return request_for(model, self.dialect, condition, logprobs=self.wants_logprobs(model))

    def url_for(self, path: str) -> str:
        """base_url with `path` appended to its path (a query, e.g. ?token=..., stays at the end)."""
        return url_with_path(self.base_url, path)

    def public(self) -> dict:
        """The settings as they may be written down: everything but the key."""
        return {"base_url": public_url(self.base_url), "start_concurrency": self.start_concurrency,
                "max_concurrency": self.max_concurrency, "request_timeout": self.request_timeout,
                "max_attempts": self.max_attempts, "retry_budget_s": self.retry_budget_s,
                "max_wait_s": self.max_wait_s, "repeats": self.repeats,
                "limiter": self.limiter, "api": self.api, "body_timeout": self.body_timeout,
                "logprobs": list(self.logprobs), "max_rate_per_s": self.max_rate}

    @property
    def dialect(self) -> str:
        """The dialect bodies are written in ("auto" not yet resolved by a preflight: OpenRouter's, as before)."""
        return "openrouter" if self.api == "auto" else self.api


def parse_logprobs(value) -> tuple[str, ...]:
    """The logprobs opt-in as a tuple of model ids, "*" meaning every model (module RunSettings.logprobs)."""
    if value is None or value is False:
        return ()
    if value is True:
        return ("*",)
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"must be model ids (comma-separated), 'all', or true/false, got {value!r}", "logprobs")
    ids = [v.strip() for v in value if v.strip()]
    if any(v in ("*", "all") for v in ids):
        return ("*",)
    return tuple(dict.fromkeys(ids))


RATE_UNITS = {"s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hour": 3600.0}  # "N/unit": per seconds
SLOWEST_RATE = 1 / 3600  # a max rate under one an hour would hold a run for hours: a daily quota is max_wait_s's


def parse_rate(value) -> float | None:
    """A rate in requests per second, from a number or "N/s", "N/min", "N/h" (RunSettings.max_rate)."""
    if value is None or value == "":
        return None
    count, _, unit = str(value).strip().lower().partition("/")
    try:
        rate = (float(value) if not isinstance(value, str) else float(count)) / RATE_UNITS[unit.strip() or "s"]
    except (ValueError, TypeError, KeyError):
        rate = math.nan
    if isinstance(value, bool) or not math.isfinite(rate) or rate <= 0:
        raise SettingsError(f"must be requests per second above 0, or N/s, N/min, N/h (as 20/min), got {value!r}",
                            "max_rate")
    if rate < SLOWEST_RATE * (1 - 1e-9):
        raise SettingsError(f"must be at least 1/h, got {value!r} (a daily quota: leave it out; a refusal that asks "
                            "for a wait past --max-wait-s stops the model, resumable)", "max_rate")
    return rate


def url_with_path(base_url: str, path: str) -> str:
    """`path` appended to the URL's path; its query (e.g. ?token=...) stays at the end."""
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + path, parts.query, ""))


def _scheme(url) -> str:
    """What may be shown of a URL that is refused: its scheme (the rest may hold a password)."""
    return (str(url).split("://", 1)[0] + "://...") if "://" in str(url) else str(url)[:20]


def _check_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port
    except ValueError as e:
        raise SettingsError(f"is not a usable URL ({e})", "base_url") from None
    if not parts.hostname:
        raise SettingsError("has no host name", "base_url")
    if parts.username is not None or parts.password is not None:
        raise SettingsError("holds a user name or password (user:...@host): the key goes in the Authorization "
                            "header, which cannot carry both; remove them from the URL (give the key as "
                            "OPENROUTER_API_KEY)", "base_url")
    if parts.fragment:
        raise SettingsError("has a #fragment, which is never sent: remove it", "base_url")


SETTING_NAMES = tuple(f.name for f in fields(RunSettings))


def build_settings(*, api_key: str | None = None, base_url: str | None = None, **values) -> RunSettings:
    """RunSettings from what a user gave (None: the default). The key: `api_key`, else OPENROUTER_API_KEY (or
    ./.env); a loopback base URL needs none. Raises SettingsError naming the field."""
    unknown = set(values) - set(SETTING_NAMES)
    if unknown:
        raise SettingsError(f"unknown setting(s) {', '.join(sorted(unknown))}", sorted(unknown)[0])
    given = {k: v for k, v in values.items() if v is not None}
    base_url = (base_url or DEFAULT_BASE_URL).strip()
    if not base_url.startswith(("http://", "https://")):
        raise SettingsError(f"must start with http:// or https://, got {_scheme(base_url)!r}", "base_url")
    key = api_key or find_key()
    if not key:
        if not is_loopback(base_url):
            raise SettingsError("no key: set OPENROUTER_API_KEY (or OPENROUTER_TOKEN), or put it in ./.env; "
                                "to try the harness without one, use the simulator", "api_key")
        key = LOCAL_KEY
    return RunSettings(api_key=key, base_url=base_url, **given)
