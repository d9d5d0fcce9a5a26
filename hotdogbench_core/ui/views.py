"""The report's parts (report/sections.py) as marimo elements, for the notebooks: charts as charts, tables as
labelled HTML tables, notes as callouts. The notebooks call these; they hold no formatting of their own."""
from __future__ import annotations

import marimo as mo

from ..report.format import Col, table_html
from ..report.sections import Chart, Html, Note, Report, Table, render


def show(part):
    if isinstance(part, Chart):
        return part.chart
    if isinstance(part, Table):
        return mo.Html(table_html(part.frame, part.cols, part.cls, part.notes))
    if isinstance(part, Note):
        return mo.callout(mo.md(part.text), kind=part.kind) if part.kind != "info" else mo.md(f"_{part.text}_")
    if isinstance(part, Html):
        return mo.Html(part.html)
    raise TypeError(f"not a report part: {part!r}")


def table(frame, cols: tuple[Col, ...], cls: str = ""):
    """A frame as a labelled table with units (the columns' declaration)."""
    return mo.Html(table_html(frame, cols, cls))


def section_tabs(report: Report):
    """Every section with something to show, one tab each (a long report is never clipped in one box)."""
    tabs = {}
    for section, heading, parts in render(report):  # a short tab name; the full heading inside when it differs
        label = section.tab_label(report)
        tabs[label] = mo.vstack(([] if label == heading else [mo.md(f"#### {heading}")]) + [show(p) for p in parts])
    return mo.ui.tabs(tabs) if tabs else mo.md("_Nothing to show._")
