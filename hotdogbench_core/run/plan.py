"""A run as a user asks for it, checked whole before anything is sent: the one way the CLI, the notebooks and
the Python API turn what was given into models, photos, settings and a run folder.

`plan_run(...)` raises a FieldError naming the first thing that cannot be used; `run_plan(plan)` runs it,
starting the built-in simulator first when the plan says so, and keeps OUT/RUN/live.json up to date (run/live.py)
so that another process can follow the run.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import FieldError
from ..protocol.conditions import REFERENCE, Condition, arm_label, resolve_conditions
from ..protocol.models import resolve_models
from ..sim.app import Simulator, labels_from_parquet
from ..sim.config import DEMO_CONFIG, SimConfig
from ..store.dataset import Dataset, load_dataset
from ..store.lock import check_free
from ..store.redact import public_url
from ..store.rundir import RunDir
from .events import Event
from .live import Heartbeat, LiveRun
from .runner import ModelRun
from .session import RunResult, default_run_name, run_models
from .preflight import load_price_table
from .settings import DEFAULT_BASE_URL, SettingsError, build_settings, is_openrouter

TARGETS = {"openrouter": "OpenRouter", "simulator": "Simulator (no key, no network)",
           "base_url": "Another base URL"}
SIMULATOR_KEY = "sk-local-simulator"


class RunExistsError(FieldError):
    """The run folder already holds results and the plan does not resume it."""

    field = "run_name"


@dataclass
class RunPlan:
    models: list[str]
    dataset: Dataset
    settings: object  # RunSettings (its base URL is the simulator's once it starts, for target "simulator")
    rundir: RunDir
    target: str = "openrouter"
    resume: bool = False
    max_cost_usd: float | None = None
    parallel: bool = False
    sim_config: SimConfig | None = None  # target "simulator": how the built-in simulator behaves
    prices: dict | None = None  # a price table (USD per token / image / request) for servers that say no cost
    conditions: list[Condition] | None = None  # None: the reference alone (a plain run)

    @property
    def run_dir(self) -> Path:
        return self.rundir.path

    @property
    def arms(self) -> list[tuple[str, str]]:
        """(model, condition name) for every model under every condition, in the order they run."""
        names = [c.name for c in self.conditions] if self.conditions else [REFERENCE]
        return [(m, c) for m in self.models for c in names]

    @property
    def labels(self) -> list[str]:
        """How events and live views name each arm: the model id, `model@condition` under a condition."""
        return [arm_label(m, c) for m, c in self.arms]

    @property
    def requests_per_model(self) -> int:
        return len(self.dataset) * self.settings.repeats

    def endpoint(self) -> str:
        return "the built-in simulator" if self.target == "simulator" else public_url(self.settings.base_url)


def _budget(value) -> float | None:
    if value is None or value == 0:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise SettingsError(f"must be a number of USD above 0 (or none), got {value!r}", "max_cost_usd")
    return float(value)


def plan_run(*, models: str | list[str], dataset: Dataset | str | Path | None = None, out: str | Path = "out",
             run_name: str | None = None, target: str = "openrouter", base_url: str | None = None,
             api_key: str | None = None, sim_config: SimConfig | dict | None = None, resume: bool = False,
             max_cost_usd: float | None = None, parallel: bool = False, on_download=None,
             prices: str | Path | dict | None = None, conditions=None, conditions_file: str | Path | None = None,
             **settings) -> RunPlan:
    """Check everything a run needs, cheapest first (the photo table, maybe large, last).

    conditions: NAME=SPEC texts, Condition objects or a {name: spec} table; conditions_file: a TOML or JSON
    file of them (protocol/conditions.py). Neither: the reference alone."""
    if target not in TARGETS:
        raise FieldError(f"must be one of {', '.join(TARGETS)}, not {target!r}", "target")
    chosen = resolve_models(models, any_id=target == "base_url" and not is_openrouter(base_url or ""))
    conds = resolve_conditions(conditions, conditions_file)
    if target == "simulator":
        base_url, api_key = "http://127.0.0.1", SIMULATOR_KEY  # the simulator's port is known once it starts
        sim = sim_config if isinstance(sim_config, SimConfig) else SimConfig.from_dict(sim_config or DEMO_CONFIG)
    elif target == "base_url":
        if not base_url:
            raise SettingsError("give the server's base URL (http:// or https://)", "base_url")
        sim = None
    else:
        base_url, sim = DEFAULT_BASE_URL, None
    run_settings = build_settings(api_key=api_key, base_url=base_url, **settings)
    unknown = [m for m in run_settings.logprobs if m != "*" and m not in chosen]
    if unknown:
        raise SettingsError(f"names {', '.join(unknown)}, which the run does not ask (its models: "
                            f"{', '.join(chosen)})", "logprobs")
    budget = _budget(max_cost_usd)
    price_table = load_price_table(prices) if isinstance(prices, (str, Path)) else prices
    rundir = RunDir(out, run_name or default_run_name()).check_place()
    check_free(rundir.lock)  # a run in progress there: say who runs it (before "already holds results")
    if not resume:
        names = [c.name for c in conds] if conds else [REFERENCE]
        held = [arm_label(m, c) for m in chosen for c in names if rundir.journal(m, c).is_file()]
        if held:
            raise RunExistsError(f"{rundir.path} already holds results for {', '.join(held)}: resume it, or "
                                 f"choose another run name")
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset, on_download=on_download)
    return RunPlan(chosen, ds, run_settings, rundir, target, resume, budget, parallel, sim, price_table, conds)


def _both(first: Callable, then: Callable | None) -> Callable:
    if then is None:
        return first

    def call(x):
        first(x)
        then(x)
    return call


async def run_plan(plan: RunPlan, *, on_event: Callable[[Event], None] | None = None,
                   on_model: Callable[[ModelRun], None] | None = None, launch: dict | None = None) -> RunResult:
    """Run the plan into OUT/RUN (models one after another unless plan.parallel), with a heartbeat in
    OUT/RUN/live.json. launch: how the run was started (the CLI's command and flags), written into live.json so
    that whoever reads it can show the settings and resume the run the same way."""
    live = LiveRun(plan.labels, plan.requests_per_model)  # a model, or model@condition under a condition
    if plan.resume:
        live.seed(plan.rundir, plan.arms)
    async with Heartbeat(plan.rundir, live, launch) as beat:  # it writes once the run holds the folder
        result = await _run_plan(plan, _both(live.on_event, on_event),
                                 _both(_both(live.on_model, beat.on_model), on_model))
        beat.finished(result)
    return result


async def _run_plan(plan: RunPlan, on_event, on_model) -> RunResult:
    hooks = dict(on_event=on_event, on_model=on_model, max_cost_usd=plan.max_cost_usd, parallel=plan.parallel,
                 prices=plan.prices, conditions=plan.conditions)
    args = (plan.models, plan.dataset)
    where = dict(out=plan.rundir.out, run_name=plan.rundir.name, resume=plan.resume)
    if plan.target != "simulator":
        return await run_models(*args, plan.settings, **where, **hooks)
    async with Simulator(plan.sim_config, labels=labels_from_parquet(plan.dataset.path)) as sim:
        settings = dataclasses.replace(plan.settings, base_url=sim.base_url)
        return await run_models(*args, settings, **where, **hooks)
