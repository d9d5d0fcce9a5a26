"""The report's sections, listed once: the report notebook and the offline HTML both render this list.

A section turns a Report (the runs, read once) into parts: a chart, a table with its declared columns, a note,
or HTML (the gallery). A new chart is a builder in charts.py, its frame in tables.py and a line here.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import polars as pl

from . import charts, experiments, measures, tables
from .format import Col, TONE, fmt
from .gallery import gallery_html
from . import runs
from .runs import RunData
from .thumbs import thumbnails


@dataclass(frozen=True)
class Chart:
    chart: Any  # an altair chart


@dataclass(frozen=True)
class Table:
    frame: pl.DataFrame
    cols: tuple[Col, ...]
    cls: str = ""
    notes: dict[int, str] | None = None  # extra HTML under a row's first cell


@dataclass(frozen=True)
class Note:
    text: str  # markdown-free plain text
    kind: str = "info"  # "info" | "warn" | "danger"


@dataclass(frozen=True)
class Html:
    html: str


Part = Chart | Table | Note | Html


@dataclass
class Report:
    """What every section reads: the runs, and the photo table for thumbnails when it is found."""
    runs: list[RunData]
    dataset: str | Path | None = None  # given explicitly; else found by its digest among data_dir's tables
    data_dir: str | Path = "data"
    gallery_limit: int = 48
    _cache: dict = field(default_factory=dict, repr=False)

    @cached_property
    def board(self) -> pl.DataFrame:
        return tables.leaderboard(self.runs)

    @cached_property
    def photos(self) -> Path | None:
        if not self.runs:
            return None
        return runs.find_dataset(self.runs[0], runs.dataset_candidates(self.data_dir), explicit=self.dataset)

    @cached_property
    def simulated(self) -> bool:
        return any(str(p).startswith("simulator") for r in self.runs for s in r.summaries
                   for p in s.get("providers") or [])  # "simulator", or "simulator:<provider>" when routed

    def thumbs(self, ids: list[int]) -> dict[int, str]:
        return thumbnails(self.photos, ids) if self.photos else {}


@dataclass(frozen=True)
class Section:
    key: str
    title: Callable[[Report], str] | str
    parts: Callable[[Report], list[Part]]
    tab: str | None = None  # a short name where the sections are tabs side by side (the notebooks)

    def heading(self, report: Report) -> str:
        return self.title(report) if callable(self.title) else self.title

    def tab_label(self, report: Report) -> str:
        """The tab's name: short, so that every tab of a report fits one row."""
        if self.tab is None:
            return self.heading(report)
        count = re.search(r" \(\d+\)$", self.heading(report))
        return self.tab + (count.group(0) if count else "")


def _charts(*built) -> list[Part]:
    return [Chart(c) for c in built if c is not None]


def _leaderboard(r: Report) -> list[Part]:
    notes = {i: f"<br><small style='{TONE['bad']}'>stopped: {html.escape(s)}</small>"
             for i, s in enumerate(r.board["stopped"].to_list()) if s}
    out: list[Part] = [Note("Some answers come from hotdogbench's built-in simulator, not from real models.", "warn")] \
        if r.simulated else []
    return out + [Table(r.board, tables.LEADERBOARD, "leaderboard", notes)]


def _accuracy(r: Report) -> list[Part]:
    return _charts(charts.accuracy_bars(r.board), charts.accuracy_heatmap(tables.category_accuracy(r.runs)),
                   charts.cost_vs_accuracy(r.board))


def _concurrency(r: Report) -> list[Part]:
    return _charts(charts.limit_trace(tables.trace_frame(r.runs)), charts.latency_box(tables.latency_frame(r.runs)),
                   charts.latency_vs_in_flight(tables.latency_by_in_flight(r.runs)))


def _pairs(r: Report) -> list[Part]:
    pairs = tables.pairs_frame(r.runs)
    if not pairs.height:
        return []
    return _charts(charts.pairs_heatmap(pairs)) + [Table(pairs.filter(pl.col("given")), tables.PAIRS)]


