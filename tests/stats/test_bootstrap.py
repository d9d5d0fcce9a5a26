"""hotdogbench_core.stats.bootstrap: exactness of the cell draws, agreement with row resampling, coverage,
reproducibility, edge cases and speed."""
import random
import statistics
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from hotdogbench_core.stats.proportions import wilson_interval
from hotdogbench_core.stats import bootstrap
from hotdogbench_core.stats.bootstrap import (BootInterval, bootstrap_accuracy, bootstrap_balanced_accuracy,
                                                  bootstrap_cells, bootstrap_interval, bootstrap_paired_difference,
                                                  disagrees)


# -- the binomial and multinomial draws are exact in distribution -------------------------------------------
@pytest.mark.parametrize("n,p", [(1, 0.5), (3, 0.9), (10, 0.3), (200, 0.05), (10_000, 0.5), (5000, 0.999)])
def test_binomial_table_is_the_binomial_distribution(n, p):
    first, cum = bootstrap._Binomials(random.random)._table(n, p)
    pmf = np.diff(np.concatenate([[0.0], cum])) / cum[-1]
    ks = np.arange(first, first + len(cum))
    assert np.max(np.abs(pmf - stats.binom.pmf(ks, n, p))) < 1e-12
    assert 1 - stats.binom.pmf(ks, n, p).sum() < 1e-14  # what the cut leaves out


@pytest.mark.parametrize("n,p", [(3, 0.9), (10, 0.3), (200, 0.05), (10_000, 0.5)])
def test_binomial_draws_fit_the_binomial(n, p):
    draws = bootstrap._Binomials(random.Random(n).random)
    x = np.array([draws.draw(n, p) for _ in range(20_000)])
    observed = np.bincount(x, minlength=n + 1)
    expected = stats.binom.pmf(np.arange(n + 1), n, p) * len(x)
    keep = expected >= 5  # the sparse tails pooled into one cell, or into the first when negligible
    obs, exp = list(observed[keep]), list(expected[keep])
    tail_observed, tail_expected = observed[~keep].sum(), len(x) - sum(exp)
    if tail_expected >= 1:
        obs, exp = obs + [tail_observed], exp + [tail_expected]
    else:
        assert tail_observed <= 3
        obs[0], exp[0] = obs[0] + tail_observed, exp[0] + tail_expected
    assert stats.chisquare(obs, exp).pvalue > 1e-4
    assert x.mean() == pytest.approx(n * p, abs=5 * np.sqrt(n * p * (1 - p) / len(x)) + 1e-12)


def test_binomial_degenerate_cases():
    draws = bootstrap._Binomials(random.Random(0).random)
    assert {draws.draw(7, 0.0), draws.draw(0, 0.4), draws.draw(-1, 0.5)} == {0}
    assert draws.draw(7, 1.0) == 7 and draws.draw(7, 1.0 + 1e-16) == 7


def test_multinomial_moments():
    counts = (50, 30, 20, 0)
    b = bootstrap._Binomials(random.Random(3).random)
    order = sorted(range(4), key=lambda i: (counts[i], i))
    x = np.array([bootstrap._multinomial(b, counts, order) for _ in range(20_000)])
    assert (x.sum(axis=1) == 100).all() and (x[:, 3] == 0).all()
    p = np.array(counts[:3]) / 100
    assert x[:, :3].mean(axis=0) == pytest.approx(100 * p, abs=0.15)
    cov = np.cov(x[:, :3].T)
    want = 100 * (np.diag(p) - np.outer(p, p))
    assert cov == pytest.approx(want, abs=0.6)


# -- the same distribution as resampling rows ---------------------------------------------------------------
def replicates_by_cells(stat, counts, k=5000, seed=1):
    out = []
    bootstrap_cells(lambda x: out.append(stat(x)) or 0.0, counts, resamples=k, seed=seed)
    return np.array([v for v in out if v is not None])


def replicates_by_rows(stat, rows, k=5000, seed=2):
    rng = np.random.default_rng(seed)
    rows = np.array(rows)
    out = [stat(rows[rng.integers(0, len(rows), len(rows))]) for _ in range(k)]
    return np.array([v for v in out if v is not None])


def compare(fast, naive):
    # the same rationals computed two ways differ in the last bit; round so equal values compare equal
    fast, naive = np.round(fast, 9), np.round(naive, 9)
    assert fast.mean() == pytest.approx(naive.mean(), abs=4 * naive.std() / np.sqrt(len(naive)) * 1.5)
    assert fast.std() == pytest.approx(naive.std(), rel=0.06)
    assert np.quantile(fast, [0.025, 0.5, 0.975]) == pytest.approx(np.quantile(naive, [0.025, 0.5, 0.975]),
                                                                  abs=0.012)
    assert stats.ks_2samp(fast, naive).pvalue > 1e-3


