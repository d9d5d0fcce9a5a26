"""A seeded percentile bootstrap over photos, fast enough for 10,000 photos x 2,000 resamples in pure Python.

Pure Python: no numpy, no scipy, no clock, no I/O. Efron & Tibshirani (1993), ch. 13: resample the n photos with
replacement, compute the statistic, take the (1 - conf)/2 and (1 + conf)/2 quantiles of the resampled values
(linear interpolation between order statistics, numpy's default). A resample whose statistic is undefined
(None, e.g. balanced accuracy with no hot dog drawn) is left out and counted in `skipped`.

- bootstrap_interval(stat, rows): any statistic of a list of rows, by drawing row indices (slow: O(n) per resample).
- bootstrap_cells(stat, counts): when the statistic depends only on how many photos fall in each of a few outcome
  cells, resampling photos is the same as drawing the cell counts from Multinomial(n, counts / n): exact in
  distribution, and O(cells) per resample. The multinomial is drawn as a chain of binomials,
  x_i ~ Bin(n - x_1 - ... - x_(i-1), c_i / (c_i + ... + c_k)), smallest cell first, the largest taking the rest;
  each binomial by inversion of a table of its probabilities (built once per (n, p) by the ratio recurrence from
  the mode, cut where a term falls below 1e-17 of the mode's, so less than 1e-15 of the mass is left out).
- bootstrap_accuracy: 2 cells (right, wrong). bootstrap_balanced_accuracy: 4 cells (hot dogs called hot dogs or
  not, the rest called hot dogs or not), (TPR + TNR) / 2. bootstrap_paired_difference: accuracy of A minus B over
  the photos both answered, the same photo resampled for both: the cells only-A-right, only-B-right and the
  concordant rest (both right and both wrong are one cell: the difference does not tell them apart, and merging
  cells of a multinomial is exact).
- disagrees(closed_form, boot): True when either end differs by more than `tolerance` (0.01 = one point).

Reproducible: the only randomness is random.Random(seed).random(), whose sequence Python guarantees across
versions and platforms for an int seed, and every other step is IEEE arithmetic (+ - * /, no exp or log), so the
same seed gives the same interval everywhere.

Reference: B. Efron, R. J. Tibshirani (1993), An Introduction to the Bootstrap, Chapman & Hall, ch. 13.
"""
from __future__ import annotations

import bisect
import itertools
import math
import random
from dataclasses import dataclass
from typing import Any, Callable, Sequence

_CUT = 1e-17


@dataclass(frozen=True)
class BootInterval:
    lo: float
    hi: float
    resamples: int  # drawn
    seed: int
    skipped: int  # of them, with an undefined statistic (left out of the quantiles)


def _quantile(xs: list[float], q: float) -> float:
    h = (len(xs) - 1) * q
    i = math.floor(h)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (h - i) * (xs[i + 1] - xs[i])


def _interval(values: list[float | None], resamples: int, seed: int, conf: float) -> BootInterval | None:
    kept = sorted(v for v in values if v is not None)
    if not kept:
        return None
    return BootInterval(_quantile(kept, (1 - conf) / 2), _quantile(kept, (1 + conf) / 2), resamples, seed,
                        resamples - len(kept))


def _check(resamples: int, conf: float) -> None:
    if int(resamples) != resamples or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    if not 0.0 < conf < 1.0:
        raise ValueError(f"conf must be in (0, 1), got {conf}")


def bootstrap_interval(stat: Callable[[list], float | None], rows: Sequence[Any], resamples: int = 2000,
                       seed: int = 0, conf: float = 0.95) -> BootInterval | None:
    """Percentile interval of stat over resamples of the rows (row i drawn as int(random() * n)); None when there
    is no row or no resample has a defined statistic."""
    _check(resamples, conf)
    rows = list(rows)
    n = len(rows)
    if n == 0:
        return None
    draw = random.Random(seed).random
    return _interval([stat([rows[int(draw() * n)] for _ in range(n)]) for _ in range(resamples)],
                     resamples, seed, conf)


class _Binomials:
    """Bin(n, p) draws by inverse CDF on cached tables; only basic float arithmetic."""

    def __init__(self, uniform: Callable[[], float]):
        self.uniform, self.tables = uniform, {}

    def _table(self, n: int, p: float) -> tuple[int, list[float]]:
        mode = min(n, int((n + 1) * p))
        up, down, w, k = [1.0], [], 1.0, mode
        while k < n:
            w *= (n - k) * p / ((k + 1) * (1 - p))
            if w < _CUT:
                break
            k += 1
            up.append(w)
        w, k = 1.0, mode
        while k > 0:
            w *= k * (1 - p) / ((n - k + 1) * p)
            if w < _CUT:
                break
            k -= 1
            down.append(w)
        return mode - len(down), list(itertools.accumulate(down[::-1] + up))

    def draw(self, n: int, p: float) -> int:
        if n <= 0 or p <= 0.0:
            return 0
        if p >= 1.0:
            return n
        table = self.tables.get((n, p))
        if table is None:
            table = self.tables[(n, p)] = self._table(n, p)
        first, cum = table
        return first + min(len(cum) - 1, bisect.bisect_right(cum, self.uniform() * cum[-1]))


