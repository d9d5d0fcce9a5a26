"""How many photos it takes to tell two models apart with McNemar's test on paired right/wrong outcomes.

Pure Python: no numpy, no scipy, no clock, no I/O. p10 is the share of photos only A gets right, p01 only B;
psi = p10 + p01 (discordant), delta = p10 - p01 (the accuracy gap); z_a = z_(1-alpha/2), z_b = z_(power).

- mcnemar_sample_size: by default Connor (1987), the normal approximation,
  n = (z_a sqrt(psi) + z_b sqrt(psi - delta^2))^2 / delta^2 rounded up. exact=True: the smallest n at which the
  exact conditional test (stats.mcnemar_exact_p <= alpha) has the power averaged over the binomial number m of
  discordant photos, as SAS PROC POWER's DIST=EXACT_COND: power(n) = sum_m Bin(m; n, psi) R(m), R(m) =
  P(min(b, m - b) <= k_m), b ~ Bin(m, p10/psi), k_m the largest k with 2 P(Bin(m, 1/2) <= k) <= alpha. R(m) runs by
  recurrences in m and k from one direct sum, over the m with Bin(m; n, psi) > 1e-18: O(sqrt(n)) steps, < 50 ms at
  n = 1,000,000. That power is not exactly monotone in n (the sawtooth is smoothed, not gone); bisection returns an
  n that reaches it with n - 1 short (the tests compare a full scan). The exact n exceeds Connor's by about
  0.6/sqrt(m) relatively (6% at m = 70 discordant photos, 0.25% at 80,000); past a million discordant photos the
  search is skipped and Connor's n returned.
- mcnemar_power: the power at n photos, same two methods; the normal one with both tails,
  Phi((|delta| sqrt(n) - z_a sqrt(psi)) / sd) + Phi((-|delta| sqrt(n) - z_a sqrt(psi)) / sd), sd^2 = psi - delta^2
  (Connor's n drops the second term, which is below alpha/2).
- min_detectable_difference: Connor's formula solved for |delta| at the present n and discordant rate.
- proportion_half_width: half the width of the Wilson (1927) interval.  plain_sentence: the answer in words.

References:
  R. J. Connor (1987), Sample size for testing differences in proportions for the paired-sample design,
    Biometrics 43:207-211.
  Q. McNemar (1947), Psychometrika 12:153-157. E. B. Wilson (1927), JASA 22:209-212.
  SAS/STAT User's Guide, The POWER procedure, PAIREDFREQ statement, DIST=EXACT_COND; the R package pwrss's
    power.exact.mcnemar computes the same averaged exact power (its published values are in the tests).
"""
from __future__ import annotations

import math
import statistics

from .proportions import wilson_interval

_PHI = statistics.NormalDist()
_TINY = 1e-18  # binomial terms below this are left out of every sum


