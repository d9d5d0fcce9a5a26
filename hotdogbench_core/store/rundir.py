"""OUT/RUN/: the one place that names the files of a run.

    OUT/RUN/
      journal/<stem>.jsonl     append-only journal per model (the source of truth)
      <stem>.parquet           one row per photo (per repeat), rebuilt from the journal
      journal/<stem>@<condition>.jsonl, <stem>@<condition>.parquet
                               the same for a model under a condition other than the reference
      summary.json             a list, one object per model (per model and condition)
      pairs.json               every pair of models (and of a model's conditions), paired tests
      agreement.json           all the run's models together: Fleiss' kappa, the photos every model got wrong
      manifest.json            what was run: versions, settings, bodies, sessions
      live.json                the running process's heartbeat: state, pid, per-model counts (run/live.py)
      runner.log               what a run started by the notebook printed (its reason, when it exits at once)
      report_offline.html      the self-contained report
      run.lock                 held (flock) by the one process running the run; holds its PID

A model id becomes a file stem one-to-one: an ordinary id keeps the reference's name (`/` as `__`); any other
id (one with `__`, `_` beside `/`, characters outside [A-Za-z0-9._:-], or too long for a file name) gets a
readable prefix and a digest of the whole id, marked by `~`, which no ordinary stem contains. A condition's
files add `@<condition name>`: no model stem holds an `@` and no condition name does either, so (model,
condition) maps to a file one to one as well, and the reference condition keeps the plain stem (a run without
conditions, or from before them, is a run of the reference alone). Run names are single path components, so
no run writes outside OUT.
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from ..errors import FieldError
from ..protocol.conditions import REFERENCE

STEM_BYTES = 200  # a stem plus ".parquet.tmp" stays far under the 255-byte file name limit of common file systems
_ORDINARY = re.compile(r"[A-Za-z0-9.:\-]+(?:_[A-Za-z0-9.:\-]+)*(?:/[A-Za-z0-9.:\-]+(?:_[A-Za-z0-9.:\-]+)*)*")


class RunNameError(FieldError):
    """A run name that is not a single plain folder name."""

    field = "run_name"


def model_stem(model: str) -> str:
    """The file stem of a model id: injective (no two ids share a file) and within the file name limit."""
    if _ORDINARY.fullmatch(model) and not model.startswith(".") and len(model.encode()) <= STEM_BYTES:
        return model.replace("/", "__")
    return _digest_stem(model)


def _digest_stem(model: str) -> str:
    digest = hashlib.sha256(model.encode()).hexdigest()[:16]
    readable = re.sub(r"[^A-Za-z0-9.\-]+", "_", model).strip("._")[:60]
    return f"{readable}~{digest}"


def arm_stem(model: str, condition: str | None = None) -> str:
    """The file stem of a model under a condition: the model's own for the reference, else `<stem>@<name>`."""
    stem = model_stem(model)
    if condition in (None, REFERENCE):
        return stem
    if len(stem.encode()) + 1 + len(condition) > STEM_BYTES:  # a long id: its digest form leaves room
        stem = _digest_stem(model)
    return f"{stem}@{condition}"


def check_run_name(name: str) -> str:
    """The name itself, if it is one plain folder name; else RunNameError saying why."""
    if not isinstance(name, str) or not name.strip():
        raise RunNameError("is empty")
    if name != name.strip():
        raise RunNameError(f"{name!r} starts or ends with spaces")
    if "/" in name or "\\" in name or name in (".", "..") or name.startswith("."):
        raise RunNameError(f"{name!r} must be a plain folder name (no '/', not starting with '.')")
    if "\x00" in name or len(name.encode()) > STEM_BYTES:
        raise RunNameError(f"{name[:40]!r}... is not a usable folder name (too long, or a NUL byte)")
    return name


def list_runs(out: str | Path) -> list[str]:
    """Runs under OUT (folders with a summary.json), newest first."""
    out = Path(out)
    if not out.is_dir():
        return []
    runs = [p for p in out.iterdir() if (p / RunDir.SUMMARY).is_file()]
    return [p.name for p in sorted(runs, key=lambda p: ((p / RunDir.SUMMARY).stat().st_mtime, p.name), reverse=True)]


def run_folders(out: str | Path) -> list[str]:
    """Every folder under OUT that a run has written to (a journal, a heartbeat or a summary), by name."""
    out = Path(out)
    if not out.is_dir():
        return []
    marks = (RunDir.JOURNALS, RunDir.LIVE, RunDir.SUMMARY)
    return sorted(p.name for p in out.iterdir() if p.is_dir() and any((p / m).exists() for m in marks))