def _conditions(r: Report) -> list[Part]:
    cond = experiments.conditions_frame(r.runs)
    if not cond.height:
        return []
    out: list[Part] = [Note("Each model under each condition of the run. 'minus the reference' is paired: over the "
                            "photos both answered, with Newcombe's interval and the exact McNemar test. The frontier "
                            "holds the conditions no other condition of the model beats on both cost and accuracy.")]
    out += _charts(charts.conditions_cost_accuracy(cond)) + [Table(cond, experiments.CONDITIONS)]
    spread = experiments.prompt_spread_frame(r.runs)
    if spread.height:
        out += [Note("Prompt spread: each model's accuracy across the conditions that change only the question "
                     "(the reference among them)."), Table(spread, experiments.PROMPT_SPREAD)]
    pairs = experiments.condition_pairs_frame(r.runs)
    if pairs.height:
        out += [Note("Every pair of a model's conditions, photo by photo."), Table(pairs, experiments.CONDITION_PAIRS)]
    return out


def _providers(r: Report) -> list[Part]:
    prov = tables.providers_frame(r.runs)
    return [Table(prov, tables.PROVIDERS)] if prov.height else []


def _extras(r: Report) -> list[Part]:
    extras = tables.extras_frame(r.runs)
    return [Table(extras, tables.EXTRAS)] if extras.height else []


def _wrong(r: Report) -> list[Part]:
    rows = tables.gallery_rows(r.runs, r.gallery_limit)
    out: list[Part] = [] if r.photos else [
        Note("The photo table was not found (give its path), so the photos are not shown.")]
    if not rows:
        return out + [Note("None: every model answered every photo right.")]
    every = sum(x["all_wrong"] for x in rows)
    if every and len(rows[0]["answers"]) > 1:
        one = every == 1
        out.append(Note(f"{every} photo{'' if one else 's'} every model answered wrongly come{'s' if one else ''} "
                        f"first (red frame): mistakes the models share, which no vote among them would catch.",
                        "warn"))
    return out + [Html(gallery_html(rows, r.thumbs([x["id"] for x in rows])))]


def _calibration(r: Report) -> list[Part]:
    cal = measures.calibration_frame(r.runs)
    if not cal.height:
        return []
    out: list[Part] = []
    without = cal.filter(pl.col("brier").is_null() & pl.col("ece").is_null())
    if without.height == cal.height:
        out.append(Note("No model stated probabilities, so there is no calibration to show. Decisions models "
                        "state one (noul); ask chat models for theirs with --logprobs (their request body changes)."))
    elif without.height:
        out.append(Note("Without probabilities: " + "; ".join(f"{x['label']} ({x['reason']})"
                                                            for x in without.iter_rows(named=True))))
    out += _charts(charts.reliability_diagram(measures.reliability_frame(r.runs)))
    out.append(Note("Brier score: the mean squared gap between the stated P(hot dog) and the truth (0 is best). "
                    "ECE: the photo-weighted mean gap between stated P(hot dog) and the share of hot dogs in 10 "
                    "equal-width bins. AUROC: the chance a hot dog gets a higher P(hot dog) than another photo "
                    "(0.5: no better than chance), with DeLong's 95% interval."))
    return out + [Table(cal, measures.CALIBRATION)]


def _power(r: Report) -> list[Part]:
    frame = measures.power_frame(r.runs)
    out: list[Part] = [Note(s) for s in frame["sentence"].to_list() if s] if frame.height else []
    if frame.height:
        out.append(Note("Photos needed: for McNemar's test to find the gap seen with 80% power at alpha = 0.05, at "
                        "the discordance seen (Connor 1987; and by the exact conditional test). The smallest gap "
                        "detectable now is Connor's at the photos both answered ('–': not even every discordant "
                        "photo going one way would be enough)."))
        out.append(Table(frame, measures.POWER))
    widths, cols = measures.half_width_frame(r.runs)
    if widths.height:
        out.append(Note("Per category, how precise each accuracy is today: accuracy ± the half-width of its 95% "
                        "Wilson interval, in points, over the n photos answered."))
        out.append(Table(widths, cols))
    return out


