import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="hotdogbench: run", css_file="notebooks.css")

with app.setup(hide_code=True):
    import contextlib
    import os

    import marimo as mo

    from hotdogbench_core import load_run
    from hotdogbench_core.errors import FieldError
    from hotdogbench_core.report import charts
    from hotdogbench_core.report.estimate import (ESTIMATE, ESTIMATE_BY_CONDITION, PricingUnavailable,
                                                  describe_total, estimate_costs, past_condition_tokens,
                                                  past_tokens, pricing_for)
    from hotdogbench_core.report.gallery import thumb_strip_html
    from hotdogbench_core.report.sections import Report
    from hotdogbench_core.report.thumbs import preview_ids, thumbnails
    from hotdogbench_core.run.keys import find_key, mask
    from hotdogbench_core.run.plan import TARGETS, plan_run
    from hotdogbench_core.run.session import default_run_name
    from hotdogbench_core.store.rundir import RunDir, check_run_name
    from hotdogbench_core.ui import live as liveview
    from hotdogbench_core.ui import notebook as nbargs
    from hotdogbench_core.ui.launch import changes, launch_argv, next_name, preflight_problems, start_error_field
    from hotdogbench_core.ui.runs import RunInfo, RunRegistry, finished, index_of, models_from_journals
    from hotdogbench_core.ui.views import section_tabs, table


    def field_note(errors: dict, *fields: str, kind: str = "error"):
        """The problems of these form fields, shown right under them, in the form's words."""
        texts = [errors[f] for f in fields if errors.get(f)]
        color = "#c92a2a" if kind == "error" else "#b35c00"
        return mo.Html("".join(f'<div class="hdb-field-{kind}" style="color:{color};font-size:0.85rem;'
                               f'margin:-4px 0 8px">{mo.md(t).text}</div>' for t in texts))


@app.cell(hide_code=True)
def _():
    mo.md("""
    # hotdogbench: run

    Ask vision-language models *"is the food in this photo a hot dog?"*, one photo per request, and score
    the answers. Choose the photos, the models and where requests go; **nothing is sent until you press Run**.
    A run is a process of its own: it goes on when you change the form, close this tab or restart the
    notebook, and this page finds it again. Compare finished runs in `notebooks/report.py`.
    """)
    return


@app.cell(hide_code=True)
def _():
    args = nbargs.run_args(mo.cli_args())
    # Each run is a separate `hotdogbench` process, followed through its folder (ui/runs.py says why). The
    # registry lives as long as this kernel (this cell has no inputs: it runs once); the runs outlive it, and a
    # new kernel finds them in OUT.
    reg = RunRegistry(args.out)
    headless = nbargs.headless()  # `marimo export html` or `python notebooks/run.py`: no page, no Run button
    picked = {}  # the user's model choices, kept when the target changes (plain memory: no cell re-runs)
    return args, headless, picked, reg


@app.cell(hide_code=True)
def _(args, reg):
    _snap = reg.snapshot()
    get_snap, set_snap = mo.state(_snap)  # every count of every run: changes with each heartbeat of a live run
    get_index, set_index = mo.state(index_of(_snap))  # which runs exist and their states: changes rarely
    get_selected, set_selected = mo.state((finished(_snap) or [None])[0])  # the finished run whose results show
    get_name, set_name = mo.state(args.run or default_run_name())  # the run name field ("a new name" sets it)
    get_notice, set_notice = mo.state(None)  # what the last button press said
    return (get_index, get_name, get_notice, get_selected, get_snap, set_index, set_name, set_notice, set_selected,
            set_snap)


@app.cell(hide_code=True)
def _(headless, reg, set_index, set_selected, set_snap):
    def _on_change(before, after):
        set_snap(after)
        if before is None or index_of(before) != index_of(after):
            set_index(index_of(after))
        for _n, _i in after.items():  # a run that just ended is the last finished run: show its results
            if before and _n in before and before[_n].live and not _i.live and _i.holds_results:
                set_selected(_n)

    def publish():
        """Show what the registry holds now (after a button press), without waiting for the next look."""
        _on_change(None, reg.snapshot())

    if not headless:
        reg.watch(_on_change)  # a task on this kernel's loop: it ends with the kernel, the runs do not
    return (publish,)


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
    _upload = (upload.name(), upload.contents()) if upload.value else None
    try:
        with mo.status.spinner(title="Reading the photo table (a URL is downloaded once into data/)"):
            dataset = nbargs.open_dataset(source.value, path_box.value.strip(), _upload)
        dataset_error = None
    except (ValueError, OSError) as _e:
        dataset, dataset_error = None, getattr(_e, "problem", None) or str(_e)
    return dataset, dataset_error


