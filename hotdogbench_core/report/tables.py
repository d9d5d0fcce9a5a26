"""The tables the reports show, each a polars frame built from runs read back (report/runs.py): the leaderboard,
accuracy by category, latency, limit traces, pairs, providers, the gallery of misses.

Each frame's columns are declared once (report/format.Col: name, label, kind); the leaderboard's metrics come
from stats/metrics.METRICS. Charts (report/charts.py) and tables (format.table_html) read those declarations.
"""
from __future__ import annotations

import json

import polars as pl

from ..protocol.conditions import arm_label
from ..stats.metrics import METRICS
from .format import Col, metric_col, schema
from .runs import RunData


def labelled(runs: list[RunData]):
    """(run, summary, label) for every model (under each condition: `model@condition`); the label carries the
    run name only when runs are compared."""
    multi = len(runs) > 1
    for run in runs:
        for s in run.summaries:
            arm = arm_label(s["model"], s.get("condition"))
            yield run, s, (f"{run.name}/{arm}" if multi else arm)


def ci(value) -> tuple[float | None, float | None]:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return float(value[0]), float(value[1])
    return None, None


def _metric_cols() -> tuple[Col, ...]:
    cols: list[Col] = []
    for m in METRICS:
        cols.append(metric_col(m))
        if m.ci:
            cols += [Col(f"{m.column}_lo", f"{m.label} 95% CI low", m.kind, False),
                     Col(f"{m.column}_hi", f"{m.label} 95% CI high", m.kind, False)]
    return tuple(cols)


LEADERBOARD = (Col("label", "model", "text"), Col("run", "run", "text", False), Col("model", "model id", "text", False),
               *_metric_cols(), Col("stopped", "stopped", "text", False))


def leaderboard(runs: list[RunData]) -> pl.DataFrame:
    """One row per model (per run): the metrics of stats/metrics.py, best accuracy first; CI bounds when recorded."""
    rows = []
    for run, s, label in labelled(runs):
        row = {"label": label, "run": run.name, "model": s["model"], "stopped": s.get("stopped")}
        for m in METRICS:
            row[m.column] = m.value(s)
            if m.ci:
                row[f"{m.column}_lo"], row[f"{m.column}_hi"] = ci(m.interval(s))
        rows.append(row)
    df = pl.DataFrame(rows, schema=schema(LEADERBOARD), orient="row" if not rows else None)
    return df.sort(["accuracy", "label"], descending=[True, False], nulls_last=True)


CATEGORY = (Col("label", "model", "text"), Col("run", "run", "text", False), Col("model", "model id", "text", False),
            Col("category", "category", "text"), Col("accuracy", "accuracy", "pct"),
            Col("n", "answered photos", "count"), Col("lo", "95% CI low", "pct", False),
            Col("hi", "95% CI high", "pct", False))


def category_accuracy(runs: list[RunData]) -> pl.DataFrame:
    """Long frame: label, run, model, category, accuracy, n (scored answered photos), lo, hi."""
    rows = []
    for run, s, label in labelled(runs):
        frame = run.frame(s)
        counts = {}
        if frame is not None and frame.height:
            answered = frame.filter(pl.col("scored") & pl.col("pred").is_not_null())
            counts = dict(answered.group_by("category").len().iter_rows())
        cis = s.get("accuracy_by_category_ci95") or {}
        for cat, acc in (s.get("accuracy_by_category") or {}).items():
            lo, hi = ci(cis.get(cat))
            rows.append({"label": label, "run": run.name, "model": s["model"], "category": cat, "accuracy": acc,
                         "n": counts.get(cat, 0), "lo": lo, "hi": hi})
    return pl.DataFrame(rows, schema=schema(CATEGORY), orient="row" if not rows else None)


def _rows(runs: list[RunData], columns: list[str]) -> pl.DataFrame:
    parts = []
    for run, s, label in labelled(runs):
        frame = run.frame(s)
        if frame is None or not frame.height:
            continue
        cols = [c for c in columns if c in frame.columns]
        parts.append(frame.select(cols).with_columns(label=pl.lit(label), run=pl.lit(run.name),
                                                     model=pl.lit(s["model"])))
    return pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()


LATENCY = (Col("label", "model", "text"), Col("run", "run", "text", False), Col("model", "model id", "text", False),
           Col("category", "category", "text"), Col("latency_s", "latency (s)", "seconds"))
TRACE = (Col("label", "model", "text"), Col("run", "run", "text", False), Col("model", "model id", "text", False),
         Col("t", "seconds since the model started", "seconds"), Col("limit", "in-flight limit", "count"))


