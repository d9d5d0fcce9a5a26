"""How the run notebook draws a run's live state (a RunInfo from ui/runs.py, i.e. live.json): one bar per
model with its counts, its state and its errors beside it, and the in-flight limit chart.

A model with photos settled and no answer among them is never drawn as done or in green: its bar is red and
says "no answers". A model that ended with errors says how many and the first one's text, next to its bar.
"""
from __future__ import annotations

import html

import polars as pl

from ..report import charts
from .runs import RunInfo

GREEN, BLUE, RED, AMBER, GREY, TRACK = "#2b8a3e", "#1c7ed6", "#c92a2a", "#e8a33d", "#868e96", "#e9ecef"


def verdict(m: dict, run_state: str) -> tuple[str, str]:
    """(kind, words) for one model of a run: kind is failed, done, warn, running, stopped or waiting."""
    done, answered, errors = m.get("done") or 0, m.get("answered") or 0, m.get("errors") or 0
    state = m.get("state") or "waiting"
    ended = state in ("done", "stopped") or run_state not in ("starting", "running", "stopping")
    if done and not answered:
        return "failed", "failed: no answers" if ended else "no answers so far"
    if state == "stopped":
        return "stopped", f"stopped: {m.get('stop_reason') or 'before the end'}"
    if state == "done":
        return ("warn", "done, with errors") if errors else ("done", "done")
    if run_state in ("interrupted", "failed", "stopped"):
        return "stopped", "interrupted" if state == "running" else "not run"
    if state == "running":
        return "running", "stopping" if run_state == "stopping" else "running"
    return "waiting", "starting" if run_state == "starting" else "waiting"


def _details(m: dict, kind: str) -> str:
    parts = []
    if kind == "running":
        rate, left = m.get("photos_per_s"), m.get("time_left_s")
        parts.append(f"{rate:.1f} photos/s" if rate else "– photos/s")
        parts.append(f"~{left:.0f} s left" if left is not None else "time left unknown")
        parts.append(f"in flight {m.get('in_flight') or 0}")
        if m.get("limit") is not None:
            parts.append(f"limit {m['limit']}")
    elif m.get("photos_per_s"):
        parts.append(f"{m['photos_per_s']:.1f} photos/s")
    if m.get("throttles"):
        parts.append(f"throttled {m['throttles']}")
    if m.get("dropped_connections"):
        parts.append(f"dropped connections {m['dropped_connections']}")
    return " · ".join(parts)


def bar_html(model: str, m: dict, run_state: str) -> str:
    """One model's bar: answers (blue while running, then green), errors (red), no verdict (amber)."""
    kind, words = verdict(m, run_state)
    total = m.get("total")
    done, answered, errors = m.get("done") or 0, m.get("answered") or 0, m.get("errors") or 0
    unanswered = max(0, done - answered - errors)
    width = max(total or 0, done, 1)
    ok = BLUE if kind == "running" else GREY if kind == "waiting" else GREEN
    weight = 400 if kind == "running" else 600
    tone = RED if kind == "failed" else AMBER if kind in ("warn", "stopped") else GREEN if kind == "done" else GREY
    segments = "".join(f'<div style="width:{100 * n / width:.2f}%;background:{c}"></div>'
                       for n, c in ((answered, ok), (errors, RED), (unanswered, AMBER)) if n)
    count = f"{done:,} / {total:,}" if total else f"{done:,}"
    note = ""
    if errors:
        first = html.escape(str(m.get("first_error") or ""))
        note = (f'<span class="hdb-errors" style="color:{RED};font-weight:600">{errors:,} error'
                f'{"s" if errors != 1 else ""}{": " + first if first else ""}</span>')
    details = html.escape(_details(m, kind))
    stop = ""
    if m.get("stop_reason") and (kind == "failed" or kind == "stopped" and m.get("hint")):  # why, what to do
        why = str(m["stop_reason"])
        if m.get("first_error") and m["first_error"] in why:
            why = why.replace(m["first_error"], "").rstrip(", :")  # the error itself is said just above
        hint = f" — {m['hint']}" if m.get("hint") else ""
        stop = (f'<div class="hdb-stop" style="color:{RED if kind == "failed" else AMBER};font-size:0.85rem">'
                f"stopped early: {html.escape(why[:240])}{html.escape(hint[:240])}</div>")
    return f"""<div class="hdb-bar" data-model="{html.escape(model)}" data-verdict="{kind}" style="margin:8px 0">
  <div style="display:flex;flex-wrap:wrap;gap:4px 14px;align-items:baseline;font-size:0.9rem">
    <b style="min-width:14rem">{html.escape(model)}</b>
    <span class="hdb-count" style="font-variant-numeric:tabular-nums">{count}</span>
    <span class="hdb-state" style="color:{tone};font-weight:{weight}">{html.escape(words)}</span>
    <span style="color:{GREY}">{details}</span>{note}
  </div>{stop}
  <div style="height:10px;background:{TRACK};border-radius:5px;overflow:hidden;display:flex;margin-top:3px"
       title="answered {answered:,} · errors {errors:,} · no verdict {unanswered:,}">{segments}</div>
</div>"""


def bars_html(info: RunInfo, cls: str = "hdb-live") -> str:
    """Every model's bar; cls tells the live panel's (hdb-live) from a finished run's (hdb-outcome)."""
    bars = "".join(bar_html(m, v, info.state) for m, v in info.models.items())
    return (f'<div class="hdb-run {cls}" data-run="{html.escape(info.name)}" data-state="{info.state}">'
            f"{bars}</div>")


def trace_frame(info: RunInfo) -> pl.DataFrame:
    """label, t, limit: each model's in-flight limit over its own time, from live.json."""
    rows = [{"label": m, "t": float(t), "limit": int(lim)} for m, v in info.models.items()
            for t, lim in v.get("trace") or []]
    schema = {"label": pl.String, "t": pl.Float64, "limit": pl.Int64}
    return pl.DataFrame(rows, schema=schema, orient="row" if not rows else None)


def limit_chart(info: RunInfo):
    """The live in-flight limit chart of a run, or None before any model has started."""
    return charts.limit_trace(trace_frame(info), title=f"In-flight limit, live ({info.name})")
