"""hotdogbench_core.stats.power against published values, scipy, a seeded simulation and properties."""
import functools
import statistics
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from hotdogbench_core.stats.proportions import mcnemar_exact_p, wilson_interval
from hotdogbench_core.stats import power
from hotdogbench_core.stats.power import (mcnemar_power, mcnemar_sample_size, min_detectable_difference,
                                              plain_sentence, proportion_half_width)

Z = statistics.NormalDist().inv_cdf


@functools.lru_cache(maxsize=None)
def critical_exact(m, alpha):
    """The largest k with mcnemar_exact_p(k, m - k) <= alpha (-1: never), with the same exact integers and the
    same rounding as the harness' test, the tail summed once per m."""
    m = int(m)
    k, tail, term = -1, 0, 1
    while k + 1 < m:
        tail += term  # sum of C(m, j) for j <= k + 1
        if float(min(Fraction(1), Fraction(2 * tail, 2 ** m))) > alpha:
            break
        k += 1
        term = term * (m - k) // (k + 1)
    return k


def test_critical_exact_is_the_harness_test():
    for m in (1, 5, 6, 17, 30, 64):
        for alpha in (0.05, 0.01):
            k = critical_exact(m, alpha)
            assert k < 0 or mcnemar_exact_p(k, m - k) <= alpha
            assert mcnemar_exact_p(k + 1, m - k - 1) > alpha


def rejection_scipy(m, q, alpha, k=None):
    k = critical_exact(m, alpha) if k is None else k
    return 0.0 if k < 0 else stats.binom.cdf(k, m, q) + stats.binom.sf(m - k - 1, m, q)


def exact_power_scipy(n, p10, p01, alpha):
    psi = p10 + p01
    weights = stats.binom.pmf(np.arange(n + 1), n, psi)
    return sum(w * rejection_scipy(m, p10 / psi, alpha) for m, w in enumerate(weights) if w > 1e-16)


# -- published values ---------------------------------------------------------------------------------------
def test_connor_worked_example():
    # Connor (1987) p. 209 as worked in powerandsamplesize.com's McNemar calculator: p01 = 0.45, p10 = 0.05,
    # alpha = 0.05 two-sided, power 0.80: n = 22.01, rounded up 23.
    assert mcnemar_sample_size(0.05, 0.45) == 23
    assert mcnemar_sample_size(0.45, 0.05) == 23
    assert power._connor_n(0.40, 0.50, 0.05, 0.80) == pytest.approx(22.01, abs=0.01)


def test_pwrss_exact_and_approximate_values():
    # R package pwrss, power.exact.mcnemar (validated there against PASS and G*Power), from its documentation and
    # tests: prob10 = 0.20, prob01 = 0.10, two-sided alpha = 0.05.
    assert mcnemar_power(100, 0.20, 0.10, exact=True) == pytest.approx(0.373077084, abs=1e-9)
    assert mcnemar_power(249, 0.20, 0.10, exact=True) == pytest.approx(0.801446921, abs=1e-9)
    assert mcnemar_sample_size(0.20, 0.10, power=0.80, exact=True) == 249
    # its normal approximation, both tails: n = 500, prob10 = 0.10, prob01 = 0.20 -> 0.98456731
    assert mcnemar_power(500, 0.10, 0.20) == pytest.approx(0.98456731, abs=1e-8)
    # and the size of the exact test with 30 discordant pairs: reject at b <= 9 or b >= 21, alpha 0.042773945
    assert power._critical(30, 0.05) == 9
    assert power._conditional_power(30, 30, 0.5, 0.05)[0] == pytest.approx(0.042773945, abs=1e-9)


# -- the exact computation against scipy and the harness' own test ------------------------------------------
@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.2])
def test_critical_values_match_the_exact_mcnemar_test(alpha):
    assert [power._critical(m, alpha) for m in range(0, 260)] == [critical_exact(m, alpha) for m in range(0, 260)]


@pytest.mark.parametrize("q", [0.5, 0.3, 0.7, 0.05, 0.999, 0.0, 1.0])
@pytest.mark.parametrize("m_lo", [0, 137])
def test_conditional_power_recurrences_match_scipy(q, m_lo):
    got = power._conditional_power(m_lo, 320, q, 0.05)
    want = [rejection_scipy(m, q, 0.05) for m in range(m_lo, 321)]
    assert got == pytest.approx(want, abs=1e-12)


def test_conditional_power_far_from_the_start():
    # 3,000 steps of the recurrences from m = 20,000, against scipy with scipy's own critical values
    got = power._conditional_power(20_000, 23_000, 0.52, 0.05)
    for m in range(20_000, 23_001, 250):
        k = int(stats.binom.ppf(0.025, m, 0.5))
        k = k if 2 * stats.binom.cdf(k, m, 0.5) <= 0.05 else k - 1
        assert got[m - 20_000] == pytest.approx(rejection_scipy(m, 0.52, 0.05, k), abs=1e-10)


