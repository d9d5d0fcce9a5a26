"""The report's tables of conditions: each condition of a model against the reference, every pair of a model's
conditions, and the prompt spread (columns declared once)."""
from __future__ import annotations

import json

import polars as pl

from .format import Col, schema
from .runs import RunData
from .tables import ci


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
            lo, hi = ci(p.get("accuracy_diff_ci95"))
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
            lo, hi = ci(s.get("accuracy_ci95"))
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
            lo, hi = ci(p.get("accuracy_diff_ci95"))
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
