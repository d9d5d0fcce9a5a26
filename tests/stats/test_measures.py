"""stats/measures.py: which rows each measure uses, and the numbers written down, by hand and as properties."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdogbench_core.stats import agreement, bootstrap, calibration, power
from hotdogbench_core.stats.measures import (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, ECE_BINS, agreement_summary,
                                             calibration_summary, model_measures, pair_measures, power_summary,
                                             statistics_settings)
from hotdogbench_core.stats.pairs import pair_stats
from hotdogbench_core.stats.proportions import rounded, wilson_interval
from hotdogbench_core.stats.summary import summarize_statistics
from hotdogbench_core.store.results import Result


def R(i, hot=False, pred=None, p=None, cat=None, repeat=0, scored=True):
    return Result(id=i, open_images_id=None, category=cat or ("hot_dog" if hot else "taco"), is_hot_dog=hot,
                  pred=pred, p_hot_dog=p, repeat=repeat, scored=scored)


def test_calibration_over_the_rows_with_a_probability():
    rows = [R(1, True, True, 0.9), R(2, False, False, 0.2), R(3, False, True, 0.7), R(4, True, True, 0.95),
            R(5, False, False, None), R(6, True, None, None)]
    c = calibration_summary(rows)
    probs, labels = [0.9, 0.2, 0.7, 0.95], [True, False, False, True]
    assert c["photos"] == 4
    assert c["brier"] == round(calibration.brier_score(probs, labels), 4) == round((0.01 + 0.04 + 0.49 + 0.0025) / 4, 4)
    ece = calibration.expected_calibration_error(probs, labels, bins=10)
    assert c["ece"] == round(ece.ece, 4) and c["ece_bins"] == ECE_BINS == 10
    assert "10 equal-width bins" in c["ece_binning"]
    assert c["auroc"] == 1.0  # both hot dogs above both others
    assert [(b["lo"], b["hi"], b["n"]) for b in c["reliability"]] == [(0.2, 0.3, 1), (0.7, 0.8, 1), (0.9, 1.0, 2)]
    assert calibration_summary([R(1, True, True)]) is None


def test_models_without_probabilities_are_marked_with_a_reason():
    rows = [R(i, i % 2 == 0, i % 3 != 0) for i in range(1, 21)]
    m = model_measures(rows, None)
    assert m["calibration"] is None and "--logprobs" in m["calibration_reason"]
    assert m["probabilities"] == {"source": None, "photos": 20, "with_probability": 0}
    asked = model_measures(rows, "logprobs")
    assert asked["calibration"] is None and "provider may not return" in asked["calibration_reason"]
    assert "noul" in model_measures(rows, "noul")["calibration_reason"]
    with_p = model_measures([R(1, True, True, 0.8), R(2, False, False, 0.1)], "noul")
    assert with_p["calibration_reason"] is None and with_p["probabilities"]["with_probability"] == 2


def test_half_widths_and_bootstrap_beside_the_closed_form():
    rows = [R(i, cat="hot_dog" if i <= 10 else "taco", hot=i <= 10, pred=(i <= 10) == (i % 4 != 0))
            for i in range(1, 41)] + [R(99, pred=True, scored=False), R(1, True, False, repeat=1)]
    s = summarize_statistics(rows)
    right = sum(r.pred == r.is_hot_dog for r in rows[:40])
    lo, hi = wilson_interval(right, 40)
    assert s["accuracy_half_width95"] == round((hi - lo) / 2, 4)
    hot = [r for r in rows[:10]]
    lo, hi = wilson_interval(sum(r.pred == r.is_hot_dog for r in hot), 10)
    assert s["accuracy_by_category_half_width95"]["hot_dog"] == round((hi - lo) / 2, 4)
    b = s["bootstrap"]
    assert (b["resamples"], b["seed"]) == (BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED)
    want = bootstrap.bootstrap_accuracy([r.pred == r.is_hot_dog for r in rows[:40]], BOOTSTRAP_RESAMPLES,
                                        BOOTSTRAP_SEED)
    assert b["accuracy_ci95"] == rounded((want.lo, want.hi))
    assert b["disagrees"] == [k for k in ("accuracy", "balanced_accuracy")
                              if bootstrap.disagrees(s[f"{k}_ci95"], b[f"{k}_ci95"])]
    # the same rows give the same intervals (seeded)
    assert summarize_statistics(rows)["bootstrap"] == b


def test_bootstrap_says_where_it_disagrees_by_more_than_a_point():
    # every answer right: Wilson's interval reaches down, the percentile bootstrap collapses on 1
    rows = [R(i, i <= 5, i <= 5) for i in range(1, 31)]
    s = summarize_statistics(rows)
    assert s["bootstrap"]["accuracy_ci95"] == [1.0, 1.0] and s["accuracy_ci95"][0] < 0.9
    assert "accuracy" in s["bootstrap"]["disagrees"]


def test_pair_measures_by_hand():
    # both answered 1..8 (9 only by a): a right on 1-6, b right on 1-3 and 7
    a = [R(i, False, i > 6) for i in range(1, 9)] + [R(9, False, False)]
    b = [R(i, False, not (i <= 3 or i == 7)) for i in range(1, 9)]
    p = pair_stats("x/a", "x/b", a, b)
    assert (p["only_a_right"], p["only_b_right"], p["both_answered"]) == (3, 1, 8)
    k = agreement.cohen_kappa([r.pred for r in a[:8]], [r.pred for r in b[:8]])
    assert p["cohen_kappa"]["kappa"] == round(k.kappa, 4) and p["cohen_kappa"]["photos"] == 8
    assert p["cohen_kappa"]["ci95"] == rounded(k.interval)
    e = p["error_overlap"]
    assert e["photos"] == 8 and e["both_wrong"] == 1 / 8 and e["p_wrong_a"] == 2 / 8 and e["p_wrong_b"] == 4 / 8
    assert e["independent"] == round(2 / 8 * 4 / 8, 4) and e["ratio"] == round((1 / 8) / (2 / 8 * 4 / 8), 4)
    ref = agreement.error_overlap([r.pred == r.is_hot_dog for r in a[:8]], [r.pred == r.is_hot_dog for r in b[:8]])
    assert e["error_consistency"] == round(ref.kappa, 4)
    pw = p["power"]
    assert pw["photos_have"] == 8 and pw["alpha"] == 0.05 and pw["power"] == 0.8 and "Connor" in pw["method"]
    assert pw["photos_needed"] == power.mcnemar_sample_size(3 / 8, 1 / 8)
    assert pw["photos_needed_exact"] == power.mcnemar_sample_size(3 / 8, 1 / 8, exact=True)
    assert pw["sentence"] == power.plain_sentence("x/a", "x/b", pw["photos_needed"], 8)
    boot = bootstrap.bootstrap_paired_difference([r.pred == r.is_hot_dog for r in a[:8]],
                                                 [r.pred == r.is_hot_dog for r in b[:8]],
                                                 BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED)
    assert p["bootstrap"]["accuracy_diff_ci95"] == rounded((boot.lo, boot.hi))
    assert p["bootstrap"]["disagrees"] == bootstrap.disagrees(p["accuracy_diff_ci95"], boot)


def test_power_when_there_is_nothing_or_no_gap():
    none = power_summary("a", "b", 0, 0, 0)
    assert none["photos_needed"] is None and "no photo in common" in none["sentence"]
    tie = power_summary("a", "b", 100, 5, 5)
    assert tie["photos_needed"] is None and tie["min_detectable_diff"] is not None and "no gap" in tie["sentence"]
    big = power_summary("a", "b", 1000, 80, 20)
    assert big["photos_needed"] <= 1000 and "which is enough" in big["sentence"]
    assert big["min_detectable_diff"] == round(power.min_detectable_difference(1000, 0.1), 4)
    assert pair_measures("a", "b", [], [])["power"]["photos_needed"] is None


def test_fleiss_and_the_photos_every_model_got_wrong():
    truth = [True, False, False, True, False]
    preds = {"a": [True, True, False, False, False], "b": [True, True, True, False, None],
             "c": [True, True, False, False, True]}
    results = {m: [R(i + 1, truth[i], v) for i, v in enumerate(vs)] for m, vs in preds.items()}
    s = agreement_summary(results)
    f = agreement.fleiss_kappa([[preds[m][i] for m in preds] for i in range(5)])
    assert s["fleiss_kappa"] == round(f.kappa, 4) and s["fleiss_photos"] == 5 and s["models"] == ["a", "b", "c"]
    assert s["photos_all_answered"] == 4
    assert s["all_wrong"] == [2, 4]  # photo 5: b gave no answer, so not every model got it wrong
    one = agreement_summary({"a": results["a"]})
    assert one["fleiss_kappa"] is None and one["fleiss_reason"] == "fewer than two models"
    assert one["all_wrong"] == [2, 4]


def test_statistics_settings_name_the_seed_and_resamples():
    st_ = statistics_settings()
    assert st_["bootstrap"]["resamples"] == BOOTSTRAP_RESAMPLES and st_["bootstrap"]["seed"] == BOOTSTRAP_SEED
    assert st_["calibration"]["ece_bins"] == 10 and "Connor" in st_["power"]["method"]


# -- properties -----------------------------------------------------------------------------------------------
rows_strategy = st.lists(st.tuples(st.booleans(), st.sampled_from([None, True, False]),
                                   st.one_of(st.none(), st.floats(0.0, 1.0))), min_size=0, max_size=60)


def _rows(spec):
    return [R(i + 1, hot, pred, p) for i, (hot, pred, p) in enumerate(spec)]


@settings(max_examples=60, deadline=None)
@given(rows_strategy, rows_strategy)
def test_pair_measures_are_mirror_images(sa, sb):
    a, b = _rows(sa), _rows(sb)
    ab, ba = pair_stats("a", "b", a, b), pair_stats("b", "a", b, a)
    assert ab["cohen_kappa"] == ba["cohen_kappa"]  # symmetric
    e1, e2 = ab["error_overlap"], ba["error_overlap"]
    assert (e1["p_wrong_a"], e1["both_wrong"], e1["error_consistency"]) == \
        (e2["p_wrong_b"], e2["both_wrong"], e2["error_consistency"])
    assert ab["power"]["photos_needed"] == ba["power"]["photos_needed"]
    k = ab["cohen_kappa"]["kappa"]
    assert k is None or -1.0 <= k <= 1.0
    lo_hi = ab["bootstrap"]["accuracy_diff_ci95"]
    if lo_hi is not None:
        assert -1.0 <= lo_hi[0] <= lo_hi[1] <= 1.0
        mirror = ba["bootstrap"]["accuracy_diff_ci95"]
        # the same resampled photos, the difference negated (up to the interpolation's rounding)
        assert mirror == pytest.approx([-lo_hi[1], -lo_hi[0]], abs=2e-4)


@settings(max_examples=60, deadline=None)
@given(rows_strategy)
def test_model_measures_are_within_their_ranges(spec):
    m = model_measures(_rows(spec), "logprobs")
    c = m["calibration"]
    with_p = sum(p is not None for _, _, p in spec)
    assert m["probabilities"]["with_probability"] == with_p
    assert (c is None) == (with_p == 0) and (m["calibration_reason"] is None) == (c is not None)
    if c is not None:
        assert 0.0 <= c["brier"] <= 1.0 and 0.0 <= c["ece"] <= 1.0
        assert sum(b["n"] for b in c["reliability"]) == c["photos"] == with_p
        assert c["auroc"] is None or 0.0 <= c["auroc"] <= 1.0
    for hw in m["accuracy_by_category_half_width95"].values():
        assert hw is None or 0.0 < hw <= 0.5
    b = m["bootstrap"]["accuracy_ci95"]
    assert b is None or 0.0 <= b[0] <= b[1] <= 1.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from([None, True, False]), min_size=3, max_size=3), min_size=1, max_size=30))
def test_all_wrong_photos_were_answered_wrong_by_every_model(table):
    truth = [bool(i % 2) for i in range(len(table))]
    results = {m: [R(i + 1, truth[i], row[j]) for i, row in enumerate(table)] for j, m in enumerate("abc")}
    s = agreement_summary(results)
    for i in s["all_wrong"]:
        assert all(v is not None and v != truth[i - 1] for v in table[i - 1])
    expect = [i + 1 for i, row in enumerate(table) if all(v is not None and v != truth[i] for v in row)]
    assert s["all_wrong"] == expect
    k = s["fleiss_kappa"]
    assert k is None or (-1.0 <= k <= 1.0 and not math.isnan(k))
