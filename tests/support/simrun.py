"""A simulated run over the bundled sample, shared by the report, estimate and notebook tests.

Import the fixture into a test module (`from simrun import sim_run`) to use it.
"""
from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.store.dataset import SAMPLE
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet

MODELS = ["typesafe/jev-1.14", "openai/gpt-6-luna"]
RUN = "sim"


def make_run(out: Path, name: str = RUN, models=MODELS, **sim) -> Path:
    ds = load_dataset(SAMPLE)
    config = SimConfig(**{"seed": 3, "latency_s": 0.01, "max_in_flight": 12, **sim})
    with Simulator(config, labels=labels_from_parquet(SAMPLE)) as s:
        settings = RunSettings(api_key="sk-test", base_url=s.base_url, start_concurrency=4, max_concurrency=64)
        res = asyncio.run(run_models(list(models), ds, settings, out=out, run_name=name))
    return res.run_dir


@pytest.fixture(scope="session")
def sim_out(tmp_path_factory) -> Path:
    """OUT holding one finished simulated run named RUN (two models over the sample). Don't modify it."""
    out = tmp_path_factory.mktemp("sim_out")
    make_run(out)
    return out


@pytest.fixture
def sim_copy(sim_out, tmp_path) -> Path:
    """A private copy of sim_out, free to change."""
    out = tmp_path / "out"
    shutil.copytree(sim_out, out)
    return out
