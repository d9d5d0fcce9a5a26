"""The tables the reports show, each a polars frame built from runs read back (report/runs.py): the leaderboard,
accuracy by category, latency, limit traces, pairs, providers, the gallery of misses.

Each frame's columns are declared once (report/format.Col: name, label, kind); the leaderboard's metrics come
from stats/metrics.METRICS. Charts (report/charts.py) and tables (format.table_html) read those declarations.
"""
from __future__ import annotations

import json

import polars as pl

from ..protocol.conditions import arm_label
from ..stats.metrics import BY_KEY, METRICS
from .format import Col, fmt, metric_col, schema
from .runs import RunData


def _labelled(runs: list[RunData]):
    """(run, summary, label) for every model (under each condition: `model@condition`); the label carries the
    run name only when runs are compared."""
    multi = len(runs) > 1
    for run in runs:
        for s in run.summaries:
            arm = arm_label(s["model"], s.get("condition"))
            yield run, s, (f"{run.name}/{arm}" if multi else arm)


def _ci(value) -> tuple[float | None, float | None]:
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
    for run, s, label in _labelled(runs):
        row = {"label": label, "run": run.name, "model": s["model"], "stopped": s.get("stopped")}
        for m in METRICS:
            row[m.column] = m.value(s)
            if m.ci:
                row[f"{m.column}_lo"], row[f"{m.column}_hi"] = _ci(m.interval(s))
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
    for run, s, label in _labelled(runs):
        frame = run.frame(s)
        counts = {}
        if frame is not None and frame.height:
            answered = frame.filter(pl.col("scored") & pl.col("pred").is_not_null())
            counts = dict(answered.group_by("category").len().iter_rows())
        cis = s.get("accuracy_by_category_ci95") or {}
        for cat, acc in (s.get("accuracy_by_category") or {}).items():
            lo, hi = _ci(cis.get(cat))
            rows.append({"label": label, "run": run.name, "model": s["model"], "category": cat, "accuracy": acc,
                         "n": counts.get(cat, 0), "lo": lo, "hi": hi})
    return pl.DataFrame(rows, schema=schema(CATEGORY), orient="row" if not rows else None)


def _rows(runs: list[RunData], columns: list[str]) -> pl.DataFrame:
    parts = []
    for run, s, label in _labelled(runs):
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
    for run, s, label in _labelled(runs):
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
            lo, hi = _ci(p.get("accuracy_diff_ci95"))
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
    for _, s, label in _labelled(runs):
        for prov, d in (s.get("by_provider") or {}).items():
            if isinstance(d, dict):
                lo, hi = _ci(d.get("accuracy_ci95"))
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
    for _, s, label in _labelled(runs):
        for k in keys:
            if s.get(k) is not None:
                v = s[k]
                rows.append({"label": label, "measure": k,
                             "value": f"{v:.4g}" if isinstance(v, float) else json.dumps(v, sort_keys=True)})
    return pl.DataFrame(rows, schema=schema(EXTRAS), orient="row" if not rows else None)


def _verdicts(runs: list[RunData]) -> tuple[pl.DataFrame, list[str]]:
    """id, category, is_hot_dog, scored, and one column per label: the model's answer (majority over repeats)."""
    base, labels = None, []
    for run, s, label in _labelled(runs):
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
def _metric(key: str, show: bool = True) -> Col:
    m = BY_KEY[key]
    return Col(m.column, m.label, m.kind, show)


CALIBRATION = (Col("label", "model", "text"), Col("source", "probability from", "text"),
               Col("with_probability", "photos with a probability", "count"), _metric("calibration.brier"),
               _metric("calibration.ece"), _metric("calibration.auroc"),
               Col("auroc_lo", "AUROC 95% CI low", "score", False), Col("auroc_hi", "AUROC 95% CI high", "score", False), Col("reason", "no probability because", "text"))
SOURCES = {"noul": "Decisions noul", "logprobs": "token log-probabilities"}


