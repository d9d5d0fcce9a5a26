"""The numbers of a run with conditions: what each condition sent, the prompt spread of each model, the
paired comparisons between a model's conditions (and between models under each condition), the cost-accuracy
frontier. Pure; see docs/experiments.md for every key.

A summary entry is one (model, condition): `condition` absent means the reference (every entry of a run without
conditions). These functions add keys only to runs with conditions, so a plain run's files stay as they were.
"""
from __future__ import annotations

import itertools
import statistics
from typing import Iterable

from ..protocol.conditions import REFERENCE, arm_label
from ..store.results import Result

PROMPT_PARTS = {"prompt"}  # a condition whose spec holds nothing else is a prompt condition (the reference too)


def condition_of(entry: dict) -> str:
    """The condition a summary entry (or pairs.json side) is about: `reference` when it names none."""
    c = entry.get("condition")
    return c if isinstance(c, str) else REFERENCE


def condition_summary(results: list[Result], sent: bool = True) -> dict:
    """Keys the summary entries of a run with conditions add (over the scored repeat-0 rows): USD per photo to
    6 significant digits (cost_per_1000_photos_usd keeps 3 decimals, too few to rank cheap conditions), and,
    for a condition other than the reference (sent), the mean pixels and bytes of the images sent."""
    costs = [r.cost_usd for r in results if r.cost_usd is not None]
    out = {"cost_per_photo_usd": float(f"{sum(costs) / len(results):.6g}") if costs and results else None}
    if sent:
        sized = [r.image_width * r.image_height for r in results
                 if getattr(r, "image_width", None) and getattr(r, "image_height", None)]
        nbytes = [r.image_bytes for r in results if getattr(r, "image_bytes", None)]
        out["image_pixels_per_photo"] = round(statistics.fmean(sized)) if sized else None
        out["image_bytes_per_photo"] = round(statistics.fmean(nbytes)) if nbytes else None
    return out


def is_prompt_condition(entry: dict) -> bool:
    spec = entry.get("condition_spec")
    return condition_of(entry) == REFERENCE if spec is None else set(spec) <= PROMPT_PARTS


def prompt_spread(entries: list[dict]) -> dict | None:
    """FormatSpread-style: one model's accuracy across its prompt conditions (those that change at most the
    question; the reference counts), with 2 or more that have an accuracy; else None."""
    acc = {condition_of(e): e.get("accuracy") for e in entries if is_prompt_condition(e)}
    acc = {c: a for c, a in acc.items() if isinstance(a, (int, float))}
    if len(acc) < 2:
        return None
    lo = min(acc, key=lambda c: (acc[c], c))
    hi = max(acc, key=lambda c: (acc[c], c))
    return {"conditions": acc, "min": acc[lo], "max": acc[hi], "spread": round(acc[hi] - acc[lo], 4),
            "lowest": lo, "highest": hi}


def add_condition_keys(summaries: list[dict]) -> list[dict]:
    """summary.json's entries with `prompt_spread` on every entry of a model that has one (in place; returned).
    A run without conditions has no entry to change."""
    by_model: dict[str, list[dict]] = {}
    for s in summaries:
        by_model.setdefault(s["model"], []).append(s)
    for entries in by_model.values():
        if not any("condition" in e for e in entries):
            continue
        spread = prompt_spread(entries)
        for e in entries:
            if spread is None:
                e.pop("prompt_spread", None)
            else:
                e["prompt_spread"] = spread
    return summaries


def pareto_front(points: Iterable[tuple[float | None, float | None]]) -> list[bool | None]:
    """For (cost, accuracy) points: is each on the frontier (no other point at most as dear and at least as
    accurate, one of them strictly)? None where cost or accuracy is unknown."""
    pts = list(points)
    known = [(i, c, a) for i, (c, a) in enumerate(pts) if c is not None and a is not None]
    out: list[bool | None] = [None] * len(pts)
    for i, c, a in known:
        out[i] = not any(cj <= c and aj >= a and (cj < c or aj > a) for j, cj, aj in known if j != i)
    return out


def arm_pairs(order: list[tuple[str, str]], results: dict[tuple[str, str], list[Result]],
              datasets: dict[tuple[str, str], str | None], pair_stats) -> list[dict]:
    """The pairs a run with conditions adds to pairs.json, after the reference's pairs of models:

    - for each condition but the reference, every pair of models under it (a before b in run order);
    - for each model, every pair of its conditions (in run order), over the photos both answered.

    Each object is pair_stats' with `condition_a` and `condition_b` after `a` and `b`. Arms whose journals name
    different datasets are not paired."""
    out = []

    def add(x: tuple[str, str], y: tuple[str, str]) -> None:
        if datasets.get(x) != datasets.get(y):
            return
        p = pair_stats(arm_label(*x), arm_label(*y), results[x], results[y])  # (its sentences name the arms)
        p.pop("a"), p.pop("b")
        out.append({"a": x[0], "b": y[0], "condition_a": x[1], "condition_b": y[1], **p})

    conditions = list(dict.fromkeys(c for _, c in order))
    models = list(dict.fromkeys(m for m, _ in order))
    for c in conditions:
        if c == REFERENCE:
            continue  # the reference's pairs of models are pairs.json's first part, as in a plain run
        for x, y in itertools.combinations([arm for arm in order if arm[1] == c], 2):
            add(x, y)
    for m in models:
        for x, y in itertools.combinations([arm for arm in order if arm[0] == m], 2):
            add(x, y)
    return out
