"""The per-model metrics the reports show, declared once: where summary.json holds each, what tables call it,
how it is formatted, its interval if any. Every table that shows a metric reads this declaration.

A new metric is one entry here: give it a `compute` (over the scored repeat-0 results of a model, the rows the
reference keys use) and summary.json gets it under `key`, the leaderboard a column, the reports a cell.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..store.results import Result

KINDS = ("pct", "count", "seconds", "usd", "rate", "text", "score")  # formats: see report/format.py


@dataclass(frozen=True)
class Metric:
    key: str  # where summary.json holds it: "accuracy", or "concurrency.throttles" one level down
    label: str  # what a table calls it, with its unit
    kind: str  # one of KINDS
    ci: str | None = None  # summary.json key of its 95% interval, when it has one (dotted one level down too)
    leaderboard: bool = True  # a column of the leaderboard tables
    compute: Callable[[list[Result]], Any] | None = None  # None: computed by stats/summary.py

    @property
    def column(self) -> str:
        """Its column name in report frames (the last part of the key)."""
        return self.key.rsplit(".", 1)[-1]

    def value(self, summary: dict) -> Any:
        return _get(summary, self.key)

    def interval(self, summary: dict) -> Any:
        """Its 95% interval as summary.json holds it ([low, high] or None)."""
        return _get(summary, self.ci) if self.ci else None


def _get(summary: dict, key: str) -> Any:
    v: Any = summary
    for part in key.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    return v


METRICS: tuple[Metric, ...] = (
    Metric("photos", "photos", "count"),
    Metric("accuracy", "accuracy", "pct", ci="accuracy_ci95"),
    Metric("balanced_accuracy", "balanced accuracy", "pct", ci="balanced_accuracy_ci95"),
    Metric("unanswered", "unanswered", "count"),
    Metric("errors", "errors", "count"),
    Metric("latency_p50_s", "p50 latency (s)", "seconds"),
    Metric("latency_p95_s", "p95 latency (s)", "seconds"),
    Metric("cost_usd", "cost (USD)", "usd", leaderboard=False),
    Metric("cost_per_1000_photos_usd", "USD per 1000 photos", "usd"),
    Metric("photos_per_s", "photos/s", "rate"),
    Metric("concurrency.throttles", "throttles", "count"),
    Metric("concurrency.final_limit", "final in-flight limit", "count", leaderboard=False),
    # calibration, where the rows carry P(hot dog) (stats/measures.py; null for a model without probabilities)
    Metric("calibration.brier", "Brier score", "score", leaderboard=False),
    Metric("calibration.ece", "ECE (10 equal-width bins)", "score", leaderboard=False),
    Metric("calibration.auroc", "AUROC", "score", ci="calibration.auroc_ci95", leaderboard=False),
)
BY_KEY = {m.key: m for m in METRICS}


def computed(results: list[Result]) -> dict:
    """The values of the metrics declared with a compute function, for summary.json."""
    return {m.key: m.compute(results) for m in METRICS if m.compute is not None}
