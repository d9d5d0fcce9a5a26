import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="hotdogbench: report", css_file="notebooks.css")

with app.setup(hide_code=True):
    import marimo as mo

    from hotdogbench_core import load_run
    from hotdogbench_core.report.html import OFFLINE_NAME, build_offline_report, write_offline_report
    from hotdogbench_core.report.sections import Report
    from hotdogbench_core.store.rundir import list_runs
    from hotdogbench_core.ui import notebook as nbargs
    from hotdogbench_core.ui.views import section_tabs


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
    available = list_runs(args.out)
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
def _(args, input_box, runs_pick):
    mo.stop(not runs_pick.value, mo.md(f"_No run chosen (none under `{args.out}`? Start one with "
                                       "`uv run marimo edit notebooks/run.py`)._"))
    runs = [load_run(args.out, name) for name in runs_pick.value]
    report = Report(runs, dataset=input_box.value.strip() or None)
    return report, runs


@app.cell(hide_code=True)
def _(report):
    _photos = None if report.photos else mo.md("_The photo table was not found: give its path above to see the "
                                               "photos._")
    mo.vstack([x for x in (_photos, section_tabs(report)) if x is not None])
    return


@app.cell(hide_code=True)
def _(args, report, runs, runs_pick):
    _written = write_offline_report(args.out, runs_pick.value, dataset=report.photos) if args.offline else None
    _download = mo.download(data=lambda: build_offline_report(runs, dataset=report.photos).encode(),
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
