"""OUT/RUN/pairs.json: every pair of the run's models compared photo by photo (McNemar, paired difference).

Rebuilt from the journals alone, so a resumed run and an uninterrupted one write the same file.
"""
from __future__ import annotations

import itertools
from pathlib import Path

from ..store.journal import read_journal
from ..store.results import Result
from ..store.atomic import write_json
from ..store.rundir import RunDir
from . import proportions as stats
from ..protocol.conditions import REFERENCE
from .conditions import arm_pairs
from .measures import pair_measures


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
    out = {
        "a": a, "b": b, "both_answered": n, "only_a_right": n10, "only_b_right": n01,
        "mcnemar_p": float(f"{p:.6g}"),
        "accuracy_a": round((n11 + n10) / n, 4) if n else None,
        "accuracy_b": round((n11 + n01) / n, 4) if n else None,
        "accuracy_diff": round((n10 - n01) / n, 4) if n else None,
        "accuracy_diff_ci95": stats.rounded(stats.paired_diff_interval(n11, n10, n01, n00)),
        "both_right": n11, "both_wrong": n00,
    }
    # kappa, error overlap, photos needed, bootstrap: after the keys above (stats/measures.py)
    return {**out, **pair_measures(a, b, results_a, results_b, out["accuracy_diff_ci95"])}


def compute_pairs(run_dir: Path | str, models: list[str] | None = None,
                  arms: list[tuple[str, str]] | None = None) -> list[dict]:
    """Every pair (a, b) of the run's models, a before b in run order, from the journals; in a run with
    conditions (arms: its (model, condition) order) then the pairs of stats/conditions.arm_pairs.

    A pair whose journals name different dataset digests is left out: their photo ids don't match.
    """
    rd = RunDir.at(run_dir)
    journals = rd.journals()
    order = rd.models(models)
    states = {m: read_journal(journals[m]) for m in order}
    out = []
    for a, b in itertools.combinations(order, 2):
        da, db = (states[a].header or {}).get("dataset_sha256"), (states[b].header or {}).get("dataset_sha256")
        if da != db:
            continue
        out.append(pair_stats(a, b, list(states[a].results.values()), list(states[b].results.values())))
    return out + _condition_pairs(rd, arms)


def _condition_pairs(rd: RunDir, first: list[tuple[str, str]] | None) -> list[dict]:
    paths = rd.arms()
    if all(c == REFERENCE for _, c in paths):
        return []  # a run without conditions: pairs.json as it always was
    order = rd.arm_order(first)
    states = {arm: read_journal(paths[arm]) for arm in order}
    return arm_pairs(order, {arm: list(st.results.values()) for arm, st in states.items()},
                     {arm: (st.header or {}).get("dataset_sha256") for arm, st in states.items()}, pair_stats)


def write_pairs(run_dir: Path | str, models: list[str] | None = None,
                arms: list[tuple[str, str]] | None = None) -> Path:
    """OUT/RUN/pairs.json: a list of compute_pairs' objects ([] with fewer than two models)."""
    return write_json(RunDir.at(run_dir).pairs, compute_pairs(run_dir, models, arms))
