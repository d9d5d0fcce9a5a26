"""The per-model summary: the reference's keys computed the reference's way, then the statistics after them.

See docs/statistics.md for every key and method.
"""
from __future__ import annotations

import statistics

from ..store.results import Result
from . import proportions as stats
from .measures import model_measures
from .metrics import computed


def known_cost(rs: list[Result]) -> float | None:
    """What the rows cost, summed over those whose cost is known; None when no row's cost is known (a server
    that reports no cost is not free). With every cost known this is the reference's sum."""
    costs = [r.cost_usd for r in rs if r.cost_usd is not None]
    return round(sum(costs), 5) if costs else None


def _acc(rs: list[Result]) -> float | None:
    rs = [r for r in rs if r.pred is not None]
    return round(sum(r.pred == r.is_hot_dog for r in rs) / len(rs), 4) if rs else None


def summarize(model: str, all_results: list[Result], wall: float, *, asked: int | None = None) -> dict:
    """The reference's summary keys, computed the reference's way.

    asked: how many rows were asked in `wall` seconds, when that is more than all_results (with --repeats K the
    runner passes repeat 0's rows and asked = every repeat's rows, so photos_per_s stays a rate of requests).
    """
    bonus = {str(r.id): r.pred for r in all_results if not r.scored}  # e.g. the Magritte painting
    results = [r for r in all_results if r.scored]
    answered = [r for r in results if r.pred is not None]
    lat = sorted(r.latency_s for r in results if r.latency_s is not None and r.error is None)
    cost = known_cost(results)
    pos = [r for r in answered if r.is_hot_dog]
    neg = [r for r in answered if not r.is_hot_dog]
    tpr = sum(r.pred for r in pos) / len(pos) if pos else None
    tnr = sum(not r.pred for r in neg) / len(neg) if neg else None
    return {
        "model": model,
        "photos": len(results),
        "answered": len(answered),
        "unanswered": len(results) - len(answered),
        "errors": sum(r.error is not None for r in results),
        "accuracy": _acc(results),
        "balanced_accuracy": round((tpr + tnr) / 2, 4) if tpr is not None and tnr is not None else None,
        "accuracy_by_category": {c: _acc([r for r in results if r.category == c])
                                 for c in sorted({r.category for r in results})},
        "false_alarms": sum(1 for r in neg if r.pred),
        "missed_hot_dogs": sum(1 for r in pos if not r.pred),
        "wall_s": round(wall, 2),
        "photos_per_s": round((len(all_results) if asked is None else asked) / wall, 2) if wall else None,
        "latency_p50_s": round(statistics.median(lat), 3) if lat else None,
        "latency_p95_s": round(lat[int(0.95 * (len(lat) - 1))], 3) if lat else None,
        "cost_usd": cost,
        "cost_per_1000_photos_usd": round(cost / len(results) * 1000, 3) if results and cost is not None else None,
        "prompt_tokens_per_photo": round(sum(r.prompt_tokens or 0 for r in results) / max(1, len(answered)), 1),
        "reasoning_tokens": sum(r.reasoning_tokens or 0 for r in results),
        "requests_retried": sum(1 for r in results if r.retries),
        "providers": sorted({r.provider for r in results if r.provider}),
        "unscored_answers": bonus,  # id -> said hot dog?
    }


def _correct(rs: list[Result]) -> tuple[int, int]:
    """(right, answered) over the rows with a verdict."""
    answered = [r for r in rs if r.pred is not None]
    return sum(r.pred == r.is_hot_dog for r in answered), len(answered)


def _acc_ci(rs: list[Result]) -> list[float] | None:
    return stats.rounded(stats.wilson_interval(*_correct(rs)))


