"""OUT/RUN/manifest.json: what was run (versions, dataset, settings, each model's exact body, sessions).

Written when a session starts and completed when it ends; a resumed run keeps the first start time and adds
a session. It never holds the API key: only RunSettings.public() and a base URL stripped of any user,
password, query or fragment are written.
"""
from __future__ import annotations

import importlib.metadata
import json
import platform
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from .._version import __version__

from ..protocol.chat import MAX_TOKENS, QUESTION, SCHEMA
from ..protocol.decisions import INSTRUCTIONS as DECISIONS_INSTRUCTIONS
from ..protocol.request import request_for
from ..protocol.transform import describe_transform
from .redact import public_url
from .atomic import write_json
from .rundir import RunDir

MANIFEST_VERSION = 1
# Fallback when the installed distribution's metadata can't be read (e.g. run from a source tree copy).
CORE_PACKAGES = ("httpx", "httpx-aiohttp", "aiohttp", "duckdb", "polars", "pyarrow", "marimo", "altair",
                 "nest-asyncio")
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


# -- manifest.json --------------------------------------------------------------------------------------------
def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def public_base_url(url: str) -> str:
    """The base URL as it may be written down: scheme, host, port and path only (no user, password, query)."""
    return public_url(url)


def git_info(root: Path = PACKAGE_ROOT) -> dict:
    """{"commit", "dirty"} of the hotdogbench source tree when it is a git checkout, else None values.

    Only the package's own checkout counts: an installed copy inside some other repository reports nothing.
    """
    none = {"commit": None, "dirty": None}
    if not (root / "pyproject.toml").exists() or not (root / "hotdogbench_core").is_dir():
        return none

    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5,
                              check=True).stdout.strip()
    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root.resolve():
            return none
        return {"commit": git("rev-parse", "HEAD"),
                "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (OSError, subprocess.SubprocessError):
        return none


def package_versions() -> dict[str, str | None]:
    """Installed versions of hotdogbench's runtime dependencies (None if one isn't installed)."""
    try:
        reqs = importlib.metadata.requires("hotdogbench") or []
        names = [re.match(r"[A-Za-z0-9_.\-]+", r).group(0) for r in reqs if "extra ==" not in r]
    except importlib.metadata.PackageNotFoundError:
        names = list(CORE_PACKAGES)
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def limiter_settings(settings: Any, limiter: Any = None) -> dict:
    """The concurrency settings, and the limiter's policy and constants when a limiter is given."""
    out = {"start_concurrency": getattr(settings, "start_concurrency", None),
           "max_concurrency": getattr(settings, "max_concurrency", None)}
    if limiter is not None:
        cls = type(limiter)
        out["policy"] = cls.__name__
        out["constants"] = {k: v for c in reversed(cls.__mro__) for k, v in vars(c).items()
                            if k.isupper() and isinstance(v, (int, float, str, bool))}
    return out


def read_manifest(run_dir: Path | str) -> dict | None:
    path = RunDir.at(run_dir).manifest
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError:
        return None


def _write(run_dir: Path | str, manifest: dict) -> Path:
    return write_json(RunDir.at(run_dir).manifest, manifest)


def condition_info(conditions: list, models: list[str], base_url: str, settings: Any) -> dict:
    """For each condition: its spec (and as written), its image transform, and for each model the request
    settings a resume must match and the exact body (the image a placeholder)."""
    out = {}
    for c in conditions:
        bodies = {}
        for m in models:
            request = settings.request(m, c) if hasattr(settings, "request") else \
                request_for(m, getattr(settings, "dialect", "openrouter"), c)
            bodies[m] = {"url": base_url + request.path, "request": request.settings(), "body": request.template()}
        out[c.name] = {"spec": c.spec(), "text": c.text(), "transform": describe_transform(c.px, c.q),
                       "models": bodies}
    return out


def start_manifest(run_dir: Path | str, dataset: Any, settings: Any, models: list[str], *, limiter: Any = None,
                   extra_settings: dict | None = None, statistics: dict | None = None,
                   now: Callable[[], str] = _now, conditions: list | None = None) -> Path:
    """Write manifest.json as a session starts (keeping an earlier session's start time, models and conditions).

    extra_settings: session settings that are not RunSettings (e.g. max_cost_usd), added to "settings";
    statistics: what the measures are computed with (bootstrap resamples and seed, ECE bins, power), written
    as "statistics" after the other keys; conditions: the run's conditions (None: a plain run, and no
    "conditions" key unless an earlier session of the run wrote one)."""
    old = read_manifest(run_dir) or {}
    git = git_info()
    started = now()
    base_url = public_base_url(settings.base_url)
    public = {**(settings.public() if hasattr(settings, "public") else {}), "base_url": base_url,
              **(extra_settings or {})}
    photos = getattr(dataset, "photos", [])
    model_info = dict(old.get("models") or {})
    for m in models:
        # settings.request(m): the run's own request (its dialect, log-probabilities when opted in)
        request = settings.request(m) if hasattr(settings, "request") else \
            request_for(m, getattr(settings, "dialect", "openrouter"))
        model_info[m] = {"url": base_url + request.path, "request": request.settings(), "body": request.template()}
    manifest = {
        "manifest_version": MANIFEST_VERSION,
        "run": Path(run_dir).name,
        "started_at": old.get("started_at") or started,
        "ended_at": None,
        "hotdogbench_version": __version__,
        "git_commit": git["commit"],
        "git_dirty": git["dirty"],
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation(),
                   "platform": platform.platform()},
        "packages": package_versions(),
        "dataset": {"path": str(getattr(dataset, "path", "")), "sha256": dataset.sha256, "rows": len(dataset),
                    "rows_per_category": dataset.categories(),
                    "scored_rows": sum(1 for p in photos if p.scored),
                    "unscored_ids": [p.id for p in photos if not p.scored]},
        "question": QUESTION,
        "schema": SCHEMA,
        "max_tokens": MAX_TOKENS,
        "decisions_instructions": DECISIONS_INSTRUCTIONS,
        "base_url": base_url,
        "settings": public,
        "limiter": limiter_settings(settings, limiter),
        "models": model_info,
        **_conditions_key(old, conditions, models, base_url, settings),
        "outcomes": dict(old.get("outcomes") or {}),
        "sessions": list(old.get("sessions") or []) + [
            {"started_at": started, "ended_at": None, "models": list(models), "hotdogbench_version": __version__,
             "git_commit": git["commit"], "stopped": None}],
    }
    if statistics is not None:
        manifest["statistics"] = statistics
    return _write(run_dir, manifest)


