"""How values look in every table (notebooks and the offline report alike): one format per kind of value, and
table columns declared once (name, label, kind), so a frame's schema and its headers come from one place."""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

import polars as pl

from ..stats.metrics import Metric

DTYPES = {"pct": pl.Float64, "count": pl.Int64, "seconds": pl.Float64, "usd": pl.Float64, "rate": pl.Float64,
          "text": pl.String, "tokens": pl.Float64, "p": pl.Float64, "diff": pl.Float64, "bool": pl.Boolean,
          "score": pl.Float64}


@dataclass(frozen=True)
class Col:
    name: str  # the frame's column
    label: str  # the table's header, with its unit
    kind: str  # a key of DTYPES: how the value is formatted
    show: bool = True  # shown in tables (else only in the frame, for charts and tooltips)

    @property
    def dtype(self):
        return DTYPES[self.kind]


def metric_col(m: Metric) -> Col:
    return Col(m.column, m.label, m.kind, m.leaderboard)


def schema(cols: tuple[Col, ...]) -> dict:
    return {c.name: c.dtype for c in cols}


def fmt(value, kind: str) -> str:
    """A value as tables show it: percentages with one decimal, USD to 4 significant digits, seconds to 3
    decimals, counts as integers with thousands separators; a dash for nothing."""
    if value is None or isinstance(value, float) and math.isnan(value):
        return "–"
    if kind == "pct":
        return f"{value:.1%}"
    if kind == "diff":
        return f"{value * 100:+.1f} pts"
    if kind == "usd":
        return usd(value)
    if kind == "seconds":
        return f"{value:.3f}"
    if kind == "rate":
        return f"{value:,.2f}"
    if kind == "count":
        return f"{int(value):,}"
    if kind == "tokens":  # an average number of tokens: whole tokens are enough
        return f"{value:,.0f}"
    if kind == "p":
        return f"{value:.3g}"
    if kind == "score":
        return f"{value:.3f}"
    if kind == "bool":
        return "yes" if value else "no"
    return str(value)


def usd(value: float) -> str:
    """USD to 4 significant digits, never in exponent notation: $0.00003135, $0.1234, $12.35, $1,234."""
    if value == 0:
        return "$0"
    sign, value = ("-" if value < 0 else ""), abs(value)
    decimals = max(0, 3 - math.floor(math.log10(value)))
    if decimals and float(f"{value:.{decimals}f}") >= 10 ** (4 - decimals):  # rounding adds a digit: 9.99996
        decimals -= 1
    return f"{sign}${value:,.{decimals}f}"


# Inline styles: the same fragments are shown inside marimo, where the report's stylesheet is absent.
TABLE = 'style="border-collapse:collapse;font-size:13px;margin:8px 0"'
TH = 'style="padding:4px 8px;text-align:left;background:#f1f3f5;white-space:nowrap"'
TD = 'style="padding:4px 8px;border-bottom:1px solid #e9ecef"'
TDN = 'style="padding:4px 8px;border-bottom:1px solid #e9ecef;text-align:right;font-variant-numeric:tabular-nums"'
TONE = {"ok": "color:#2b8a3e", "bad": "color:#c92a2a;font-weight:600", "none": "color:#868e96"}


def cell(value, kind: str, lo=None, hi=None) -> str:
    """One cell's HTML: the value, and its interval beneath when there is one."""
    text = html.escape(fmt(value, kind))
    if lo is not None and hi is not None:
        text += (f'<br><small style="color:#495057;white-space:nowrap">[{html.escape(fmt(lo, kind))}–'
                 f'{html.escape(fmt(hi, kind))}]</small>')
    return text


def table_html(df: pl.DataFrame, cols: tuple[Col, ...], cls: str = "", notes: dict[int, str] | None = None) -> str:
    """A frame as an HTML table with the columns' labels and formats; an interval is shown under its value
    where the frame has `<name>_lo` and `<name>_hi`. notes: extra HTML under the first cell of a row."""
    shown = [c for c in cols if c.show and c.name in df.columns]
    th = "".join(f"<th {TH}>{html.escape(c.label)}</th>" for c in shown)
    rows = []
    for i, r in enumerate(df.iter_rows(named=True)):
        tds = []
        for j, c in enumerate(shown):
            lo, hi = r.get(f"{c.name}_lo"), r.get(f"{c.name}_hi")
            body = cell(r[c.name], c.kind, lo, hi)
            if j == 0 and notes and i in notes:
                body += notes[i]
            tds.append(f"<td {TD if c.kind == 'text' else TDN}>{body}</td>")
        rows.append("<tr>" + "".join(tds) + "</tr>")
    return (f"<div style='overflow-x:auto'><table class='{cls}' {TABLE}><tr>{th}</tr>{''.join(rows)}</table>"
            f"</div>")
