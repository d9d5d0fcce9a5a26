"""hotdogbench_core.stats.proportions against published worked values, scipy where it has the method, and properties."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdogbench_core.stats.proportions import (balanced_accuracy_interval, latency_quantiles,
                                    mcnemar_exact_p, paired_diff_interval, paired_phi, rounded, self_consistency,
                                    spread, wilson_interval, z_for)

# -- Wilson: Newcombe (1998a) Table II, method 3 (score interval without continuity correction) -------------
NEWCOMBE_1998A = [
    ((81, 263), (0.2553, 0.3662)),
    ((15, 148), (0.0624, 0.1605)),
    ((0, 20), (0.0000, 0.1611)),
    ((1, 29), (0.0061, 0.1718)),
]


@pytest.mark.parametrize("counts,expected", NEWCOMBE_1998A)
def test_wilson_matches_newcombe_1998_table(counts, expected):
    assert rounded(wilson_interval(*counts)) == list(expected)


def test_wilson_closed_form_edges():
    z2 = z_for(0.95) ** 2
    # 0/n: [0, z²/(n+z²)]; n/n: [n/(n+z²), 1]  (Brown, Cai & DasGupta 2001)
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(z2 / (10 + z2), abs=1e-12)
    assert hi == pytest.approx(0.27753, abs=1e-5)
    lo, hi = wilson_interval(10, 10)
    assert hi == 1.0 and lo == pytest.approx(10 / (10 + z2), abs=1e-12)
    assert wilson_interval(0, 0) is None


def test_z_is_the_normal_quantile():
    assert z_for(0.95) == pytest.approx(1.959963984540054, abs=1e-12)
    with pytest.raises(ValueError):
        z_for(1.0)


def test_wilson_agrees_with_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    for x, n in [(81, 263), (15, 148), (0, 10), (10, 10), (1, 1), (3, 7), (499, 1000), (24, 25)]:
        ci = scipy_stats.binomtest(x, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson_interval(x, n) == pytest.approx((ci.low, ci.high), abs=1e-12)
    ci = scipy_stats.binomtest(7, 40).proportion_ci(confidence_level=0.9, method="wilson")
    assert wilson_interval(7, 40, conf=0.9) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_wilson_rejects_bad_counts():
    for x, n in [(-1, 3), (4, 3), (1.5, 3)]:
        with pytest.raises(ValueError):
            wilson_interval(x, n)


# -- McNemar exact --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("b,c,p", [
    (1, 6, 0.125),            # 2 · (1 + 7) / 2^7
    (0, 0, 1.0),              # no discordant pairs
    (3, 3, 1.0),
    (0, 5, 0.0625),           # 2 / 2^5
    (2, 8, 0.109375),         # 2 · (1 + 10 + 45) / 2^10
    (0, 1, 1.0),              # min(1, 2 · 1/2)
    (6, 16, 0.052478790283203125),  # Cavo et al.: 2 · P(X <= 6), X ~ Bin(22, 1/2)
])
def test_mcnemar_exact_known_values(b, c, p):
    assert mcnemar_exact_p(b, c) == pytest.approx(p, rel=1e-12)


def test_mcnemar_tiny_p_is_not_rounded_to_zero():
    p = mcnemar_exact_p(0, 1000)  # 2 / 2^1000: a float, though far below any rounding of the sum
    assert 0 < p == pytest.approx(2.0 ** -999, rel=1e-12)
    assert mcnemar_exact_p(3, 1000) == pytest.approx(2 * (1 + 1003 + 1003 * 1002 / 2 + 1003 * 1002 * 1001 / 6)
                                                     / 2.0 ** 1003, rel=1e-12)


def test_mcnemar_agrees_with_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    for b, c in [(1, 6), (5, 5), (12, 30), (40, 21), (0, 9), (100, 130)]:
        assert mcnemar_exact_p(b, c) == pytest.approx(scipy_stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-9)


# -- paired difference: Newcombe (1998b) method 10 -------------------------------------------------------------
def test_paired_diff_cavo_worked_example():
    # Complete response before/after consolidation therapy (Cavo et al. 2012), worked in Fagerland, Lydersen &
    # Laake (2014) and their book (2017, ch. 8): table 59, 6 / 16, 80; Newcombe square-and-add
    # -0.0621 (95% CI -0.1186 to -0.0046).
    lo, hi = paired_diff_interval(59, 6, 16, 80)
    assert (round(lo, 4), round(hi, 4)) == (-0.1186, -0.0046)
    assert paired_phi(59, 6, 16, 80) == pytest.approx((59 * 80 - 6 * 16 - 161 / 2) / math.sqrt(65 * 96 * 75 * 86))


def test_paired_diff_by_hand_formula():
    # An independent restatement of method 10, with scipy's Wilson limits, on several tables.
    scipy_stats = pytest.importorskip("scipy.stats")
    for a, b, c, d in [(1, 1, 7, 12), (20, 3, 1, 6), (5, 0, 0, 5), (0, 4, 9, 0), (30, 10, 2, 8)]:
        n = a + b + c + d
        p1, p2 = (a + b) / n, (a + c) / n
        w1 = scipy_stats.binomtest(a + b, n).proportion_ci(method="wilson")
        w2 = scipy_stats.binomtest(a + c, n).proportion_ci(method="wilson")
        e, f, g, h = a + b, c + d, a + c, b + d
        A = a * d - b * c
        corrected = (A - n / 2) if A > n / 2 else (0 if A >= 0 else A)
        phi = 0.0 if e * f * g * h == 0 else corrected / math.sqrt(e * f * g * h)
        dl = math.sqrt((p1 - w1.low) ** 2 - 2 * phi * (p1 - w1.low) * (w2.high - p2) + (w2.high - p2) ** 2)
        du = math.sqrt((w1.high - p1) ** 2 - 2 * phi * (w1.high - p1) * (p2 - w2.low) + (p2 - w2.low) ** 2)
        D = (b - c) / n
        assert paired_diff_interval(a, b, c, d) == pytest.approx((D - dl, D + du), abs=1e-12)


def test_paired_diff_degenerate_tables():
    assert paired_diff_interval(0, 0, 0, 0) is None
    lo, hi = paired_diff_interval(10, 0, 0, 0)  # both always right: difference 0, interval around it
    assert lo < 0 < hi
    lo, hi = paired_diff_interval(0, 10, 0, 0)  # a always right, b never: difference 1
    assert hi == 1.0 and 0 < lo < 1


# -- balanced accuracy ---------------------------------------------------------------------------------------
def test_balanced_accuracy_mover_by_hand():
    scipy_stats = pytest.importorskip("scipy.stats")
    tp, pos, tn, neg = 9, 10, 18, 20
    w1 = scipy_stats.binomtest(tp, pos).proportion_ci(method="wilson")
    w2 = scipy_stats.binomtest(tn, neg).proportion_ci(method="wilson")
    r1, r2 = tp / pos, tn / neg
    lo = (r1 + r2 - math.sqrt((r1 - w1.low) ** 2 + (r2 - w2.low) ** 2)) / 2
    hi = (r1 + r2 + math.sqrt((w1.high - r1) ** 2 + (w2.high - r2) ** 2)) / 2
    assert balanced_accuracy_interval(tp, pos, tn, neg) == pytest.approx((lo, hi), abs=1e-12)
    assert rounded(balanced_accuracy_interval(tp, pos, tn, neg)) == [0.7177, 0.9547]


def test_balanced_accuracy_undefined_without_both_classes():
    assert balanced_accuracy_interval(3, 4, 0, 0) is None
    assert balanced_accuracy_interval(0, 0, 3, 4) is None


# -- properties ----------------------------------------------------------------------------------------------
counts = st.integers(min_value=0, max_value=400)


@st.composite
def x_n(draw, max_n=2000):
    n = draw(st.integers(min_value=1, max_value=max_n))
    return draw(st.integers(min_value=0, max_value=n)), n


@given(x_n(), st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_properties(xn, conf):
    x, n = xn
    lo, hi = wilson_interval(x, n, conf)
    assert 0.0 <= lo <= x / n <= hi <= 1.0
    flo, fhi = wilson_interval(n - x, n, conf)  # swap successes and failures: the mirror image
    assert flo == pytest.approx(1 - hi, abs=1e-12) and fhi == pytest.approx(1 - lo, abs=1e-12)
    assert hi - lo < wilson_interval(x, n, 0.999)[1] - wilson_interval(x, n, 0.999)[0] + 1e-15


@given(x_n(max_n=500), st.integers(min_value=2, max_value=10))
def test_wilson_narrows_with_n(xn, k):
    x, n = xn
    lo, hi = wilson_interval(x, n)
    klo, khi = wilson_interval(k * x, k * n)  # same proportion, k times the photos
    assert khi - klo < hi - lo


@given(counts, counts)
def test_mcnemar_properties(b, c):
    p = mcnemar_exact_p(b, c)
    assert 0.0 <= p <= 1.0
    assert p == mcnemar_exact_p(c, b)
    if b == c:
        assert p == 1.0
    if b + c > 0 and max(b, c) > 0:  # one more discordant pair the same way can only lower p
        if b >= c:
            assert mcnemar_exact_p(b + 1, c) <= p
        else:
            assert mcnemar_exact_p(b, c + 1) <= p


@given(counts, counts, counts, counts)
@settings(max_examples=300)
def test_paired_diff_properties(a, b, c, d):
    ci = paired_diff_interval(a, b, c, d)
    n = a + b + c + d
    if n == 0:
        assert ci is None
        return
    lo, hi = ci
    diff = (b - c) / n
    assert -1.0 <= lo <= diff <= hi <= 1.0
    slo, shi = paired_diff_interval(a, c, b, d)  # swap the two models: the interval is mirrored
    assert slo == pytest.approx(-hi, abs=1e-12) and shi == pytest.approx(-lo, abs=1e-12)


@given(x_n(max_n=300), x_n(max_n=300))
def test_balanced_accuracy_properties(pos, neg):
    (tp, p), (tn, q) = pos, neg
    lo, hi = balanced_accuracy_interval(tp, p, tn, q)
    est = (tp / p + tn / q) / 2
    assert 0.0 <= lo <= est <= hi <= 1.0
    # never wider than the mean of the two Wilson intervals
    w1, w2 = wilson_interval(tp, p), wilson_interval(tn, q)
    assert lo >= (w1[0] + w2[0]) / 2 - 1e-12 and hi <= (w1[1] + w2[1]) / 2 + 1e-12


@given(st.lists(st.lists(st.sampled_from([True, False, None]), min_size=1, max_size=5), max_size=30))
def test_self_consistency_properties(answers):
    share, counted = self_consistency(answers)
    full = [a for a in answers if len(a) >= 2 and None not in a]
    assert counted == len(full)
    if counted:
        assert 0.0 <= share <= 1.0
        assert share == sum(len(set(a)) == 1 for a in full) / counted
    else:
        assert share is None


def test_self_consistency_example():
    assert self_consistency([[True, True, True], [True, False, True], [False, False, False], [None, True, True]]) \
        == (2 / 3, 3)


def test_spread():
    s = spread([0.8, 0.9, None, 1.0])
    assert s["mean"] == pytest.approx(0.9) and s["std"] == pytest.approx(0.1)
    assert (s["min"], s["max"]) == (0.8, 1.0)
    assert spread([0.5])["std"] == 0.0 and spread([None]) is None


# -- latency ------------------------------------------------------------------------------------------------
def test_latency_quantiles_are_the_summary_s():
    assert latency_quantiles([]) is None
    assert latency_quantiles([3.0, 1.0, 2.0]) == (2.0, 2.0)  # p95: sorted[int(0.95 * 2)] = sorted[1]
    lat = [i / 100 for i in range(1, 101)]
    assert latency_quantiles(lat) == (pytest.approx(0.505), 0.95)
