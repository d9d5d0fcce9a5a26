"""A benchmark run: several models over one dataset into OUT/RUN/, one model after another or all at once."""
from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..stats.pairs import write_pairs
from ..store.dataset import Dataset
from ..store.manifest import finish_manifest, model_outcome, start_manifest
from ..store.rundir import RunDir, write_json
from .budget import CostBudget
from .events import Event, Notice
from .preflight import check, fetch_listing
from .runner import ModelRun
from .settings import RunSettings


def default_run_name() -> str:
    return time.strftime("run_%Y%m%d_%H%M%S")


@dataclass
class RunResult:
    run_dir: Path
    summaries: list[dict] = field(default_factory=list)
    stopped: str | None = None  # why the run ended before every photo settled
    hint: str = ""
    warnings: list[str] = field(default_factory=list)  # said before the run (the preflight's)


def _tell(on_event, event) -> None:
    if on_event is not None:
        try:
            on_event(event)
        except Exception:  # a broken display must not stop a run
            pass


def _write_summaries(rundir: RunDir, summaries: list[dict]) -> None:
    """summary.json keeps models from earlier sessions of the run; this session's replace theirs."""
    mine = {s["model"] for s in summaries}
    old = [s for s in rundir.summaries() or [] if s["model"] not in mine]
    write_json(rundir.summary, old + summaries)


async def run_models(models: list[str], dataset: Dataset, settings: RunSettings, *, out: Path | str = "out",
                     run_name: str | None = None, resume: bool = False,
                     on_event: Callable[[Event], None] | None = None,
                     on_model: Callable[[ModelRun], None] | None = None,
                     max_cost_usd: float | None = None, parallel: bool = False,
                     prices: dict[str, dict[str, float]] | None = None) -> RunResult:
    """Run each model in turn (their timings must not interfere) and write parquet, summary.json and pairs.json
    after each; manifest.json when the session starts and when it ends.

    First a preflight (run/preflight.py) asks the server what it serves: a model that cannot be asked there
    stops the run before anything is sent; the dialect of the bodies follows the server. prices: USD per
    token / image / request for models whose server reports no cost (a price table).

    parallel: all models at once, each with its own limiter and HTTP client, so the run takes about as long as
    its slowest model; summary.json stays in model order. A model that stops (bad key, no credits) stops the
    others too, as a sequential run would not start them.
    """
    rundir = RunDir(out, run_name or default_run_name()).create()
    run_dir = rundir.path
    pre = check(models, settings, await fetch_listing(settings.base_url, settings.api_key), price_table=prices,
                max_cost_usd=max_cost_usd)
    settings = dataclasses.replace(settings, api=pre.dialect)
    # Check every model can start (resume rules) before any request is sent.
    budget = CostBudget(max_cost_usd) if max_cost_usd is not None else None
    runs = [ModelRun(m, dataset, settings, rundir, resume=resume, on_event=on_event, budget=budget,
                     price=pre.prices.get(m)) for m in models]
    result = RunResult(run_dir, warnings=list(pre.warnings))
    for text in pre.warnings:
        _tell(on_event, Notice(None, text))
    if budget is not None:  # what earlier sessions of this run spent counts too
        budget.spent_usd = sum(r.cost_usd or 0.0 for mr in runs for r in mr.results.values())
    start_manifest(run_dir, dataset, settings, models, limiter=runs[0].limiter if runs else None,
                   extra_settings={"max_cost_usd": max_cost_usd, "parallel_models": parallel})
    if parallel:
        await _run_parallel(runs, result, on_model)
    else:
        await _run_sequential(runs, result, on_model)
    # An interrupted session leaves its ended_at null in the manifest.
    done = {s["model"]: s for s in result.summaries}
    finish_manifest(run_dir, {mr.model: model_outcome(mr, done.get(mr.model)) for mr in runs}, stopped=result.stopped)
    return result


async def _run_sequential(runs: list[ModelRun], result: RunResult, on_model) -> None:
    rundir = RunDir.at(result.run_dir)
    for mr in runs:
        if on_model:
            on_model(mr)
        summary = await mr.run()
        result.summaries.append(summary)
        _write_summaries(rundir, result.summaries)
        write_pairs(rundir.path)
        if mr.stop_reason and mr.stop_scope == "run":
            result.stopped, result.hint = f"{mr.model}: {mr.stop_reason}", mr.fatal_hint
            break


async def _run_parallel(runs: list[ModelRun], result: RunResult, on_model) -> None:
    done: dict[str, dict] = {}
    rundir = RunDir.at(result.run_dir)
    stopped_first: list[ModelRun] = []  # models that stopped by themselves, not because another one did

    async def one(mr: ModelRun) -> None:
        done[mr.model] = await mr.run()
        _write_summaries(rundir, [done[r.model] for r in runs if r.model in done])
        write_pairs(rundir.path)
        if mr.stop_reason and mr.stop_scope == "run" and not stopped_first:
            stopped_first.append(mr)
            for other in runs:
                if other is not mr:
                    other.stop(f"{mr.model} stopped: {mr.stop_reason}")

    for mr in runs:
        if on_model:
            on_model(mr)
    async with asyncio.TaskGroup() as group:  # a bug in one model cancels the others instead of orphaning them
        for mr in runs:
            group.create_task(one(mr))
    result.summaries = [done[mr.model] for mr in runs]
    if stopped_first:
        first = stopped_first[0]
        result.stopped, result.hint = f"{first.model}: {first.stop_reason}", first.fatal_hint


def run_models_sync(*args, **kwargs) -> RunResult:
    """run_models from synchronous code, or from a notebook whose event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_models(*args, **kwargs))
    import nest_asyncio  # a notebook's loop is running: let asyncio.run nest inside it
    nest_asyncio.apply()
    return asyncio.get_event_loop().run_until_complete(run_models(*args, **kwargs))