@pytest.mark.parametrize("n,p10,p01,alpha", [(100, 0.2, 0.1, 0.05), (57, 0.05, 0.45, 0.05), (500, 0.03, 0.08, 0.05),
                                              (40, 0.5, 0.5, 0.01), (30, 0.6, 0.4, 0.05), (7, 0.9, 0.1, 0.1)])
def test_exact_power_matches_scipy(n, p10, p01, alpha):
    assert mcnemar_power(n, p10, p01, alpha, exact=True) == pytest.approx(exact_power_scipy(n, p10, p01, alpha),
                                                                          abs=1e-12)


def test_exact_sample_size_is_the_first_n_that_reaches_the_power():
    rng = np.random.default_rng(5)
    checked = 0
    while checked < 25:
        psi, q = rng.uniform(0.05, 1.0), rng.uniform(0.6, 1.0)
        p10, p01, alpha, target = psi * q, psi * (1 - q), rng.choice([0.01, 0.05, 0.1]), rng.choice([0.5, 0.8, 0.9])
        n = mcnemar_sample_size(p10, p01, alpha, target, exact=True)
        if n > 400:
            continue
        checked += 1
        scan = next(k for k in range(1, 10_000) if power._exact_power(k, p10, p01, alpha) >= target)
        assert n == scan


def test_exact_sample_size_stays_close_to_connor_for_many_discordant_photos():
    c, e = mcnemar_sample_size(0.102, 0.1), mcnemar_sample_size(0.102, 0.1, exact=True)
    assert 0 < (e - c) / c < 0.005  # ~80,000 discordant photos: 0.25% apart
    # past a million discordant photos the search is skipped
    assert mcnemar_sample_size(0.1005, 0.1, exact=True) == mcnemar_sample_size(0.1005, 0.1)


def test_simulated_power_at_the_returned_n():
    # seeded Monte Carlo: draw 20,000 paired tables at n photos, run the exact McNemar test on each
    rng = np.random.default_rng(20240607)
    crit = np.array([critical_exact(m, 0.05) for m in range(0, 400)])

    def simulated(n, p10, p01, reps=20_000):
        b, c, _ = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=reps).T
        return np.mean(np.minimum(b, c) <= crit[b + c])

    n_exact = mcnemar_sample_size(0.2, 0.1, exact=True)
    sim = simulated(n_exact, 0.2, 0.1)
    assert abs(sim - 0.80) < 0.012 and abs(sim - mcnemar_power(n_exact, 0.2, 0.1, exact=True)) < 0.01
    n_connor = mcnemar_sample_size(0.2, 0.1)  # the normal approximation promises 0.80 and falls a little short
    sim = simulated(n_connor, 0.2, 0.1)
    assert abs(sim - mcnemar_power(n_connor, 0.2, 0.1, exact=True)) < 0.01 and sim < 0.80
    assert simulated(300, 0.15, 0.15) <= 0.05 + 0.005  # no gap: the exact test keeps its level


# -- properties ---------------------------------------------------------------------------------------------
@st.composite
def discordant(draw):
    psi = draw(st.floats(0.01, 1.0))
    q = draw(st.floats(0.0, 1.0))
    return psi * q, psi * (1 - q)


@given(discordant(), st.sampled_from([0.01, 0.05, 0.1]), st.sampled_from([0.5, 0.8, 0.9, 0.95]))
@settings(max_examples=300, deadline=None)
def test_connor_sample_size_properties(pp, alpha, target):
    p10, p01 = pp
    n = mcnemar_sample_size(p10, p01, alpha, target)
    assert n == mcnemar_sample_size(p01, p10, alpha, target)
    if p10 == p01:
        assert n is None
        return
    assert n >= 1
    assert mcnemar_power(n, p10, p01, alpha) >= target - 1e-9
    # the same discordant rate with a wider gap needs no more photos
    psi, delta = p10 + p01, abs(p10 - p01)
    wider = min(psi, delta * 1.5)
    assert mcnemar_sample_size((psi + wider) / 2, (psi - wider) / 2, alpha, target) <= n


@given(discordant(), st.integers(0, 5000), st.integers(1, 500))
@settings(max_examples=300, deadline=None)
def test_power_increases_with_n(pp, n, more):
    p10, p01 = pp
    a, b = mcnemar_power(n, p10, p01), mcnemar_power(n + more, p10, p01)
    assert 0.0 <= a <= b <= 1.0
    assert a == mcnemar_power(n, p01, p10)


