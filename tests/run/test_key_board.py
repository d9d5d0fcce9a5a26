"""Runs one model at a time write what they took to their key's board (limit/board.py) and remove their entry at the
end; a board that cannot be kept is said, and the run goes on; two real processes on one key see each other."""
import asyncio
import multiprocessing as mp
import os

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.limit.board import KeyBoard
from hotdogbench_core.run.events import Notice
from hotdogbench_core.sim.app import SimConfig, Simulator

MODEL = "openai/gpt-6-luna"
KEY = "sk-or-v1-board-run-secret-42"


def test_a_run_writes_its_entry_and_removes_it_at_the_end(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=6, extras=0)))
    seen = []
    with Simulator(SimConfig(seed=0, latency_s=0.02)) as sim:
        board = KeyBoard.for_key(KEY, sim.base_url)
        settings = RunSettings(api_key=KEY, base_url=sim.base_url)

        def on_event(e):  # mid-run: this process's entry is on the board
            seen.append((board.directory / f"{os.getpid()}.json").exists())
        res = asyncio.run(run_models([MODEL], ds, settings, out=tmp_path / "out", on_event=on_event))
    assert res.summaries[0]["answered"] == len(ds) and any(seen)
    assert res.summaries[0]["concurrency"]["key_board"] == {"processes_seen": 1, "started_starved": False}
    assert not list(board.directory.glob("*.json"))  # removed at the end
    for path in (tmp_path / "cache").rglob("*"):
        assert "board-run-secret" not in str(path) and (path.is_dir() or b"board-run-secret" not in path.read_bytes())


def test_a_board_that_cannot_be_kept_is_said_and_the_run_goes_on(tmp_path, monkeypatch):
    (tmp_path / "cache").write_text("a file where the cache directory would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ds = load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=4, extras=0)))
    events = []
    with Simulator(SimConfig(seed=0, latency_s=0.02)) as sim:
        settings = RunSettings(api_key=KEY, base_url=sim.base_url)
        res = asyncio.run(run_models([MODEL], ds, settings, out=tmp_path / "out", on_event=events.append))
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert res.summaries[0]["answered"] == len(ds)
    assert any("no board shared with other processes" in t for t in notices), notices
    assert any("no board shared with other processes" in t for t in res.warnings)


def _child(base_url: str, table: str, out: str, cache: str, conn) -> None:
    os.environ["XDG_CACHE_HOME"] = cache
    board = KeyBoard.for_key(KEY, base_url)
    others = []

    def on_event(e):
        others.append(len(board.others()))
    res = asyncio.run(run_models([MODEL], load_dataset(table), RunSettings(api_key=KEY, base_url=base_url),
                                 out=out, run_name="r", on_event=on_event))
    conn.send((res.summaries[0]["answered"], max(others, default=0),
               res.summaries[0]["concurrency"]["key_board"]["processes_seen"]))


def test_two_processes_on_one_key_see_each_other_on_its_board(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=40, extras=0))  # 120 photos each
    ctx = mp.get_context("spawn")
    with Simulator(SimConfig(seed=0, latency_s=0.05, rate_per_s=40.0, burst=5)) as sim:
        pipes, procs = [], []
        for i in range(2):
            a, b = ctx.Pipe()
            p = ctx.Process(target=_child, args=(sim.base_url, str(table), str(tmp_path / f"out{i}"),
                                                 str(tmp_path / "cache"), b))
            p.start()
            pipes.append(a)
            procs.append(p)
        got = [a.recv() for a in pipes]
        for p in procs:
            p.join(30)
    assert [answered for answered, *_ in got] == [120, 120]
    assert all(peers == 1 for _, peers, _ in got), got  # each read the other's entry while both ran
    assert all(seen == 2 for *_, seen in got), got  # and each summary.json says two processes shared the key
    assert not list((tmp_path / "cache").rglob("*.json"))
