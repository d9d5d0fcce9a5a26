"""hotdogbench_core.stats.calibration against published values, sklearn, brute force and properties."""
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, roc_auc_score

from hotdogbench_core.stats import calibration
from hotdogbench_core.stats.calibration import (ReliabilityBin, auroc, auroc_interval, brier_score,
                                                    expected_calibration_error, p_true_from_logprobs)

# Hanley & McNeil (1982), Table 1: CT images of 109 patients rated 1 (definitely normal) .. 5 (definitely abnormal)
HM_NORMAL = [33, 6, 6, 11, 2]
HM_ABNORMAL = [3, 2, 2, 11, 33]


def hanley_mcneil_data():
    probs = [r / 5 for r, k in zip(range(1, 6), HM_NORMAL) for _ in range(k)]
    probs += [r / 5 for r, k in zip(range(1, 6), HM_ABNORMAL) for _ in range(k)]
    return probs, [False] * sum(HM_NORMAL) + [True] * sum(HM_ABNORMAL)


# -- Brier ----------------------------------------------------------------------------------------------------
def test_brier_worked_values():
    assert brier_score([1.0, 0.0], [True, False]) == 0.0
    assert brier_score([0.0, 1.0], [True, False]) == 1.0
    assert brier_score([0.7, 0.2, None], [True, False, True]) == pytest.approx((0.09 + 0.04) / 2)
    assert brier_score([], []) is None and brier_score([None], [True]) is None
    for bad in ([1.5], [-0.1], [float("nan")], [True], ["0.5"]):
        with pytest.raises(ValueError):
            brier_score(bad, [True])
    with pytest.raises(ValueError):
        brier_score([0.5, 0.5], [True])
    with pytest.raises(ValueError):
        brier_score([0.5], [None])


def test_brier_and_auroc_match_sklearn_on_random_data():
    rng = np.random.default_rng(7)
    for n in (2, 5, 50, 400):
        for _ in range(10):
            y = rng.random(n) < 0.4
            if y.all() or not y.any():
                continue
            p = np.round(np.clip(y * 0.3 + rng.random(n) * 0.7, 0, 1), 1)  # rounded: plenty of ties
            assert brier_score(p.tolist(), y.tolist()) == pytest.approx(brier_score_loss(y, p), abs=1e-12)
            assert auroc(p.tolist(), y.tolist()) == pytest.approx(roc_auc_score(y, p), abs=1e-12)


# -- ECE and the reliability bins -----------------------------------------------------------------------------
def test_ece_worked_by_hand():
    probs = [0.05, 0.15, 0.15, 0.95, 1.0, 0.55]
    labels = [False, False, True, True, True, False]
    cal = expected_calibration_error(probs, labels, bins=10)
    assert cal.n == 6
    assert [(b.lo, b.hi, b.n) for b in cal.bins] == [(0.0, 0.1, 1), (0.1, 0.2, 2), (0.5, 0.6, 1), (0.9, 1.0, 2)]
    assert cal.bins[1].mean_p == pytest.approx(0.15) and cal.bins[1].frac_pos == 0.5
    assert cal.bins[3].mean_p == pytest.approx(0.975) and cal.bins[3].frac_pos == 1.0  # p = 1.0 is in the last bin
    # (1 * 0.05 + 2 * 0.35 + 1 * 0.55 + 2 * 0.025) / 6
    assert cal.ece == pytest.approx((0.05 + 0.70 + 0.55 + 0.05) / 6, abs=1e-12)


def test_ece_bin_edges_are_lower_closed():
    cal = expected_calibration_error([0.0, 0.1, 0.2, 0.5, 0.9, 1.0], [False] * 6, bins=10)
    assert [(b.lo, b.n) for b in cal.bins] == [(0.0, 1), (0.1, 1), (0.2, 1), (0.5, 1), (0.9, 2)]
    cal = expected_calibration_error([0.5, 0.5, 0.5], [True, False, True], bins=2)
    assert cal.bins == (ReliabilityBin(0.5, 1.0, 3, 0.5, 2 / 3),)


