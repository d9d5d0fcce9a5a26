"""A self-contained HTML report of one or more runs: tables, charts as inline SVG, thumbnails as data: URIs.

It loads nothing from the network (marimo's own HTML export fetches its frontend from a CDN), so it can be
opened offline and archived. `hotdogbench report --out out --run RUN` and the report notebook write it as
OUT/RUN/report_offline.html.
"""
from __future__ import annotations

import html
import time
from pathlib import Path

import polars as pl

from . import charts
from . import runs as rp
from ..store.rundir import RunDir
from .thumbs import thumbnails

OFFLINE_NAME = RunDir.OFFLINE_REPORT

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1240px;
     color:#212529;padding:0 16px}
h1{margin-bottom:4px} h2{margin-top:36px;border-bottom:1px solid #dee2e6;padding-bottom:4px}
.meta{color:#495057} .note{background:#fff3bf;padding:8px 12px;border-radius:6px}
figure{margin:16px 0} figure svg{max-width:100%;height:auto}
"""


# Inline styles: the same fragments are shown inside marimo, where the report's stylesheet is absent.
TABLE = 'style="border-collapse:collapse;font-size:13px;margin:8px 0"'
TH = 'style="padding:4px 8px;text-align:left;background:#f1f3f5;white-space:nowrap"'
TD = 'style="padding:4px 8px;border-bottom:1px solid #e9ecef"'
TDN = 'style="padding:4px 8px;border-bottom:1px solid #e9ecef;text-align:right;font-variant-numeric:tabular-nums"'
TONE = {"ok": "color:#2b8a3e", "bad": "color:#c92a2a;font-weight:600", "none": "color:#868e96"}


def _num(v, fmt: str) -> str:
    if v is None:
        return "–"
    return format(v, fmt)


def _pct_ci(v, lo, hi) -> str:
    text = _num(v, ".1%")
    if lo is not None and hi is not None:
        text += f'<br><small style="color:#495057;white-space:nowrap">[{lo:.1%}–{hi:.1%}]</small>'
    return text


def _table(head: list[str], rows: list[list[str]], cls: str = "", numeric_from: int = 1) -> str:
    th = "".join(f"<th {TH}>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td {TDN if i >= numeric_from else TD}>{c}</td>" for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<div style='overflow-x:auto'><table class='{cls}' {TABLE}><tr>{th}</tr>{body}</table></div>"


def leaderboard_html(lb: pl.DataFrame) -> str:
    head = ["model", "photos", "accuracy", "balanced accuracy", "unanswered", "errors", "p50 latency s",
            "p95 latency s", "USD per 1000 photos", "photos/s", "throttles"]
    rows = []
    for r in lb.iter_rows(named=True):
        stopped = f"<br><small style='{TONE['bad']}'>stopped: {html.escape(r['stopped'])}</small>" \
            if r["stopped"] else ""
        rows.append([html.escape(r["label"]) + stopped, _num(r["photos"], "d"),
                     _pct_ci(r["accuracy"], r["accuracy_lo"], r["accuracy_hi"]),
                     _pct_ci(r["balanced_accuracy"], r["balanced_accuracy_lo"], r["balanced_accuracy_hi"]),
                     _num(r["unanswered"], "d"), _num(r["errors"], "d"), _num(r["latency_p50_s"], ".3f"),
                     _num(r["latency_p95_s"], ".3f"), _num(r["cost_per_1000_photos_usd"], ".3f"),
                     _num(r["photos_per_s"], ".2f"), _num(r["throttles"], "d")])
    return _table(head, rows, "leaderboard")


def frame_html(df: pl.DataFrame, floats: str = ".4g") -> str:
    """Any small frame as a plain table (text left, numbers right)."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:{floats}}"
        return html.escape("–" if v is None else str(v))
    numeric = [dt.is_numeric() for dt in df.dtypes]
    th = "".join(f"<th {TH}>{html.escape(c)}</th>" for c in df.columns)
    body = "".join("<tr>" + "".join(f"<td {TDN if numeric[i] else TD}>{cell(v)}</td>" for i, v in enumerate(row))
                   + "</tr>" for row in df.iter_rows())
    return f"<div style='overflow-x:auto'><table {TABLE}><tr>{th}</tr>{body}</table></div>"


def _answer(v, truth) -> str:
    if v is None:
        return f"<span style='{TONE['none']}'>no answer</span>"
    word = "hot dog" if v else "not hot dog"
    if truth is None:
        return word
    return f"<span style='{TONE['ok' if v == truth else 'bad']}'>{word}</span>"


def gallery_html(rows: list[dict], thumbs: dict[int, str], scored: bool = True) -> str:
    """Cards: the photo, its label, and each model's answer (wrong ones in red)."""
    card = ("border:1px solid #dee2e6;border-radius:6px;padding:6px;width:190px;font-size:12px;line-height:1.4;"
            "overflow-wrap:anywhere")
    pic = "width:100%;height:120px;object-fit:contain;background:#f8f9fa;display:block"
    cards = []
    for r in rows:
        img = (f'<img alt="photo {r["id"]}" src="{thumbs[r["id"]]}" style="{pic}">' if r["id"] in thumbs
               else f'<div style="{pic};line-height:120px;text-align:center;color:#868e96">no image</div>')
        truth = r.get("is_hot_dog") if scored else None
        head = f"#{r['id']} · {html.escape(str(r['category']))}"
        if scored:
            head += f" · {'hot dog' if truth else 'not hot dog'}"
        answers = "".join(f"<div>{html.escape(m)}: {_answer(v, truth)}</div>" for m, v in r["answers"].items())
        cards.append(f'<div class="card" style="{card}">{img}<div><b>{head}</b></div>{answers}</div>')
    return '<div class="gallery" style="display:flex;flex-wrap:wrap;gap:10px">' + "".join(cards) + "</div>"


def thumb_strip_html(items: list[tuple[int, str, str]]) -> str:
    """A row of thumbnails: (id, category, data URI)."""
    cells = "".join(f'<figure style="margin:0;text-align:center;font-size:11px"><img src="{uri}" alt="{i}" '
                    f'style="height:72px;max-width:96px;object-fit:contain"><figcaption>{html.escape(cat)}'
                    f'</figcaption></figure>' for i, cat, uri in items)
    return f'<div style="display:flex;flex-wrap:wrap;gap:8px">{cells}</div>'


def chart_svgs(runs: list[rp.RunData]) -> list[tuple[str, str]]:
    """(title, inline SVG) for every chart the report has data for."""
    import vl_convert as vlc

    lb = rp.leaderboard(runs)
    built = [charts.accuracy_bars(lb), charts.accuracy_heatmap(rp.category_accuracy(runs)),
             charts.cost_vs_accuracy(lb), charts.limit_trace(rp.trace_frame(runs)),
             charts.latency_box(rp.latency_frame(runs)), charts.latency_vs_in_flight(rp.latency_by_in_flight(runs)),
             charts.pairs_heatmap(rp.pairs_frame(runs))]
    out = []
    for c in built:
        if c is not None:
            spec = c.to_dict()
            title = spec.get("title", "")
            out.append((title if isinstance(title, str) else str(title), vlc.vegalite_to_svg(spec)))
    return out


def build_offline_report(runs: list[rp.RunData], dataset: str | Path | None = None,
                         data_dir: str | Path = "data", gallery_limit: int = 48) -> str:
    if not runs:
        raise ValueError("no runs to report on")
    lb = rp.leaderboard(runs)
    names = ", ".join(r.name for r in runs)
    simulated = any("simulator" in (s.get("providers") or []) for r in runs for s in r.summaries)
    parts = [f"<h1>hotdogbench report: {html.escape(names)}</h1>",
             f"<p class=meta>{lb.height} model result(s) · written {time.strftime('%Y-%m-%d %H:%M')} · "
             f"self-contained: opens without a network</p>"]
    if simulated:
        parts.append("<p class=note>Some answers come from hotdogbench's built-in simulator, not from real "
                     "models.</p>")
    parts += ["<h2>Leaderboard</h2>", leaderboard_html(lb)]
    parts += ["<h2>Charts</h2>"] + [f"<figure title='{html.escape(t)}'>{svg}</figure>" for t, svg in chart_svgs(runs)]
    pairs = rp.pairs_frame(runs)
    if pairs.height:
        parts += ["<h2>Pairs (McNemar)</h2>", frame_html(pairs.filter(pl.col("given")).drop("given"))]
    prov = rp.providers_frame(runs)
    if prov.height:
        parts += ["<h2>By provider</h2>", frame_html(prov)]
    extras = rp.extras_frame(runs)
    if extras.height:
        parts += ["<h2>Other measures</h2>", frame_html(extras)]
    wrong, bonus = rp.gallery_rows(runs, gallery_limit), rp.bonus_rows(runs)
    path = rp.find_dataset(runs[0], rp.dataset_candidates(data_dir), explicit=dataset)
    thumbs = thumbnails(path, [r["id"] for r in wrong + bonus]) if path else {}
    parts.append(f"<h2>Photos the models got wrong or disagreed on ({len(wrong)})</h2>")
    if not path:
        parts.append("<p class=meta>The photo table was not found (pass --input), so the photos are not shown.</p>")
    parts.append(gallery_html(wrong, thumbs) if wrong else "<p>None: every model answered every photo right.</p>")
    if bonus:
        parts += ["<h2>Unscored bonus answers</h2>", "<p class=meta>Asked like the rest, kept out of every score."
                  "</p>", gallery_html(bonus, thumbs, scored=False)]
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
