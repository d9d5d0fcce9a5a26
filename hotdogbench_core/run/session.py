"""A benchmark run: several models over one dataset into OUT/RUN/, one model after another or all at once."""
from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..errors import StorageError
from ..limit.board import KeyBoard
from ..limit.key import KeyCoordinator
from ..protocol.conditions import Condition
from ..protocol.models import known_rates
from ..stats.conditions import add_condition_keys, condition_of
from ..stats.measures import statistics_settings, write_agreement
from ..stats.pairs import write_pairs
from ..store.dataset import Dataset
from ..store.manifest import finish_manifest, model_outcome, start_manifest
from ..store.atomic import write_json
from ..store.rundir import RunDir
from .budget import CostBudget
from .events import Event, Notice
from .preflight import check, check_conditions, fetch_listing
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
    """summary.json keeps models (and conditions) from earlier sessions of the run; this session's replace theirs;
    in a run with conditions each model's prompt spread is added. Then pairs.json and agreement.json. An OSError
    becomes a StorageError: the journals are whole, a resume writes these again."""
    mine = {(s["model"], condition_of(s)) for s in summaries}
    old = [s for s in rundir.summaries() or [] if (s["model"], condition_of(s)) not in mine]
    try:
        write_json(rundir.summary, add_condition_keys(old + summaries))
        write_pairs(rundir.path)
        write_agreement(rundir.path)
    except OSError as e:
        raise StorageError(e.filename or rundir.path, e.strerror or str(e), run_dir=rundir.path,
                           detail="; every answer is in the journals, so a resume writes it again without asking "
                                  "anything") from None


def _set_aside_bad_summary(rundir: RunDir, on_event) -> None:
    """A summary.json that is not a list of model summaries must not block a resume: it is moved aside (kept
    for a look) and rebuilt from the journals of this session's models."""
    if not rundir.summary.is_file() or rundir.summaries() is not None:
        return
    aside = rundir.summary.with_name(f"{rundir.SUMMARY}.bad-{time.strftime('%Y%m%dT%H%M%S')}")
    rundir.summary.replace(aside)
    _tell(on_event, Notice(None, f"{rundir.summary} was not a list of model summaries: moved aside as {aside.name}; "
                                 f"it is rebuilt from the journals of the models this session runs"))


async def run_models(models: list[str], dataset: Dataset, settings: RunSettings, *, out: Path | str = "out",
                     run_name: str | None = None, resume: bool = False,
                     on_event: Callable[[Event], None] | None = None,
                     on_model: Callable[[ModelRun], None] | None = None,
                     max_cost_usd: float | None = None, parallel: bool = False,
                     prices: dict[str, dict[str, float]] | None = None,
                     conditions: list[Condition] | None = None) -> RunResult:
    """Run each model in turn (their timings must not interfere) and write parquet, summary.json and pairs.json
    after each; manifest.json when the session starts and when it ends.

    First a preflight (run/preflight.py) asks the server what it serves: a model that cannot be asked there
    stops the run before anything is sent; the dialect of the bodies follows the server. prices: USD per
    token / image / request for models whose server reports no cost (a price table).

    parallel: all models at once, each with its own limiter (sharing one KeyCoordinator) and HTTP client, so the
    run takes about as long as its slowest model; summary.json stays in model order. A model that stops (bad key,
    no credits) stops the others too, as a sequential run would not start them.

    conditions: the variants of the request to run each model under (protocol/conditions.py), in order, each
    model under each in turn (model by model); None: the reference alone, a plain run.
    """
    rundir = RunDir(out, run_name or default_run_name())
    rundir.check_place().create()
    with rundir.locked():  # one process per run folder, for the whole session
        return await _run_models(rundir, models, dataset, settings, resume=resume, on_event=on_event,
                                 on_model=on_model, max_cost_usd=max_cost_usd, parallel=parallel, prices=prices,
                                 conditions=conditions)


