"""The measures beyond accuracy, built from Results: the keys summary.json, pairs.json and agreement.json add.

The formulas live in calibration.py, power.py, agreement.py and bootstrap.py (pure, tested against worked values);
this module only picks the rows and writes the numbers down. Every measure is over the scored repeat-0 rows,
the rows the reference keys are computed over. docs/statistics.md describes every key.

- model_measures (summary.json, after the existing keys): the half-width of each category's 95% interval, the
  bootstrap intervals beside the closed-form ones, how many rows carry a probability, and the calibration
  (Brier, ECE over 10 equal-width bins, AUROC with DeLong's interval, the reliability bins), or null and why.
- pair_measures (pairs.json, after the existing keys of each pair): Cohen's kappa of the two models' verdicts,
  the overlap of their errors, the photos a McNemar test needs (Connor 1987, and the exact computation), the
  smallest difference the photos at hand can detect, that in one sentence, and the bootstrap interval of the
  accuracy difference.
- agreement (OUT/RUN/agreement.json, one per run): Fleiss' kappa over all the run's models and the photos every
  model got wrong. It is a run-level file, not a key of each summary entry: summary.json keeps entries from
  earlier sessions, so a number over all models written into each entry would go stale when a model is added.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..store.journal import read_journal
from ..store.results import Result
from ..store.atomic import write_json
from ..store.rundir import RunDir
from . import agreement, bootstrap, calibration, power
from .proportions import rounded

BOOTSTRAP_RESAMPLES = 2000  # resamples per interval
BOOTSTRAP_SEED = 0  # random.Random(seed): the same intervals on every machine
DISAGREE_BY = 0.01  # a bootstrap interval whose end is more than one point from the closed form's is said
ECE_BINS = 10
ECE_BINNING = "10 equal-width bins of P(hot dog): [0, 0.1), [0.1, 0.2), ..., [0.9, 1] (the last one closed)"
ALPHA, POWER = 0.05, 0.80
POWER_METHOD = "Connor (1987) normal approximation; photos_needed_exact: the exact conditional McNemar test"
DIGITS = 4


def statistics_settings() -> dict:
    """What the measures were computed with, for manifest.json."""
    return {"bootstrap": {"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED, "confidence": 0.95,
                          "method": "percentile bootstrap over photos (Efron & Tibshirani 1993)",
                          "disagree_by": DISAGREE_BY},
            "calibration": {"ece_bins": ECE_BINS, "ece_binning": ECE_BINNING, "auroc_interval": "DeLong (1988)"},
            "power": {"alpha": ALPHA, "power": POWER, "method": POWER_METHOD}}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, DIGITS)


def _boot(interval: bootstrap.BootInterval | None) -> list[float] | None:
    return None if interval is None else rounded((interval.lo, interval.hi), DIGITS)


def _first(results: Sequence[Result]) -> list[Result]:
    return [r for r in results if r.scored and r.repeat == 0]


# -- per model (summary.json) ---------------------------------------------------------------------------------
def _half_width(rs: list[Result]) -> float | None:
    answered = [r for r in rs if r.pred is not None]
    return _r(power.proportion_half_width(sum(r.pred == r.is_hot_dog for r in answered), len(answered)))


def _no_probability(source: str | None) -> str:
    if source == "logprobs":
        return ("no answer carried log-probabilities at its verdict (asked for them: the provider may not return "
                "them)")
    if source == "noul":
        return "no answer carried a probability (noul)"
    return "not asked for log-probabilities (a chat model: run it with --logprobs to get its calibration)"


def calibration_summary(rows: list[Result]) -> dict | None:
    """Brier, ECE, AUROC and the reliability bins over the rows with a p_hot_dog; None when none has one."""
    have = [r for r in rows if r.p_hot_dog is not None]
    if not have:
        return None
    probs, labels = [r.p_hot_dog for r in have], [r.is_hot_dog for r in have]
    ece = calibration.expected_calibration_error(probs, labels, bins=ECE_BINS, strategy="uniform")
    return {
        "photos": len(have),
        "brier": _r(calibration.brier_score(probs, labels)),
        "ece": _r(ece.ece),
        "ece_bins": ECE_BINS,
        "ece_binning": ECE_BINNING,
        "auroc": _r(calibration.auroc(probs, labels)),
        "auroc_ci95": rounded(calibration.auroc_interval(probs, labels, method="delong"), DIGITS),
        "reliability": [{"lo": _r(b.lo), "hi": _r(b.hi), "n": b.n, "mean_p": _r(b.mean_p),
                         "frac_pos": _r(b.frac_pos)} for b in ece.bins],
    }


def model_measures(results: Sequence[Result], probability: str | None = None,
                   closed: dict[str, list[float] | None] | None = None) -> dict:
    """The keys summary.json adds after the existing ones, over the scored repeat-0 rows of `results`.

    probability: where the model's P(hot dog) comes from ("noul", "logprobs", or None: not asked); closed: the
    closed-form intervals ({"accuracy": [lo, hi], "balanced_accuracy": ...}) the bootstrap is compared with."""
    first = _first(results)
    answered = [r for r in first if r.pred is not None]
    boot_acc = bootstrap.bootstrap_accuracy([r.pred == r.is_hot_dog for r in answered], BOOTSTRAP_RESAMPLES,
                                            BOOTSTRAP_SEED)
    boot_bal = bootstrap.bootstrap_balanced_accuracy([(r.pred, r.is_hot_dog) for r in answered],
                                                     BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED)
    boot = {"accuracy": _boot(boot_acc), "balanced_accuracy": _boot(boot_bal)}
    closed = closed or {}
    disagrees = [k for k, b in boot.items() if k in closed and bootstrap.disagrees(closed[k], b, DISAGREE_BY)]
    cal = calibration_summary(first)
    with_p = sum(r.p_hot_dog is not None for r in first)
    return {
        "accuracy_half_width95": _half_width(first),
        "accuracy_by_category_half_width95": {c: _half_width([r for r in first if r.category == c])
                                              for c in sorted({r.category for r in first})},
        "bootstrap": {"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED,
                      "accuracy_ci95": boot["accuracy"], "balanced_accuracy_ci95": boot["balanced_accuracy"],
                      "disagrees": disagrees},
        "probabilities": {"source": probability, "photos": len(first), "with_probability": with_p},
        "calibration": cal,
        "calibration_reason": None if cal is not None else _no_probability(probability),
    }


# -- per pair (pairs.json) ------------------------------------------------------------------------------------
def _by_photo(rows: Sequence[Result]) -> dict[int, Result]:
    return {r.id: r for r in _first(rows) if r.pred is not None}


def power_summary(a: str, b: str, n: int, only_a: int, only_b: int) -> dict:
    """Photos needed for 80% power at alpha 0.05 at the observed discordant rates, the smallest detectable
    difference with n photos, and the sentence."""
    out = {"alpha": ALPHA, "power": POWER, "method": POWER_METHOD, "photos_have": n, "photos_needed": None,
           "photos_needed_exact": None, "min_detectable_diff": None}
    if n == 0:
        return {**out, "sentence": f"{a} and {b} answered no photo in common: there is nothing to compare."}
    p10, p01 = only_a / n, only_b / n
    needed = power.mcnemar_sample_size(p10, p01, ALPHA, POWER)
    return {**out, "photos_needed": needed,
            "photos_needed_exact": power.mcnemar_sample_size(p10, p01, ALPHA, POWER, exact=True),
            "min_detectable_diff": _r(power.min_detectable_difference(n, p10 + p01, ALPHA, POWER)),
            "sentence": power.plain_sentence(a, b, needed, n)}


def pair_measures(a: str, b: str, results_a: Sequence[Result], results_b: Sequence[Result],
                  closed_diff: list[float] | None = None) -> dict:
    """The keys pairs.json adds after the existing ones of the pair (a, b), over the scored repeat-0 photos both
    answered; closed_diff: the closed-form interval of the accuracy difference, for the bootstrap's comparison."""
    va, vb = _by_photo(results_a), _by_photo(results_b)
    both = sorted(set(va) & set(vb))
    ra = [va[i].pred == va[i].is_hot_dog for i in both]
    rb = [vb[i].pred == vb[i].is_hot_dog for i in both]
    k = agreement.cohen_kappa([va[i].pred for i in both], [vb[i].pred for i in both])
    e = agreement.error_overlap(ra, rb)
    only_a = sum(x and not y for x, y in zip(ra, rb))
    only_b = sum(y and not x for x, y in zip(ra, rb))
    boot = _boot(bootstrap.bootstrap_paired_difference(ra, rb, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED))
    return {
        "cohen_kappa": {"photos": k.n, "kappa": _r(k.kappa), "se": _r(k.se),
                        "ci95": rounded(k.interval, DIGITS), "observed": _r(k.observed), "expected": _r(k.expected)},
        "error_overlap": {"photos": e.n, "p_wrong_a": _r(e.p_wrong_a), "p_wrong_b": _r(e.p_wrong_b),
                          "both_wrong": _r(e.both_wrong), "independent": _r(e.independent), "ratio": _r(e.ratio),
                          "error_consistency": _r(e.kappa), "observed": _r(e.observed), "expected": _r(e.expected)},
        "power": power_summary(a, b, len(both), only_a, only_b),
        "bootstrap": {"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED, "accuracy_diff_ci95": boot,
                      "disagrees": bootstrap.disagrees(closed_diff, boot, DISAGREE_BY)},
    }


