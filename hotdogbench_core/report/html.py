"""A self-contained HTML report of one or more runs: tables, charts as inline SVG, thumbnails as data: URIs.

It loads nothing from the network (marimo's own HTML export fetches its frontend from a CDN), so it can be
opened offline and archived. `hotdogbench report --out out --run RUN` and the report notebook write it as
OUT/RUN/report_offline.html.
"""
from __future__ import annotations

import html
import time
from pathlib import Path

from ..store.rundir import RunDir
from . import runs as rp
from .format import table_html
from .sections import Chart, Html, Note, Report, Table, render

OFFLINE_NAME = RunDir.OFFLINE_REPORT

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1240px;
     color:#212529;padding:0 16px}
h1{margin-bottom:4px} h2{margin-top:36px;border-bottom:1px solid #dee2e6;padding-bottom:4px}
.meta{color:#495057} .note{background:#fff3bf;padding:8px 12px;border-radius:6px}
figure{margin:16px 0} figure svg{max-width:100%;height:auto}
"""


def _part_html(part) -> str:
    if isinstance(part, Chart):
        import vl_convert as vlc

        spec = part.chart.to_dict()
        title = spec.get("title", "")
        return f"<figure title='{html.escape(title if isinstance(title, str) else str(title))}'>" \
               f"{vlc.vegalite_to_svg(spec)}</figure>"
    if isinstance(part, Table):
        return table_html(part.frame, part.cols, part.cls, part.notes)
    if isinstance(part, Note):
        return f"<p class='{'note' if part.kind != 'info' else 'meta'}'>{html.escape(part.text)}</p>"
    if isinstance(part, Html):
        return part.html
    raise TypeError(f"not a report part: {part!r}")


def build_offline_report(runs: list[rp.RunData], dataset: str | Path | None = None,
                         data_dir: str | Path = "data", gallery_limit: int = 48) -> str:
    """The report's sections (report/sections.py) as one HTML page: charts as inline SVG, photos as data: URIs."""
    if not runs:
        raise ValueError("no runs to report on")
    report = Report(runs, dataset, data_dir, gallery_limit)
    names = ", ".join(r.name for r in runs)
    parts = [f"<h1>hotdogbench report: {html.escape(names)}</h1>",
             f"<p class=meta>{report.board.height} model result(s) · written {time.strftime('%Y-%m-%d %H:%M')} · "
             f"self-contained: opens without a network</p>"]
    for section, heading, section_parts in render(report):
        parts.append(f"<h2 id='{section.key}'>{html.escape(heading)}</h2>")
        parts += [_part_html(p) for p in section_parts]
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>hotdogbench report: "
            f"{html.escape(names)}</title><style>{CSS}</style></head><body>{''.join(parts)}</body></html>\n")


def write_offline_report(out: str | Path, run_names: list[str], dataset: str | Path | None = None,
                         path: str | Path | None = None, data_dir: str | Path = "data") -> Path:
    """Write the offline report (default OUT/FIRST_RUN/report_offline.html) and return its path."""
    runs = rp.load_runs(out, run_names)
    target = Path(path) if path else runs[0].path / OFFLINE_NAME
    text = build_offline_report(runs, dataset=dataset, data_dir=data_dir)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
    return target
