"""The run notebook's form as a command line, and back: the CLI command a plan runs as (launch_argv, with_run),
what a command asks for (launch_models, launch_labels), what changed between two of them in the form's words
(changes), the next free run name, and what the run's preflight and its refusals would say beside the form's
fields (preflight_problems, start_error_field). ui/runs.py starts and follows the processes."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Callable

from ..errors import FieldError
from ..protocol.models import resolve_models
from ..run.settings import parse_rate
from .notebook import FIELD_LABELS, SIM_KNOBS

DEFAULT_NAME = re.compile(r"run_\d{8}_\d{6}")  # the form's own default run name (a timestamp)


# -- the command line a run is started with -----------------------------------------------------------------
def launch_argv(plan) -> list[str]:
    """The CLI command that runs a plan (run/plan.RunPlan) as the notebook's form made it: every field the
    form has (photos, models, where requests go, the simulator's settings, concurrency, max rate, budget,
    conditions, run name). The
    key is never on it: the run reads it from the environment, like the notebook."""
    s = plan.settings
    argv = ["demo" if plan.target == "simulator" else "run", "--models", ",".join(plan.models),
            "--input", str(Path(plan.dataset.path).resolve()), "--out", str(plan.rundir.out), "--run",
            plan.rundir.name, "--start-concurrency", str(s.start_concurrency), "--max-concurrency",
            str(s.max_concurrency)]
    if s.max_rate:
        argv += ["--max-rate", repr(s.max_rate)]  # per second, as the plan parsed it
    if plan.max_cost_usd:
        argv += ["--max-cost-usd", repr(plan.max_cost_usd)]
    for condition in plan.conditions or []:
        argv += ["--condition", str(condition)]
    if plan.target == "simulator":
        argv += ["--sim-config", json.dumps(plan.sim_config.to_dict(), separators=(",", ":"))]
    else:
        argv += ["--base-url", s.base_url]
    return argv


_VALUED = ("--out", "--run")


def with_run(argv: list[str], out: Path, name: str, resume: bool) -> list[str]:
    """argv with its run folder set to OUT/NAME (and --resume when resuming), whatever it said before."""
    out_argv, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in _VALUED:
            skip = True
            continue
        if a == "--resume" or a.split("=", 1)[0] in _VALUED:
            continue
        out_argv.append(a)
    return out_argv + ["--out", str(out), "--run", name] + (["--resume"] if resume else [])


def _parse(argv: list[str] | None):
    from .cli import build_parser

    if not argv:
        return None
    try:
        return build_parser().parse_args(argv)
    except SystemExit:  # not a run command line (written by something else)
        return None


def launch_models(argv: list[str] | None) -> list[str]:
    args = _parse(argv)
    return _models(args.models) if args is not None else []


def launch_labels(argv: list[str] | None) -> list[str]:
    """How the run started by `argv` names its arms: model ids, or model@condition under conditions."""
    from ..protocol.conditions import arm_label, resolve_conditions

    args = _parse(argv)
    if args is None:
        return []
    try:
        conditions = resolve_conditions(getattr(args, "condition", None), getattr(args, "conditions", None))
    except (ValueError, OSError):
        conditions = None
    names = [c.name for c in conditions] if conditions else [None]
    return [arm_label(m, c) for m in _models(args.models) for c in names]


def _models(spec: str) -> list[str]:
    try:
        return resolve_models(spec)
    except ValueError:
        return [spec]


def _sim(args) -> dict:
    text = getattr(args, "sim_config", None)
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return {}


def _rate_text(args) -> str:
    """A command line's --max-rate in the form's words: per second (it was written as the plan parsed it)."""
    text = getattr(args, "max_rate", None)
    try:
        return "none" if not text else f"{parse_rate(text):.4g}/s"
    except FieldError:
        return str(text)


def changes(before: list[str] | None, after: list[str] | None) -> list[str]:
    """What differs between two run command lines, in the form's words ("Run name: a → b")."""
    a, b = _parse(before), _parse(after)
    if a is None or b is None:
        return []
    out = []
    where = {"demo": "the simulator", "run": "a server"}
    if a.command != b.command:
        out.append(f"{FIELD_LABELS['target']}: {where.get(a.command)} → {where.get(b.command)}")
    fields = (("models", lambda x: ", ".join(_models(x.models))),
              ("input", lambda x: Path(x.input).name if x.input else "–"), ("run_name", lambda x: x.run),
              ("base_url", lambda x: getattr(x, "base_url", None) or "–"),
              ("start_concurrency", lambda x: x.start_concurrency),
              ("max_concurrency", lambda x: x.max_concurrency),
              ("max_rate", _rate_text),
              ("max_cost_usd", lambda x: "none" if not x.max_cost_usd else f"${x.max_cost_usd:g}"),
              ("conditions", lambda x: ", ".join(getattr(x, "condition", None) or []) or "none"))
    for name, value in fields:
        if name == "base_url" and "run" not in (a.command, b.command):
            continue
        va, vb = value(a), value(b)
        if va != vb:
            out.append(f"{FIELD_LABELS.get(name, name)}: {va} → {vb}")
    sa, sb = _sim(a), _sim(b)
    if a.command == b.command == "demo":
        for key in sorted(set(sa) | set(sb)):
            if sa.get(key) != sb.get(key):
                label = SIM_KNOBS[key][0] if key in SIM_KNOBS else key
                out.append(f"Simulator, {label}: {_knob(sa.get(key))} → {_knob(sb.get(key))}")
    return out


