"""Runs read back for the notebooks and the offline report: which runs exist, one run's files, and the tables
the report shows (leaderboard, accuracy by category, latency, limit traces, pairs, the gallery of misses).

Everything is computed from OUT/RUN/summary.json, the per-model parquet files and, when present, pairs.json.
Keys that other tools add to summary.json (accuracy_ci95, accuracy_by_category_ci95, by_provider, ...) are
used when there and skipped when not, so older runs still load.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..store.dataset import SAMPLE, file_sha256
from ..store.journal import read_header
from ..store.results import PARQUET_SCHEMA
from ..store.rundir import RunDir, list_runs


class RunNotFound(ValueError):
    """OUT/RUN is not a finished run; the message lists the runs that are."""


@dataclass
class RunData:
    name: str
    path: Path
    summaries: list[dict]
    frames: dict[str, pl.DataFrame] = field(default_factory=dict)  # model -> one row per photo (per repeat)
    pairs: list[dict] | None = None  # pairs.json, when a tool wrote one
    dataset_sha256: str | None = None  # from the journal header: which photo table the run asked about

    @property
    def models(self) -> list[str]:
        return [s["model"] for s in self.summaries]


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
        f = rundir.results(s["model"])
        frames[s["model"]] = pl.read_parquet(f) if f.is_file() else pl.DataFrame(schema=PARQUET_SCHEMA)
    pairs = _read_json(rundir.pairs)
    sha = None
    for m in (s["model"] for s in summaries):
        header = read_header(rundir.journal(m)) if rundir.journal(m).is_file() else None
        if header and header.get("dataset_sha256"):
            sha = header["dataset_sha256"]
            break
    return RunData(name, rundir.path, summaries, frames, pairs if isinstance(pairs, list) else None, sha)


def load_runs(out: str | Path, names: list[str]) -> list[RunData]:
    return [load_run(out, n) for n in names]


def _labelled(runs: list[RunData]):
    """(run, summary, label) for every model; the label carries the run name only when runs are compared."""
    multi = len(runs) > 1
    for run in runs:
        for s in run.summaries:
            yield run, s, (f"{run.name}/{s['model']}" if multi else s["model"])


def _ci(value) -> tuple[float | None, float | None]:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return float(value[0]), float(value[1])
    return None, None


LEADERBOARD_COLUMNS = {
    "label": pl.String, "run": pl.String, "model": pl.String, "photos": pl.Int64, "accuracy": pl.Float64,
    "accuracy_lo": pl.Float64, "accuracy_hi": pl.Float64, "balanced_accuracy": pl.Float64,
    "balanced_accuracy_lo": pl.Float64, "balanced_accuracy_hi": pl.Float64, "unanswered": pl.Int64,
    "errors": pl.Int64, "latency_p50_s": pl.Float64, "latency_p95_s": pl.Float64, "cost_usd": pl.Float64,
    "cost_per_1000_photos_usd": pl.Float64, "photos_per_s": pl.Float64, "throttles": pl.Int64,
    "final_limit": pl.Int64, "stopped": pl.String,
}


def leaderboard(runs: list[RunData]) -> pl.DataFrame:
    """One row per model (per run): the headline numbers, best accuracy first; CI bounds when recorded."""
    rows = []
    for run, s, label in _labelled(runs):
        conc = s.get("concurrency") or {}
        lo, hi = _ci(s.get("accuracy_ci95"))
        blo, bhi = _ci(s.get("balanced_accuracy_ci95"))
        rows.append({"label": label, "run": run.name, "model": s["model"], "photos": s.get("photos"),
                     "accuracy": s.get("accuracy"), "accuracy_lo": lo, "accuracy_hi": hi,
                     "balanced_accuracy": s.get("balanced_accuracy"), "balanced_accuracy_lo": blo,
                     "balanced_accuracy_hi": bhi, "unanswered": s.get("unanswered"), "errors": s.get("errors"),
                     "latency_p50_s": s.get("latency_p50_s"), "latency_p95_s": s.get("latency_p95_s"),
                     "cost_usd": s.get("cost_usd"), "cost_per_1000_photos_usd": s.get("cost_per_1000_photos_usd"),
                     "photos_per_s": s.get("photos_per_s"), "throttles": conc.get("throttles"),
                     "final_limit": conc.get("final_limit"), "stopped": s.get("stopped")})
    df = pl.DataFrame(rows, schema=LEADERBOARD_COLUMNS, orient="row" if not rows else None)
    return df.sort(["accuracy", "label"], descending=[True, False], nulls_last=True)


def category_accuracy(runs: list[RunData]) -> pl.DataFrame:
    """Long frame: label, run, model, category, accuracy, n (scored answered photos), lo, hi."""
    rows = []
    for run, s, label in _labelled(runs):
        frame = run.frames.get(s["model"])
        counts = {}
        if frame is not None and frame.height:
            answered = frame.filter(pl.col("scored") & pl.col("pred").is_not_null())
            counts = dict(answered.group_by("category").len().iter_rows())
        cis = s.get("accuracy_by_category_ci95") or {}
        for cat, acc in (s.get("accuracy_by_category") or {}).items():
            lo, hi = _ci(cis.get(cat))
            rows.append({"label": label, "run": run.name, "model": s["model"], "category": cat, "accuracy": acc,
                         "n": counts.get(cat, 0), "lo": lo, "hi": hi})
    schema = {"label": pl.String, "run": pl.String, "model": pl.String, "category": pl.String,
              "accuracy": pl.Float64, "n": pl.Int64, "lo": pl.Float64, "hi": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row" if not rows else None)


def _rows(runs: list[RunData], columns: list[str]) -> pl.DataFrame:
    parts = []
    for run, s, label in _labelled(runs):
        frame = run.frames.get(s["model"])
        if frame is None or not frame.height:
            continue
        cols = [c for c in columns if c in frame.columns]
        parts.append(frame.select(cols).with_columns(label=pl.lit(label), run=pl.lit(run.name),
                                                     model=pl.lit(s["model"])))
    return pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()


def latency_frame(runs: list[RunData]) -> pl.DataFrame:
    """label, model, run, category, latency_s: every request that came back without an error."""
    df = _rows(runs, ["category", "latency_s", "error"])
    if not df.height:
        return pl.DataFrame(schema={"label": pl.String, "run": pl.String, "model": pl.String,
                                    "category": pl.String, "latency_s": pl.Float64})
    return df.filter(pl.col("latency_s").is_not_null() & pl.col("error").is_null()).drop("error")


def trace_frame(runs: list[RunData]) -> pl.DataFrame:
    """label, t, limit: the in-flight limit over time, from the start value to the final one."""
    rows = []
    for run, s, label in _labelled(runs):
        conc = s.get("concurrency") or {}
        trace = [(float(t), int(lim)) for t, lim in conc.get("limit_trace") or []]
        if conc.get("start") is not None:
            trace.insert(0, (0.0, int(conc["start"])))
        if trace and s.get("wall_s") and s["wall_s"] > trace[-1][0]:
            trace.append((float(s["wall_s"]), trace[-1][1]))
        rows += [{"label": label, "run": run.name, "model": s["model"], "t": t, "limit": lim} for t, lim in trace]
    schema = {"label": pl.String, "run": pl.String, "model": pl.String, "t": pl.Float64, "limit": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row" if not rows else None)


def latency_by_in_flight(runs: list[RunData], bins: int = 8) -> pl.DataFrame:
    """p50/p95 latency per model in equal-width bins of the requests in flight when each was sent."""
    schema = {"label": pl.String, "bin": pl.Int64, "in_flight_lo": pl.Int64, "in_flight_hi": pl.Int64,
              "in_flight_mid": pl.Float64, "n": pl.UInt32, "p50_s": pl.Float64, "p95_s": pl.Float64}
    df = _rows(runs, ["latency_s", "error", "in_flight_at_send"])
    if not df.height or "in_flight_at_send" not in df.columns:
        return pl.DataFrame(schema=schema)
    df = df.filter(pl.col("latency_s").is_not_null() & pl.col("error").is_null()
                   & pl.col("in_flight_at_send").is_not_null())
    if not df.height:
        return pl.DataFrame(schema=schema)
    lo, hi = int(df["in_flight_at_send"].min()), int(df["in_flight_at_send"].max())
    width = max(1, -(-(hi - lo + 1) // bins))  # ceil: integer-wide bins covering lo..hi
    df = df.with_columns(bin=((pl.col("in_flight_at_send") - lo) // width).cast(pl.Int64))
    out = (df.group_by("label", "bin")
           .agg(n=pl.len(), p50_s=pl.col("latency_s").quantile(0.5, "nearest"),
                p95_s=pl.col("latency_s").quantile(0.95, "nearest"))
           .with_columns(in_flight_lo=pl.col("bin") * width + lo, in_flight_hi=pl.col("bin") * width + lo + width - 1)
           .with_columns(in_flight_mid=(pl.col("in_flight_lo") + pl.col("in_flight_hi")) / 2)
           .sort("label", "bin"))
    return out.select(list(schema)).cast(schema)


def pairs_frame(runs: list[RunData]) -> pl.DataFrame:
    """Every pair (a, b) from the runs' pairs.json and its mirror (b, a), so the matrix is full: accuracy a - b.
    `given` marks the rows as written in pairs.json (a table shows those; the matrix shows all)."""
    rows = []
    multi = len(runs) > 1
    for run in runs:
        for p in run.pairs or []:
            if not isinstance(p, dict) or "a" not in p or "b" not in p:
                continue
            a, b = (f"{run.name}/{p['a']}", f"{run.name}/{p['b']}") if multi else (p["a"], p["b"])
            diff = p.get("accuracy_diff")
            if diff is None and p.get("accuracy_a") is not None and p.get("accuracy_b") is not None:
                diff = p["accuracy_a"] - p["accuracy_b"]
            lo, hi = _ci(p.get("accuracy_diff_ci95"))
            base = {"mcnemar_p": p.get("mcnemar_p"), "both_answered": p.get("both_answered")}
            rows.append({"a": a, "b": b, "accuracy_diff": diff, "lo": lo, "hi": hi, **base,
                         "a_only_right": p.get("only_a_right"), "b_only_right": p.get("only_b_right"),
                         "given": True})
            rows.append({"a": b, "b": a, "accuracy_diff": None if diff is None else -diff,
                         "lo": None if hi is None else -hi, "hi": None if lo is None else -lo, **base,
                         "a_only_right": p.get("only_b_right"), "b_only_right": p.get("only_a_right"),
                         "given": False})
    schema = {"a": pl.String, "b": pl.String, "accuracy_diff": pl.Float64, "lo": pl.Float64, "hi": pl.Float64,
              "mcnemar_p": pl.Float64, "both_answered": pl.Int64, "a_only_right": pl.Int64,
              "b_only_right": pl.Int64, "given": pl.Boolean}
    return pl.DataFrame(rows, schema=schema, orient="row" if not rows else None)


def providers_frame(runs: list[RunData]) -> pl.DataFrame:
    """summary.json's by_provider, one row per (model, provider), when recorded."""
    rows = []
    for _, s, label in _labelled(runs):
        for prov, d in (s.get("by_provider") or {}).items():
            if isinstance(d, dict):
                lo, hi = _ci(d.get("accuracy_ci95"))
                rows.append({"label": label, "provider": prov, "photos": d.get("photos"),
                             "answered": d.get("answered"), "accuracy": d.get("accuracy"), "lo": lo, "hi": hi,
                             "latency_p50_s": d.get("latency_p50_s"), "latency_p95_s": d.get("latency_p95_s"),
                             "cost_usd": d.get("cost_usd")})
    schema = {"label": pl.String, "provider": pl.String, "photos": pl.Int64, "answered": pl.Int64,
              "accuracy": pl.Float64, "lo": pl.Float64, "hi": pl.Float64, "latency_p50_s": pl.Float64,
              "latency_p95_s": pl.Float64, "cost_usd": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row" if not rows else None)


EXTRA_KEYS = ("self_consistency",)  # written by other tools; shown as recorded when present


def extras_frame(runs: list[RunData], keys: tuple[str, ...] = EXTRA_KEYS) -> pl.DataFrame:
    """label, measure, value: summary keys this report has no chart for, as recorded (JSON for nested values)."""
    rows = []
    for _, s, label in _labelled(runs):
        for k in keys:
            if s.get(k) is not None:
                v = s[k]
                rows.append({"label": label, "measure": k,
                             "value": f"{v:.4g}" if isinstance(v, float) else json.dumps(v, sort_keys=True)})
    return pl.DataFrame(rows, schema={"label": pl.String, "measure": pl.String, "value": pl.String},
                        orient="row" if not rows else None)


def _verdicts(runs: list[RunData]) -> tuple[pl.DataFrame, list[str]]:
    """id, category, is_hot_dog, scored, and one column per label: the model's answer (majority over repeats)."""
    base, labels = None, []
    for run, s, label in _labelled(runs):
        if run.dataset_sha256 != runs[0].dataset_sha256:
            continue
        frame = run.frames.get(s["model"])
        if frame is None or not frame.height:
            continue
        v = (frame.group_by("id").agg(pl.first("category"), pl.first("is_hot_dog"), pl.first("scored"),
                                      yes=pl.col("pred").cast(pl.Int64).sum(), said=pl.col("pred").count())
             .with_columns(pl.when(pl.col("said") == 0).then(None)
                           .when(pl.col("yes") * 2 > pl.col("said")).then(True)
                           .when(pl.col("yes") * 2 < pl.col("said")).then(False)
                           .otherwise(None).alias(label)))
        keep = v.select("id", "category", "is_hot_dog", "scored", label)
        base = keep if base is None else base.join(keep.select("id", label), on="id", how="full", coalesce=True)
        labels.append(label)
    return (base if base is not None else pl.DataFrame()), labels


def gallery_rows(runs: list[RunData], limit: int = 48) -> list[dict]:
    """Scored photos some model got wrong or the models disagreed on, most missed first.

    Each row: id, category, is_hot_dog, wrong (labels that answered wrongly), answers {label: True/False/None}.
    Runs over another photo table than the first run's are left out (ids would not name the same photos).
    """
    df, labels = _verdicts(runs)
    if not labels:
        return []
    out = []
    for r in df.filter(pl.col("scored")).sort("id").iter_rows(named=True):
        answers = {lab: r[lab] for lab in labels}
        said = {v for v in answers.values() if v is not None}
        wrong = [lab for lab, v in answers.items() if v is not None and v != r["is_hot_dog"]]
        if wrong or len(said) > 1:
            out.append({"id": r["id"], "category": r["category"], "is_hot_dog": r["is_hot_dog"],
                        "wrong": wrong, "answers": answers})
    out.sort(key=lambda r: (-len(r["wrong"]), r["id"]))
    return out[:limit]


def bonus_rows(runs: list[RunData]) -> list[dict]:
    """The unscored photos (e.g. the Magritte painting): each model's answer, kept out of every score."""
    df, labels = _verdicts(runs)
    if not labels:
        return []
    return [{"id": r["id"], "category": r["category"], "answers": {lab: r[lab] for lab in labels}}
            for r in df.filter(~pl.col("scored")).sort("id").iter_rows(named=True)]


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
    """Where photo tables usually are: the bundled sample, then parquet files in ./data."""
    d = Path(data_dir)
    local = sorted(d.glob("*.parquet")) + sorted(d.glob("uploads/*.parquet")) if d.is_dir() else []
    return [SAMPLE] + [p for p in local if p.resolve() != SAMPLE.resolve()]