@given(discordant(), st.integers(0, 400))
@settings(max_examples=150, deadline=None)
def test_exact_power_is_a_probability_and_keeps_the_level(pp, n):
    p10, p01 = pp
    pw = mcnemar_power(n, p10, p01, exact=True)
    assert 0.0 <= pw <= 1.0
    assert pw == pytest.approx(mcnemar_power(n, p01, p10, exact=True), abs=1e-12)
    psi = p10 + p01
    assert mcnemar_power(n, psi / 2, psi / 2, exact=True) <= 0.05 + 1e-12  # the size of the exact test


def test_power_edge_cases():
    assert mcnemar_power(0, 0.2, 0.1) == 0.0 and mcnemar_power(0, 0.2, 0.1, exact=True) == 0.0
    assert mcnemar_power(100, 0.0, 0.0) == 0.0 and mcnemar_power(100, 0.0, 0.0, exact=True) == 0.0
    assert mcnemar_power(10, 1.0, 0.0) == 1.0 and mcnemar_power(3, 1.0, 0.0) == 0.0  # sqrt(3) < 1.96
    assert mcnemar_power(5, 1.0, 0.0, exact=True) == 0.0 and mcnemar_power(6, 1.0, 0.0, exact=True) == 1.0
    assert mcnemar_power(1000, 0.1, 0.1) == pytest.approx(0.05, abs=1e-12)  # the normal test's size at no gap
    for bad in [(-0.1, 0.2), (0.7, 0.5)]:
        with pytest.raises(ValueError):
            mcnemar_sample_size(*bad)
    with pytest.raises(ValueError):
        mcnemar_sample_size(0.2, 0.1, power=1.0)
    with pytest.raises(ValueError):
        mcnemar_power(-1, 0.2, 0.1)


# -- the smallest detectable gap -----------------------------------------------------------------------------
def solved_mdd(n, psi, target=0.80):
    """Connor's n(delta) = n solved numerically (scipy's brentq) on (0, psi]."""
    return optimize.brentq(lambda d: power._connor_n(d, psi, 0.05, target) - n, 1e-9, psi, xtol=1e-15, rtol=1e-13)


@given(st.integers(30, 100_000), st.floats(0.05, 1.0), st.sampled_from([0.8, 0.9, 0.5]))
@settings(max_examples=300, deadline=None)
def test_min_detectable_difference(n, psi, target):
    d = min_detectable_difference(n, psi, power=target)
    if d is None:
        assert power._connor_n(psi, psi, 0.05, target) > n
        return
    assert d == pytest.approx(solved_mdd(n, psi, target), rel=1e-9)
    assert 0 < d <= psi
    assert power._connor_n(d, psi, 0.05, target) <= n * (1 + 1e-9)
    assert power._connor_n(d * (1 - 1e-6), psi, 0.05, target) > n
    assert min_detectable_difference(n * 4, psi, power=target) < d  # more photos, smaller gaps


def test_min_detectable_difference_edges():
    assert min_detectable_difference(0, 0.3) is None
    assert min_detectable_difference(500, 0.0) is None
    assert min_detectable_difference(3, 0.2) is None  # even an all-one-way gap of 0.2 needs more than 3 photos
    with pytest.raises(ValueError):
        min_detectable_difference(100, 0.3, power=0.3)


# -- half-widths and sentences --------------------------------------------------------------------------------
def test_proportion_half_width():
    # Newcombe (1998a) Table II, method 3: 81/263 -> [0.2553, 0.3662]
    assert proportion_half_width(81, 263) == pytest.approx((0.3662 - 0.2553) / 2, abs=1e-4)
    lo, hi = wilson_interval(15, 148)
    assert proportion_half_width(15, 148) == (hi - lo) / 2
    assert proportion_half_width(0, 0) is None
    assert proportion_half_width(10, 10) == pytest.approx((1 - 10 / (10 + Z(0.975) ** 2)) / 2)


def test_plain_sentence():
    want = "To tell A from B at this gap you need about 1,200 photos; you have 66."
    assert plain_sentence("A", "B", 1153, 66) == want and plain_sentence("A", "B", 1200, 66) == want
    assert plain_sentence("A", "B", 23, 66) == ("To tell A from B at this gap you need about 23 photos; you have 66, "
                                                "which is enough.")
    assert plain_sentence("A", "B", 2_500_000, 66) == ("To tell A from B at this gap you need more than 1,000,000 "
                                                       "photos; you have 66.")
    zero = plain_sentence("Luna", "Sol", None, 66)
    assert "no number of photos can tell them apart at a gap of zero" in zero and zero.endswith("you have 66.")
    assert plain_sentence("A", "B", 1, 0) == "To tell A from B at this gap you need about 1 photo; you have 0."
    # rounding is up, never down, and keeps two significant figures
    assert power._about(101) == 110 and power._about(99_001) == 100_000 and power._about(7) == 7