def _check(p10: float, p01: float, alpha: float, power: float | None = None) -> None:
    if not (0.0 <= p10 <= 1.0 and 0.0 <= p01 <= 1.0 and p10 + p01 <= 1.0 + 1e-12):
        raise ValueError(f"p10 and p01 must be proportions with p10 + p01 <= 1, got {p10}, {p01}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if power is not None and not 0.0 < power < 1.0:
        raise ValueError(f"power must be in (0, 1), got {power}")


def _connor_n(delta: float, psi: float, alpha: float, power: float) -> float:
    za, zb = _PHI.inv_cdf(1 - alpha / 2), _PHI.inv_cdf(power)
    return (za * math.sqrt(psi) + zb * math.sqrt(max(0.0, psi - delta * delta))) ** 2 / (delta * delta)


def _pmf(k: int, m: int, p: float) -> float:
    if k < 0 or k > m:
        return 0.0
    return math.exp(math.lgamma(m + 1) - math.lgamma(k + 1) - math.lgamma(m - k + 1)
                    + k * math.log(p) + (m - k) * math.log1p(-p))


def _cdf(k: int, m: int, p: float) -> float:
    """P(Bin(m, p) <= k), 0 < p < 1, summing terms from k away from the mode until they vanish."""
    if k < 0:
        return 0.0
    if k >= m:
        return 1.0
    below = k < m * p
    j, t = (k, _pmf(k, m, p)) if below else (k + 1, _pmf(k + 1, m, p))
    total = t
    while t > _TINY and (j > 0 if below else j < m):
        t *= j / (m - j + 1) * (1 - p) / p if below else (m - j) / (j + 1) * p / (1 - p)
        j += -1 if below else 1
        total += t
    return total if below else 1.0 - total


class _Cdf:
    """P(Bin(m, p) <= k) and P(Bin(m, p) = k), carried along as m or k grows by one."""

    def __init__(self, k: int, m: int, p: float):
        self.k, self.m, self.p = k, m, p
        self.cdf, self.pmf = _cdf(k, m, p), _pmf(k, m, p)

    def grow_m(self) -> None:  # P(B' <= k) = P(B <= k) - p P(B = k) for one more trial
        self.cdf -= self.p * self.pmf
        self.m += 1
        self.pmf *= self.m / (self.m - self.k) * (1 - self.p) if self.k >= 0 else 0.0

    def grow_k(self) -> None:
        k, m, p = self.k, self.m, self.p
        self.pmf = (1 - p) ** m if k < 0 else self.pmf * (m - k) / (k + 1) * p / (1 - p)
        self.k += 1
        self.cdf = min(1.0, self.cdf + self.pmf)


def _critical(m: int, alpha: float) -> int:
    """The largest k with 2 P(Bin(m, 1/2) <= k) <= alpha (-1 when the test can never reject)."""
    k = min(m, max(-1, math.floor(m / 2 - _PHI.inv_cdf(1 - alpha / 2) * math.sqrt(m) / 2)))
    while k >= 0 and 2 * _cdf(k, m, 0.5) > alpha:
        k -= 1
    while 2 * _cdf(k + 1, m, 0.5) <= alpha:
        k += 1
    return k


def _conditional_power(m_lo: int, m_hi: int, q: float, alpha: float) -> list[float]:
    """R(m) for m = m_lo..m_hi: the exact McNemar test's rejection chance with m discordant photos, p10/psi = q."""
    if q in (0.0, 1.0):  # every discordant photo goes one way: rejected once rejection is possible (k_m >= 0)
        return [1.0 if 2 * 0.5 ** m <= alpha else 0.0 for m in range(m_lo, m_hi + 1)]
    k = _critical(m_lo, alpha)
    half, low, high = _Cdf(k, m_lo, 0.5), _Cdf(k, m_lo, q), _Cdf(m_lo - k - 1, m_lo, q)
    out = [low.cdf + 1.0 - high.cdf]
    for _ in range(m_lo, m_hi):
        half.grow_m()
        low.grow_m()
        high.grow_m()
        cdf, pmf = half.cdf, half.pmf
        half.grow_k()
        if 2 * half.cdf <= alpha:  # k_(m+1) is k_m or k_m + 1
            low.grow_k()
        else:
            half.k, half.cdf, half.pmf = half.k - 1, cdf, pmf
            high.grow_k()
        out.append(max(0.0, min(1.0, low.cdf + 1.0 - high.cdf)))
    return out


def _binomial_terms(n: int, p: float) -> tuple[int, list[float]]:
    """(first m, [Bin(m; n, p) for the m from there on]): the terms above _TINY, walked out from the mode."""
    if p >= 1.0:
        return n, [1.0]
    mode = min(n, math.floor((n + 1) * p))

    def walk(step: int) -> list[float]:
        out, t, j = [], _pmf(mode, n, p), mode
        while 0 <= j + step <= n and t > _TINY:
            t *= (n - j) / (j + 1) * p / (1 - p) if step > 0 else j / (n - j + 1) * (1 - p) / p
            j += step
            out.append(t)
        return out

    down = walk(-1)
    return mode - len(down), down[::-1] + [_pmf(mode, n, p)] + walk(1)


def _exact_power(n: int, p10: float, p01: float, alpha: float) -> float:
    psi = p10 + p01
    if n == 0 or psi == 0.0:
        return 0.0
    m_lo, weights = _binomial_terms(n, min(1.0, psi))
    rejection = _conditional_power(m_lo, m_lo + len(weights) - 1, min(1.0, p10 / psi), alpha)
    return min(1.0, math.fsum(w * r for w, r in zip(weights, rejection)))


def mcnemar_power(n: int, p10: float, p01: float, alpha: float = 0.05, exact: bool = False) -> float:
    """The chance McNemar's test at level alpha rejects with n photos (two-sided; module docstring)."""
    _check(p10, p01, alpha)
    if n < 0 or int(n) != n:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    if exact:
        return _exact_power(int(n), p10, p01, alpha)
    psi, delta = p10 + p01, abs(p10 - p01)
    if n == 0 or psi == 0.0:
        return 0.0
    za, sd = _PHI.inv_cdf(1 - alpha / 2), math.sqrt(max(0.0, psi - delta * delta))
    if sd == 0.0:  # all photos discordant, all one way: the statistic is sqrt(n), no spread
        return 1.0 if delta * math.sqrt(n) > za * math.sqrt(psi) else 0.0
    return min(1.0, _PHI.cdf((delta * math.sqrt(n) - za * math.sqrt(psi)) / sd)
               + _PHI.cdf((-delta * math.sqrt(n) - za * math.sqrt(psi)) / sd))


def mcnemar_sample_size(p10: float, p01: float, alpha: float = 0.05, power: float = 0.80,
                        exact: bool = False) -> int | None:
    """Photos needed for McNemar's test to find the gap p10 - p01 with this power; None when p10 == p01 (no number
    of photos detects a gap of zero). Connor (1987) by default; exact=True as in the module docstring."""
    _check(p10, p01, alpha, power)
    delta, psi = abs(p10 - p01), p10 + p01
    if delta == 0.0:
        return None
    connor = max(1, math.ceil(_connor_n(delta, psi, alpha, power) - 1e-9))
    if not exact or connor * psi > 1_000_000:
        return connor
    lo, hi = 0, connor
    while _exact_power(hi, p10, p01, alpha) < power:  # ends: the power tends to 1 as n grows
        lo, hi = hi, math.ceil(hi * 1.25) + 1
    while hi - lo > 1:  # power(lo) < power <= power(hi)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _exact_power(mid, p10, p01, alpha) >= power else (mid, hi)
    return hi


def min_detectable_difference(n: int, discordant_rate: float, alpha: float = 0.05,
                              power: float = 0.80) -> float | None:
    """The smallest |p10 - p01| that Connor's formula says n photos detect at this discordant rate psi = p10 + p01.

    Connor's n solved for delta, (n + zb^2) delta^2 - 2 za sqrt(psi n) delta + psi (za^2 - zb^2) = 0, has the root
    delta = sqrt(psi) (za sqrt(n) + zb sqrt(n + zb^2 - za^2)) / (n + zb^2); for power >= 0.5 (required) Connor's n
    falls as |delta| grows, so it is the only one. None when no discordant photo is expected, or when not even the
    widest gap possible (every discordant photo one way, |delta| = psi) is within n photos.
    """
    _check(discordant_rate, 0.0, alpha, power)
    if power < 0.5:
        raise ValueError(f"power must be at least 0.5, got {power}")
    psi, za, zb = discordant_rate, _PHI.inv_cdf(1 - alpha / 2), _PHI.inv_cdf(power)
    if psi == 0.0 or n <= 0 or _connor_n(psi, psi, alpha, power) > n * (1 + 1e-12):
        return None
    delta = math.sqrt(psi) * (za * math.sqrt(n) + zb * math.sqrt(n + zb * zb - za * za)) / (n + zb * zb)
    return min(psi, delta)


def proportion_half_width(successes: int, n: int, conf: float = 0.95) -> float | None:
    """Half the width of the Wilson interval for successes/n, (high - low) / 2; None when n == 0."""
    interval = wilson_interval(successes, n, conf)
    return None if interval is None else (interval[1] - interval[0]) / 2


def _about(n: int) -> int:
    """Rounded up to two significant figures from 100 on (1,153 -> 1,200), exact below."""
    step = 10 ** max(0, len(str(n)) - 2)
    return -(-n // step) * step


def plain_sentence(a: str, b: str, n_needed: int | None, n_have: int, cap: int = 1_000_000) -> str:
    """E.g. "To tell A from B at this gap you need about 1,200 photos; you have 66."

    n_needed None (no gap observed, p10 == p01) says no photo count can tell them apart at a gap of zero;
    n_needed above cap says "more than cap".
    """
    if n_needed is None:
        return (f"{a} and {b} showed no gap (each was right where the other was wrong equally often), so no "
                f"number of photos can tell them apart at a gap of zero; you have {n_have:,}.")
    need = f"more than {cap:,}" if n_needed > cap else f"about {_about(n_needed):,}"
    enough = ", which is enough" if n_have >= n_needed else ""
    return (f"To tell {a} from {b} at this gap you need {need} photo{'s' if n_needed != 1 else ''}; "
            f"you have {n_have:,}{enough}.")
