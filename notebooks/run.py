import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="hotdogbench: run")

with app.setup(hide_code=True):
    import asyncio
    import contextlib
    import os

    import marimo as mo
    import polars as pl

    from hotdogbench_core import load_run
    from hotdogbench_core.report import charts, tables

    from hotdogbench_core.ui import notebook as nbargs
    from hotdogbench_core.report.estimate import (ESTIMATE, ESTIMATE_BY_CONDITION, PricingUnavailable,
                                                  describe_total, estimate_costs, past_condition_tokens,
                                                  past_tokens, pricing_for)
    from hotdogbench_core.report.gallery import thumb_strip_html
    from hotdogbench_core.run.keys import find_key, mask
    from hotdogbench_core.errors import describe
    from hotdogbench_core.run.plan import TARGETS, plan_run, run_plan
    from hotdogbench_core.run.session import default_run_name
    from hotdogbench_core.run.settings import RunError
    from hotdogbench_core.store.redact import Redactor
    from hotdogbench_core.ui.live import LIVE, REFRESH_S, LiveRun
    from hotdogbench_core.ui.views import table
    from hotdogbench_core.report.thumbs import preview_ids, thumbnails


@app.cell(hide_code=True)
def _():
    mo.md("""
    # hotdogbench: run

    Ask vision-language models *"is the food in this photo a hot dog?"*, one photo per request, and score
    the answers. Choose the photos, the models and where requests go; **nothing is sent until you press Run**.
    Compare finished runs in `notebooks/report.py`.
    """)
    return


@app.cell(hide_code=True)
def _():
    args = nbargs.run_args(mo.cli_args())
    return (args,)


@app.cell(hide_code=True)
def _(args):
    source = mo.ui.radio(options={label: key for key, label in nbargs.SOURCES.items()},
                         value=nbargs.SOURCES[nbargs.source_for(args.input)], label="Photos")
    path_box = mo.ui.text(value=args.input if nbargs.source_for(args.input) == "path" else "",
                          placeholder="data/hotdogbench.parquet", label="Parquet path or URL", full_width=True)
    upload = mo.ui.file(filetypes=[".parquet"], label="Upload a parquet")
    return path_box, source, upload


@app.cell(hide_code=True)
def _(path_box, source, upload):
    _extra = {"path": path_box, "upload": upload}.get(source.value)
    mo.vstack([x for x in (mo.md("## 1. Photos"), source, _extra) if x is not None])
    return


@app.cell(hide_code=True)
def _(path_box, source, upload):
    _upload = (upload.name(), upload.contents()) if upload.value else None
    try:
        with mo.status.spinner(title="Reading the photo table (a URL is downloaded once into data/)"):
            dataset = nbargs.open_dataset(source.value, path_box.value.strip(), _upload)
        dataset_error = None
    except (ValueError, OSError) as _e:
        dataset, dataset_error = None, str(_e)
    return dataset, dataset_error


@app.cell(hide_code=True)
def _(dataset, dataset_error):
    mo.stop(dataset is None, mo.callout(mo.md(f"**No photos yet:** {dataset_error}"), kind="warn"))
    _ids = preview_ids(dataset, 16)
    _thumbs = thumbnails(dataset, _ids, 96)
    _cat = {p.id: p.category for p in dataset.photos}
    mo.vstack([
        mo.md(f"**{len(dataset)} photos** in `{dataset.path}`, {len(dataset.categories())} categories"),
        mo.hstack([charts.category_counts(dataset.categories()),
                   mo.Html(thumb_strip_html([(i, _cat[i], _thumbs[i]) for i in _ids if i in _thumbs]))],
                  widths=[1, 1], align="start"),
    ])
    return


@app.cell(hide_code=True)
def _(args):
    _picked, _other = nbargs.split_models(args.models)
    models_pick = mo.ui.multiselect(options=nbargs.model_options(), value=_picked, label="Models and presets",
                                    full_width=True)
    other_models = mo.ui.text(value=_other, placeholder="other OpenRouter ids, comma-separated: author/slug",
                              label="Other models", full_width=True)
    mo.vstack([mo.md("## 2. Models"), models_pick, other_models])
    return models_pick, other_models


@app.cell(hide_code=True)
def _(models_pick, other_models):
    try:
        chosen = nbargs.chosen_models(models_pick.value, other_models.value)
        models_error = None if chosen else "choose at least one model"
    except ValueError as _e:
        chosen, models_error = [], str(_e)
    return chosen, models_error