def _multinomial(binomials: _Binomials, counts: Sequence[int], order: list[int]) -> tuple[int, ...]:
    out = [0] * len(counts)
    left, mass = sum(counts), sum(counts)
    for i in order[:-1]:
        x = binomials.draw(left, counts[i] / mass) if counts[i] else 0
        out[i], left, mass = x, left - x, mass - counts[i]
    out[order[-1]] = left
    return tuple(out)


def bootstrap_cells(stat: Callable[[tuple[int, ...]], float | None], counts: Sequence[int], resamples: int = 2000,
                    seed: int = 0, conf: float = 0.95) -> BootInterval | None:
    """Percentile interval of stat(resampled cell counts), the counts drawn from Multinomial(n, counts / n)
    (module docstring); None when n == 0 or no resample has a defined statistic."""
    _check(resamples, conf)
    counts = [int(c) for c in counts]
    if any(c < 0 for c in counts) or not counts:
        raise ValueError(f"counts must be non-negative integers, got {counts!r}")
    if sum(counts) == 0:
        return None
    binomials = _Binomials(random.Random(seed).random)
    order = sorted(range(len(counts)), key=lambda i: (counts[i], i))
    return _interval([stat(_multinomial(binomials, counts, order)) for _ in range(resamples)], resamples, seed,
                     conf)


def bootstrap_accuracy(correct: Sequence[bool | None], resamples: int = 2000, seed: int = 0,
                       conf: float = 0.95) -> BootInterval | None:
    """Interval for right / answered; None (unanswered) entries are left out, as the accuracy leaves them out."""
    answered = [c for c in correct if c is not None]
    right = sum(bool(c) for c in answered)
    n = len(answered)
    return bootstrap_cells(lambda x: x[0] / n, (right, n - right), resamples, seed, conf)


def bootstrap_balanced_accuracy(pairs: Sequence[tuple[bool | None, bool]], resamples: int = 2000, seed: int = 0,
                                conf: float = 0.95) -> BootInterval | None:
    """Interval for (TPR + TNR) / 2 over (pred, truth) pairs with a prediction (pred None: left out). Resamples
    without a hot dog or without another photo are skipped and counted; None when the data lack a class."""
    answered = [(bool(p), bool(t)) for p, t in pairs if p is not None]
    cells = (sum(p and t for p, t in answered), sum(not p and t for p, t in answered),
             sum(not p and not t for p, t in answered), sum(p and not t for p, t in answered))
    if cells[0] + cells[1] == 0 or cells[2] + cells[3] == 0:
        return None

    def balanced(x: tuple[int, ...]) -> float | None:
        tp, fn, tn, fp = x
        return None if tp + fn == 0 or tn + fp == 0 else (tp / (tp + fn) + tn / (tn + fp)) / 2

    return bootstrap_cells(balanced, cells, resamples, seed, conf)


def bootstrap_paired_difference(correct_a: Sequence[bool | None], correct_b: Sequence[bool | None],
                                resamples: int = 2000, seed: int = 0, conf: float = 0.95) -> BootInterval | None:
    """Interval for accuracy(A) - accuracy(B) over the photos both answered, each photo resampled for both."""
    if len(correct_a) != len(correct_b):
        raise ValueError(f"the two sequences differ in length ({len(correct_a)} and {len(correct_b)})")
    both = [(bool(a), bool(b)) for a, b in zip(correct_a, correct_b) if a is not None and b is not None]
    n = len(both)
    only_a, only_b = sum(a and not b for a, b in both), sum(b and not a for a, b in both)
    return bootstrap_cells(lambda x: (x[0] - x[1]) / n, (only_a, only_b, n - only_a - only_b), resamples, seed,
                           conf)


def disagrees(closed_form: Sequence[float] | None, boot: BootInterval | Sequence[float] | None,
              tolerance: float = 0.01) -> bool:
    """True when either end of the two intervals differs by more than tolerance (plus 1e-12 for rounding), or when
    only one of them exists."""
    if closed_form is None or boot is None:
        return (closed_form is None) != (boot is None)
    lo, hi = (boot.lo, boot.hi) if isinstance(boot, BootInterval) else boot
    return abs(closed_form[0] - lo) > tolerance + 1e-12 or abs(closed_form[1] - hi) > tolerance + 1e-12