def calibration_frame(runs: list[RunData]) -> pl.DataFrame:
    """One row per model: where its P(hot dog) comes from, how many rows carry one, Brier, ECE, AUROC; or why
    there is none (a model without probabilities is listed, never left out)."""
    rows = []
    for _, s, label in _labelled(runs):
        probs = s.get("probabilities") if isinstance(s.get("probabilities"), dict) else {}
        if not probs and "calibration" not in s:
            continue  # a run written before these measures
        cal = s.get("calibration") if isinstance(s.get("calibration"), dict) else {}
        lo, hi = _ci(cal.get("auroc_ci95"))
        rows.append({"label": label, "source": SOURCES.get(probs.get("source"), probs.get("source") or "none"),
                     "with_probability": probs.get("with_probability"), "brier": cal.get("brier"),
                     "ece": cal.get("ece"), "auroc": cal.get("auroc"), "auroc_lo": lo, "auroc_hi": hi,
                     "reason": s.get("calibration_reason")})
    return pl.DataFrame(rows, schema=schema(CALIBRATION), orient="row" if not rows else None)


RELIABILITY = (Col("label", "model", "text"), Col("lo", "bin from", "score"), Col("hi", "bin to", "score"),
               Col("n", "photos", "count"), Col("mean_p", "mean stated P(hot dog)", "score"),
               Col("frac_pos", "share that are hot dogs", "score"))


def reliability_frame(runs: list[RunData]) -> pl.DataFrame:
    """The reliability bins of every model with probabilities: stated P(hot dog) against the share of hot dogs."""
    rows = []
    for _, s, label in _labelled(runs):
        cal = s.get("calibration") if isinstance(s.get("calibration"), dict) else {}
        for b in cal.get("reliability") or []:
            if isinstance(b, dict):
                rows.append({"label": label, **{c.name: b.get(c.name) for c in RELIABILITY[1:]}})
    return pl.DataFrame(rows, schema=schema(RELIABILITY), orient="row" if not rows else None)


def _pair_label(run: RunData, p: dict, multi: bool) -> tuple[str, str]:
    """The two sides of a pairs.json object, as the arms are labelled (model@condition under a condition)."""
    a, b = arm_label(p["a"], p.get("condition_a")), arm_label(p["b"], p.get("condition_b"))
    return (f"{run.name}/{a}", f"{run.name}/{b}") if multi else (a, b)


def _pairs_of(runs: list[RunData]):
    multi = len(runs) > 1
    for run in runs:
        for p in run.pairs or []:
            if isinstance(p, dict) and "a" in p and "b" in p:
                yield (*_pair_label(run, p, multi), p)


POWER = (Col("a", "model A", "text"), Col("b", "model B", "text"), Col("accuracy_diff", "A minus B", "diff"),
         Col("photos_have", "photos both answered", "count"),
         Col("photos_needed", "photos needed (Connor 1987)", "count"),
         Col("photos_needed_exact", "photos needed (exact test)", "count"),
         Col("min_detectable_diff", "smallest gap detectable now", "pct"), Col("sentence", "in words", "text", False))


def power_frame(runs: list[RunData]) -> pl.DataFrame:
    """One row per pair: the photos a McNemar test at 80% power and alpha 0.05 needs at the observed gap, the photos
    at hand, the smallest gap they detect, and the sentence (pairs.json's power)."""
    rows = []
    for a, b, p in _pairs_of(runs):
        pw = p.get("power") if isinstance(p.get("power"), dict) else None
        if pw is None:
            continue
        rows.append({"a": a, "b": b, "accuracy_diff": p.get("accuracy_diff"), "photos_have": pw.get("photos_have"),
                     "photos_needed": pw.get("photos_needed"), "photos_needed_exact": pw.get("photos_needed_exact"),
                     "min_detectable_diff": pw.get("min_detectable_diff"), "sentence": pw.get("sentence")})
    return pl.DataFrame(rows, schema=schema(POWER), orient="row" if not rows else None)