def _knob(v) -> str:
    return "none" if v is None else f"{v:g}" if isinstance(v, float) else str(v)


def next_name(out: Path | str, name: str, taken: Callable[[str], bool] | None = None) -> str:
    """A free run name after NAME: a new timestamp for a default name, else NAME-2, NAME-3, ..."""
    taken = taken or (lambda n: (Path(out) / n).exists())
    if DEFAULT_NAME.fullmatch(name):
        from ..run.session import default_run_name

        new = default_run_name()
        if new != name and not taken(new):
            return new
    base = re.sub(r"-\d+$", "", name)
    n = 2
    while taken(f"{base}-{n}"):
        n += 1
    return f"{base}-{n}"


# -- before Run: what the run's preflight would say --------------------------------------------------------
LISTING_TTL_S = 60.0  # a server's /v1/models is asked again after this long
_LISTINGS: dict[tuple, tuple[float, object]] = {}


def _listing(plan):
    """The server's model listing (run/preflight.Listing) or None, cached: the simulator's from a short-lived
    one with the plan's settings; another server's with the key, as the run will ask it."""
    import httpx

    from ..run.preflight import parse_listing
    from ..run.settings import url_with_path

    if plan.target == "simulator":
        cfg = plan.sim_config
        key = ("simulator", cfg.models_listing, json.dumps(cfg.extra_models, sort_keys=True, default=str))
    else:
        key = ("server", plan.settings.base_url)
    hit = _LISTINGS.get(key)
    if hit and time.monotonic() - hit[0] < LISTING_TTL_S:
        return hit[1]
    listing = None
    try:
        if plan.target == "simulator":
            from ..sim.app import Simulator

            with Simulator(plan.sim_config) as sim:
                r = httpx.get(sim.base_url + "/v1/models", timeout=5.0)
        else:
            r = httpx.get(url_with_path(plan.settings.base_url, "/v1/models"), timeout=5.0, follow_redirects=True,
                          headers={"Authorization": f"Bearer {plan.settings.api_key}"})
        listing = parse_listing(r.json()) if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError, OSError):
        listing = None
    _LISTINGS[key] = (time.monotonic(), listing)
    return listing


def preflight_problems(plan) -> dict[str, str]:
    """{field: problem} the run's preflight (run/preflight.check, the CLI's first step) would stop at, asked
    before Run so the form can say it beside the field: a model the server does not list or cannot ask with a
    photo, a budget that cannot be kept. {} when all is well or the server cannot be asked."""
    from ..run.preflight import PreflightError, check

    try:
        check(plan.models, plan.settings, _listing(plan), price_table=plan.prices, max_cost_usd=plan.max_cost_usd)
    except PreflightError as e:
        return {e.field: e.problem.replace("http://127.0.0.1/v1/models", "the simulator's /v1/models")}
    return {}


def start_error_field(text: str | None) -> tuple[str, str] | None:
    """A run's refusal as the CLI printed it ("hotdogbench: error: --models: ...") -> (field, problem), so the
    form can show it beside that field in its own words; None when it names no field."""
    from .cli import FLAGS

    m = re.match(r"hotdogbench: (?:error|stopped): (--[a-z-]+|OPENROUTER_API_KEY): (.*)", text or "")
    if not m:
        return None
    fields = {flag: name for name, flag in FLAGS.items() if name != "dataset"}
    return (fields[m.group(1)], m.group(2)) if m.group(1) in fields else None