def test_ece_perfect_and_worst():
    assert expected_calibration_error([1.0, 0.0], [True, False]).ece == 0.0
    assert expected_calibration_error([0.0, 1.0], [True, False]).ece == 1.0
    assert expected_calibration_error([], []) == calibration.Calibration(None, 0, ())
    with pytest.raises(ValueError):
        expected_calibration_error([0.5], [True], bins=0)
    with pytest.raises(ValueError):
        expected_calibration_error([0.5], [True], strategy="equal")


def test_quantile_bins_hold_equal_numbers_and_repeat_edges_leave_empty_bins():
    probs = [i / 100 for i in range(100)]
    cal = expected_calibration_error(probs, [p > 0.5 for p in probs], bins=4, strategy="quantile")
    assert [b.n for b in cal.bins] == [25, 25, 25, 25]
    cal = expected_calibration_error([0.9] * 8 + [0.1, 0.2], [True] * 10, bins=5, strategy="quantile")
    assert sum(b.n for b in cal.bins) == 10 and len(cal.bins) < 5


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n,bins", [(1000, 10), (501, 7), (30, 3)])
def test_reliability_bins_match_sklearn(strategy, n, bins):
    # continuous probabilities, and (n - 1) i / bins never an integer inside, so no point sits on an edge
    # (sklearn's bins are (lo, hi], these [lo, hi); they differ only there)
    rng = np.random.default_rng(n + bins)
    p = rng.beta(2, 3, size=n)
    y = rng.random(n) < p ** 0.8
    cal = expected_calibration_error(p.tolist(), y.tolist(), bins=bins, strategy=strategy)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=bins, strategy=strategy)
    assert [b.frac_pos for b in cal.bins] == pytest.approx(prob_true.tolist(), abs=1e-12)
    assert [b.mean_p for b in cal.bins] == pytest.approx(prob_pred.tolist(), abs=1e-12)
    counts = [b.n for b in cal.bins]
    assert cal.ece == pytest.approx(np.sum(np.array(counts) * np.abs(prob_true - prob_pred)) / n, abs=1e-12)


prob = st.one_of(st.floats(0.0, 1.0, allow_nan=False), st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))


@st.composite
def scored(draw, grid=False):
    n = draw(st.integers(0, 40))
    p = st.integers(0, 20).map(lambda k: k / 20) if grid else prob
    return draw(st.lists(p, min_size=n, max_size=n)), draw(st.lists(st.booleans(), min_size=n, max_size=n))


@given(scored(), st.integers(1, 15), st.sampled_from(["uniform", "quantile"]))
@settings(max_examples=150, deadline=None)
def test_ece_properties(pl, bins, strategy):
    probs, labels = pl
    cal = expected_calibration_error(probs, labels, bins, strategy)
    if not probs:
        assert cal.ece is None
        return
    assert 0.0 <= cal.ece <= 1.0
    assert sum(b.n for b in cal.bins) == len(probs) and len(cal.bins) <= bins
    for b in cal.bins:
        assert b.lo <= b.mean_p <= b.hi and 0.0 <= b.frac_pos <= 1.0
    assert [b.lo for b in cal.bins] == sorted(b.lo for b in cal.bins)
    brier = brier_score(probs, labels)
    assert 0.0 <= brier <= 1.0


# -- AUROC -----------------------------------------------------------------------------------------------------
def test_auroc_hanley_mcneil_published_example():
    # Hanley & McNeil (1982): area 0.893, standard error 0.032
    probs, labels = hanley_mcneil_data()
    a = auroc(probs, labels)
    assert round(a, 3) == 0.893
    lo, hi = auroc_interval(probs, labels, method="hanley_mcneil")
    assert round((hi - lo) / 2 / 1.959964, 3) == 0.032