@app.cell(hide_code=True)
def _(field_errors, path_box, source, upload):
    _extra = {"path": path_box, "upload": upload}.get(source.value)
    mo.vstack([x for x in (mo.md("## 1. Photos"), source, _extra, field_note(field_errors, "input", "dataset"))
               if x is not None])
    return


@app.cell(hide_code=True)
def _(dataset):
    if dataset is not None:
        _ids = preview_ids(dataset, 16)
        _thumbs = thumbnails(dataset, _ids, 96)
        _cat = {p.id: p.category for p in dataset.photos}
        mo.output.replace(mo.vstack([
            mo.md(f"**{len(dataset)} photos** in `{dataset.path}`, {len(dataset.categories())} categories"),
            mo.hstack([charts.category_counts(dataset.categories()),
                       mo.Html(thumb_strip_html([(i, _cat[i], _thumbs[i]) for i in _ids if i in _thumbs]))],
                      widths=[1, 1], align="start"),
        ]))
    return


@app.cell(hide_code=True)
def _(args, picked, target):
    if "models" in picked:  # what the user chose stays when the target changes
        _picked = nbargs.model_labels(picked["models"])
    else:
        _picked = nbargs.split_models(args.models)[0] if args.models else nbargs.default_models(target.value)
    models_pick = mo.ui.multiselect(options=nbargs.model_options(), value=_picked,
                                    label=nbargs.FIELD_LABELS["models"], full_width=True,
                                    on_change=lambda v: picked.update(models=list(v)))
    other_models = mo.ui.text(value=picked.get("other", nbargs.split_models(args.models)[1]),
                              placeholder="author/slug, comma-separated", label="Other model ids",
                              full_width=True, on_change=lambda v: picked.update(other=v))
    return models_pick, other_models


@app.cell(hide_code=True)
def _(field_errors, model_notes, models_pick, other_models):
    mo.vstack([mo.md("## 2. Models"), models_pick, other_models, field_note(field_errors, "models"),
               field_note(model_notes, "models", kind="warn")])
    return


@app.cell(hide_code=True)
def _(args):
    target = mo.ui.radio(options={label: key for key, label in TARGETS.items()}, value=TARGETS[args.target],
                         label=nbargs.FIELD_LABELS["target"])
    base_url_box = mo.ui.text(value=args.base_url or os.environ.get("OPENROUTER_BASE_URL", ""),
                              placeholder="http://127.0.0.1:8000", label=nbargs.FIELD_LABELS["base_url"],
                              full_width=True)
    # One element per knob, not a mo.ui.dictionary: marimo 0.25.2 merges queued updates of one element
    # last-write-wins, and a dictionary's update holds only the child that changed, so of two knobs changed
    # while the kernel was busy, one was lost.
    knob_cap, knob_rate, knob_burst, knob_latency, knob_5xx, knob_drop = (
        mo.ui.number(start=lo, stop=hi, step=step, value=default, label=label)
        for label, default, lo, hi, step in nbargs.SIM_KNOBS.values())
    return (base_url_box, knob_5xx, knob_burst, knob_cap, knob_drop, knob_latency, knob_rate, target)


@app.cell(hide_code=True)
def _(base_url_box, field_errors, knob_5xx, knob_burst, knob_cap, knob_drop, knob_latency, knob_rate, target):
    _key = mo.md(f"OpenRouter key: **{mask(find_key())}** (from the environment or ./.env; never shown)")
    _extra = {"base_url": base_url_box,
              "simulator": mo.vstack([mo.md("Simulated provider (answers are made up, not real models'):"),
                                      mo.hstack([knob_cap, knob_rate, knob_burst, knob_latency, knob_5xx,
                                                 knob_drop], wrap=True)])}.get(target.value)
    mo.vstack([x for x in (mo.md("## 3. Where requests go"), target, _key, _extra,
                           field_note(field_errors, "target", "base_url", "api_key", "sim_config"))
               if x is not None])
    return


