"""The report's tables of the measures beyond accuracy: calibration and its reliability bins, how many photos a
claim needs, agreement between models, the bootstrap beside the closed-form intervals (columns declared once)."""
from __future__ import annotations

import polars as pl

from ..protocol.conditions import arm_label
from ..stats.metrics import BY_KEY
from .format import Col, fmt, schema
from .runs import RunData
from .tables import category_accuracy, ci, labelled


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
    for _, s, label in labelled(runs):
        probs = s.get("probabilities") if isinstance(s.get("probabilities"), dict) else {}
        if not probs and "calibration" not in s:
            continue  # a run written before these measures
        cal = s.get("calibration") if isinstance(s.get("calibration"), dict) else {}
        lo, hi = ci(cal.get("auroc_ci95"))
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
    for _, s, label in labelled(runs):
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
    widths = {(label, c): w for _, s, label in labelled(runs)
              for c, w in (s.get("accuracy_by_category_half_width95") or {}).items()}
    labels = list(dict.fromkeys(label for _, s, label in labelled(runs)
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
        lo, hi = ci(k.get("ci95"))
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
    for _, s, label in labelled(runs):
        boot = s.get("bootstrap") if isinstance(s.get("bootstrap"), dict) else None
        if boot is None:
            continue
        for key, method in _CLOSED.items():
            clo, chi = ci(s.get(f"{key}_ci95"))
            blo, bhi = ci(boot.get(f"{key}_ci95"))
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
        clo, chi = ci(p.get("accuracy_diff_ci95"))
        blo, bhi = ci(boot.get("accuracy_diff_ci95"))
        rows.append({"label": f"{a} vs {b}", "measure": "accuracy A minus B (closed form: Newcombe)",
                     "value": p.get("accuracy_diff"),
                     "closed_lo": clo, "closed_hi": chi, "boot_lo": blo, "boot_hi": bhi,
                     "disagrees": bool(boot.get("disagrees"))})
    return pl.DataFrame(rows, schema=schema(PAIR_INTERVALS), orient="row" if not rows else None)


# -- conditions (docs/experiments.md) ----------------------------------------------------------------------
