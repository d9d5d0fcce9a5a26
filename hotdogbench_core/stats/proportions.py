"""The statistics behind summary.json and pairs.json, in pure Python (no numpy, no scipy, no clock, no I/O).

Methods (each is named in its docstring and in the README's "Statistics" section):

- wilson_interval: the Wilson score interval for one binomial proportion (Wilson 1927; Newcombe 1998a, method 3).
- balanced_accuracy_interval: MOVER (Zou & Donner 2008) applied to the Wilson intervals of the true-positive
  and true-negative rates, which come from disjoint photos and so are independent: the sum analogue of
  Newcombe's square-and-add (hybrid score) method.
- mcnemar_exact_p: the exact two-sided McNemar test, a binomial test of the discordant pairs at p = 1/2.
- paired_diff_interval: Newcombe's (1998b) method 10 for the difference of two paired proportions (the
  square-and-add of the two Wilson intervals, corrected for their correlation with Newcombe's
  continuity-corrected phi).
- self_consistency, spread: for --repeats.
- latency_quantiles: the latency percentiles the summary uses.

References:
  E. B. Wilson (1927), JASA 22:209-212.
  R. G. Newcombe (1998a), Two-sided confidence intervals for the single proportion, Stat Med 17:857-872.
  R. G. Newcombe (1998b), Improved confidence intervals for the difference between binomial proportions based
    on paired data, Stat Med 17:2635-2650.
  G. Y. Zou, A. Donner (2008), Construction of confidence limits about effect measures: a general approach,
    Stat Med 27:1693-1702.
  M. W. Fagerland, S. Lydersen, P. Laake (2014), Recommended tests and confidence intervals for paired binomial
    proportions, Stat Med 33:2850-2875.
"""
from __future__ import annotations

import math
import statistics
from fractions import Fraction
from math import comb
from typing import Any, Iterable, Sequence

Interval = tuple[float, float]


def z_for(conf: float = 0.95) -> float:
    """The two-sided standard normal quantile for a confidence level (1.959963984540054 for 0.95)."""
    if not 0.0 < conf < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {conf}")
    return statistics.NormalDist().inv_cdf(0.5 + conf / 2)


def _check_counts(**counts: int) -> None:
    for name, v in counts.items():
        if v < 0 or int(v) != v:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")


# -- one proportion ----------------------------------------------------------------------------------------
def wilson_interval(successes: int, n: int, conf: float = 0.95) -> Interval | None:
    """The Wilson score interval for successes/n; None when n == 0 (nothing to estimate).

    (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), with p = successes/n. It never leaves [0, 1], always
    contains p, and is exactly 0 (1) at its lower (upper) end when successes is 0 (n).
    """
    _check_counts(successes=successes, n=n)
    if successes > n:
        raise ValueError(f"successes ({successes}) > n ({n})")
    if n == 0:
        return None
    z = z_for(conf)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    lo = 0.0 if successes == 0 else max(0.0, min(p, centre - half))
    hi = 1.0 if successes == n else min(1.0, max(p, centre + half))
    return lo, hi


def balanced_accuracy_interval(true_pos: int, positives: int, true_neg: int, negatives: int,
                               conf: float = 0.95) -> Interval | None:
    """An interval for (TPR + TNR) / 2: MOVER (Zou & Donner 2008) on the two Wilson intervals.

    TPR = true_pos/positives and TNR = true_neg/negatives come from disjoint photos, so they are independent and
    the limits of their sum are  S - sqrt((r1-l1)² + (r2-l2)²)  and  S + sqrt((u1-r1)² + (u2-r2)²),  halved for the
    mean. The interval stays inside the mean of the two Wilson intervals, so inside [0, 1]. None when either
    class has no answered photo (balanced accuracy is then undefined).
    """
    a = wilson_interval(true_pos, positives, conf)
    b = wilson_interval(true_neg, negatives, conf)
    if a is None or b is None:
        return None
    r1, r2 = true_pos / positives, true_neg / negatives
    lo = (r1 + r2 - math.hypot(r1 - a[0], r2 - b[0])) / 2
    hi = (r1 + r2 + math.hypot(a[1] - r1, b[1] - r2)) / 2
    est = (r1 + r2) / 2
    return max(0.0, min(est, lo)), min(1.0, max(est, hi))