@app.cell(hide_code=True)
def _(args):
    start_conc = mo.ui.number(start=1, stop=4096, value=args.start_concurrency,
                              label=nbargs.FIELD_LABELS["start_concurrency"])
    max_conc = mo.ui.number(start=1, stop=4096, value=args.max_concurrency,
                            label=nbargs.FIELD_LABELS["max_concurrency"])
    max_rate_box = mo.ui.text(value=args.max_rate or "", placeholder="none, or 20/min",
                              label=nbargs.FIELD_LABELS["max_rate"])
    budget_box = mo.ui.number(start=0, stop=100000, step=0.5, value=args.max_cost_usd or 0,
                              label="Budget, USD (0: none)")
    conditions_box = mo.ui.text_area(placeholder=nbargs.CONDITIONS_PLACEHOLDER, label="Conditions (optional)",
                                     full_width=True)
    return budget_box, conditions_box, max_conc, max_rate_box, start_conc


@app.cell(hide_code=True)
def _(get_name):
    run_name = mo.ui.text(value=get_name(), label=nbargs.FIELD_LABELS["run_name"])
    return (run_name,)


@app.cell(hide_code=True)
def _(args, budget_box, conditions_box, field_errors, max_conc, max_rate_box, run_name, start_conc):
    mo.vstack([mo.md("## 4. Run settings"),
               mo.hstack([start_conc, max_conc, max_rate_box, run_name], justify="start"),
               field_note(field_errors, "start_concurrency", "max_concurrency", "max_rate", "run_name"),
               mo.md("Max rate: a cap you know, as a free model's 20 requests a minute (`20/min`, `5/s`): "
                     "the pace never goes over it. Empty: the limiter finds the cap."),
               budget_box, field_note(field_errors, "max_cost_usd"),
               mo.md(f"Results go to `{args.out}/<run name>/`. With a budget, no request is sent once what was "
                     "spent plus what is in flight could pass it; the run stops and can be resumed."),
               mo.accordion({"Conditions: image size, JPEG quality, question, provider": mo.vstack(
                   [mo.md(nbargs.CONDITIONS_HELP), conditions_box])}, expanded=bool(field_errors.get("conditions"))),
               field_note(field_errors, "conditions", "conditions_file")])
    return


@app.cell(hide_code=True)
def _(args, base_url_box, budget_box, conditions_box, dataset, dataset_error, knob_5xx, knob_burst, knob_cap,
      knob_drop, knob_latency, knob_rate, max_conc, max_rate_box, models_pick, other_models, run_name, start_conc,
      target):
    # Every field checked by the one plan the CLI uses too (run/plan.py); each problem goes under its field.
    field_errors = {}
    if dataset_error:
        field_errors["input"] = dataset_error
    try:
        _models = nbargs.chosen_models(models_pick.value, other_models.value)
        if not _models:
            field_errors["models"] = "choose at least one model: a preset, a model, or ids under Other model ids"
    except ValueError as _e:
        _models, field_errors["models"] = [], getattr(_e, "problem", str(_e))
    try:
        _name = check_run_name(run_name.value.strip())
    except FieldError as _e:
        _name, field_errors["run_name"] = None, _e.problem
    try:
        _conditions = nbargs.condition_lines(conditions_box.value)
    except FieldError as _e:
        _conditions, field_errors["conditions"] = None, _e.problem
    plan = None
    if not field_errors:
        try:  # resume=True: a name that holds results is not an error here; the Run section offers what to do
            plan = plan_run(models=_models, dataset=dataset, target=target.value, out=args.out, run_name=_name,
                            base_url=base_url_box.value.strip() or None,
                            sim_config=nbargs.sim_config(dict(zip(nbargs.SIM_KNOBS, (
                                knob_cap.value, knob_rate.value, knob_burst.value, knob_latency.value,
                                knob_5xx.value, knob_drop.value))), bool(_conditions))
                            if target.value == "simulator" else None, conditions=_conditions,
                            start_concurrency=int(start_conc.value), max_concurrency=int(max_conc.value),
                            max_rate=max_rate_box.value.strip() or None, resume=True,
                            max_cost_usd=float(budget_box.value or 0) or None)
        except FieldError as _e:
            field_errors[_e.field] = _e.problem
        except (ValueError, TypeError) as _e:
            field_errors["form"] = str(_e)
    if plan is not None:  # what the run's preflight would refuse (a model the server does not list), said here
        field_errors.update(preflight_problems(plan))
    launch = launch_argv(plan) if plan is not None and not field_errors else None
    return field_errors, launch, plan


