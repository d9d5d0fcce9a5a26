"""How well a model's stated probability of "hot dog" matches what the photos are: calibration and ranking.

Pure Python: no numpy, no scipy, no clock, no I/O. probs are P(hot dog) in [0, 1], labels the truth (bool);
a photo whose prob is None (no log-probabilities came back) is left out of every measure.

- brier_score: Brier (1950), the mean of (p - y)^2.
- expected_calibration_error: ECE (Naeini, Cooper & Hauskrecht 2015; Guo et al. 2017), sum over bins of
  (n_b / N) |mean p_b - share of hot dogs_b|, with the bins for a reliability diagram. strategy="uniform": bins
  [i/B, (i+1)/B), the last one closed so p = 1.0 falls in it. strategy="quantile" (equal mass): edges at the sample
  quantiles i/B with linear interpolation (numpy's default, as sklearn's calibration_curve), the same [lo, hi)
  rule; repeated edges leave empty bins, which are not returned. Empty bins carry no weight in the ECE either way.
- auroc: the area under the ROC curve as the Mann-Whitney statistic, U / (n_pos n_neg) with ties counted 1/2
  (Bamber 1975), from midranks; None when either class is empty.
- auroc_interval: Wald interval auroc +- z SE, clipped to [0, 1]. method="delong" (default): the SE of DeLong,
  DeLong & Clarke-Pearson (1988) from the placement values, computed with midranks (Sun & Xu 2014); it needs two
  photos of each class. method="hanley_mcneil": the SE of Hanley & McNeil (1982), which assumes exponential scores.
  At AUROC 0 or 1 both SEs are 0 and the interval collapses, as Wald intervals do at a boundary.
- p_true_from_logprobs: P(true) for a {"hot_dog": true|false} answer from OpenAI-style token log-probabilities;
  it lives in protocol/logprobs.py (reading an answer is the protocol's job) and is re-exported here.

References:
  G. W. Brier (1950), Verification of forecasts expressed in terms of probability, Mon Weather Rev 78:1-3.
  M. P. Naeini, G. F. Cooper, M. Hauskrecht (2015), Obtaining well calibrated probabilities using Bayesian
    binning, AAAI. C. Guo, G. Pleiss, Y. Sun, K. Q. Weinberger (2017), On calibration of modern neural networks, ICML.
  D. Bamber (1975), The area above the ordinal dominance graph and the area below the ROC graph, J Math Psychol 12.
  J. A. Hanley, B. J. McNeil (1982), The meaning and use of the area under a ROC curve, Radiology 143:29-36.
  E. R. DeLong, D. M. DeLong, D. L. Clarke-Pearson (1988), Comparing the areas under two or more correlated ROC
    curves: a nonparametric approach, Biometrics 44:837-845.
  X. Sun, W. Xu (2014), Fast implementation of DeLong's algorithm, IEEE Signal Process Lett 21:1389-1393.
"""
from __future__ import annotations

import bisect
import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from ..protocol.logprobs import p_true_from_logprobs  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class ReliabilityBin:
    lo: float
    hi: float
    n: int
    mean_p: float
    frac_pos: float


@dataclass(frozen=True)
class Calibration:
    ece: float | None
    n: int
    bins: tuple[ReliabilityBin, ...]


def _pairs(probs: Sequence[float | None], labels: Sequence[bool]) -> list[tuple[float, bool]]:
    probs, labels = list(probs), list(labels)
    if len(probs) != len(labels):
        raise ValueError(f"probs and labels differ in length ({len(probs)} and {len(labels)})")
    out = []
    for p, y in zip(probs, labels):
        if p is None:
            continue
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"a probability must be a number in [0, 1], got {p!r}")
        if y is None:
            raise ValueError("a label is None: every photo with a probability needs its truth")
        out.append((float(p), bool(y)))
    return out


def brier_score(probs: Sequence[float | None], labels: Sequence[bool]) -> float | None:
    """Mean of (p - y)^2 over the photos with a probability; None when there is none."""
    pairs = _pairs(probs, labels)
    return math.fsum((p - y) ** 2 for p, y in pairs) / len(pairs) if pairs else None