# -- the run (agreement.json) ---------------------------------------------------------------------------------
def agreement_summary(results: dict[str, Sequence[Result]]) -> dict:
    """Fleiss' kappa over every model's verdicts (photos with two verdicts or more), and the photos every model
    answered and got wrong, from {model: its results}."""
    models = list(results)
    by_model = {m: _by_photo(rs) for m, rs in results.items()}
    ids = sorted({r.id for rs in results.values() for r in _first(rs)})
    table = [[by_model[m][i].pred if i in by_model[m] else None for m in models] for i in ids]
    f = agreement.fleiss_kappa(table) if len(models) >= 2 else agreement.FleissKappa(None, 0, None, None)
    every = [i for i in ids if all(i in by_model[m] for m in models)]
    wrong = [i for i in every if all(by_model[m][i].pred != by_model[m][i].is_hot_dog for m in models)]
    return {
        "models": models,
        "fleiss_kappa": _r(f.kappa),
        "fleiss_photos": f.photos,
        "fleiss_observed": _r(f.observed),
        "fleiss_expected": _r(f.expected),
        "fleiss_reason": None if f.kappa is not None else (
            "fewer than two models" if len(models) < 2 else
            "no photo has two verdicts" if f.photos == 0 else "every verdict is the same (chance agreement is 1)"),
        "photos_all_answered": len(every),
        "all_wrong": wrong,
    }


def compute_agreement(run_dir: Path | str, models: list[str] | None = None) -> dict:
    """agreement_summary over the run's models (run order) whose journals name the first one's dataset; the
    others are listed in `left_out` (their photo ids name other photos)."""
    rd = RunDir.at(run_dir)
    journals = rd.journals()
    states = {m: read_journal(journals[m]) for m in rd.models(models)}
    digests = {m: (s.header or {}).get("dataset_sha256") for m, s in states.items()}
    first = next(iter(digests.values()), None)
    kept = {m: list(s.results.values()) for m, s in states.items() if digests[m] == first}
    return {**agreement_summary(kept), "left_out": [m for m in states if m not in kept]}


def write_agreement(run_dir: Path | str, models: list[str] | None = None) -> Path:
    """OUT/RUN/agreement.json, rebuilt from the journals (a resumed run writes the same file)."""
    return write_json(RunDir.at(run_dir).agreement, compute_agreement(run_dir, models))