@app.cell(hide_code=True)
def _(plan):
    prices, price_note = {}, None
    if plan is not None:
        try:
            prices = pricing_for(plan.target, plan.settings.base_url, plan.sim_config)
        except PricingUnavailable as _e:
            price_note = str(_e)
    _unlisted = [m for m in (plan.models if plan is not None else []) if prices and m not in prices]
    model_notes = {"models": (f"No price listed for {', '.join(f'`{m}`' for m in _unlisted)} at "
                              f"{plan.endpoint()}'s `/v1/models`: is the id right? A model the server does not "
                              "know fails every photo.")} if _unlisted else {}
    return model_notes, price_note, prices


@app.cell(hide_code=True)
def _(args, plan, price_note, prices):
    if plan is not None:
        _where = "http://127.0.0.1" if plan.target == "simulator" else plan.endpoint()
        _costs = estimate_costs(plan.models, plan.requests_per_model, prices, past_tokens(args.out, _where),
                                conditions=plan.conditions, dataset=plan.dataset,
                                past_conditions=past_condition_tokens(args.out, _where) if plan.conditions else None)
        _note = f" ({price_note})" if price_note else ""
        mo.output.replace(mo.vstack([
            mo.md(f"## 5. Estimated cost\n**{describe_total(_costs)}**{_note}. Tokens per photo are guesses (a past "
                  "run's average where there is one); prices from the server's `/v1/models`."),
            table(_costs, ESTIMATE_BY_CONDITION if plan.conditions else ESTIMATE)]))
    return


@app.cell(hide_code=True)
def _(publish, reg, set_name, set_notice):
    def press(action):
        """A button's on_click: run the action, say what it answered, show the registry at once."""
        def _click(_):
            set_notice(None)
            _msg = action()
            if _msg:
                set_notice(_msg)
            publish()
        return _click

    def start_run(name, argv, resume=False):
        return lambda: reg.start(name, argv, resume=resume)

    def start_renamed(new, argv):
        def _go():
            set_name(new)
            return reg.start(new, argv)
        return _go
    return press, start_renamed, start_run


@app.cell(hide_code=True)
def _(args, field_errors, get_index, launch, plan, press, reg, start_renamed, start_run):
    get_index()  # re-drawn when a run starts, stops or ends, not on every count (see the live panel)
    _snap = reg.snapshot()
    _live = [i for i in _snap.values() if i.live]
    _parts = [mo.md("## 6. Run")]
    if _live:  # Run is Stop while a run goes on; the form's changes wait for the next run
        for _run in _live:
            _busy = _run.state in ("stopping", "finishing")
            _stop = mo.ui.button(label="Stopping…" if _busy else "Stop", kind="danger", disabled=_busy,
                                 on_click=press(lambda n=_run.name: reg.stop(n)))
            _text = (f"**`{_run.name}` is {_run.state}.** It keeps the settings it started with; changes to the "
                     "form apply to the next run. Stop sends nothing more; the requests in flight finish and are "
                     "saved, and the run can be resumed.")
            _changed = changes((_run.launch or {}).get("argv"), launch)
            if _changed:
                _text += "\n\nYou changed, for the next run: " + "; ".join(_changed) + "."
            _parts.append(mo.hstack([_stop, mo.md(_text)], justify="start", align="center", widths=[0, 1]))
    elif plan is None or launch is None:
        _parts.append(mo.hstack([mo.ui.button(label="Run", kind="success", disabled=True),
                                 mo.md("Fix what is marked in red above first.")], justify="start"))
        if field_errors.get("form"):
            _parts.append(mo.callout(mo.md(field_errors["form"]), kind="warn"))
    else:
        _name = plan.rundir.name
        _info = _snap.get(_name)
        _via = plan.endpoint() + (f" ({nbargs.describe_sim(plan.sim_config)})" if plan.sim_config else "")
        _arms = f"{len(plan.models)} model(s)" + (f" × {len(plan.conditions)} condition(s)" if plan.conditions else "")
        _what = f"{plan.requests_per_model} photos × {_arms} → `{plan.run_dir}` via {_via}"
        if _info is not None and _info.holds_results:
            _new = next_name(args.out, _name)
            _what = f"{plan.requests_per_model} photos × {_arms} → `{args.out / _new}` via {_via}"
            _counts = ", ".join(f"{m} {v.get('done', 0)}/{v.get('total') or '?'}" for m, v in _info.models.items())
            _buttons = [] if _info.complete else [mo.ui.button(
                label=f"Resume {_name}", kind="success", on_click=press(start_run(_name, launch, resume=True)))]
            _buttons.append(mo.ui.button(label="Run under a new name", kind="success" if _info.complete else
                                         "neutral", on_click=press(start_renamed(_new, launch))))
            _parts.append(mo.vstack([mo.hstack(_buttons, justify="start"), mo.md(
                f"`{_name}` already holds a {'finished' if _info.complete else _info.state} run"
                + (f" ({_counts})" if _counts else "") + ". "
                + ("" if _info.complete else "**Resume** asks only the photos without a result, with the settings "
                   "it started with. ")
                + f"**Run under a new name** runs the form as `{_new}`: {_what}.")]))
        else:
            _parts.append(mo.hstack([mo.ui.button(label="Run", kind="success",
                                                  on_click=press(start_run(_name, launch))), mo.md(_what)],
                                    justify="start", align="center", widths=[0, 1]))
        if _info is not None and _info.start_error:
            _said = start_error_field(_info.start_error)  # in the form's words: its label, not the CLI's flag
            _why = f"{nbargs.FIELD_LABELS.get(_said[0], _said[0])}: {_said[1]}" if _said else _info.start_error
            _parts.append(mo.callout(mo.md(f"**`{_name}` did not start:** {_why}"), kind="danger"))
    mo.vstack(_parts)
    return


