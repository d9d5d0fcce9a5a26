"""Run-level files in OUT/RUN/: pairs.json (every pair of models, paired tests) and manifest.json (what was run).

pairs.json is rebuilt from the journals alone, so a resumed run and an uninterrupted one write the same file.
manifest.json is written when a session starts and completed when it ends; a resumed run keeps the first
start time and adds a session. Neither ever holds the API key: only RunSettings.public() and a base URL
stripped of any user, password, query or fragment are written.
"""
from __future__ import annotations

import importlib.metadata
import itertools
import json
import platform
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit, urlunsplit

from .._version import __version__

from ..stats import proportions as stats
from .journal import read_journal
from ..protocol.chat import MAX_TOKENS, QUESTION, SCHEMA
from ..protocol.decisions import INSTRUCTIONS as DECISIONS_INSTRUCTIONS
from ..protocol.request import request_for
from .results import Result, write_atomic

PAIRS_FILE = "pairs.json"
MANIFEST_FILE = "manifest.json"
MANIFEST_VERSION = 1
# Fallback when the installed distribution's metadata can't be read (e.g. run from a source tree copy).
CORE_PACKAGES = ("httpx", "httpx-aiohttp", "aiohttp", "duckdb", "polars", "pyarrow", "marimo", "altair",
                 "nest-asyncio")
PACKAGE_ROOT = Path(__file__).resolve().parents[2]


# -- which models a run holds -------------------------------------------------------------------------------
def run_journals(run_dir: Path | str) -> dict[str, Path]:
    """model -> journal path, for every journal in the run with a header naming its model."""
    out = {}
    for path in sorted((Path(run_dir) / "journal").glob("*.jsonl")):
        header = _first_line(path)
        if header.get("type") != "header":  # not where the runner writes it: read the whole journal
            header = read_journal(path).header or {}
        if header.get("model"):
            out[header["model"]] = path
    return out


def _first_line(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            obj = json.loads(f.readline())
        return obj if isinstance(obj, dict) else {}
    except (OSError, ValueError):
        return {}


def run_model_order(run_dir: Path | str, models: list[str] | None = None) -> list[str]:
    """The run's models: `models` first (in their order), then summary.json's order, then the rest by name."""
    run_dir = Path(run_dir)
    have = run_journals(run_dir)
    order = list(models or [])
    summary = run_dir / "summary.json"
    if summary.exists():
        try:
            order += [s.get("model") for s in json.loads(summary.read_text())]
        except (ValueError, AttributeError):
            pass
    order += sorted(have)
    seen, out = set(), []
    for m in order:
        if m in have and m not in seen:
            seen.add(m)
            out.append(m)
    return out


# -- pairs.json -----------------------------------------------------------------------------------------------
def pair_stats(a: str, b: str, results_a: list[Result], results_b: list[Result]) -> dict:
    """The paired comparison of two models over the scored repeat-0 photos both answered.

    only_a_right / only_b_right are McNemar's discordant counts; mcnemar_p is the exact two-sided test;
    accuracy_a, accuracy_b and accuracy_diff (a - b) are over the photos both answered, with Newcombe's (1998)
    method 10 interval for the paired difference.
    """
    def verdicts(rs):
        return {r.id: r.pred == r.is_hot_dog for r in rs if r.scored and r.repeat == 0 and r.pred is not None}

    va, vb = verdicts(results_a), verdicts(results_b)
    both = sorted(set(va) & set(vb))
    n11 = sum(va[i] and vb[i] for i in both)
    n10 = sum(va[i] and not vb[i] for i in both)
    n01 = sum(vb[i] and not va[i] for i in both)
    n00 = len(both) - n11 - n10 - n01
    n = len(both)
    p = stats.mcnemar_exact_p(n10, n01)
    return {
        "a": a, "b": b, "both_answered": n, "only_a_right": n10, "only_b_right": n01,
        "mcnemar_p": float(f"{p:.6g}"),
        "accuracy_a": round((n11 + n10) / n, 4) if n else None,
        "accuracy_b": round((n11 + n01) / n, 4) if n else None,
        "accuracy_diff": round((n10 - n01) / n, 4) if n else None,
        "accuracy_diff_ci95": stats.rounded(stats.paired_diff_interval(n11, n10, n01, n00)),
        "both_right": n11, "both_wrong": n00,
    }


def compute_pairs(run_dir: Path | str, models: list[str] | None = None) -> list[dict]:
    """Every pair (a, b) of the run's models, a before b in run order, from the journals.

    A pair whose journals name different dataset digests is left out: their photo ids don't match.
    """
    journals = run_journals(run_dir)
    order = run_model_order(run_dir, models)
    states = {m: read_journal(journals[m]) for m in order}
    out = []
    for a, b in itertools.combinations(order, 2):
        da, db = (states[a].header or {}).get("dataset_sha256"), (states[b].header or {}).get("dataset_sha256")
        if da != db:
            continue
        out.append(pair_stats(a, b, list(states[a].results.values()), list(states[b].results.values())))
    return out


def write_pairs(run_dir: Path | str, models: list[str] | None = None) -> Path:
    """OUT/RUN/pairs.json: a list of compute_pairs' objects ([] with fewer than two models)."""
    path = Path(run_dir) / PAIRS_FILE
    write_atomic(path, (json.dumps(compute_pairs(run_dir, models), indent=2) + "\n").encode())
    return path


# -- manifest.json --------------------------------------------------------------------------------------------
def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def public_base_url(url: str) -> str:
    """The base URL as it may be written down: scheme, host, port and path only (no user, password, query)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


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


def manifest_path(run_dir: Path | str) -> Path:
    return Path(run_dir) / MANIFEST_FILE


def read_manifest(run_dir: Path | str) -> dict | None:
    path = manifest_path(run_dir)
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError:
        return None


def _write(run_dir: Path | str, manifest: dict) -> Path:
    path = manifest_path(run_dir)
    write_atomic(path, (json.dumps(manifest, indent=2) + "\n").encode())
    return path


def start_manifest(run_dir: Path | str, dataset: Any, settings: Any, models: list[str], *, limiter: Any = None,
                   extra_settings: dict | None = None, now: Callable[[], str] = _now) -> Path:
    """Write manifest.json as a session starts (keeping an earlier session's start time and models).

    extra_settings: session settings that are not RunSettings (e.g. max_cost_usd), added to "settings"."""
    old = read_manifest(run_dir) or {}
    git = git_info()
    started = now()
    base_url = public_base_url(settings.base_url)
    public = {**(settings.public() if hasattr(settings, "public") else {}), "base_url": base_url,
              **(extra_settings or {})}
    photos = getattr(dataset, "photos", [])
    model_info = dict(old.get("models") or {})
    for m in models:
        request = request_for(m)
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
        "outcomes": dict(old.get("outcomes") or {}),
        "sessions": list(old.get("sessions") or []) + [
            {"started_at": started, "ended_at": None, "models": list(models), "hotdogbench_version": __version__,
             "git_commit": git["commit"], "stopped": None}],
    }
    return _write(run_dir, manifest)


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