def _agreement(r: Report) -> list[Part]:
    out: list[Part] = []
    for run in r.runs:
        a = run.agreement or {}
        if a.get("fleiss_kappa") is not None:
            where = f" in {run.name}" if len(r.runs) > 1 else ""
            out.append(Note(f"Fleiss' kappa over the {len(a.get('models') or [])} models{where}: "
                            f"{fmt(a['fleiss_kappa'], 'score')} ({a.get('fleiss_photos')} photos; agreement "
                            f"{fmt(a.get('fleiss_observed'), 'pct')}, {fmt(a.get('fleiss_expected'), 'pct')} by "
                            f"chance). Photos every model answered wrongly: {len(a.get('all_wrong') or [])} of "
                            f"{a.get('photos_all_answered')} all answered."))
    agree = measures.agreement_frame(r.runs)
    if not agree.height:
        return out
    out += _charts(charts.kappa_matrix(agree), charts.error_overlap_matrix(agree))
    out.append(Note("Both wrong ÷ independent: how much more often the two are wrong on the same photo than if "
                    "their mistakes were independent (Goel et al. 2025). Error consistency: Geirhos et al. (2020)'s "
                    "kappa over right/wrong."))
    return out + [Table(agree.filter(pl.col("given")), measures.AGREEMENT)]


def _intervals(r: Report) -> list[Part]:
    models, pairs = measures.intervals_frame(r.runs), measures.pair_intervals_frame(r.runs)
    if not models.height and not pairs.height:
        return []
    out: list[Part] = []
    parted = [f"{x['label']} {x['measure'].split(' (')[0]}" for frame in (models, pairs)
              for x in frame.filter(pl.col("disagrees")).iter_rows(named=True)]
    if parted:
        out.append(Note(f"The bootstrap and the closed-form interval differ by more than a point at an end for "
                        f"{'; '.join(parted)} ({len(parted)} of {models.height + pairs.height}; 'yes' below): with "
                        f"few photos, or a share near 0 or 1, neither should be read to the point.", "warn"))
    boot = next((s["bootstrap"] for run in r.runs for s in run.summaries if isinstance(s.get("bootstrap"), dict)),
                {})
    out.append(Note(f"A percentile bootstrap over photos ({boot.get('resamples', '?'):,} resamples, seed "
                    f"{boot.get('seed', '?')}) beside each closed-form interval."))
    if models.height:
        out.append(Table(models, measures.INTERVALS))
    if pairs.height:
        out.append(Table(pairs, measures.PAIR_INTERVALS))
    return out


def _bonus(r: Report) -> list[Part]:
    rows = tables.bonus_rows(r.runs)
    if not rows:
        return []
    return [Note("Asked like the rest, kept out of every score."),
            Html(gallery_html(rows, r.thumbs([x["id"] for x in rows]), scored=False))]


SECTIONS: tuple[Section, ...] = (
    Section("leaderboard", "Leaderboard", _leaderboard),
    Section("accuracy", "Accuracy", _accuracy),
    Section("concurrency", "Concurrency and latency", _concurrency, "Latency"),
    Section("pairs", "Pairs (McNemar)", _pairs, "Pairs"),
    Section("conditions", "Conditions", _conditions),
    Section("power", "How many photos a claim needs", _power, "Photos needed"),
    Section("agreement", "Agreement between models", _agreement, "Agreement"),
    Section("calibration", "Calibration", _calibration),
    Section("intervals", "Bootstrap beside the closed-form intervals", _intervals, "Bootstrap"),
    Section("providers", "By provider", _providers, "Providers"),
    Section("extras", "Other measures", _extras, "Other measures"),
    Section("gallery", lambda r: f"Photos the models got wrong or disagreed on ({len(tables.gallery_rows(r.runs, r.gallery_limit))})",
            _wrong, "Wrong or disagreed"),
    Section("bonus", "Unscored bonus answers", _bonus, "Bonus answers"),
)


def render(report: Report) -> list[tuple[Section, str, list[Part]]]:
    """(section, heading, parts) for every section with something to show."""
    out = []
    for s in SECTIONS:
        parts = s.parts(report)
        if parts:
            out.append((s, s.heading(report), parts))
    return out