@app.cell(hide_code=True)
def _(args, get_index, get_notice, get_selected, headless, launch, plan, press, reg, start_run):
    get_index()
    _snap = reg.snapshot()
    _live = any(i.live for i in _snap.values())
    _parts = []
    if not _live:  # the run whose results are shown below, stopped half way under another name: resume it too
        _shown = _snap.get(get_selected() or "")
        if _shown is not None and _shown.holds_results and not _shown.complete and \
                (plan is None or _shown.name != plan.rundir.name):
            _parts.append(mo.hstack([
                mo.ui.button(label=f"Resume {_shown.name}", kind="neutral",
                             on_click=press(start_run(_shown.name, launch or [], resume=True))),
                mo.md(f"`{_shown.name}` ({_shown.state}) stopped before every photo was asked: **Resume** asks "
                      "the rest, with the settings it started with.")], justify="start", align="center",
                widths=[0, 1]))
    _notice = get_notice()
    if _notice:
        _parts.append(mo.callout(mo.md(_notice), kind="info"))
    if args.go and not headless and not _live and plan is not None:
        _parts.append(mo.md("_The command line filled in the form; press **Run** to start._"))
    mo.vstack(_parts) if _parts else None
    return


@app.cell(hide_code=True)
def _(args, field_errors, headless, launch, plan, reg):
    # Headless (an export, a script) with --simulate or --models: start the run and wait for it here, with a
    # progress bar per model; with a page, Run starts runs and this cell does nothing.
    headless_run = None
    if headless and args.go:
        if plan is None or launch is None:
            mo.output.append(mo.callout(mo.md("**Not ready to run:** " + "; ".join(
                f"{nbargs.FIELD_LABELS.get(k, k)}: {v}" for k, v in field_errors.items())), kind="danger"))
        else:
            _why = reg.start(plan.rundir.name, launch, resume=args.resume)
            if _why:
                mo.output.append(mo.callout(mo.md(f"**Not started:** {_why}"), kind="danger"))
            else:
                with contextlib.ExitStack() as _stack:
                    _bars, _shown = {}, {}

                    def _tick(info):
                        for _m, _v in info.models.items():
                            if _m not in _bars and _v.get("total"):
                                _bars[_m] = _stack.enter_context(mo.status.progress_bar(
                                    total=_v["total"], title=_m, subtitle="waiting", show_rate=False,
                                    show_eta=False))
                                _shown[_m] = 0
                            if _m in _bars:
                                _rate = _v.get("photos_per_s")
                                _bars[_m].update(increment=_v["done"] - _shown[_m], subtitle=(
                                    f"{liveview.verdict(_v, info.state)[1]} · "
                                    f"{_rate:.1f} photos/s" if _rate else liveview.verdict(_v, info.state)[1]))
                                _shown[_m] = _v["done"]

                    _end = reg.wait(plan.rundir.name, _tick)
                if _end.start_error:
                    mo.output.append(mo.callout(mo.md(f"**Not started:** {_end.start_error}"), kind="danger"))
                headless_run = plan.rundir.name
    return (headless_run,)