def half_width_frame(runs: list[RunData]) -> tuple[pl.DataFrame, tuple[Col, ...]]:
    """One row per category, one column per model: its accuracy ± the half-width of the 95% interval today
    (summary.json's accuracy_by_category_half_width95) and the photos it answered; the columns (one per model)
    come with the frame."""
    cat = category_accuracy(runs)
    widths = {(label, c): w for _, s, label in _labelled(runs)
              for c, w in (s.get("accuracy_by_category_half_width95") or {}).items()}
    labels = list(dict.fromkeys(label for _, s, label in _labelled(runs)
                                if s.get("accuracy_by_category_half_width95")))
    cols = (Col("category", "category", "text"), *(Col(f"m{i}", lab, "text") for i, lab in enumerate(labels)))
    if not widths or not cat.height:
        return pl.DataFrame(schema=schema(cols)), cols
    cells: dict[str, dict[str, str]] = {}
    for r in cat.iter_rows(named=True):
        if r["label"] not in labels:
            continue
        w = widths.get((r["label"], r["category"]))
        text = "–" if r["accuracy"] is None else f"{fmt(r['accuracy'], 'pct')}" + \
            ("" if w is None else f" ± {w * 100:.1f}") + f" (n {r['n']})"
        cells.setdefault(r["category"], {})[f"m{labels.index(r['label'])}"] = text
    rows = [{"category": c, **{f"m{i}": cells[c].get(f"m{i}") for i in range(len(labels))}} for c in sorted(cells)]
    return pl.DataFrame(rows, schema=schema(cols), orient="row"), cols


AGREEMENT = (Col("a", "model A", "text"), Col("b", "model B", "text"), Col("kappa", "Cohen's kappa", "score"),
             Col("kappa_lo", "kappa 95% CI low", "score", False), Col("kappa_hi", "kappa 95% CI high", "score", False),
             Col("both_wrong", "both wrong", "pct"), Col("independent", "both wrong if independent", "pct"),
             Col("ratio", "both wrong ÷ independent", "rate"),
             Col("error_consistency", "error consistency (kappa)", "score"),
             Col("photos", "photos both answered", "count"), Col("given", "as in pairs.json", "bool", False))


def agreement_frame(runs: list[RunData]) -> pl.DataFrame:
    """Every pair and its mirror (the measures are symmetric): Cohen's kappa of the verdicts, how often both
    were wrong against independence, the error consistency. `given` marks the rows as written in pairs.json."""
    rows = []
    for a, b, p in _pairs_of(runs):
        k = p.get("cohen_kappa") if isinstance(p.get("cohen_kappa"), dict) else None
        e = p.get("error_overlap") if isinstance(p.get("error_overlap"), dict) else {}
        if k is None:
            continue
        lo, hi = _ci(k.get("ci95"))
        row = {"kappa": k.get("kappa"), "kappa_lo": lo, "kappa_hi": hi, "both_wrong": e.get("both_wrong"),
               "independent": e.get("independent"), "ratio": e.get("ratio"),
               "error_consistency": e.get("error_consistency"), "photos": k.get("photos")}
        rows += [{"a": a, "b": b, **row, "given": True}, {"a": b, "b": a, **row, "given": False}]
    return pl.DataFrame(rows, schema=schema(AGREEMENT), orient="row" if not rows else None)


INTERVALS = (Col("label", "model", "text"), Col("measure", "measure", "text"), Col("value", "estimate", "pct"),
             Col("closed_lo", "closed form 95% low", "pct"), Col("closed_hi", "closed form 95% high", "pct"),
             Col("boot_lo", "bootstrap 95% low", "pct"), Col("boot_hi", "bootstrap 95% high", "pct"),
             Col("disagrees", "ends differ by > 1 point", "bool"))
PAIR_INTERVALS = (Col("label", "pair", "text"), Col("measure", "measure", "text"), Col("value", "estimate", "diff"),
                  Col("closed_lo", "Newcombe 95% low", "diff"), Col("closed_hi", "Newcombe 95% high", "diff"),
                  Col("boot_lo", "bootstrap 95% low", "diff"), Col("boot_hi", "bootstrap 95% high", "diff"),
                  Col("disagrees", "ends differ by > 1 point", "bool"))
_CLOSED = {"accuracy": "Wilson", "balanced_accuracy": "MOVER"}