def latency_frame(runs: list[RunData]) -> pl.DataFrame:
    """label, model, run, category, latency_s: every request that came back without an error."""
    df = _rows(runs, ["category", "latency_s", "error"])
    if not df.height:
        return pl.DataFrame(schema=schema(LATENCY))
    return df.filter(pl.col("latency_s").is_not_null() & pl.col("error").is_null()).drop("error")


def trace_frame(runs: list[RunData]) -> pl.DataFrame:
    """label, t, limit: the in-flight limit over time, from the start value to the final one."""
    rows = []
    for run, s, label in labelled(runs):
        conc = s.get("concurrency") or {}
        trace = [(float(t), int(lim)) for t, lim in conc.get("limit_trace") or []]
        if conc.get("start") is not None:
            trace.insert(0, (0.0, int(conc["start"])))
        if trace and s.get("wall_s") and s["wall_s"] > trace[-1][0]:
            trace.append((float(s["wall_s"]), trace[-1][1]))
        rows += [{"label": label, "run": run.name, "model": s["model"], "t": t, "limit": lim} for t, lim in trace]
    return pl.DataFrame(rows, schema=schema(TRACE), orient="row" if not rows else None)


LATENCY_BY_LOAD = (Col("label", "model", "text"), Col("bin", "bin", "count", False),
                   Col("in_flight_lo", "in flight from", "count"),
                   Col("in_flight_hi", "in flight to", "count"), Col("in_flight_mid", "in flight (mid)", "rate", False),
                   Col("n", "requests", "count"), Col("p50_s", "p50 latency (s)", "seconds"),
                   Col("p95_s", "p95 latency (s)", "seconds"))