# -- two paired proportions --------------------------------------------------------------------------------
def mcnemar_exact_p(b: int, c: int) -> float:
    """Exact two-sided McNemar p: a binomial test of b successes in b + c discordant pairs at p = 1/2.

    p = min(1, 2 · P(X <= min(b, c))), X ~ Binomial(b + c, 1/2); 1.0 when there are no discordant pairs.
    Computed with exact integers, so tiny p-values are not lost to rounding.
    """
    _check_counts(b=b, c=c)
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, k) for k in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))


def paired_phi(both: int, only_1: int, only_2: int, neither: int) -> float:
    """Newcombe's (1998b) continuity-corrected phi for a paired 2x2 table (a, b, c, d), as used by method 10.

    With A = ad - bc:  (A - n/2)/sqrt(efgh) if A > n/2;  0 if 0 <= A <= n/2;  A/sqrt(efgh) if A < 0;
    and 0 when a margin e, f, g, h is zero.
    """
    a, b, c, d = both, only_1, only_2, neither
    n = a + b + c + d
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        return 0.0
    A = a * d - b * c
    if A > n / 2:
        return (A - n / 2) / math.sqrt(margins)
    if A >= 0:
        return 0.0
    return A / math.sqrt(margins)


def paired_diff_interval(both: int, only_1: int, only_2: int, neither: int,
                         conf: float = 0.95) -> Interval | None:
    """Newcombe's (1998b) method 10 interval for p1 - p2 from paired data; None when there are no pairs.

    The table: both = both right (a), only_1 = only the first right (b), only_2 = only the second right (c),
    neither = both wrong (d); p1 = (a+b)/n, p2 = (a+c)/n, difference (b-c)/n. With Wilson intervals (l1, u1) for
    p1 and (l2, u2) for p2 and phi from paired_phi:
        lower = D - sqrt((p1-l1)² - 2·phi·(p1-l1)(u2-p2) + (u2-p2)²)
        upper = D + sqrt((u1-p1)² - 2·phi·(u1-p1)(p2-l2) + (p2-l2)²)
    Recommended for paired proportions by Fagerland, Lydersen & Laake (2014); it stays inside [-1, 1].
    """
    _check_counts(both=both, only_1=only_1, only_2=only_2, neither=neither)
    n = both + only_1 + only_2 + neither
    if n == 0:
        return None
    x1, x2 = both + only_1, both + only_2
    p1, p2 = x1 / n, x2 / n
    l1, u1 = wilson_interval(x1, n, conf)
    l2, u2 = wilson_interval(x2, n, conf)
    phi = paired_phi(both, only_1, only_2, neither)
    d = (only_1 - only_2) / n
    dl = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    du = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, min(d, d - dl)), min(1.0, max(d, d + du))


# -- repeats -----------------------------------------------------------------------------------------------
def self_consistency(answers_per_photo: Iterable[Sequence[Any]]) -> tuple[float | None, int]:
    """(share of photos whose answers were all the same, photos counted).

    Each item is one photo's answers over the repeats. Photos with a missing answer (None) in any repeat, or
    with fewer than two answers, are not counted: there is no full set to compare. (None, 0) when none count.
    """
    same = counted = 0
    for answers in answers_per_photo:
        answers = list(answers)
        if len(answers) < 2 or any(a is None for a in answers):
            continue
        counted += 1
        same += all(a == answers[0] for a in answers[1:])
    return (same / counted if counted else None), counted


def spread(values: Sequence[float | None]) -> dict | None:
    """{"mean", "std", "min", "max"} of the values that are not None (std: the sample standard deviation,
    n - 1 in the denominator; 0.0 for a single value); None when there is no value."""
    vs = [v for v in values if v is not None]
    if not vs:
        return None
    return {"mean": statistics.fmean(vs), "std": statistics.stdev(vs) if len(vs) > 1 else 0.0,
            "min": min(vs), "max": max(vs)}


# -- latency -----------------------------------------------------------------------------------------------
def latency_quantiles(latencies: Iterable[float]) -> tuple[float, float] | None:
    """(p50, p95) the way the reference summary computes them: the median, and the lower nearest rank
    sorted[int(0.95 · (n - 1))] for p95. None when there is no latency."""
    lat = sorted(latencies)
    if not lat:
        return None
    return statistics.median(lat), lat[int(0.95 * (len(lat) - 1))]


def rounded(interval: Interval | None, digits: int = 4) -> list[float] | None:
    """An interval as it is written to JSON: [low, high] rounded (rounding keeps low <= estimate <= high)."""
    return None if interval is None else [round(interval[0], digits), round(interval[1], digits)]