def test_accuracy_cells_match_row_resampling():
    fast = replicates_by_cells(lambda x: x[0] / 200, (150, 50))
    naive = replicates_by_rows(lambda r: r.mean(), [1] * 150 + [0] * 50)
    compare(fast, naive)


def test_paired_difference_cells_match_row_resampling():
    # 300 photos: both right 180, only A 45, only B 25, both wrong 50
    rows = [(1, 1)] * 180 + [(1, 0)] * 45 + [(0, 1)] * 25 + [(0, 0)] * 50
    fast = replicates_by_cells(lambda x: (x[0] - x[1]) / 300, (45, 25, 230))
    naive = replicates_by_rows(lambda r: r[:, 0].mean() - r[:, 1].mean(), rows)
    compare(fast, naive)


def test_balanced_accuracy_cells_match_row_resampling():
    # 120 photos, 12 hot dogs (9 found), 108 others (96 rejected): a sparse class, so some resamples get skipped
    rows = [(1, 1)] * 9 + [(0, 1)] * 3 + [(0, 0)] * 96 + [(1, 0)] * 12

    def by_rows(r):
        pos, neg = r[r[:, 1] == 1], r[r[:, 1] == 0]
        return None if not len(pos) or not len(neg) else ((pos[:, 0] == 1).mean() + (neg[:, 0] == 0).mean()) / 2

    def by_cells(x):
        tp, fn, tn, fp = x
        return None if tp + fn == 0 or tn + fp == 0 else (tp / (tp + fn) + tn / (tn + fp)) / 2

    compare(replicates_by_cells(by_cells, (9, 3, 96, 12)), replicates_by_rows(by_rows, rows))


def test_ready_made_intervals_agree_with_the_generic_row_bootstrap():
    correct = [True] * 150 + [False] * 50
    fast, slow = bootstrap_accuracy(correct), bootstrap_interval(statistics.fmean, correct, seed=5)
    assert not disagrees((fast.lo, fast.hi), slow, tolerance=0.012)
    a = [True] * 180 + [True] * 45 + [False] * 25 + [False] * 50
    b = [True] * 180 + [False] * 45 + [True] * 25 + [False] * 50
    fast = bootstrap_paired_difference(a, b)
    slow = bootstrap_interval(lambda rs: statistics.fmean(x - y for x, y in rs), list(zip(a, b)), seed=5)
    assert not disagrees((fast.lo, fast.hi), slow, tolerance=0.012)


# -- coverage ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.5, 0.8, 0.95])
def test_accuracy_interval_covers_about_95_percent(p):
    # n = 200: the seeded bootstrap interval for every k that has mass, averaged over k ~ Bin(200, p) exactly
    n, coverage = 200, 0.0
    for k in range(n + 1):
        weight = stats.binom.pmf(k, n, p)
        if weight < 1e-9:
            continue
        ci = bootstrap_accuracy([True] * k + [False] * (n - k), resamples=1000, seed=k)
        coverage += weight * (ci.lo <= p <= ci.hi)
    assert 0.92 <= coverage <= 0.975


def test_paired_difference_covers_in_a_seeded_simulation():
    rng = np.random.default_rng(2020)
    cells = [0.55, 0.15, 0.07, 0.23]  # both right, only A, only B, both wrong: true difference 0.08
    covered = 0
    for _ in range(300):
        x = rng.multinomial(200, cells)
        a = [True] * (x[0] + x[1]) + [False] * (x[2] + x[3])
        b = [True] * x[0] + [False] * x[1] + [True] * x[2] + [False] * x[3]
        ci = bootstrap_paired_difference(a, b, resamples=1000, seed=int(rng.integers(1 << 30)))
        covered += ci.lo <= 0.08 <= ci.hi
    assert 0.91 <= covered / 300 <= 0.98


# -- reproducibility -----------------------------------------------------------------------------------------
def test_same_seed_same_interval_and_pinned_values():
    correct = [True] * 150 + [False] * 50
    assert bootstrap_accuracy(correct, seed=7) == bootstrap_accuracy(correct, seed=7)
    assert bootstrap_accuracy(correct, seed=7) != bootstrap_accuracy(correct, seed=8)
    # pinned: these change only if the algorithm does (the draws use random() and IEEE arithmetic only)
    assert bootstrap_accuracy(correct) == BootInterval(0.69, 0.81, 2000, 0, 0)
    pairs = [(True, True)] * 40 + [(False, True)] * 10 + [(False, False)] * 130 + [(True, False)] * 20
    got = bootstrap_balanced_accuracy(pairs)
    assert (round(got.lo, 12), round(got.hi, 12), got.skipped) == (0.769583148949, 0.896775525586, 0)
    got = bootstrap_paired_difference([True] * 60 + [False] * 40, [True] * 50 + [False] * 30 + [True] * 20)
    assert (round(got.lo, 12), round(got.hi, 12)) == (-0.21, 0.00025)


