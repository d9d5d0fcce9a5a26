"""Agreement between two or more raters (models), and how much two models' mistakes overlap.

Pure Python: no numpy, no scipy, no clock, no I/O. A verdict is True/False (any hashable label works, so the
textbook tables with more categories can be checked); None is "no verdict" and is left out as described below.

Methods:

- cohen_kappa: Cohen's (1960) kappa for two raters, kappa = (p_o - p_e) / (1 - p_e), with p_o the share of photos
  both gave the same verdict and p_e = sum_c p_a(c) p_b(c) the agreement their own verdict rates give by chance.
  Its large-sample standard error is the non-null one of Fleiss, Cohen & Everitt (1969), the "ASE" SAS PROC FREQ
  prints; the interval is kappa +- z SE, clipped to [-1, 1].
- fleiss_kappa: Fleiss' (1971) kappa for many raters. With equal rating counts per photo it is exactly Fleiss'
  formula. When raters left photos unanswered the counts differ, and the form for missing ratings of Gwet (2014,
  Handbook of Inter-Rater Reliability, 4th ed.; as in his irrCAC fleiss.kappa.raw) is used: the per-photo
  agreement P_i = sum_c n_ic (n_ic - 1) / (m_i (m_i - 1)) is averaged over the photos, and the chance term is
  P_e = sum_c pi_c^2 with pi_c the mean over the photos of n_ic / m_i. Photos with fewer than two verdicts say
  nothing about agreement and are dropped (Gwet keeps single-verdict photos in pi_c; here they are dropped from
  both terms, so "photos" counts one set).
- error_overlap: over the photos both models answered, the share both got wrong, what independence would give
  (p_wrong_a * p_wrong_b), their ratio, and the error consistency kappa of Geirhos, Meding & Wichmann (2020):
  c_obs = share of photos where the two are both right or both wrong, c_exp = acc_a acc_b + (1 - acc_a)(1 - acc_b),
  kappa = (c_obs - c_exp) / (1 - c_exp). It is Cohen's kappa on the right/wrong labels. In a yes/no task two wrong
  answers are always the same answer, so it is also the discrete form of CAPA in Goel et al. (2025), whose chance
  term p_a p_b + (1 - p_a)(1 - p_b) / (k - 1) is Geirhos' for k = 2 options.

Undefined values are None, never NaN: a kappa when p_e (c_exp) is 1, which happens only when both raters gave one
and the same verdict to every photo (both models right everywhere, or wrong everywhere). Agreement is then perfect,
but chance alone would have produced it, so there is no agreement beyond chance to measure: 0/0.

References:
  J. Cohen (1960), A coefficient of agreement for nominal scales, Educ Psychol Meas 20:37-46.
  J. L. Fleiss, J. Cohen, B. S. Everitt (1969), Large sample standard errors of kappa and weighted kappa,
    Psychol Bull 72:323-327.
  J. L. Fleiss (1971), Measuring nominal scale agreement among many raters, Psychol Bull 76:378-382.
  K. L. Gwet (2014), Handbook of Inter-Rater Reliability, 4th ed., Advanced Analytics.
  R. Geirhos, K. Meding, F. A. Wichmann (2020), Beyond accuracy: quantifying trial-by-trial behaviour of CNNs and
    humans by measuring error consistency, NeurIPS 33.
  S. Goel et al. (2025), Great models think alike and this undermines AI oversight, arXiv:2502.04313.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Hashable, Iterable, Sequence


@dataclass(frozen=True)
class Kappa:
    """kappa (None when undefined), photos counted, observed and chance agreement, SE and interval."""
    kappa: float | None
    n: int
    observed: float | None
    expected: float | None
    se: float | None = None
    interval: tuple[float, float] | None = None


@dataclass(frozen=True)
class FleissKappa:
    kappa: float | None
    photos: int
    observed: float | None  # mean per-photo agreement P-bar
    expected: float | None  # chance agreement P_e


@dataclass(frozen=True)
class ErrorOverlap:
    n: int  # photos both answered
    p_wrong_a: float | None
    p_wrong_b: float | None
    both_wrong: float | None  # share of the n photos both got wrong
    independent: float | None  # p_wrong_a * p_wrong_b
    ratio: float | None  # both_wrong / independent; None when a model made no mistake
    observed: float | None  # c_obs: share both right or both wrong
    expected: float | None  # c_exp
    kappa: float | None  # error consistency


def _z(conf: float) -> float:
    if not 0.0 < conf < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {conf}")
    return statistics.NormalDist().inv_cdf(0.5 + conf / 2)


def _pairs(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple]:
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"the two sequences differ in length ({len(a)} and {len(b)})")
    return [(x, y) for x, y in zip(a, b) if x is not None and y is not None]


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable], conf: float = 0.95) -> Kappa:
    """Cohen's kappa of two raters' verdicts on the same photos; pairs where either is None are dropped.

    kappa = (n O - E) / (n^2 - E) with O the photos agreed on and E = sum_c n_a(c) n_b(c), computed from integers so
    it is exactly symmetric in a and b. None when n == 0 or p_e == 1 (see the module docstring). The interval is
    kappa +- z SE with the Fleiss-Cohen-Everitt (1969) SE; with SE 0 (perfect agreement) it is [kappa, kappa].
    """
    z = _z(conf)
    pairs = _pairs(a, b)
    n = len(pairs)
    if n == 0:
        return Kappa(None, 0, None, None)
    cells = Counter(pairs)
    ra, rb = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    cats = set(ra) | set(rb)
    agreed = sum(cells[(c, c)] for c in cats)
    chance = sum(ra[c] * rb[c] for c in cats)
    po, pe = agreed / n, chance / (n * n)
    if chance == n * n:
        return Kappa(None, n, po, 1.0)
    # exact rational arithmetic, so a variance that is 0 (e.g. one rater constant) comes out as 0
    kappa = Fraction(n * agreed - chance, n * n - chance)
    w, pe_q = 1 - kappa, Fraction(chance, n * n)
    diag = sum(Fraction(cells[(c, c)], n) * (1 - Fraction(ra[c] + rb[c], n) * w) ** 2 for c in cats)
    off = w * w * sum(Fraction(v, n) * Fraction(rb[i] + ra[j], n) ** 2 for (i, j), v in cells.items() if i != j)
    var = (diag + off - (kappa - pe_q * w) ** 2) / (n * (1 - pe_q) ** 2)
    se = math.sqrt(max(0.0, float(var)))
    kappa = float(kappa)
    return Kappa(kappa, n, po, pe, se, (max(-1.0, kappa - z * se), min(1.0, kappa + z * se)))


def fleiss_kappa(table: Iterable[Sequence[Hashable]]) -> FleissKappa:
    """Fleiss' kappa over photos: table holds one list of verdicts per photo (one per rater, None = no verdict).

    None verdicts are dropped, then photos with fewer than two verdicts. Unequal counts are handled as Gwet
    (2014) does (module docstring); with equal counts this is Fleiss (1971) exactly. kappa is None when no photo
    counts or when every verdict is the same one (P_e = 1).
    """
    rows = []
    for photo in table:
        votes = [v for v in photo if v is not None]
        if len(votes) >= 2:
            rows.append((Counter(votes), len(votes)))
    photos = len(rows)
    if photos == 0:
        return FleissKappa(None, 0, None, None)
    p_bar = math.fsum(sum(k * (k - 1) for k in counts.values()) / (m * (m - 1)) for counts, m in rows) / photos
    cats = set().union(*(counts for counts, _ in rows))
    share = {c: math.fsum(counts[c] / m for counts, m in rows) / photos for c in cats}
    p_e = math.fsum(s * s for s in share.values())
    if len(cats) == 1:
        return FleissKappa(None, photos, p_bar, 1.0)
    return FleissKappa((p_bar - p_e) / (1 - p_e), photos, p_bar, p_e)


def error_overlap(correct_a: Sequence[bool | None], correct_b: Sequence[bool | None]) -> ErrorOverlap:
    """How the two models' mistakes overlap, over the photos both answered (None = unanswered, dropped).

    With n photos, w_a and w_b each model's wrong count and w_ab the photos both got wrong:
      both_wrong = w_ab / n, independent = (w_a / n)(w_b / n), ratio = both_wrong / independent,
      c_obs = (n - w_a - w_b + 2 w_ab) / n, c_exp = acc_a acc_b + (1 - acc_a)(1 - acc_b),
      kappa = (c_obs - c_exp) / (1 - c_exp)  (Geirhos et al. 2020).
    ratio is None when either model made no mistake, kappa when c_exp = 1 (both always right, or always wrong).
    """
    pairs = [(bool(x), bool(y)) for x, y in _pairs(correct_a, correct_b)]
    n = len(pairs)
    if n == 0:
        return ErrorOverlap(0, None, None, None, None, None, None, None, None)
    wa = sum(not x for x, _ in pairs)
    wb = sum(not y for _, y in pairs)
    wab = sum(not x and not y for x, y in pairs)
    pa, pb = wa / n, wb / n
    independent = pa * pb
    ratio = (wab / n) / independent if wa and wb else None
    c_obs = (n - wa - wb + 2 * wab) / n
    # c_exp with integers: ((n-wa)(n-wb) + wa wb) / n^2; kappa = (n^2 c_obs - that) / (n^2 - that)
    chance = (n - wa) * (n - wb) + wa * wb
    c_exp = chance / (n * n)
    kappa = None if chance == n * n else (n * (n - wa - wb + 2 * wab) - chance) / (n * n - chance)
    return ErrorOverlap(n, pa, pb, wab / n, independent, ratio, c_obs, c_exp, kappa)
