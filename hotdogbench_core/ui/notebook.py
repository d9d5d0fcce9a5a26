"""What the notebooks read from their command line and surroundings, and the choices their widgets offer.

`marimo edit notebooks/run.py -- --simulate --models cheap`, `marimo export html ... -- --out out --run R` and
`python notebooks/run.py --simulate` all hand the notebook a dict (mo.cli_args()); these functions turn it
into plain settings, so the notebooks hold no parsing of their own.
"""
from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ..errors import FieldError
from ..store.dataset import DATA_URL, SAMPLE, Dataset, load_dataset, resolve_input
from ..run.keys import find_key
from ..protocol.models import MODELS, PRESETS, resolve_models
from ..protocol.conditions import resolve_conditions
from ..sim.config import SimConfig, demo_config

# How the run notebook names the fields of a run plan in its messages (its form labels).
FIELD_LABELS = {"models": "Models", "input": "Photos", "dataset": "Photos", "run_name": "Run name",
                "api_key": "OpenRouter key", "base_url": "Base URL", "start_concurrency": "Start concurrency",
                "max_concurrency": "Max concurrency", "max_rate": "Max rate per model", "max_cost_usd": "Budget",
                "target": "Send requests to",
                "conditions": "Conditions", "conditions_file": "Conditions",
                "sim_config": "Simulator"}
OUT_ENV = "HOTDOGBENCH_OUT"  # where the notebooks read and write runs when --out is not given
SOURCES = {"sample": "Bundled sample (64 emoji images)", "public": "Public dataset (downloaded once into data/)",
           "path": "Local parquet file", "upload": "Upload a parquet file"}
# The simulator's adjustable settings in the run notebook: name -> (label, default, min, max, step).
SIM_KNOBS = {
    "max_in_flight": ("hidden in-flight cap (0 = none)", 40, 0, 1000, 1),
    "rate_per_s": ("requests per second (0 = no limit)", 0, 0, 1000, 1),
    "burst": ("burst", 10, 1, 1000, 1),
    "latency_s": ("median latency, s", 0.4, 0.0, 10.0, 0.05),
    "error_5xx": ("5xx rate", 0.01, 0.0, 0.5, 0.01),
    "drop_connection": ("dropped connections rate", 0.0, 0.0, 0.5, 0.01),
}


def _text(value) -> str | None:
    if value is None or value == "" or value is True:
        return None
    if isinstance(value, list):  # a flag given twice: the last one counts
        return _text(value[-1])
    return str(value)


def _flag(cli: Mapping, name: str) -> bool:
    return name in cli and cli[name] not in (False, "false", "False", "0", 0)


def default_out(cli: Mapping | None = None) -> Path:
    """--out, else $HOTDOGBENCH_OUT, else ./out."""
    return Path(_text((cli or {}).get("out")) or os.environ.get(OUT_ENV) or "out")


@dataclass(frozen=True)
class RunArgs:
    out: Path
    go: bool  # start a run without the button (headless use): --simulate or --models was given
    target: str  # openrouter, simulator or base_url
    models: str | None  # as given: a preset or comma-separated ids
    input: str | None
    run: str | None
    base_url: str | None
    start_concurrency: int
    max_concurrency: int
    max_cost_usd: float | None = None
    resume: bool = False  # headless use: finish the run named by --run
    max_rate: str | None = None  # as given: "20/min", "5/s" (checked by the plan, run/settings.parse_rate)


def run_args(cli: Mapping) -> RunArgs:
    base_url = _text(cli.get("base-url")) or _text(cli.get("base_url"))
    if _flag(cli, "simulate"):
        target = "simulator"
    elif base_url:
        target = "base_url"
    else:
        target = "openrouter" if find_key() else "simulator"
    return RunArgs(out=default_out(cli), go=_flag(cli, "simulate") or _text(cli.get("models")) is not None,
                   target=target, models=_text(cli.get("models")), input=_text(cli.get("input")),
                   run=_text(cli.get("run")), base_url=base_url,
                   start_concurrency=_number(cli, "start-concurrency", int, 8),
                   max_concurrency=_number(cli, "max-concurrency", int, 256),
                   max_cost_usd=_number(cli, "max-cost-usd", float, 0) or None, resume=_flag(cli, "resume"),
                   max_rate=_text(cli.get("max-rate")))


def _number(cli: Mapping, flag: str, kind: type, default):
    """A numeric command-line value, or FieldError naming it (no NaN, no infinity)."""
    text = _text(cli.get(flag))
    if text is None:
        return default
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value):
        raise FieldError(f"must be a {'whole ' if kind is int else ''}number, got {text!r}", flag.replace("-", "_"))
    return value


def headless() -> bool:
    """No browser behind this kernel: `marimo export html` (a kernel in edit mode that no page asked for) or
    `python notebooks/run.py`. Then --simulate/--models start the run and the notebook waits for it; with a
    page (`marimo edit`, `marimo run`) they only fill in the form, and Run starts it."""
    import marimo as mo

    meta = mo.app_meta()
    return meta.mode == "script" or (meta.mode == "edit" and meta.request is None)


@dataclass(frozen=True)
class ReportArgs:
    out: Path
    runs: list[str]  # --run NAME (repeatable, or comma-separated); [] = let the reader choose
    input: str | None  # the photo table, when it isn't found by its digest
    offline: bool  # write OUT/RUN/report_offline.html (default when runs are named on the command line)


