import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="hotdogbench: report")

with app.setup(hide_code=True):
    import marimo as mo

    from hotdogbench_core.report import charts

    from hotdogbench_core.ui import notebook as nbargs
    from hotdogbench_core.report import runs as rp
    from hotdogbench_core.report.html import (OFFLINE_NAME, build_offline_report, frame_html, gallery_html,
                                              leaderboard_html, write_offline_report)
    from hotdogbench_core.report.thumbs import thumbnails


@app.cell(hide_code=True)
def _():
    mo.md("""
    # hotdogbench: report

    Compare finished runs: the leaderboard, accuracy by category, cost, latency, how each model's in-flight
    limit moved, and the photos the models got wrong. Start runs with `notebooks/run.py`.
    """)
    return


@app.cell(hide_code=True)
def _():
    args = nbargs.report_args(mo.cli_args())
    available = rp.list_runs(args.out)
    return args, available


@app.cell(hide_code=True)
def _(args, available):
    runs_pick = mo.ui.multiselect(options=available, value=[r for r in args.runs if r in available] or available[:1],
                                  label=f"Runs under `{args.out}`", full_width=True)
    input_box = mo.ui.text(value=args.input or "", placeholder="found by its digest when empty",
                           label="Photo table (for the thumbnails)", full_width=True)
    _missing = [r for r in args.runs if r not in available]
    _warn = mo.callout(mo.md(f"**Not found under `{args.out}`:** {', '.join(_missing)}"), kind="danger") \
        if _missing else None
    mo.vstack([x for x in (runs_pick, input_box, _warn) if x is not None])
    return input_box, runs_pick


@app.cell(hide_code=True)
def _(args, runs_pick):
    mo.stop(not runs_pick.value, mo.md(f"_No run chosen (none under `{args.out}`? Start one with "
                                       "`uv run marimo edit notebooks/run.py`)._"))
    runs = rp.load_runs(args.out, runs_pick.value)
    board = rp.leaderboard(runs)
    return board, runs


@app.cell(hide_code=True)
def _(board, runs):
    _simulated = any("simulator" in (s.get("providers") or []) for r in runs for s in r.summaries)
    mo.vstack([x for x in (
        mo.md("## Leaderboard"),
        mo.callout(mo.md("Some answers come from the built-in **simulator**, not real models."), kind="warn")
        if _simulated else None,
        mo.Html(leaderboard_html(board)),
    ) if x is not None])
    return


@app.cell(hide_code=True)
def _(board, runs):
    mo.vstack([mo.md("## Accuracy"), charts.accuracy_bars(board),
               charts.accuracy_heatmap(rp.category_accuracy(runs), title="Accuracy by model and category"),
               charts.cost_vs_accuracy(board)])
    return


@app.cell(hide_code=True)
def _(runs):
    _charts = [charts.limit_trace(rp.trace_frame(runs)), charts.latency_box(rp.latency_frame(runs)),
               charts.latency_vs_in_flight(rp.latency_by_in_flight(runs))]
    mo.vstack([mo.md("## Concurrency and latency")] + [c for c in _charts if c is not None])
    return


@app.cell(hide_code=True)
def _(runs):
    _pairs, _prov, _extras = rp.pairs_frame(runs), rp.providers_frame(runs), rp.extras_frame(runs)
    mo.stop(not (_pairs.height or _prov.height or _extras.height))
    mo.vstack([x for x in (
        mo.md("## Pairs, providers and other measures"),
        charts.pairs_heatmap(_pairs) if _pairs.height else None,
        mo.Html(frame_html(_pairs.filter(_pairs["given"]).drop("given"))) if _pairs.height else None,
        mo.Html(frame_html(_prov)) if _prov.height else None,
        mo.Html(frame_html(_extras)) if _extras.height else None,
    ) if x is not None])
    return


@app.cell(hide_code=True)
def _(input_box, runs):
    _wrong, _bonus = rp.gallery_rows(runs), rp.bonus_rows(runs)
    photos = rp.find_dataset(runs[0], rp.dataset_candidates(), explicit=input_box.value.strip() or None)
    _thumbs = thumbnails(photos, [r["id"] for r in _wrong + _bonus]) if photos else {}
    mo.vstack([x for x in (
        mo.md(f"## Photos the models got wrong or disagreed on ({len(_wrong)})"),
        None if photos else mo.md("_The photo table was not found: give its path above to see the photos._"),
        mo.Html(gallery_html(_wrong, _thumbs)) if _wrong else mo.md("None."),
        mo.md("## Unscored bonus answers\nAsked like the rest, kept out of every score.") if _bonus else None,
        mo.Html(gallery_html(_bonus, _thumbs, scored=False)) if _bonus else None,
    ) if x is not None])
    return (photos,)


@app.cell(hide_code=True)
def _(args, photos, runs, runs_pick):
    _written = write_offline_report(args.out, runs_pick.value, dataset=photos) if args.offline else None
    _download = mo.download(data=lambda: build_offline_report(runs, dataset=photos).encode(),
                            filename=OFFLINE_NAME, mimetype="text/html", label="Download the offline HTML")
    mo.vstack([x for x in (
        mo.md("## Offline copy\nOne self-contained HTML file (charts inline, no network needed) to archive "
              "or send."),
        mo.md(f"Written: `{_written}` ([open]({OFFLINE_NAME}) when this page sits beside it).") if _written
        else None,
        _download,
    ) if x is not None])
    return


if __name__ == "__main__":
    app.run()
