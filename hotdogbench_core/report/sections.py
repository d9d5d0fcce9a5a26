"""The report's sections, listed once: the report notebook and the offline HTML both render this list.

A section turns a Report (the runs, read once) into parts: a chart, a table with its declared columns, a note,
or HTML (the gallery). A new chart is a builder in charts.py, its frame in tables.py and a line here.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import polars as pl

from . import charts, tables
from .format import Col, TONE
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
        return any("simulator" in (s.get("providers") or []) for r in self.runs for s in r.summaries)

    def thumbs(self, ids: list[int]) -> dict[int, str]:
        return thumbnails(self.photos, ids) if self.photos else {}


@dataclass(frozen=True)
class Section:
    key: str
    title: Callable[[Report], str] | str
    parts: Callable[[Report], list[Part]]

    def heading(self, report: Report) -> str:
        return self.title(report) if callable(self.title) else self.title


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
    return out + [Html(gallery_html(rows, r.thumbs([x["id"] for x in rows])))]


def _bonus(r: Report) -> list[Part]:
    rows = tables.bonus_rows(r.runs)
    if not rows:
        return []
    return [Note("Asked like the rest, kept out of every score."),
            Html(gallery_html(rows, r.thumbs([x["id"] for x in rows]), scored=False))]


SECTIONS: tuple[Section, ...] = (
    Section("leaderboard", "Leaderboard", _leaderboard),
    Section("accuracy", "Accuracy", _accuracy),
    Section("concurrency", "Concurrency and latency", _concurrency),
    Section("pairs", "Pairs (McNemar)", _pairs),
    Section("providers", "By provider", _providers),
    Section("extras", "Other measures", _extras),
    Section("gallery", lambda r: f"Photos the models got wrong or disagreed on ({len(tables.gallery_rows(r.runs, r.gallery_limit))})",
            _wrong),
    Section("bonus", "Unscored bonus answers", _bonus),
)


def render(report: Report) -> list[tuple[Section, str, list[Part]]]:
    """(section, heading, parts) for every section with something to show."""
    out = []
    for s in SECTIONS:
        parts = s.parts(report)
        if parts:
            out.append((s, s.heading(report), parts))
    return out