async def _run_models(rundir: RunDir, models, dataset, settings, *, resume, on_event, on_model, max_cost_usd,
                      parallel, prices, conditions=None) -> RunResult:
    run_dir = rundir.path
    _set_aside_bad_summary(rundir, on_event)
    pre = check(models, settings, await fetch_listing(settings.base_url, settings.api_key), price_table=prices,
                max_cost_usd=max_cost_usd)
    settings = dataclasses.replace(settings, api=pre.dialect)
    check_conditions(conditions, pre.dialect, settings.base_url)
    # Check every model can start (resume rules) before any request is sent.
    budget = CostBudget(max_cost_usd) if max_cost_usd is not None else None
    # models at once on one key: one shared view of their paces; one at a time: a board shared with the other
    # processes of this machine on the key (limit/board.py)
    board_warnings: list[str] = []
    key = KeyCoordinator() if parallel else _key_board(settings, board_warnings)
    arms = [(m, c) for m in models for c in (conditions or [None])]
    known = known_rates([m for m, _ in arms], together=parallel)  # free models: their slices of the key's minute
    runs = [ModelRun(m, dataset, settings, rundir, resume=resume, on_event=on_event, budget=budget,
                     price=pre.prices.get(m), key=key, condition=c, known_rate=known.get(m)) for m, c in arms]
    result = RunResult(run_dir, warnings=list(pre.warnings) + board_warnings)
    for text in result.warnings:
        _tell(on_event, Notice(None, text))
    if budget is not None:  # what earlier sessions of this run spent counts too
        budget.spent_usd = sum(r.cost_usd or 0.0 for mr in runs for r in mr.results.values())
    start_manifest(run_dir, dataset, settings, models, limiter=runs[0].limiter if runs else None,
                   extra_settings={"max_cost_usd": max_cost_usd, "parallel_models": parallel},
                   statistics=statistics_settings(), conditions=conditions)
    failures: list[StorageError] = []
    try:
        if parallel:
            await _run_parallel(runs, result, on_model, failures)
        else:
            await _run_sequential(runs, result, on_model, failures)
    finally:
        if isinstance(key, KeyBoard):
            key.close()
    # An interrupted session leaves its ended_at null in the manifest.
    done = {(s["model"], condition_of(s)): s for s in result.summaries}
    if failures and not result.stopped:
        result.stopped = f"storage: {failures[0].reason}"
    try:
        finish_manifest(run_dir, {mr.arm: model_outcome(mr, done.get((mr.model, mr.condition_name))) for mr in runs},
                        stopped=result.stopped)
    except OSError as e:
        if not failures:
            failures.append(StorageError(e.filename or run_dir, e.strerror or str(e), run_dir=run_dir,
                                         detail="; every answer is in the journals"))
    if failures:
        raise _combined(failures)
    return result


def _key_board(settings: RunSettings, warnings: list[str]) -> KeyBoard | None:
    """The key's board for the adaptive limiter (None for another policy, or if no board can be kept: said)."""
    if settings.limiter != "adaptive":
        return None
    try:
        return KeyBoard.for_key(settings.api_key, settings.base_url)
    except OSError as e:
        warnings.append(f"no board shared with other processes on this key ({e.strerror or e}): two runs at once on "
                        "it will each find their share alone")
        return None


def _combined(failures: list[StorageError]) -> StorageError:
    if len(failures) == 1:
        return failures[0]
    first = failures[0]
    saved = [f.saved for f in failures if f.saved is not None]
    others = sorted({str(f.path) for f in failures[1:]} - {str(first.path)})
    return StorageError(first.path, first.reason, unsaved=sum(f.unsaved for f in failures),
                        saved=sum(saved) if saved else None, run_dir=first.run_dir,
                        detail=f" (also {', '.join(others)})" if others else "")


async def _run_sequential(runs: list[ModelRun], result: RunResult, on_model, failures) -> None:
    rundir = RunDir.at(result.run_dir)
    for mr in runs:
        if on_model:
            on_model(mr)
        try:
            summary = await mr.run()
            result.summaries.append(summary)
            _write_summaries(rundir, result.summaries)
        except StorageError as e:  # the next model would not be saved either
            failures.append(e)
            break
        if mr.stop_reason and mr.stop_scope == "run":
            result.stopped, result.hint = f"{mr.arm}: {mr.stop_reason}", mr.fatal_hint
            break


async def _run_parallel(runs: list[ModelRun], result: RunResult, on_model, failures) -> None:
    done: dict[str, dict] = {}
    rundir = RunDir.at(result.run_dir)
    stopped_first: list[ModelRun] = []  # models that stopped by themselves, not because another one did

    async def one(mr: ModelRun) -> None:
        try:
            done[mr.arm] = await mr.run()
            _write_summaries(rundir, [done[r.arm] for r in runs if r.arm in done])
        except StorageError as e:  # the others stop sending too (their answers in flight still come back)
            failures.append(e)
            for other in runs:
                if other is not mr:
                    other.stop(f"{mr.arm} stopped: cannot write {e.path}")
            return
        if mr.stop_reason and mr.stop_scope == "run" and not stopped_first:
            stopped_first.append(mr)
            for other in runs:
                if other is not mr:
                    other.stop(f"{mr.arm} stopped: {mr.stop_reason}")

    for mr in runs:
        if on_model:
            on_model(mr)
    async with asyncio.TaskGroup() as group:  # a bug in one model cancels the others instead of orphaning them
        for mr in runs:
            group.create_task(one(mr))
    result.summaries = [done[mr.arm] for mr in runs if mr.arm in done]
    if stopped_first:
        first = stopped_first[0]
        result.stopped, result.hint = f"{first.arm}: {first.stop_reason}", first.fatal_hint


def run_models_sync(*args, **kwargs) -> RunResult:
    """run_models from synchronous code, or from a notebook whose event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_models(*args, **kwargs))
    import nest_asyncio  # a notebook's loop is running: let asyncio.run nest inside it
    nest_asyncio.apply()
    return asyncio.get_event_loop().run_until_complete(run_models(*args, **kwargs))