def _by_provider(results: list[Result]) -> dict:
    """Scored rows grouped by the provider that answered them (rows no provider answered are left out)."""
    out = {}
    for prov in sorted({r.provider for r in results if r.provider}):
        rs = [r for r in results if r.provider == prov]
        q = stats.latency_quantiles(r.latency_s for r in rs if r.latency_s is not None and r.error is None)
        out[prov] = {
            "photos": len(rs),
            "answered": sum(r.pred is not None for r in rs),
            "accuracy": _acc(rs),
            "accuracy_ci95": _acc_ci(rs),
            "latency_p50_s": round(q[0], 3) if q else None,
            "latency_p95_s": round(q[1], 3) if q else None,
            "cost_usd": known_cost(rs),
        }
    return out


def summarize_statistics(all_results: list[Result], repeats: int = 1, probability: str | None = None) -> dict:
    """The keys summary.json adds after the reference's: intervals, providers, repeats, then the measures of
    stats/measures.py (bootstrap, calibration, half-widths) after those.

    Everything but the repeat statistics is over repeat 0's scored rows, the rows the reference keys are
    computed over; self_consistency and accuracy_over_repeats use every repeat. See docs/statistics.md.
    probability: where the model's P(hot dog) comes from ("noul", "logprobs" or None: not asked).
    """
    scored = [r for r in all_results if r.scored]
    first = [r for r in scored if r.repeat == 0]
    answered = [r for r in first if r.pred is not None]
    pos = [r for r in answered if r.is_hot_dog]
    neg = [r for r in answered if not r.is_hot_dog]
    out = {
        "accuracy_ci95": _acc_ci(first),
        "balanced_accuracy_ci95": stats.rounded(stats.balanced_accuracy_interval(
            sum(bool(r.pred) for r in pos), len(pos), sum(not r.pred for r in neg), len(neg))),
        "accuracy_by_category_ci95": {c: _acc_ci([r for r in first if r.category == c])
                                      for c in sorted({r.category for r in first})},
        "by_provider": _by_provider(first),
        "repeats": repeats,
        "self_consistency": None,  # null with one repeat
        "accuracy_over_repeats": None,
        "self_consistency_photos": None,  # photos with a verdict in every repeat: self_consistency's denominator
        "cost_usd_all_repeats": known_cost(scored),
        **computed(first),
        # the first error in photo order (every repeat, unscored rows too): said beside the errors count
        "first_error": next((r.error for r in sorted(all_results, key=lambda r: r.key) if r.error), None),
    }
    if repeats > 1:
        per_photo: dict[int, list] = {}
        for r in sorted(scored, key=lambda r: r.key):
            per_photo.setdefault(r.id, []).append(r.pred)
        share, counted = stats.self_consistency(v for v in per_photo.values() if len(v) == repeats)
        per_repeat = []
        for k in range(repeats):
            right, n = _correct([r for r in scored if r.repeat == k])
            per_repeat.append(right / n if n else None)
        sp = stats.spread(per_repeat)
        out["self_consistency"] = None if share is None else round(share, 4)
        out["accuracy_over_repeats"] = None if sp is None else {
            **{k: round(v, 4) for k, v in sp.items()},
            "per_repeat": [None if a is None else round(a, 4) for a in per_repeat]}
        out["self_consistency_photos"] = counted
    out.update(model_measures(first, probability, {"accuracy": out["accuracy_ci95"],
                                                   "balanced_accuracy": out["balanced_accuracy_ci95"]}))
    return out


SUMMARY_LINE_KEYS = ("model", "accuracy", "unanswered", "errors", "wall_s", "photos_per_s", "latency_p50_s",
                     "cost_per_1000_photos_usd")
CONCURRENCY_LINE_KEYS = ("final_limit", "peak_in_flight", "throttles", "transport_errors")


def summary_line(summary: dict) -> dict:
    """The one-line JSON the reference printed after each model."""
    line = {k: summary.get(k) for k in SUMMARY_LINE_KEYS}
    line.update({k: summary["concurrency"].get(k) for k in CONCURRENCY_LINE_KEYS})
    return line