def intervals_frame(runs: list[RunData]) -> pl.DataFrame:
    """Per model: accuracy and balanced accuracy with the closed-form and the bootstrap interval side by side."""
    rows = []
    for _, s, label in _labelled(runs):
        boot = s.get("bootstrap") if isinstance(s.get("bootstrap"), dict) else None
        if boot is None:
            continue
        for key, method in _CLOSED.items():
            clo, chi = _ci(s.get(f"{key}_ci95"))
            blo, bhi = _ci(boot.get(f"{key}_ci95"))
            rows.append({"label": label, "measure": f"{key.replace('_', ' ')} (closed form: {method})",
                         "value": s.get(key), "closed_lo": clo, "closed_hi": chi, "boot_lo": blo, "boot_hi": bhi,
                         "disagrees": key in (boot.get("disagrees") or [])})
    return pl.DataFrame(rows, schema=schema(INTERVALS), orient="row" if not rows else None)


def pair_intervals_frame(runs: list[RunData]) -> pl.DataFrame:
    """Per pair: the accuracy difference with Newcombe's and the bootstrap interval side by side."""
    rows = []
    for a, b, p in _pairs_of(runs):
        boot = p.get("bootstrap") if isinstance(p.get("bootstrap"), dict) else None
        if boot is None:
            continue
        clo, chi = _ci(p.get("accuracy_diff_ci95"))
        blo, bhi = _ci(boot.get("accuracy_diff_ci95"))
        rows.append({"label": f"{a} vs {b}", "measure": "accuracy A minus B (closed form: Newcombe)",
                     "value": p.get("accuracy_diff"),
                     "closed_lo": clo, "closed_hi": chi, "boot_lo": blo, "boot_hi": bhi,
                     "disagrees": bool(boot.get("disagrees"))})
    return pl.DataFrame(rows, schema=schema(PAIR_INTERVALS), orient="row" if not rows else None)


# -- conditions (docs/experiments.md) ----------------------------------------------------------------------
CONDITIONS = (Col("label", "model", "text"), Col("run", "run", "text", False), Col("model", "model id", "text", False),
              Col("condition", "condition", "text"), Col("spec", "spec", "text"), Col("photos", "photos", "count"),
              Col("accuracy", "accuracy", "pct"), Col("accuracy_lo", "accuracy 95% CI low", "pct", False),
              Col("accuracy_hi", "accuracy 95% CI high", "pct", False),
              Col("vs_reference", "minus the reference", "diff"), Col("vs_reference_lo", "95% CI low", "diff", False),
              Col("vs_reference_hi", "95% CI high", "diff", False), Col("mcnemar_p", "McNemar p", "p"),
              Col("prompt_tokens_per_photo", "prompt tokens per photo", "rate"),
              Col("usd_per_photo", "USD per photo", "usd"),
              Col("image_pixels_per_photo", "pixels sent per photo", "count"),
              Col("frontier", "on the cost-accuracy frontier", "bool"))


def _spec_text(s: dict) -> str:
    from ..protocol.conditions import Condition

    spec = s.get("condition_spec")
    if not isinstance(spec, dict) or not spec:
        return "(reference)" if "condition" not in s else "(as the reference)"
    try:
        return Condition(s.get("condition") or "x", **spec).text()
    except TypeError:
        return json.dumps(spec, sort_keys=True)


def _vs_reference(run: RunData, model: str, condition: str) -> dict:
    """This condition minus the reference, for one model, from pairs.json (the pair is written reference
    first, so its sign is turned)."""
    for p in run.pairs or []:
        if isinstance(p, dict) and p.get("a") == model == p.get("b") and p.get("condition_a") == "reference" \
                and p.get("condition_b") == condition:
            lo, hi = _ci(p.get("accuracy_diff_ci95"))
            diff = p.get("accuracy_diff")
            return {"vs_reference": None if diff is None else -diff, "vs_reference_lo": None if hi is None else -hi,
                    "vs_reference_hi": None if lo is None else -lo, "mcnemar_p": p.get("mcnemar_p")}
    return {}


