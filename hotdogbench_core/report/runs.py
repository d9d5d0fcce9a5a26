"""Runs read back for the notebooks and the offline report: which runs exist, one run's files (summary.json,
the per-model parquet files, pairs.json, agreement.json), and the photo table a run asked about.

Keys that other tools add to summary.json are used when there and skipped when not, so older runs still load.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..protocol.conditions import arm_label
from ..stats.conditions import condition_of
from ..store.dataset import SAMPLE, file_sha256
from ..store.journal import read_header
from ..store.results import PARQUET_SCHEMA
from ..store.rundir import RunDir, list_runs  # noqa: F401 (list_runs: part of reading runs back)


class RunNotFound(ValueError):
    """OUT/RUN is not a finished run; the message lists the runs that are."""


@dataclass
class RunData:
    name: str
    path: Path
    summaries: list[dict]
    # one row per photo (per repeat), by arm: the model id, `model@condition` under a condition
    frames: dict[str, pl.DataFrame] = field(default_factory=dict)
    pairs: list[dict] | None = None  # pairs.json, when a tool wrote one
    dataset_sha256: str | None = None  # from the journal header: which photo table the run asked about
    agreement: dict | None = None  # agreement.json (Fleiss' kappa, the photos every model got wrong), when written

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(s["model"] for s in self.summaries))

    @property
    def has_conditions(self) -> bool:
        return any("condition" in s for s in self.summaries)

    def frame(self, summary: dict) -> pl.DataFrame | None:
        """The rows of a summary entry's model (under its condition)."""
        return self.frames.get(arm_label(summary["model"], summary.get("condition")))


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def load_run(out: str | Path, name: str) -> RunData:
    rundir = RunDir(out, name)
    summaries = rundir.summaries()
    if summaries is None:
        known = ", ".join(list_runs(out)) or "none"
        raise RunNotFound(f"{rundir.path} holds no readable summary.json (a list of model summaries; runs under "
                          f"{out}: {known})")
    frames = {}
    for s in summaries:
        f = rundir.results(s["model"], condition_of(s))
        frames[arm_label(s["model"], s.get("condition"))] = pl.read_parquet(f) if f.is_file() else \
            pl.DataFrame(schema=PARQUET_SCHEMA)
    pairs = _read_json(rundir.pairs)
    sha = None
    for m, c in ((s["model"], condition_of(s)) for s in summaries):
        header = read_header(rundir.journal(m, c)) if rundir.journal(m, c).is_file() else None
        if header and header.get("dataset_sha256"):
            sha = header["dataset_sha256"]
            break
    agreement = _read_json(rundir.agreement)
    return RunData(name, rundir.path, summaries, frames, pairs if isinstance(pairs, list) else None, sha,
                   agreement if isinstance(agreement, dict) else None)


def load_runs(out: str | Path, names: list[str]) -> list[RunData]:
    return [load_run(out, n) for n in names]


def find_dataset(run: RunData, candidates: list[str | Path], explicit: str | Path | None = None) -> Path | None:
    """The photo table a run asked about: `explicit` when given, else the candidate whose digest matches."""
    if explicit and Path(explicit).is_file():
        return Path(explicit)
    if run.dataset_sha256 is None:
        return None
    for c in candidates:
        p = Path(c)
        if p.is_file() and file_sha256(p) == run.dataset_sha256:
            return p
    return None


def dataset_candidates(data_dir: str | Path = "data") -> list[Path]:
    """Where photo tables usually are: the bundled sample, then parquet files in ./data (uploads, downloads)."""
    d = Path(data_dir)
    local = sorted(d.glob("*.parquet")) + sorted(d.glob("uploads/*.parquet")) + sorted(d.glob("downloads/*.parquet")) \
        if d.is_dir() else []
    return [SAMPLE] + [p for p in local if p.resolve() != SAMPLE.resolve()]