def test_auroc_worked_values_and_edges():
    assert auroc([0.1, 0.9], [False, True]) == 1.0
    assert auroc([0.9, 0.1], [False, True]) == 0.0
    assert auroc([0.5, 0.5], [False, True]) == 0.5
    assert auroc([0.2, 0.4, 0.4, 0.8], [False, True, False, True]) == pytest.approx(0.875)  # (1 + 1 + 0.5 + 1) / 4
    assert auroc([0.5, 0.7], [True, True]) is None and auroc([], []) is None
    assert auroc([0.2, None, 0.9], [False, False, True]) == 1.0
    assert auroc_interval([0.1, 0.9], [False, True]) is None  # DeLong needs two of each class
    assert auroc_interval([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == (1.0, 1.0)
    with pytest.raises(ValueError):
        auroc_interval([0.1, 0.9], [False, True], method="bootstrap")


def delong_brute_force(probs, labels):
    pos = [p for p, y in zip(probs, labels) if y]
    neg = [p for p, y in zip(probs, labels) if not y]
    psi = lambda x, y: 1.0 if x > y else 0.5 if x == y else 0.0  # noqa: E731
    v10 = [np.mean([psi(x, y) for y in neg]) for x in pos]
    v01 = [np.mean([psi(x, y) for x in pos]) for y in neg]
    return np.mean(v10), np.var(v10, ddof=1) / len(pos) + np.var(v01, ddof=1) / len(neg)


@given(scored(grid=True))
@settings(max_examples=200, deadline=None)
def test_auroc_properties_and_delong_against_brute_force(pl):
    probs, labels = pl
    a = auroc(probs, labels)
    if a is None:
        assert all(labels) or not any(labels)
        return
    assert 0.0 <= a <= 1.0
    flipped = auroc([1 - p for p in probs], labels)
    assert flipped == pytest.approx(1 - a, abs=1e-12)
    assert auroc(probs, [not y for y in labels]) == pytest.approx(1 - a, abs=1e-12)
    interval = auroc_interval(probs, labels)
    if sum(labels) < 2 or len(labels) - sum(labels) < 2:
        assert interval is None
        return
    area, var = delong_brute_force(probs, labels)
    assert a == pytest.approx(area, abs=1e-12)
    half = 1.959963984540054 * math.sqrt(var)
    assert interval == (pytest.approx(max(0.0, a - half), abs=1e-9), pytest.approx(min(1.0, a + half), abs=1e-9))
    assert interval[0] <= a <= interval[1]


def test_delong_interval_covers_in_a_seeded_simulation():
    # binormal scores, 40 hot dogs and 60 others, true AUROC = Phi(1.2 / sqrt(2))
    rng = np.random.default_rng(1988)
    true_auc = 0.5 * math.erfc(-1.2 / math.sqrt(2) / math.sqrt(2))
    covered = 0
    for _ in range(400):
        s = np.concatenate([rng.normal(1.2, 1, 40), rng.normal(0, 1, 60)])
        probs = (1 / (1 + np.exp(-s))).tolist()
        lo, hi = auroc_interval(probs, [True] * 40 + [False] * 60)
        covered += lo <= true_auc <= hi
    assert 0.92 <= covered / 400 <= 0.98


# -- P(true) from log-probabilities ----------------------------------------------------------------------------
def entry(token, logprob, top=None):
    e = {"token": token, "logprob": logprob, "bytes": list(token.encode())}
    if top is not None:
        e["top_logprobs"] = [{"token": t, "logprob": lp, "bytes": None} for t, lp in top]
    return e


def answer(verdict_entry, pre=('{"', "hot", "_dog", '":')):
    return [entry(t, -0.001, [(t, -0.001)]) for t in pre] + [verdict_entry, entry("}", 0.0, [("}", 0.0)])]


def test_p_true_worked_example():
    content = answer(entry(" true", -0.1, [(" true", -0.1), (" false", -2.4), ("true", -5.0), (" True", -6.0)]))
    t, f = math.exp(-0.1) + math.exp(-5.0) + math.exp(-6.0), math.exp(-2.4)
    assert p_true_from_logprobs(content) == pytest.approx(t / (t + f), abs=1e-12)
    assert p_true_from_logprobs({"content": content}) == pytest.approx(t / (t + f), abs=1e-12)
    # the verdict given was false: the same formula
    content = answer(entry("false", -0.2, [("false", -0.2), ("true", -1.8), ('"false', -7.0)]))
    assert p_true_from_logprobs(content) == pytest.approx(math.exp(-1.8) / (math.exp(-1.8) + math.exp(-0.2)
                                                                             + math.exp(-7.0)), abs=1e-12)


def test_p_true_variants_and_missing_side():
    # the chosen token counts even when the server left it out of top_logprobs; a word absent counts 0
    assert p_true_from_logprobs(answer(entry(" true", -0.5, [(" yes", -1.0)]))) == 1.0
    assert p_true_from_logprobs(answer(entry(" FALSE", -0.5, [(" FALSE", -0.5)]))) == 0.0
    # "true}" and ':true' spellings; "trueish" is not a verdict
    assert p_true_from_logprobs(answer(entry("true}", -0.1, [("true}", -0.1), ("false}", -0.1)]))) == 0.5
    assert p_true_from_logprobs(answer(entry(':true', -0.1, [(':true', -0.1), (':false', -0.1)]), pre=("hot_dog",)))\
        == 0.5
    assert p_true_from_logprobs(answer(entry(" trueish", -0.1, [(" trueish", -0.1)]))) is None
    # a duplicate spelling is counted once
    assert p_true_from_logprobs(answer(entry("true", -1.0, [("true", -1.0), ("true", -1.0), ("false", -1.0)]))) == 0.5
    # very negative log-probabilities do not underflow to 0/0
    assert p_true_from_logprobs(answer(entry("true", -800.0, [("true", -800.0), ("false", -801.0)]))) == \
        pytest.approx(1 / (1 + math.exp(-1)))


def test_p_true_none_cases():
    assert p_true_from_logprobs(None) is None and p_true_from_logprobs([]) is None
    assert p_true_from_logprobs("true") is None
    # no hot_dog key before the verdict
    assert p_true_from_logprobs([entry("true", -0.1, [("true", -0.1)])]) is None
    # no top_logprobs at the verdict
    assert p_true_from_logprobs(answer(entry(" true", -0.1))) is None
    # neither word usable: NaN, positive, string and boolean log-probabilities are skipped
    bad = entry(" true", float("nan"), [(" true", float("nan")), (" false", 0.5), ("true", "-1"), ("false", True)])
    assert p_true_from_logprobs(answer(bad)) is None
    assert p_true_from_logprobs(answer(entry("true", -math.inf, [("true", -math.inf)]))) is None
    # a broken token list
    assert p_true_from_logprobs(answer(entry(" true", -0.1, [(" true", -0.1)]))[:2] + [42]) is None
    assert p_true_from_logprobs([{"token": 5}]) is None
    assert p_true_from_logprobs(answer(entry(" true", 10 ** 400, [(" true", 10 ** 400), (" false", -1.0)]))) == 0.0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    | st.sampled_from(["true", " false", "hot_dog", '{"hot_dog":']),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(
        st.sampled_from(["token", "logprob", "top_logprobs", "content", "bytes", "x"]) | st.text(max_size=5),
        children, max_size=5),
    max_leaves=12)

near_entries = st.fixed_dictionaries(
    {"token": st.sampled_from(["hot", "_dog", "hot_dog", " true", "false", '":', "True", "x"]) | json_values},
    optional={"logprob": st.floats() | st.integers() | json_values,
              "top_logprobs": st.lists(st.fixed_dictionaries(
                  {"token": st.sampled_from([" true", "false", "TRUE", "no"]) | json_values},
                  optional={"logprob": st.floats() | st.integers(-10 ** 400, 10) | json_values}), max_size=6)
              | json_values})


@given(json_values | st.lists(near_entries, max_size=8))
@settings(max_examples=250, deadline=None)
def test_p_true_never_raises(content):
    for shape in (content, {"content": content}):
        p = p_true_from_logprobs(shape)
        assert p is None or 0.0 <= p <= 1.0
    json.dumps(content, default=str)  # the inputs are JSON-like (the strategy is what a server could send)