def report_args(cli: Mapping) -> ReportArgs:
    given = cli.get("run")
    names = given if isinstance(given, list) else [given] if given not in (None, "", True) else []
    runs = [n.strip() for g in names for n in str(g).split(",") if n.strip()]
    offline = bool(runs) and not (_text(cli.get("offline")) in ("no", "false", "0"))
    return ReportArgs(out=default_out(cli), runs=runs, input=_text(cli.get("input")), offline=offline)


def source_for(spec: str | None) -> str:
    """The dataset choice a --input value stands for."""
    if not spec:
        return "sample"
    if spec == DATA_URL:
        return "public"
    if spec.startswith(("http://", "https://")):
        return "path"  # another URL: downloaded once into data/ like the public one
    return "sample" if Path(spec).resolve() == SAMPLE.resolve() else "path"


def model_options() -> dict[str, str]:
    """The models widget's choices: label -> preset name or model id."""
    return {**{f"preset: {name} ({len(ids)} models)": name for name, ids in PRESETS.items()},
            **{m: m for m in MODELS}}


def default_models(target: str) -> list[str]:
    """The models widget's labels picked before the user picks: the cheap preset when the simulator answers
    (it costs nothing); nothing for a real server, where every choice costs money."""
    return [label for label, value in model_options().items() if value == "cheap"] if target == "simulator" else []


def model_labels(values: list[str]) -> list[str]:
    """The widget's labels of its values (preset names, model ids)."""
    labels = {v: k for k, v in model_options().items()}
    return [labels[v] for v in values if v in labels]


def split_models(spec: str | None) -> tuple[list[str], str]:
    """A --models value as (labels to select in the widget, the rest as comma-separated free text)."""
    labels = {v: k for k, v in model_options().items()}
    picked, other = [], []
    for part in (p.strip() for p in (spec or "").split(",")):
        if part:
            (picked if part in labels else other).append(labels.get(part, part))
    return picked, ", ".join(other)


def chosen_models(picked: list[str], other: str) -> list[str]:
    """The widget's values and the free-text ids, presets expanded, in order, without repeats."""
    parts = list(picked) + [p.strip() for p in (other or "").split(",") if p.strip()]
    return resolve_models(parts) if parts else []


def save_upload(name: str, data: bytes, data_dir: str | Path = "data") -> Path:
    """An uploaded table saved as data/uploads/<digest>-<name>.parquet (same bytes, same file)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).stem)[:60] or "upload"
    path = Path(data_dir) / "uploads" / f"{hashlib.sha256(data).hexdigest()[:12]}-{stem}.parquet"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    return path


def open_dataset(source: str, path: str | None = None, upload: tuple[str, bytes] | None = None,
                 data_dir: str | Path = "data") -> Dataset:
    """The chosen photo table, checked (DatasetError names what is wrong)."""
    if source == "sample":
        return load_dataset(SAMPLE)
    if source == "public":
        return Dataset(resolve_input(DATA_URL, data_dir, quiet=True))
    if source == "path":
        if not path:
            raise ValueError("type the path of a parquet file")
        return load_dataset(path, data_dir, quiet=True)
    if source == "upload":
        if not upload:
            raise ValueError("upload a parquet file")
        return Dataset(save_upload(upload[0], upload[1], data_dir))
    raise ValueError(f"unknown dataset source {source!r}")


# The run form's optional conditions box (docs/experiments.md): one NAME=SPEC per line, as --condition takes.
CONDITIONS_PLACEHOLDER = ("reference\nsmall=px:512,q:80\nterse=prompt:\"Hot dog? JSON.\"\n"
                          "pinned=provider:only=Cloudflare")
CONDITIONS_HELP = ("Optional: run every model under each condition, one `NAME=SPEC` per line (`px:512` longest side, "
                   "`q:80` JPEG quality, `prompt:\"...\"` the question, `provider:only=A|B`); `reference` is the "
                   "reference question and photos. Empty: the reference alone.")


def condition_lines(text: str | None) -> list[str] | None:
    """The conditions box's lines (blank lines and # comments skipped), checked; None when it is empty.
    Raises ConditionError naming the line's condition."""
    lines = [ln.strip() for ln in (text or "").splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("#")]
    if not lines:
        return None
    resolve_conditions(lines)
    return lines


def describe_sim(config: SimConfig) -> str:
    """The simulator's main settings in a few words, as the Run section states them."""
    cap = f"in-flight cap {config.max_in_flight}" if config.max_in_flight else "no in-flight cap"
    rate = f"{config.rate_per_s:g} requests/s" if config.rate_per_s else "no rate limit"
    return f"{cap}, {rate}, median latency {config.latency_s:g} s, 5xx rate {config.error_5xx:g}"


def sim_config(values: Mapping | None = None, conditions: bool = False):
    """The run notebook's simulator: the demo's settings with the knobs' values (0 means no cap); with
    conditions, the demo's condition effects too (sim/config.DEMO_CONDITIONS)."""
    d = demo_config(conditions)
    for k, v in (values or {}).items():
        if k in SIM_KNOBS and v is not None:
            d[k] = None if k in ("max_in_flight", "rate_per_s") and not v else v
    return SimConfig.from_dict(d)
