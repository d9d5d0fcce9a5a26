"""A disk that fills, turns read-only or fails mid-run: sending stops at once, what came back is retried into the
journal, the loss is counted and named, and a resume asks only what no journal holds."""
import asyncio
import errno
import os
import subprocess
import sys
import threading

import pytest

from support.cli import cli_env
from support.disks import fill, tmpfs
from support.paths import REPO
from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.errors import StorageError
from hotdogbench_core.run.runner import ModelRun
from hotdogbench_core.sim.app import SimConfig, Simulator, image_digest, labels_from_parquet
from hotdogbench_core.store import journal as journal_mod
from hotdogbench_core.store.journal import read_journal
from hotdogbench_core.store.rundir import RunDir

MODEL = "openai/gpt-6-luna"
SECRET = "sk-or-v1-STORAGE-SECRET-42"


def secret_env():
    return cli_env(SECRET)


def cli(*args, timeout=90):
    return subprocess.run([sys.executable, "-m", "hotdogbench_core", *args], capture_output=True, text=True,
                          env=secret_env(), cwd=REPO, timeout=timeout)


def asked_per_photo(sim, ds):
    return {p.id: len(sim.stats.by_digest.get(image_digest(p.image), [])) for p in ds.stream()}


class FailingDisk:
    """The journal's os.write fails with `err` from its n-th call on, until `full` is cleared."""

    def __init__(self, monkeypatch, err, after, free_after_s=None):
        self.calls, self.err, self.after, self.full, self.free_after_s = 0, err, after, True, free_after_s
        monkeypatch.setattr(journal_mod, "_os_write", self)

    def __call__(self, fd, data):
        self.calls += 1
        if self.full and self.calls > self.after:
            if self.free_after_s is not None:  # room again a little later, while the journal retries
                threading.Timer(self.free_after_s, setattr, (self, "full", False)).start()
                self.free_after_s = None
            raise OSError(self.err, os.strerror(self.err))
        return os.write(fd, data)


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO])
def test_a_failing_journal_stops_sending_counts_the_loss_and_resume_asks_only_the_rest(tmp_path, monkeypatch, err):
    monkeypatch.setattr(ModelRun, "SAVE_RETRY_S", 0.3)
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=20))
    ds = load_dataset(table)
    disk = FailingDisk(monkeypatch, err, after=8)  # header, start, then a few batches
    with Simulator(SimConfig(seed=1, latency_s=0.005, latency_sigma=0.2), labels=labels_from_parquet(table)) as sim:
        settings = RunSettings(api_key=SECRET, base_url=sim.base_url, start_concurrency=4, max_concurrency=4)
        with pytest.raises(StorageError) as e:
            asyncio.run(asyncio.wait_for(run_models([MODEL], ds, settings, out=tmp_path / "out", run_name="r"), 60))
        journal = RunDir(tmp_path / "out", "r").journal(MODEL)
        held = read_journal(journal).results
        answered = sim.stats.by_status.get(200, 0)
        # sending stopped at once: what was paid for is in the journal or counted as lost, and the loss is at most
        # what was in flight (4) when the write failed
        assert answered == sim.stats.requests == len(held) + e.value.unsaved
        assert 0 < len(held) < len(ds) and 0 < e.value.unsaved <= 4
        assert e.value.saved == len(held) and e.value.path == journal
        msg = str(e.value)
        assert str(journal) in msg and f"{e.value.unsaved} paid answer(s) could not be saved" in msg
        assert "--resume" in msg and os.strerror(err) in msg
        print(f"injected {os.strerror(err)}: server answered {answered}, journal holds {len(held)}, "
              f"{e.value.unsaved} reported unsaved")
        first = asked_per_photo(sim, ds)

        disk.full = False  # room again: resume
        res = asyncio.run(run_models([MODEL], ds, settings, out=tmp_path / "out", run_name="r", resume=True))
        assert res.stopped is None and res.summaries[0]["photos"] == 60
        after = asked_per_photo(sim, ds)
    for (pid, _), r in held.items():
        assert after[pid] == first[pid] == 1, f"photo {pid} was in the journal and was asked again"
    assert sum(after.values()) == len(ds) + e.value.unsaved  # only the lost answers were paid twice
    assert len(read_journal(journal).results) == len(ds)


def test_the_disk_has_room_again_within_the_retry_window_nothing_is_lost(tmp_path, monkeypatch):
    monkeypatch.setattr(ModelRun, "SAVE_RETRY_S", 2.0)
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=10))
    ds = load_dataset(table)
    FailingDisk(monkeypatch, errno.ENOSPC, after=4, free_after_s=0.3)

    with Simulator(SimConfig(seed=2, latency_s=0.01), labels=labels_from_parquet(table)) as sim:
        settings = RunSettings(api_key=SECRET, base_url=sim.base_url, start_concurrency=3, max_concurrency=3)
        with pytest.raises(StorageError) as e:
            asyncio.run(run_models([MODEL], ds, settings, out=tmp_path / "out", run_name="r"))
        held = read_journal(RunDir(tmp_path / "out", "r").journal(MODEL)).results
        assert e.value.unsaved == 0 and "no paid answer was lost" in str(e.value)
        assert sim.stats.requests == len(held) < len(ds)  # stopped sending; everything paid for is saved