def _quantile(xs: list[float], q: float) -> float:
    h = (len(xs) - 1) * q
    i = math.floor(h)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (h - i) * (xs[i + 1] - xs[i])


def _bin(lo: float, hi: float, members: list[tuple[float, bool]]) -> ReliabilityBin:
    ps = [p for p, _ in members]
    mean = min(max(math.fsum(ps) / len(ps), min(ps)), max(ps))  # a rounded mean stays among its members
    return ReliabilityBin(lo, hi, len(ps), mean, sum(y for _, y in members) / len(ps))


def expected_calibration_error(probs: Sequence[float | None], labels: Sequence[bool], bins: int = 10,
                               strategy: str = "uniform") -> Calibration:
    """ECE and the non-empty reliability bins (module docstring); ece None when no photo has a probability."""
    if int(bins) != bins or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    if strategy not in ("uniform", "quantile"):
        raise ValueError(f"strategy must be 'uniform' or 'quantile', got {strategy!r}")
    pairs = _pairs(probs, labels)
    if not pairs:
        return Calibration(None, 0, ())
    if strategy == "uniform":
        edges = [i / bins for i in range(bins + 1)]
    else:
        ps = sorted(p for p, _ in pairs)
        edges = [_quantile(ps, i / bins) for i in range(bins + 1)]
    members: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for p, y in pairs:  # the last edge <= p: bins are [lo, hi), the last one closed
        members[min(bins - 1, max(0, bisect.bisect_right(edges, p) - 1))].append((p, y))
    out = tuple(_bin(edges[i], edges[i + 1], m) for i, m in enumerate(members) if m)
    ece = math.fsum(b.n * abs(b.mean_p - b.frac_pos) for b in out) / len(pairs)
    return Calibration(min(1.0, ece), len(pairs), out)


def _midranks(xs: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing the mean of their ranks."""
    order = sorted(range(len(xs)), key=xs.__getitem__)
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def auroc(probs: Sequence[float | None], labels: Sequence[bool]) -> float | None:
    """P(a hot dog scores above another photo) + P(tie) / 2 = U / (n_pos n_neg); None when a class is empty."""
    pairs = _pairs(probs, labels)
    n_pos = sum(y for _, y in pairs)
    n_neg = len(pairs) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = _midranks([p for p, _ in pairs])
    rank_sum = math.fsum(r for r, (_, y) in zip(ranks, pairs) if y)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def auroc_interval(probs: Sequence[float | None], labels: Sequence[bool], conf: float = 0.95,
                   method: str = "delong") -> tuple[float, float] | None:
    """auroc +- z SE, clipped to [0, 1] (module docstring); None when the SE cannot be computed."""
    if method not in ("delong", "hanley_mcneil"):
        raise ValueError(f"method must be 'delong' or 'hanley_mcneil', got {method!r}")
    z = statistics.NormalDist().inv_cdf(0.5 + conf / 2)
    pairs = _pairs(probs, labels)
    pos = [p for p, y in pairs if y]
    neg = [p for p, y in pairs if not y]
    a = auroc(probs, labels)
    if a is None:
        return None
    m, n = len(pos), len(neg)
    if method == "hanley_mcneil":
        q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
        var = (a * (1 - a) + (m - 1) * (q1 - a * a) + (n - 1) * (q2 - a * a)) / (m * n)
    else:
        if m < 2 or n < 2:
            return None
        ranks, r_pos, r_neg = _midranks(pos + neg), _midranks(pos), _midranks(neg)
        v10 = [(ranks[i] - r_pos[i]) / n for i in range(m)]  # share of non-hot dogs below each hot dog
        v01 = [1 - (ranks[m + j] - r_neg[j]) / m for j in range(n)]  # share of hot dogs above each non-hot dog
        var = statistics.variance(v10) / m + statistics.variance(v01) / n
    se = math.sqrt(max(0.0, var))
    return max(0.0, a - z * se), min(1.0, a + z * se)