@app.cell(hide_code=True)
def _(args):
    target = mo.ui.radio(options={label: key for key, label in TARGETS.items()}, value=TARGETS[args.target],
                         label="Send requests to")
    base_url_box = mo.ui.text(value=args.base_url or os.environ.get("OPENROUTER_BASE_URL", ""),
                              placeholder="http://127.0.0.1:8000", label="Base URL", full_width=True)
    sim_knobs = mo.ui.dictionary({
        name: mo.ui.number(start=lo, stop=hi, step=step, value=default, label=label)
        for name, (label, default, lo, hi, step) in nbargs.SIM_KNOBS.items()})
    return base_url_box, sim_knobs, target


@app.cell(hide_code=True)
def _(base_url_box, sim_knobs, target):
    _key = mo.md(f"OpenRouter key: **{mask(find_key())}** (from the environment or ./.env; never shown)")
    _extra = {"base_url": base_url_box,
              "simulator": mo.vstack([mo.md("Simulated provider (answers are made up, not real models'):"),
                                      mo.hstack(list(sim_knobs.elements.values()), wrap=True)])}.get(target.value)
    mo.vstack([x for x in (mo.md("## 3. Where requests go"), target, _key, _extra) if x is not None])
    return


@app.cell(hide_code=True)
def _(args):
    start_conc = mo.ui.number(start=1, stop=4096, value=args.start_concurrency, label="Start concurrency")
    max_conc = mo.ui.number(start=1, stop=4096, value=args.max_concurrency, label="Max concurrency")
    run_name = mo.ui.text(value=args.run or default_run_name(), label="Run name")
    resume_box = mo.ui.checkbox(label="Resume: finish an interrupted run of this name")
    budget_box = mo.ui.number(start=0, stop=100000, step=0.5, value=args.max_cost_usd or 0,
                              label="Budget, USD (0: none)")
    conditions_box = mo.ui.text_area(placeholder=nbargs.CONDITIONS_PLACEHOLDER, label="Conditions (optional)",
                                     full_width=True)
    mo.vstack([mo.md("## 4. Run settings"), mo.hstack([start_conc, max_conc, run_name], justify="start"),
               mo.hstack([budget_box, resume_box], justify="start"),
               mo.md(f"Results go to `{args.out}/<run name>/`. With a budget, no request is sent once what was "
                     "spent plus what is in flight could pass it; the run stops and can be resumed."),
               mo.accordion({"Conditions: image size, JPEG quality, question, provider": mo.vstack(
                   [mo.md(nbargs.CONDITIONS_HELP), conditions_box])})])
    return budget_box, conditions_box, max_conc, resume_box, run_name, start_conc


@app.cell(hide_code=True)
def _(args, base_url_box, budget_box, chosen, conditions_box, dataset, max_conc, models_error, resume_box, run_name,
      sim_knobs, start_conc, target):
    try:
        if dataset is None:
            raise ValueError("choose a photo table first")
        if models_error:
            raise ValueError(models_error)
        _conditions = nbargs.condition_lines(conditions_box.value)
        plan = plan_run(models=chosen, dataset=dataset, target=target.value, out=args.out,
                        run_name=run_name.value.strip(), base_url=base_url_box.value.strip() or None,
                        sim_config=nbargs.sim_config(sim_knobs.value, bool(_conditions))
                        if target.value == "simulator" else None, conditions=_conditions,
                        start_concurrency=int(start_conc.value), max_concurrency=int(max_conc.value),
                        resume=resume_box.value, max_cost_usd=float(budget_box.value or 0) or None)
        plan_error = None
    except (ValueError, TypeError) as _e:
        plan, plan_error = None, describe(_e, nbargs.FIELD_LABELS)
    return plan, plan_error


@app.cell(hide_code=True)
def _(args, plan, plan_error):
    mo.stop(plan is None, mo.callout(mo.md(f"**Not ready to run:** {plan_error}"), kind="warn"))
    try:
        _prices = pricing_for(plan.target, plan.settings.base_url, plan.sim_config)
        _note = ""
    except PricingUnavailable as _e:
        _prices, _note = {}, f" ({_e})"
    _where = "http://127.0.0.1" if plan.target == "simulator" else plan.endpoint()
    _past = past_tokens(args.out, _where)
    costs = estimate_costs(plan.models, plan.requests_per_model, _prices, _past, conditions=plan.conditions,
                           dataset=plan.dataset,
                           past_conditions=past_condition_tokens(args.out, _where) if plan.conditions else None)
    mo.vstack([mo.md(f"## 5. Estimated cost\n**{describe_total(costs)}**{_note}. Tokens per photo are guesses "
                     "(a past run's average where there is one); prices from `/v1/models`."),
               table(costs, ESTIMATE_BY_CONDITION if plan.conditions else ESTIMATE)])
    return