@pytest.fixture
def table(tmp_path):
    return write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=100))  # 301 photos, ~110 KB of journal


def test_full_tmpfs_with_the_cli_then_resume(tmp_path, table):
    ds = load_dataset(table)
    with tmpfs(tmp_path / "disk", "300k") as disk, \
            Simulator(SimConfig(seed=3, latency_s=0.002, latency_sigma=0.2), labels=labels_from_parquet(table)) as sim:
        filler = fill(disk, 60_000)
        args = ("run", "--models", MODEL, "--input", str(table), "--base-url", sim.base_url, "--out",
                str(disk / "out"), "--run", "full", "--start-concurrency", "8", "--max-concurrency", "8", "--quiet")
        p = cli(*args)
        journal = RunDir(disk / "out", "full").journal(MODEL)
        held = read_journal(journal).results
        answered = sim.stats.by_status.get(200, 0)
        assert p.returncode == 4, p.stderr
        assert "Traceback" not in p.stderr and "never retrieved" not in p.stderr
        assert f"could not write {journal}: No space left on device" in p.stderr
        unsaved = answered - len(held)
        assert f"{unsaved} paid answer(s) could not be saved" if unsaved else "no paid answer was lost" in p.stderr
        assert 0 <= unsaved <= 8 and 0 < len(held) < len(ds)
        assert "--run full --resume" in p.stderr
        print(f"tmpfs 300k: server answered {answered}, journal holds {len(held)}, {unsaved} reported unsaved")
        first = asked_per_photo(sim, ds)

        filler.unlink()
        p2 = cli(*args, "--resume")
        assert p2.returncode == 0, p2.stderr
        after = asked_per_photo(sim, ds)
        for (pid, _), r in held.items():
            assert after[pid] == first[pid] == 1, f"photo {pid} was in the journal and was asked again"
        assert sum(after.values()) == len(ds) + unsaved
        assert len(read_journal(journal).results) == len(ds)
        assert (disk / "out" / "full" / "summary.json").is_file()


def main_in_process(capsys, *args):
    """The CLI's main() in this process (the same code as the console script, without 2 s of imports)."""
    from hotdogbench_core.ui.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_out_on_a_read_only_file_system_is_a_message(tmp_path, table, capsys, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", SECRET)
    with tmpfs(tmp_path / "ro", "1m", read_only=True) as ro, Simulator(SimConfig(latency_s=0)) as sim:
        code, _, err = main_in_process(capsys, "run", "--models", MODEL, "--input", str(table), "--base-url",
                                       sim.base_url, "--out", str(ro / "out"), "--run", "r", "--quiet")
        assert code == 4 and "Traceback" not in err
        assert f"cannot use {ro / 'out' / 'r'}: Read-only file system" in err
        assert sim.stats.requests == 0


@pytest.mark.parametrize("out, says", [
    ("/proc/hotdogbench-out", "cannot use /proc/hotdogbench-out: No such file or directory"),
    ("/proc/self/out", "cannot use /proc/self/out:"),
    ("FILE", "--out: FILE is a file, not a folder"),
    ("FILE/sub", "--out: FILE is a file, not a folder"),
])
def test_an_unwritable_or_impossible_out_is_a_message(tmp_path, table, out, says, capsys):
    (tmp_path / "afile").write_text("x")
    out, says = (x.replace("FILE", str(tmp_path / "afile")) for x in (out, says))
    code, _, err = main_in_process(capsys, "run", "--models", MODEL, "--input", str(table), "--base-url",
                                   "http://127.0.0.1:9", "--out", out, "--run", "r", "--quiet")
    assert code in (2, 4) and says in err, err
    assert "Traceback" not in err


def test_a_failing_disk_with_models_run_at_once_stops_them_all_and_counts_every_loss(tmp_path, monkeypatch):
    monkeypatch.setattr(ModelRun, "SAVE_RETRY_S", 0.2)
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=20))
    ds = load_dataset(table)
    models = [MODEL, "typesafe/jev-1.14"]
    FailingDisk(monkeypatch, errno.ENOSPC, after=10)
    with Simulator(SimConfig(seed=7, latency_s=0.005), labels=labels_from_parquet(table)) as sim:
        settings = RunSettings(api_key=SECRET, base_url=sim.base_url, start_concurrency=3, max_concurrency=3)
        with pytest.raises(StorageError) as e:
            asyncio.run(asyncio.wait_for(run_models(models, ds, settings, out=tmp_path / "out", run_name="p",
                                                    parallel=True), 60))
        held = sum(len(read_journal(RunDir(tmp_path / "out", "p").journal(m)).results) for m in models)
        assert sim.stats.by_status.get(200, 0) == sim.stats.requests == held + e.value.unsaved
        assert e.value.unsaved <= 6 and held < 2 * len(ds)
