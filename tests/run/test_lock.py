"""One process per run folder: a second one is told who holds it and sends nothing; a killed holder blocks nothing."""
import asyncio
import fcntl
import json
import os
import subprocess
import sys
import threading

import pytest

from support.cli import cli_env
from support.paths import REPO
from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet
from hotdogbench_core.store.lock import RunLock, RunLockedError
from hotdogbench_core.store.rundir import RunDir

MODEL = "openai/gpt-6-luna"


def test_two_cli_processes_started_at_once_on_one_run(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=10))
    env = cli_env("sk-lock-test")
    with Simulator(SimConfig(seed=0, latency_s=0.15, latency_sigma=0.1), labels=labels_from_parquet(table)) as sim:
        cmd = [sys.executable, "-m", "hotdogbench_core", "run", "--models", MODEL, "--input", str(table),
               "--base-url", sim.base_url, "--out", str(tmp_path / "out"), "--run", "same", "--start-concurrency",
               "2", "--max-concurrency", "2", "--quiet"]
        procs = [subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        outs = [p.communicate(timeout=90) for p in procs]
        codes = sorted(p.returncode for p in procs)
        assert codes == [0, 5], outs
        winner, loser = (0, 1) if procs[0].returncode == 0 else (1, 0)
        err = outs[loser][1]
        assert f"is in use by process {procs[winner].pid}" in err and "nothing was sent" in err, err
        assert "Traceback" not in err
        assert sim.stats.requests == 31  # every photo once: the second process paid for nothing


def test_a_second_run_in_the_same_process_is_refused_before_sending(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=3))
    ds = load_dataset(table)
    with Simulator(SimConfig(seed=0, latency_s=0.2), labels=labels_from_parquet(table)) as sim:
        settings = RunSettings(api_key="sk-x", base_url=sim.base_url, start_concurrency=1, max_concurrency=1)

        async def main():
            first = asyncio.ensure_future(run_models([MODEL], ds, settings, out=tmp_path / "out", run_name="r"))
            await asyncio.sleep(0.3)
            with pytest.raises(RunLockedError, match="in use by this process"):
                await run_models(["typesafe/jev-1.14"], ds, settings, out=tmp_path / "out", run_name="r")
            return await first

        res = asyncio.run(main())
        assert res.stopped is None and sim.stats.requests == len(ds)  # jev was never asked
    assert not RunDir(tmp_path / "out", "r").journal("typesafe/jev-1.14").exists()


def test_the_lock_names_its_holder_and_is_free_once_released(tmp_path):
    path = tmp_path / "run.lock"
    with RunLock(path):
        assert json.loads(path.read_text())["pid"] == os.getpid()
        with pytest.raises(RunLockedError) as e:
            RunLock(path).acquire()
        assert e.value.pid == os.getpid() and e.value.field == "run_name"
    with RunLock(path):  # released: free again
        pass
    assert path.read_text() == ""  # no stale PID left behind by a clean exit


def test_a_refused_process_waits_briefly_for_the_holders_name(tmp_path):
    # the holder takes the lock, then writes its PID: one refused in between must still name it
    path = tmp_path / "run.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    writer = threading.Timer(0.15, lambda: os.pwrite(fd, json.dumps({"pid": 4242}).encode(), 0))
    writer.start()
    try:
        with pytest.raises(RunLockedError, match="in use by process 4242"):
            RunLock(path).acquire()
    finally:
        writer.join()
        os.close(fd)
    # a holder that never writes its name: the message says "another process", after the short wait only
    fd = os.open(tmp_path / "silent.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.raises(RunLockedError, match="in use by another process"):
            RunLock(tmp_path / "silent.lock").acquire()
    finally:
        os.close(fd)