def latency_by_in_flight(runs: list[RunData], bins: int = 8) -> pl.DataFrame:
    """p50/p95 latency per model in equal-width bins of the requests in flight when each was sent."""
    cols = schema(LATENCY_BY_LOAD)
    df = _rows(runs, ["latency_s", "error", "in_flight_at_send"])
    if not df.height or "in_flight_at_send" not in df.columns:
        return pl.DataFrame(schema=cols)
    df = df.filter(pl.col("latency_s").is_not_null() & pl.col("error").is_null()
                   & pl.col("in_flight_at_send").is_not_null())
    if not df.height:
        return pl.DataFrame(schema=cols)
    lo, hi = int(df["in_flight_at_send"].min()), int(df["in_flight_at_send"].max())
    width = max(1, -(-(hi - lo + 1) // bins))  # ceil: integer-wide bins covering lo..hi
    df = df.with_columns(bin=((pl.col("in_flight_at_send") - lo) // width).cast(pl.Int64))
    out = (df.group_by("label", "bin")
           .agg(n=pl.len(), p50_s=pl.col("latency_s").quantile(0.5, "nearest"),
                p95_s=pl.col("latency_s").quantile(0.95, "nearest"))
           .with_columns(in_flight_lo=pl.col("bin") * width + lo, in_flight_hi=pl.col("bin") * width + lo + width - 1)
           .with_columns(in_flight_mid=(pl.col("in_flight_lo") + pl.col("in_flight_hi")) / 2)
           .sort("label", "bin"))
    return out.select(list(cols)).cast(cols)


PAIRS = (Col("a", "model A", "text"), Col("b", "model B", "text"), Col("accuracy_diff", "A minus B", "diff"),
         Col("lo", "95% CI low", "diff", False), Col("hi", "95% CI high", "diff", False),
         Col("mcnemar_p", "McNemar p", "p"), Col("both_answered", "photos both answered", "count"),
         Col("a_only_right", "only A right", "count"), Col("b_only_right", "only B right", "count"),
         Col("given", "as in pairs.json", "bool", False))


def pairs_frame(runs: list[RunData]) -> pl.DataFrame:
    """Every pair (a, b) from the runs' pairs.json and its mirror (b, a), so the matrix is full: accuracy a - b.
    `given` marks the rows as written in pairs.json (a table shows those; the matrix shows all)."""
    rows = []
    multi = len(runs) > 1
    for run in runs:
        for p in run.pairs or []:
            if not isinstance(p, dict) or "a" not in p or "b" not in p:
                continue
            if p["a"] == p["b"] and "condition_a" in p:
                continue  # one model's conditions: condition_pairs_frame
            a, b = arm_label(p["a"], p.get("condition_a")), arm_label(p["b"], p.get("condition_b"))
            a, b = (f"{run.name}/{a}", f"{run.name}/{b}") if multi else (a, b)
            diff = p.get("accuracy_diff")
            if diff is None and p.get("accuracy_a") is not None and p.get("accuracy_b") is not None:
                diff = p["accuracy_a"] - p["accuracy_b"]
            lo, hi = ci(p.get("accuracy_diff_ci95"))
            base = {"mcnemar_p": p.get("mcnemar_p"), "both_answered": p.get("both_answered")}
            rows.append({"a": a, "b": b, "accuracy_diff": diff, "lo": lo, "hi": hi, **base,
                         "a_only_right": p.get("only_a_right"), "b_only_right": p.get("only_b_right"),
                         "given": True})
            rows.append({"a": b, "b": a, "accuracy_diff": None if diff is None else -diff,
                         "lo": None if hi is None else -hi, "hi": None if lo is None else -lo, **base,
                         "a_only_right": p.get("only_b_right"), "b_only_right": p.get("only_a_right"),
                         "given": False})
    return pl.DataFrame(rows, schema=schema(PAIRS), orient="row" if not rows else None)


PROVIDERS = (Col("label", "model", "text"), Col("provider", "provider", "text"), Col("photos", "photos", "count"),
             Col("answered", "answered", "count"), Col("accuracy", "accuracy", "pct"),
             Col("lo", "95% CI low", "pct", False), Col("hi", "95% CI high", "pct", False),
             Col("latency_p50_s", "p50 latency (s)", "seconds"), Col("latency_p95_s", "p95 latency (s)", "seconds"),
             Col("cost_usd", "cost (USD)", "usd"))


def providers_frame(runs: list[RunData]) -> pl.DataFrame:
    """summary.json's by_provider, one row per (model, provider), when recorded."""
    rows = []
    for _, s, label in labelled(runs):
        for prov, d in (s.get("by_provider") or {}).items():
            if isinstance(d, dict):
                lo, hi = ci(d.get("accuracy_ci95"))
                rows.append({"label": label, "provider": prov, "photos": d.get("photos"),
                             "answered": d.get("answered"), "accuracy": d.get("accuracy"), "lo": lo, "hi": hi,
                             "latency_p50_s": d.get("latency_p50_s"), "latency_p95_s": d.get("latency_p95_s"),
                             "cost_usd": d.get("cost_usd")})
    return pl.DataFrame(rows, schema=schema(PROVIDERS), orient="row" if not rows else None)


EXTRAS = (Col("label", "model", "text"), Col("measure", "measure", "text"), Col("value", "value", "text"))
EXTRA_KEYS = ("self_consistency",)  # written by other tools; shown as recorded when present


def extras_frame(runs: list[RunData], keys: tuple[str, ...] = EXTRA_KEYS) -> pl.DataFrame:
    """label, measure, value: summary keys this report has no chart for, as recorded (JSON for nested values)."""
    rows = []
    for _, s, label in labelled(runs):
        for k in keys:
            if s.get(k) is not None:
                v = s[k]
                rows.append({"label": label, "measure": k,
                             "value": f"{v:.4g}" if isinstance(v, float) else json.dumps(v, sort_keys=True)})
    return pl.DataFrame(rows, schema=schema(EXTRAS), orient="row" if not rows else None)


def _verdicts(runs: list[RunData]) -> tuple[pl.DataFrame, list[str]]:
    """id, category, is_hot_dog, scored, and one column per label: the model's answer (majority over repeats)."""
    base, labels = None, []
    for run, s, label in labelled(runs):
        if run.dataset_sha256 != runs[0].dataset_sha256:
            continue
        frame = run.frame(s)
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
    """Scored photos some model got wrong or the models disagreed on: those every model answered wrongly first,
    then the most missed.

    Each row: id, category, is_hot_dog, wrong (labels that answered wrongly), answers {label: True/False/None},
    all_wrong (every model answered, every answer wrong).
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
                        "wrong": wrong, "answers": answers, "all_wrong": len(wrong) == len(labels)})
    out.sort(key=lambda r: (not r["all_wrong"], -len(r["wrong"]), r["id"]))
    return out[:limit]


def bonus_rows(runs: list[RunData]) -> list[dict]:
    """The unscored photos (e.g. the Magritte painting): each model's answer, kept out of every score."""
    df, labels = _verdicts(runs)
    if not labels:
        return []
    return [{"id": r["id"], "category": r["category"], "answers": {lab: r[lab] for lab in labels}}
            for r in df.filter(~pl.col("scored")).sort("id").iter_rows(named=True)]




# -- measures beyond accuracy (stats/measures.py): calibration, photos needed, agreement, bootstrap ---------------