@app.cell(hide_code=True)
def _(plan):
    run_button = mo.ui.run_button(label="Run", kind="success", disabled=plan is None)
    _conds = f" × {len(plan.conditions)} condition(s)" if plan is not None and plan.conditions else ""
    _what = (f"{plan.requests_per_model} photos × {len(plan.models)} model(s){_conds} → `{plan.run_dir}` "
             f"via {plan.endpoint()}") if plan is not None else "fix the settings above first"
    mo.vstack([mo.md("## 6. Run"), mo.hstack([run_button, mo.md(_what)], justify="start")])
    return (run_button,)


@app.function(hide_code=True)
def live_panel(live):
    """Counters per model and the limit trace so far."""
    _trace = charts.limit_trace(live.trace_frame(), title="In-flight limit (live)")
    return mo.vstack([table(pl.DataFrame(live.rows()), LIVE), _trace])


@app.cell(hide_code=True)
async def _(args, plan, run_button):
    mo.stop(not (run_button.value or args.go), mo.md("_Nothing has been sent. Press **Run** to start._"))
    mo.stop(plan is None, mo.md("_Not started: the settings above need fixing._"))
    live = LiveRun(plan.labels, plan.requests_per_model)
    _stack = contextlib.ExitStack()
    _bars = {m: _stack.enter_context(mo.status.progress_bar(total=plan.requests_per_model, title=m,
                                                             subtitle="waiting", show_rate=False, show_eta=False))
             for m in plan.labels}
    _shown = dict.fromkeys(plan.labels, 0)
    mo.output.append(live_panel(live))
    _task = asyncio.ensure_future(run_plan(plan, on_event=live.on_event, on_model=live.on_model))
    try:
        while True:
            _finished, _ = await asyncio.wait({_task}, timeout=REFRESH_S)
            live.refresh()
            for _m, _bar in _bars.items():
                _st = live.models[_m]
                _bar.update(increment=_st.done - _shown[_m], subtitle=_st.subtitle(live.clock()))
                _shown[_m] = _st.done
            mo.output.replace_at_index(live_panel(live), len(plan.labels))
            if _finished:
                break
    finally:
        if not _task.done():  # the cell was interrupted: stop sending (settled photos are journaled)
            _task.cancel()
        _stack.close()
    try:
        run_result, run_error = _task.result(), None
    except (RunError, ValueError, OSError) as _e:  # OSError: the path and what to do; never the key
        run_result, run_error = None, Redactor.for_settings(plan.settings).text(describe(_e, nbargs.FIELD_LABELS))
    return run_error, run_result


@app.cell(hide_code=True)
def _(run_error, run_result):
    mo.stop(run_result is None, mo.callout(mo.md(f"**The run failed:** {run_error}"), kind="danger")
            if run_error else None)
    run_data = load_run(run_result.run_dir.parent, run_result.run_dir.name)
    board = tables.leaderboard([run_data])
    _stopped = mo.callout(mo.md(f"**Stopped early:** {run_result.stopped}. {run_result.hint}"), kind="danger") \
        if run_result.stopped else None
    mo.vstack([x for x in (mo.md(f"## Results: `{run_result.run_dir}`"), _stopped) if x is not None])
    return board, run_data


@app.cell(hide_code=True)
def _(run_data):
    _heat = charts.accuracy_heatmap(tables.category_accuracy([run_data]))
    mo.Html('<div class="hdb-accuracy">' + mo.as_html(_heat).text + "</div>")
    return


@app.cell(hide_code=True)
def _(board, run_data):
    mo.hstack([charts.cost_vs_accuracy(board), charts.latency_box(tables.latency_frame([run_data]),
                                                                  title="Latency distribution")],
              wrap=True, align="start")
    return


@app.cell(hide_code=True)
def _(board, run_data):
    _summary = run_data.path / "summary.json"
    print(f"wrote {_summary}")
    mo.vstack([mo.md("### Summary"), board,
               mo.download(data=_summary.read_bytes(), filename="summary.json", mimetype="application/json",
                           label="Download summary.json"),
               mo.md(f"Written to `{_summary}`. Compare runs: `uv run marimo edit notebooks/report.py`.")])
    return


if __name__ == "__main__":
    app.run()