@app.cell(hide_code=True)
def _(get_snap):
    _live = [i for i in get_snap().values() if i.live]
    _blocks = []
    for _run in _live:
        _head = f"### In progress: `{_run.name}` ({_run.state})"
        if _run.state == "stopping":
            _inflight = sum(v.get("in_flight") or 0 for v in _run.models.values())
            _head += (f"\nStopping: nothing more is sent; {_inflight} request(s) in flight are finishing and will "
                      "be saved.")
        _blocks += [mo.md(_head), mo.Html(liveview.bars_html(_run))]
        if _run.notices:
            _blocks.append(mo.callout(mo.md("  \n".join(_run.notices)), kind="warn"))
    mo.vstack(_blocks) if _blocks else mo.md("_No run in progress._")
    return


@app.cell(hide_code=True)
def _(get_snap):
    # The live chart has a cell (an output box) of its own, so it is never cut by the panel's height.
    _charts = [c for c in (liveview.limit_chart(i) for i in get_snap().values() if i.live) if c is not None]
    if _charts:
        mo.output.replace(mo.Html('<div class="hdb-live-chart">'
                                  + "".join(mo.as_html(c).text for c in _charts) + "</div>"))
    return


@app.cell(hide_code=True)
def _(get_index, get_selected, headless_run, reg, set_selected):
    get_index()
    _names = finished(reg.snapshot())
    _sel = headless_run or get_selected()
    picker = mo.ui.dropdown(options=_names, value=_sel if _sel in _names else (_names[0] if _names else None),
                            label="Results of run", on_change=set_selected) if _names else None
    mo.vstack([mo.md("## 7. Results"), picker if picker is not None else mo.md(
        "_No finished run yet: results appear here when a run ends, and stay until you pick another._")])
    return (picker,)


@app.cell(hide_code=True)
def _(args, get_index, picker, reg):
    get_index()  # a resumed run that ends again is drawn again
    _name = picker.value if picker is not None else None
    if _name:
        _info = reg.info(_name)
        _rundir = RunDir(args.out, _name)
        _models = _info.models or models_from_journals(_rundir)
        _shown = RunInfo(_name, _info.state, models=_models)
        _state = {"done": "finished", "stopped": f"stopped: {_info.reason or 'before the end'} (resumable)",
                  "interrupted": "interrupted (resumable)"}.get(_info.state, _info.state)
        _bad = [m for m, v in _models.items() if v.get("done") and not v.get("answered")]
        _parts = [mo.md(f"### Results: `{_name}` ({_state})"),
                  mo.Html(liveview.bars_html(_shown, "hdb-outcome"))]
        if _bad:
            _parts.append(mo.callout(mo.md("**No answers from " + ", ".join(f"`{m}`" for m in _bad) + "**: "
                                           + "; ".join(str(_models[m].get("first_error")) for m in _bad)),
                                     kind="danger"))
        if _rundir.summary.is_file():
            _argv = (_info.launch or {}).get("argv") or []
            _photos = _argv[_argv.index("--input") + 1] if "--input" in _argv else None
            _parts.append(section_tabs(Report([load_run(args.out, _name)], dataset=_photos)))
            _parts.append(mo.download(data=_rundir.summary.read_bytes(), filename="summary.json",
                                      mimetype="application/json", label="Download summary.json"))
            _parts.append(mo.md(f"Written to `{_rundir.path}`. Compare runs: "
                                "`uv run marimo edit notebooks/report.py`."))
        else:
            _parts.append(mo.callout(mo.md(f"`{_name}` has no summary yet: {_info.reason or 'resume it to finish'}."),
                                     kind="warn"))
        mo.output.replace(mo.vstack(_parts))
    return


if __name__ == "__main__":
    app.run()