def conditions_frame(runs: list[RunData]) -> pl.DataFrame:
    """One row per (model, condition) of the runs with conditions: accuracy, the difference from the reference
    (paired, from pairs.json), tokens and USD per photo, and whether it is on its model's cost-accuracy frontier
    (no other condition of the model at most as dear and at least as accurate)."""
    from ..stats.conditions import condition_of, pareto_front

    rows = []
    multi = len(runs) > 1
    for run in runs:
        if not run.has_conditions:
            continue
        for s in run.summaries:
            cond = condition_of(s)
            lo, hi = _ci(s.get("accuracy_ci95"))
            per1000 = s.get("cost_per_1000_photos_usd")
            per_photo = s.get("cost_per_photo_usd")
            rows.append({"label": f"{run.name}/{s['model']}" if multi else s["model"], "run": run.name,
                         "model": s["model"], "condition": cond, "spec": _spec_text(s), "photos": s.get("photos"),
                         "accuracy": s.get("accuracy"), "accuracy_lo": lo, "accuracy_hi": hi,
                         "vs_reference": None, "vs_reference_lo": None, "vs_reference_hi": None, "mcnemar_p": None,
                         **(_vs_reference(run, s["model"], cond) if cond != "reference" else {}),
                         "prompt_tokens_per_photo": s.get("prompt_tokens_per_photo"),
                         "usd_per_photo": per_photo if per_photo is not None else
                         None if per1000 is None else per1000 / 1000,
                         "image_pixels_per_photo": s.get("image_pixels_per_photo"), "frontier": None})
    by_model: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by_model.setdefault((r["run"], r["model"]), []).append(r)
    for group in by_model.values():
        for r, on in zip(group, pareto_front((r["usd_per_photo"], r["accuracy"]) for r in group)):
            r["frontier"] = on
    return pl.DataFrame(rows, schema=schema(CONDITIONS), orient="row" if not rows else None)


CONDITION_PAIRS = (Col("label", "model", "text"), Col("a", "condition A", "text"), Col("b", "condition B", "text"),
                   Col("accuracy_diff", "A minus B", "diff"), Col("lo", "95% CI low", "diff", False),
                   Col("hi", "95% CI high", "diff", False), Col("mcnemar_p", "McNemar p", "p"),
                   Col("both_answered", "photos both answered", "count"),
                   Col("a_only_right", "only A right", "count"), Col("b_only_right", "only B right", "count"))


def condition_pairs_frame(runs: list[RunData]) -> pl.DataFrame:
    """pairs.json's pairs of one model's conditions (McNemar and the paired difference A minus B)."""
    rows = []
    multi = len(runs) > 1
    for run in runs:
        for p in run.pairs or []:
            if not isinstance(p, dict) or p.get("a") != p.get("b") or "condition_a" not in p:
                continue
            lo, hi = _ci(p.get("accuracy_diff_ci95"))
            rows.append({"label": f"{run.name}/{p['a']}" if multi else p["a"], "a": p.get("condition_a"),
                         "b": p.get("condition_b"), "accuracy_diff": p.get("accuracy_diff"), "lo": lo, "hi": hi,
                         "mcnemar_p": p.get("mcnemar_p"), "both_answered": p.get("both_answered"),
                         "a_only_right": p.get("only_a_right"), "b_only_right": p.get("only_b_right")})
    return pl.DataFrame(rows, schema=schema(CONDITION_PAIRS), orient="row" if not rows else None)


PROMPT_SPREAD = (Col("label", "model", "text"), Col("accuracies", "accuracy by prompt condition", "text"),
                 Col("min", "lowest", "pct"), Col("max", "highest", "pct"), Col("spread", "spread", "diff"),
                 Col("lowest", "lowest under", "text"), Col("highest", "highest under", "text"))


def prompt_spread_frame(runs: list[RunData]) -> pl.DataFrame:
    """Each model's accuracy across its prompt conditions (summary.json's prompt_spread), FormatSpread-style."""
    rows, seen = [], set()
    multi = len(runs) > 1
    for run in runs:
        for s in run.summaries:
            ps = s.get("prompt_spread")
            if not isinstance(ps, dict) or (run.name, s["model"]) in seen:
                continue
            seen.add((run.name, s["model"]))
            accs = ps.get("conditions") or {}
            rows.append({"label": f"{run.name}/{s['model']}" if multi else s["model"],
                         "accuracies": ", ".join(f"{c} {a:.1%}" for c, a in accs.items()
                                                 if isinstance(a, (int, float))),
                         "min": ps.get("min"), "max": ps.get("max"), "spread": ps.get("spread"),
                         "lowest": ps.get("lowest"), "highest": ps.get("highest")})
    return pl.DataFrame(rows, schema=schema(PROMPT_SPREAD), orient="row" if not rows else None)
