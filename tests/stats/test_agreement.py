"""hotdogbench_core.stats.agreement against published worked values, statsmodels, sklearn and properties."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats import inter_rater

from hotdogbench_core.stats import agreement
from hotdogbench_core.stats.agreement import cohen_kappa, error_overlap, fleiss_kappa


def expand(table):
    """A square table of counts (rows: rater a, columns: rater b) as two lists of verdicts."""
    a, b = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [i] * count
            b += [j] * count
    return a, b


def rows_from_counts(counts_per_photo):
    """Fleiss-style count rows (photos x categories) as per-photo lists of verdicts."""
    return [[c for c, k in enumerate(row) for _ in range(k)] for row in counts_per_photo]


# -- Cohen's kappa: worked values -----------------------------------------------------------------------------
def test_cohen_wikipedia_worked_example():
    # Wikipedia, "Cohen's kappa", simple example: 50 grant proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15:
    # p_o = 0.7, p_e = 0.5, kappa = 0.4.
    a, b = expand([[20, 5], [10, 15]])
    k = cohen_kappa([x == 0 for x in a], [y == 0 for y in b])
    assert (k.n, k.observed, k.expected) == (50, pytest.approx(0.7), pytest.approx(0.5))
    assert k.kappa == pytest.approx(0.4, abs=1e-12)


def test_cohen_sas_proc_freq_example_with_fleiss_cohen_everitt_se():
    # The 3x3 table of the SAS PROC FREQ agreement example (also statsmodels' test suite): Kappa 0.4842,
    # ASE 0.1380, 95% limits 0.2137 and 0.7547.
    k = cohen_kappa(*expand([[0, 4, 1], [0, 8, 0], [0, 1, 5]]))
    assert round(k.kappa, 4) == 0.4842
    assert round(k.se, 4) == 0.1380
    assert [round(v, 4) for v in k.interval] == [0.2137, 0.7547]


def test_cohen_fleiss_levin_paik_psychiatric_example():
    # Fleiss, Levin & Paik (2003), ch. 18: two psychiatrists, 100 patients, three diagnoses (as proportions
    # .75 .01 .04 / .05 .04 .01 / .00 .00 .10): p_o = .89, p_e = .66, kappa = .23/.34 = 0.676.
    k = cohen_kappa(*expand([[75, 1, 4], [5, 4, 1], [0, 0, 10]]))
    assert k.observed == pytest.approx(0.89) and k.expected == pytest.approx(0.66)
    assert round(k.kappa, 3) == 0.676


def test_cohen_drops_pairs_with_a_missing_verdict():
    a = [True, True, None, False, True, False]
    b = [True, None, False, False, False, False]
    assert cohen_kappa(a, b) == cohen_kappa([True, False, True, False], [True, False, False, False])
    assert cohen_kappa(a, b).n == 4


def test_cohen_undefined_cases():
    assert cohen_kappa([], []) == agreement.Kappa(None, 0, None, None)
    assert cohen_kappa([None, True], [True, None]).kappa is None
    # both always say True: agreement is perfect, but chance alone gives it (p_e = 1): kappa 0/0 -> None
    k = cohen_kappa([True] * 5, [True] * 5)
    assert (k.kappa, k.observed, k.expected, k.se, k.interval) == (None, 1.0, 1.0, None, None)
    # one rater constant, the other not: p_o = p_e, kappa exactly 0
    assert cohen_kappa([True] * 4, [True, True, False, False]).kappa == 0.0
    # both constant but opposite: p_o = p_e = 0, kappa 0
    assert cohen_kappa([True] * 3, [False] * 3).kappa == 0.0
    with pytest.raises(ValueError):
        cohen_kappa([True], [True, False])
    with pytest.raises(ValueError):
        cohen_kappa([True, False], [False, True], conf=1.0)


def test_cohen_perfect_and_opposite_agreement():
    k = cohen_kappa([True, False] * 5, [True, False] * 5)
    assert k.kappa == 1.0 and k.se == 0.0 and k.interval == (1.0, 1.0)
    assert cohen_kappa([True, False] * 5, [False, True] * 5).kappa == -1.0


verdicts = st.sampled_from([True, False, None])


@st.composite
def two_raters(draw, min_size=0):
    n = draw(st.integers(min_size, 40))
    return draw(st.lists(verdicts, min_size=n, max_size=n)), draw(st.lists(verdicts, min_size=n, max_size=n))


@given(two_raters())
@settings(max_examples=300, deadline=None)
def test_cohen_properties(ab):
    a, b = ab
    k, k_swapped = cohen_kappa(a, b), cohen_kappa(b, a)
    assert k == k_swapped  # exactly symmetric, SE and interval included
    if k.kappa is not None:
        assert -1.0 <= k.kappa <= 1.0
        assert k.interval[0] <= k.kappa <= k.interval[1]
        assert -1.0 <= k.interval[0] and k.interval[1] <= 1.0
        assert k.kappa == pytest.approx((k.observed - k.expected) / (1 - k.expected), abs=1e-12)


@given(two_raters(min_size=2))
@settings(max_examples=200, deadline=None)
def test_cohen_matches_sklearn_and_statsmodels(ab):
    a, b = ab
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    k = cohen_kappa(a, b)
    if not pairs:
        assert k.kappa is None
        return
    xa, xb = [int(x) for x, _ in pairs], [int(y) for _, y in pairs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = cohen_kappa_score(xa, xb, labels=[0, 1])
    if k.kappa is None:
        assert k.expected == 1.0 and (math.isnan(sk) or sk == 0.0)
        return
    assert k.kappa == pytest.approx(sk, abs=1e-12)
    table = np.zeros((2, 2))
    for x, y in zip(xa, xb):
        table[x, y] += 1
    sm = inter_rater.cohens_kappa(table)
    assert k.kappa == pytest.approx(sm.kappa, abs=1e-12)
    if math.isnan(sm.std_kappa):  # statsmodels' variance came out a rounding error below 0
        assert k.se == 0.0
        return
    # statsmodels works in floats: a variance that is exactly 0 comes out ~1e-16, its root ~1e-8
    assert k.se == pytest.approx(sm.std_kappa, rel=1e-9, abs=1e-7)
    if -1 < sm.kappa_low and sm.kappa_upp < 1:
        assert k.interval == (pytest.approx(sm.kappa_low, abs=1e-6), pytest.approx(sm.kappa_upp, abs=1e-6))


def test_cohen_three_categories_match_statsmodels_on_random_tables():
    rng = np.random.default_rng(3)
    for _ in range(50):
        table = rng.integers(0, 12, size=(3, 3)) + np.diag(rng.integers(0, 20, size=3))
        sm = inter_rater.cohens_kappa(table)
        k = cohen_kappa(*expand(table.tolist()))
        assert k.kappa == pytest.approx(sm.kappa, abs=1e-12)
        assert k.se == pytest.approx(sm.std_kappa, abs=1e-9)


# -- Fleiss' kappa ------------------------------------------------------------------------------------------
WIKIPEDIA_FLEISS = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
                    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]

# Fleiss (1971): 30 patients, 6 psychiatrists each, 5 diagnoses (the "diagnoses" data of R's irr package)
FLEISS_1971 = [[4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5], [2, 2, 2, 4, 4, 4],
               [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4], [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5],
               [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4], [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5],
               [3, 3, 3, 3, 3, 5], [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
               [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4], [1, 4, 4, 4, 4, 5],
               [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4], [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5]]


def test_fleiss_wikipedia_worked_example():
    # Wikipedia, "Fleiss' kappa": 10 subjects, 14 raters, 5 categories: P-bar 0.378, P_e 0.213, kappa 0.210.
    f = fleiss_kappa(rows_from_counts(WIKIPEDIA_FLEISS))
    assert f.photos == 10
    assert (round(f.observed, 3), round(f.expected, 3), round(f.kappa, 3)) == (0.378, 0.213, 0.210)


def test_fleiss_1971_psychiatric_diagnoses():
    # kappa = 0.4302445 (R irr::kappam.fleiss(diagnoses), as in statsmodels' tests); Fleiss (1971) gives .430.
    f = fleiss_kappa(FLEISS_1971)
    assert f.photos == 30
    assert f.kappa == pytest.approx(0.4302445, abs=5e-8)
    assert f.kappa == pytest.approx(inter_rater.fleiss_kappa(inter_rater.aggregate_raters(np.array(FLEISS_1971))[0]),
                                    abs=1e-12)


def test_fleiss_unequal_counts_worked_by_hand():
    # photo 1: T T T (P=1); photo 2: T F (P=0); photo 3: F F and a missing verdict (P=1); photo 4: one verdict
    # (dropped). P-bar = 2/3; pi_T = mean(1, 1/2, 0) = 1/2 = pi_F, P_e = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3.
    f = fleiss_kappa([[True, True, True], [True, False], [False, False, None], [True, None, None]])
    assert f.photos == 3
    assert f.observed == pytest.approx(2 / 3) and f.expected == pytest.approx(0.5)
    assert f.kappa == pytest.approx(1 / 3, abs=1e-12)


def test_fleiss_undefined_cases():
    assert fleiss_kappa([]) == agreement.FleissKappa(None, 0, None, None)
    assert fleiss_kappa([[True], [None, False], []]).photos == 0
    f = fleiss_kappa([[True, True], [True, True, True]])
    assert f.kappa is None and f.expected == 1.0 and f.photos == 2


def test_fleiss_with_two_raters_is_scotts_pi():
    # Two raters, no missing verdict: Fleiss' kappa is Scott's (1955) pi, kappa with the pooled verdict rates.
    rng = np.random.default_rng(11)
    for _ in range(30):
        a = rng.random(40) < 0.6
        b = np.where(rng.random(40) < 0.7, a, rng.random(40) < 0.5)
        po = np.mean(a == b)
        pooled = (a.mean() + b.mean()) / 2
        pe = pooled ** 2 + (1 - pooled) ** 2
        f = fleiss_kappa([[bool(x), bool(y)] for x, y in zip(a, b)])
        assert f.kappa == pytest.approx((po - pe) / (1 - pe), abs=1e-12)


@st.composite
def rating_table(draw, equal=False):
    photos = draw(st.integers(0, 25))
    raters = draw(st.integers(2, 6))
    values = st.sampled_from([True, False]) if equal else verdicts
    return [draw(st.lists(values, min_size=raters, max_size=raters)) for _ in range(photos)]


@given(rating_table(equal=True))
@settings(max_examples=150, deadline=None)
def test_fleiss_matches_statsmodels_with_equal_counts(table):
    f = fleiss_kappa(table)
    assert f.photos == len(table)
    if not table:
        return
    counts = np.array([[sum(v for v in row), sum(not v for v in row)] for row in table])
    if f.kappa is None:
        assert (counts[:, 0] == 0).all() or (counts[:, 1] == 0).all()
        return
    assert f.kappa == pytest.approx(inter_rater.fleiss_kappa(counts), abs=1e-10)


@given(rating_table(), st.randoms(use_true_random=False))
@settings(max_examples=150, deadline=None)
def test_fleiss_properties(table, rnd):
    f = fleiss_kappa(table)
    shuffled = [rnd.sample(row, len(row)) for row in rnd.sample(table, len(table))]
    g = fleiss_kappa(shuffled)
    relabelled = fleiss_kappa([[None if v is None else not v for v in row] for row in table])
    assert f.photos == g.photos == relabelled.photos
    if f.kappa is None:
        assert g.kappa is None and relabelled.kappa is None
        return
    assert f.kappa <= 1.0 + 1e-12
    assert g.kappa == pytest.approx(f.kappa, abs=1e-12)  # order of photos and of raters does not matter
    assert relabelled.kappa == pytest.approx(f.kappa, abs=1e-12)  # nor the names of the verdicts


# -- error overlap ------------------------------------------------------------------------------------------
def test_error_overlap_worked_by_hand():
    # 10 photos: a wrong on 0-3, b wrong on 2-5 (both wrong on 2, 3). p_wrong 0.4 and 0.4, both 0.2, chance 0.16,
    # ratio 1.25. c_obs = (10 - 4 - 4 + 2*2) / 10 = 0.6, c_exp = 0.6*0.6 + 0.4*0.4 = 0.52, kappa = 0.08/0.48 = 1/6.
    a = [i not in (0, 1, 2, 3) for i in range(10)]
    b = [i not in (2, 3, 4, 5) for i in range(10)]
    e = error_overlap(a, b)
    assert (e.n, e.p_wrong_a, e.p_wrong_b, e.both_wrong) == (10, 0.4, 0.4, 0.2)
    assert e.independent == pytest.approx(0.16) and e.ratio == pytest.approx(1.25)
    assert e.observed == pytest.approx(0.6) and e.expected == pytest.approx(0.52)
    assert e.kappa == pytest.approx(1 / 6, abs=1e-12)


def test_error_overlap_edge_cases():
    empty = error_overlap([None, True], [False, None])
    assert empty.n == 0 and empty.kappa is None and empty.ratio is None and empty.both_wrong is None
    always_right = error_overlap([True] * 5, [True, True, False, True, True])
    assert always_right.ratio is None and always_right.kappa == 0.0 and always_right.both_wrong == 0.0
    both_perfect = error_overlap([True] * 3, [True] * 3)
    assert both_perfect.kappa is None and both_perfect.expected == 1.0
    same_mistakes = error_overlap([True, False, True, False], [True, False, True, False])
    assert same_mistakes.kappa == 1.0 and same_mistakes.ratio == 2.0


@given(two_raters())
@settings(max_examples=300, deadline=None)
def test_error_overlap_is_kappa_on_right_wrong_and_symmetric(ab):
    a, b = ab
    e, swapped = error_overlap(a, b), error_overlap(b, a)
    k = cohen_kappa(a, b)
    assert e.n == k.n
    assert (e.kappa is None) == (k.kappa is None)
    if e.kappa is not None:
        assert e.kappa == pytest.approx(k.kappa, abs=1e-12)
        assert -1.0 <= e.kappa <= 1.0
        # Geirhos et al. (2020) directly from the accuracies
        acc_a, acc_b = 1 - e.p_wrong_a, 1 - e.p_wrong_b
        c_exp = acc_a * acc_b + (1 - acc_a) * (1 - acc_b)
        assert e.kappa == pytest.approx((e.observed - c_exp) / (1 - c_exp), abs=1e-9)
    assert (swapped.kappa, swapped.both_wrong, swapped.ratio) == (e.kappa, e.both_wrong, e.ratio)
    if e.n:
        assert 0.0 <= e.both_wrong <= min(e.p_wrong_a, e.p_wrong_b)
