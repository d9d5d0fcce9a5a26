"""Names at the command line and the API: model ids that collide under the old '/'->'__' rule, ids longer than a
file name, run names that would leave --out."""
import asyncio
import json

import polars as pl
import pytest

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.run.plan import plan_run
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet
from hotdogbench_core.store.rundir import RunDir, RunNameError
from hotdogbench_core.ui.cli import main

LONG = "vendor/" + "m" * 300  # 307 bytes: longer than any file name may be


def test_colliding_and_overlong_model_ids_keep_their_own_results(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-names")
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=2))
    models = ["a/b__c", "a__b/c", LONG]
    extra = {"a/b__c": {"accuracy": 1.0}, "a__b/c": {"accuracy": 0.0}, LONG: {}}
    with Simulator(SimConfig(seed=5, latency_s=0.0, extra_models=extra), labels=labels_from_parquet(table)) as sim:
        code = main(["run", "--models", ",".join(models), "--input", str(table), "--base-url", sim.base_url,
                     "--out", str(tmp_path / "out"), "--run", "n", "--quiet"])
        assert sim.stats.requests == 3 * 7
    out, err = capsys.readouterr()
    assert code == 0, err
    rd = RunDir(tmp_path / "out", "n")
    files = {m: rd.results(m) for m in models}
    assert len(set(files.values())) == 3 and all(f.is_file() for f in files.values())
    assert all(len(f.name.encode()) <= 255 for f in files.values())
    # each model's own answers: the one always right and the one always wrong were not mixed up
    acc = {s["model"]: s["accuracy"] for s in json.loads(rd.summary.read_text())}
    assert acc["a/b__c"] == 1.0 and acc["a__b/c"] == 0.0 and LONG in acc
    assert set(rd.journals()) == set(models)
    for m in models:
        assert pl.read_parquet(files[m]).height == 7


@pytest.mark.parametrize("name", ["../escape", "/abs/path", "a/b", ".."])
def test_the_api_refuses_a_run_name_that_is_not_one_folder(tmp_path, name):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=1))
    with pytest.raises(RunNameError, match="run_name: "):
        plan_run(models="openai/gpt-6-luna", dataset=table, target="simulator", out=tmp_path / "out", run_name=name)
    settings = RunSettings(api_key="k", base_url="http://127.0.0.1:9")
    with pytest.raises(RunNameError):
        asyncio.run(run_models(["openai/gpt-6-luna"], load_dataset(table), settings, out=tmp_path / "out",
                               run_name=name))
    assert not (tmp_path / "escape").exists() and not (tmp_path / "out").exists()
