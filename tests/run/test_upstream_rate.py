"""An upstream provider's rate limit passed on by OpenRouter as 502 "Provider returned error" (the provider's own 429
in error.metadata.raw) is a rate signal for the limiter, as a 429 is, over real HTTP against the simulator."""
import asyncio

import pytest

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset
from hotdogbench_core.run.runner import ModelRun
from hotdogbench_core.sim.app import SimConfig, Simulator

MODEL = "openai/gpt-6-luna"


@pytest.mark.parametrize("refusal_status", ["429", "502"])
def test_an_upstream_rate_limit_is_heard_as_one_whatever_its_status(tmp_path, refusal_status):
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=40, extras=0)))  # 120 photos
    cfg = SimConfig(seed=0, latency_s=0.05, rate_per_s=20.0, burst=2, refusal_status=refusal_status)
    with Simulator(cfg) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url)
        mr = ModelRun(MODEL, ds, settings, tmp_path / "out")
        summary = asyncio.run(mr.run())
        refused, by_status = sim.stats.rate_limited, dict(sim.stats.by_status)
    assert refused > 0 and by_status.get(int(refusal_status), 0) == refused  # the bucket refused, in that form
    conc = summary["concurrency"]
    assert conc["throttles"] == refused  # every refusal reached the limiter as a rate signal, none as a failure
    assert conc["cap_rate_per_s"] is not None and conc["cap_rate_per_s"] <= 40.0  # it found a pace under 2x the cap
    assert refused <= 0.25 * len(ds)
    assert summary["answered"] == len(ds) and summary["errors"] == 0