class RunDir:
    """The folder of one run and the names of its files."""

    SUMMARY = "summary.json"
    PAIRS = "pairs.json"
    AGREEMENT = "agreement.json"
    MANIFEST = "manifest.json"
    OFFLINE_REPORT = "report_offline.html"
    JOURNALS = "journal"
    LOCK = "run.lock"
    LIVE = "live.json"
    LOG = "runner.log"

    def __init__(self, out: str | Path, name: str):
        self.out = Path(out)
        self.name = check_run_name(name)
        self.path = self.out / self.name

    @classmethod
    def at(cls, path: str | Path) -> "RunDir":
        path = Path(path)
        return cls(path.parent, path.name)

    def __fspath__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    def check_place(self) -> "RunDir":
        """FieldError("out") when OUT (or a folder above it) or OUT/RUN is a file, not a folder."""
        for p in (self.path, self.out, *self.out.parents):
            if p.exists():
                if not p.is_dir():
                    raise FieldError(f"{p} is a file, not a folder: choose another results folder", "out")
                if p != self.path:
                    break
        return self

    def create(self) -> "RunDir":
        self.path.mkdir(parents=True, exist_ok=True)
        return self

    # -- files -----------------------------------------------------------------------------------------------
    @property
    def summary(self) -> Path:
        return self.path / self.SUMMARY

    @property
    def pairs(self) -> Path:
        return self.path / self.PAIRS

    @property
    def agreement(self) -> Path:
        return self.path / self.AGREEMENT

    @property
    def manifest(self) -> Path:
        return self.path / self.MANIFEST

    @property
    def offline_report(self) -> Path:
        return self.path / self.OFFLINE_REPORT

    @property
    def lock(self) -> Path:
        return self.path / self.LOCK

    def locked(self, command: str | None = None):
        """`with rundir.locked():` this process alone runs in the folder (RunLockedError names the holder)."""
        from .lock import RunLock

        return RunLock(self.lock, command)

    @property
    def live(self) -> Path:
        return self.path / self.LIVE

    @property
    def log(self) -> Path:
        return self.path / self.LOG

    @property
    def journal_dir(self) -> Path:
        return self.path / self.JOURNALS

    def journal(self, model: str, condition: str | None = None) -> Path:
        return self.journal_dir / f"{arm_stem(model, condition)}.jsonl"

    def results(self, model: str, condition: str | None = None) -> Path:
        return self.path / f"{arm_stem(model, condition)}.parquet"

    # -- what the folder holds -------------------------------------------------------------------------------
    def has_results(self) -> bool:
        return self.journal_dir.is_dir() and any(self.journal_dir.glob("*.jsonl"))

    def arms(self) -> dict[tuple[str, str], Path]:
        """(model, condition name) -> journal path, for every journal with a header naming its model (a header
        without a condition is the reference's)."""
        from .journal import read_header

        out = {}
        for path in sorted(self.journal_dir.glob("*.jsonl")):
            header = read_header(path) or {}
            model, cond = header.get("model"), header.get("condition")
            name = cond.get("name") if isinstance(cond, dict) else None
            if model and (cond is None or isinstance(name, str)):
                out[(model, name or REFERENCE)] = path
        return out

    def journals(self) -> dict[str, Path]:
        """model -> journal path, for every journal of the reference condition (every journal of a run without
        conditions)."""
        return {m: p for (m, c), p in self.arms().items() if c == REFERENCE}

    def summaries(self) -> list[dict] | None:
        """summary.json's list, or None when it is missing or not a list of objects with a model."""
        try:
            data = json.loads(self.summary.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, list) or not all(isinstance(s, dict) and isinstance(s.get("model"), str)
                                                 for s in data):
            return None
        return data

    def arm_order(self, first: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
        """The run's (model, condition) pairs with a journal: `first` in its order, then summary.json's, then by
        name."""
        have = self.arms()
        listed = [(s["model"], s["condition"] if isinstance(s.get("condition"), str) else REFERENCE)
                  for s in self.summaries() or []]
        order = list(first or []) + listed + sorted(have)
        seen: set = set()
        return [a for a in order if a in have and not (a in seen or seen.add(a))]

    def models(self, first: list[str] | None = None) -> list[str]:
        """The run's models (those with a journal): `first` in its order, then summary.json's, then by name."""
        have = self.journals()
        order = list(first or []) + [s["model"] for s in self.summaries() or []] + sorted(have)
        seen: set[str] = set()
        return [m for m in order if m in have and not (m in seen or seen.add(m))]