def test_generic_bootstrap_follows_the_documented_draws():
    rows = [0.3, 1.5, 2.0, -1.0, 4.25, 0.0, 7.5]
    got = bootstrap_interval(statistics.fmean, rows, resamples=300, seed=11, conf=0.9)
    draw, n = random.Random(11).random, len(rows)
    values = sorted(statistics.fmean([rows[int(draw() * n)] for _ in range(n)]) for _ in range(300))
    assert (got.lo, got.hi) == (pytest.approx(np.quantile(values, 0.05), abs=1e-12),
                                pytest.approx(np.quantile(values, 0.95), abs=1e-12))


# -- edge cases ------------------------------------------------------------------------------------------------
def test_edge_cases():
    assert bootstrap_accuracy([]) is None and bootstrap_accuracy([None, None]) is None
    assert bootstrap_interval(statistics.fmean, []) is None
    assert bootstrap_interval(lambda rs: None, [1, 2]) is None
    assert bootstrap_accuracy([True] * 30) == BootInterval(1.0, 1.0, 2000, 0, 0)
    assert bootstrap_accuracy([False] * 30 + [None]) == BootInterval(0.0, 0.0, 2000, 0, 0)
    assert bootstrap_paired_difference([True] * 5, [True] * 5) == BootInterval(0.0, 0.0, 2000, 0, 0)
    assert bootstrap_paired_difference([None], [True]) is None
    assert bootstrap_balanced_accuracy([(True, True), (False, True)]) is None  # no photo that is not a hot dog
    assert bootstrap_balanced_accuracy([(None, True), (True, False)]) is None
    assert bootstrap_cells(lambda x: 0.0, (0, 0)) is None
    for bad in (dict(resamples=0), dict(conf=1.0)):
        with pytest.raises(ValueError):
            bootstrap_accuracy([True], **bad)
    with pytest.raises(ValueError):
        bootstrap_cells(lambda x: 0.0, (3, -1))
    with pytest.raises(ValueError):
        bootstrap_paired_difference([True], [True, False])


def test_balanced_accuracy_reports_skipped_resamples():
    # one hot dog in 50 photos: a resample has none with probability (49/50)^50 = 0.364
    pairs = [(True, True)] + [(False, False)] * 45 + [(True, False)] * 4
    got = bootstrap_balanced_accuracy(pairs, resamples=2000)
    assert got.resamples == 2000
    assert abs(got.skipped / 2000 - (49 / 50) ** 50) < 4 * np.sqrt(0.364 * 0.636 / 2000)
    assert 0.0 <= got.lo <= got.hi <= 1.0


@given(st.lists(st.sampled_from([True, False, None]), max_size=60), st.integers(0, 2 ** 32))
@settings(max_examples=100, deadline=None)
def test_accuracy_interval_properties(correct, seed):
    got = bootstrap_accuracy(correct, resamples=200, seed=seed)
    answered = [c for c in correct if c is not None]
    if not answered:
        assert got is None
        return
    assert 0.0 <= got.lo <= got.hi <= 1.0 and got.skipped == 0 and (got.resamples, got.seed) == (200, seed)
    acc = sum(answered) / len(answered)
    if acc in (0.0, 1.0):
        assert got.lo == got.hi == acc
    assert got == bootstrap_accuracy(correct, resamples=200, seed=seed)


# -- speed and comparison ----------------------------------------------------------------------------------------
def test_ten_thousand_photos_two_thousand_resamples_is_fast():
    rnd = random.Random(4)
    truth = [rnd.random() < 0.3 for _ in range(10_000)]
    pred = [t if rnd.random() < 0.85 else not t for t in truth]
    correct_a = [p == t for p, t in zip(pred, truth)]
    correct_b = [c if rnd.random() < 0.8 else not c for c in correct_a]
    start = time.perf_counter()
    acc = bootstrap_accuracy(correct_a)
    bal = bootstrap_balanced_accuracy(list(zip(pred, truth)))
    diff = bootstrap_paired_difference(correct_a, correct_b)
    assert time.perf_counter() - start < 5.0
    right = sum(correct_a)
    assert not disagrees(wilson_interval(right, 10_000), acc)  # at n = 10,000 the methods agree within a point
    assert bal.lo < bal.hi and diff.lo < diff.hi


def test_disagrees():
    boot = BootInterval(0.70, 0.80, 2000, 0, 0)
    assert not disagrees((0.70, 0.80), boot)
    assert not disagrees((0.71, 0.79), boot)  # exactly one point off is not more than a point
    assert disagrees((0.6899, 0.80), boot) and disagrees((0.70, 0.8101), boot)
    assert disagrees((0.70, 0.80), (0.70, 0.75), tolerance=0.02)
    assert not disagrees(None, None) and disagrees(None, boot) and disagrees((0.7, 0.8), None)