def _conditions_key(old: dict, conditions: list | None, models: list[str], base_url: str, settings: Any) -> dict:
    known = dict(old.get("conditions") or {})
    if conditions:
        for name, info in condition_info(conditions, models, base_url, settings).items():
            if name in known and known[name].get("spec") == info["spec"]:
                info["models"] = {**(known[name].get("models") or {}), **info["models"]}
            known[name] = info
    return {"conditions": known} if known else {}


def model_outcome(run: Any, summary: dict | None) -> dict:
    """How a model's session ended: finished, stopped (with the reason), interrupted or not started."""
    if summary is None:
        status = "interrupted" if getattr(run, "started_at", None) is not None else "not started"
    else:
        status = "stopped" if summary.get("stopped") else "finished"
    out = {"status": status, "done": getattr(run, "done", None), "total": getattr(run, "total", None)}
    if summary is not None:
        out.update({"stopped": summary.get("stopped"), "photos": summary.get("photos"),
                    "answered": summary.get("answered"), "accuracy": summary.get("accuracy"),
                    "wall_s": summary.get("wall_s"), "cost_usd_all_repeats": summary.get("cost_usd_all_repeats")})
    return out


def finish_manifest(run_dir: Path | str, outcomes: dict[str, dict], *, stopped: str | None = None,
                    now: Callable[[], str] = _now) -> Path | None:
    """Complete the session's entry in manifest.json: end time, each model's outcome, why it stopped."""
    manifest = read_manifest(run_dir)
    if manifest is None:
        return None
    ended = now()
    manifest["ended_at"] = ended
    manifest.setdefault("outcomes", {}).update(outcomes)
    if manifest.get("sessions"):
        manifest["sessions"][-1].update({"ended_at": ended, "stopped": stopped})
    return _write(run_dir, manifest)
