"""The board two processes on one key share (limit/board.py): files, and the fake-clock model's two processes."""
import json
import os
import stat
import sys
import time

import pytest

from support.paths import REPO
from hotdogbench_core.limit.board import BoardMember, KeyBoard, MemoryBoard
from hotdogbench_core.sim.capmodel import FakeClock

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_families as bf  # noqa: E402

KEY = "sk-or-v1-board-test-secret-0123456789"


def test_a_key_s_board_is_named_by_a_keyed_hash_never_the_key(tmp_path):
    board = KeyBoard.for_key(KEY, "https://openrouter.ai/api/v1", root=tmp_path)
    again = KeyBoard.for_key(KEY, "https://openrouter.ai/api/v1", root=tmp_path)
    other = KeyBoard.for_key(KEY + "x", "https://openrouter.ai/api/v1", root=tmp_path)
    elsewhere = KeyBoard.for_key(KEY, "http://127.0.0.1:8000/v1", root=tmp_path)
    assert board.directory == again.directory  # every process on the key finds the same board
    assert len({board.directory, other.directory, elsewhere.directory}) == 3
    board.publish(3.0, False)
    for path in tmp_path.rglob("*"):
        assert "board-test-secret" not in str(path)
        if path.is_file():
            assert b"board-test-secret" not in path.read_bytes()
    assert stat.S_IMODE((tmp_path / "salt").stat().st_mode) == 0o600


def test_a_process_reads_the_others_live_entries_and_not_its_own(tmp_path):
    mine, theirs = KeyBoard(tmp_path), KeyBoard(tmp_path)
    theirs.name = "other"
    mine.publish(5.0, False)
    theirs.publish(7.5, True)
    assert mine.others() == [(7.5, True)]
    assert theirs.others() == [(5.0, False)]
    (tmp_path / "torn.json").write_text('{"taken_per_s": 1')  # half written by hand: skipped, not raised
    (tmp_path / "nan.json").write_text(json.dumps({"taken_per_s": float("nan"), "starved": False}))
    assert mine.others() == [(7.5, True)]
    old = time.time() - KeyBoard.STALE_S - 1  # a process killed without removing its entry
    os.utime(tmp_path / "other.json", (old, old))
    assert mine.others() == []
    mine.close()
    assert not (tmp_path / f"{os.getpid()}.json").exists()


def test_an_entry_is_owed_every_publish_s_or_when_starved_turns(tmp_path):
    clock = FakeClock(0.0)
    board, reader = KeyBoard(tmp_path, clock=clock), KeyBoard(tmp_path)
    reader.name = "reader"
    assert board.due(False)
    board.publish(1.0, False)
    clock.t = KeyBoard.PUBLISH_S / 2
    assert not board.due(False) and board.due(True)  # at once when starved turns: the others read the key's cap
    board.publish(2.0, True)
    assert reader.others() == [(2.0, True)]
    clock.t = KeyBoard.PUBLISH_S
    assert not board.due(True)
    clock.t = 1.5 * KeyBoard.PUBLISH_S
    assert board.due(True)


def test_a_member_writes_its_entry_a_few_times_a_second_not_per_answer(tmp_path):
    clock = FakeClock(0.0)
    board = KeyBoard(tmp_path, clock=clock)
    writes = []
    board._write = writes.append
    lim = BoardMember(8, 256, board, clock=clock)
    for _ in range(100):  # 100 answers over 1 s
        lim.finish("success", 0.1, "", None, lim.start(clock.t))
        clock.t += 0.01
    assert 4 <= len(writes) <= 5 and writes[-1]["taken_per_s"] > 50


def test_a_board_that_cannot_be_kept_is_an_oserror(tmp_path):
    (tmp_path / "keys").write_text("a file where the directory would be")
    with pytest.raises(OSError):
        KeyBoard.for_key(KEY, "https://openrouter.ai/api/v1", root=tmp_path / "keys")


def members(n=2):
    clock, entries = FakeClock(0.0), {}
    return clock, [BoardMember(8, 256, MemoryBoard(entries, str(i), clock), clock=clock) for i in range(n)]


def feed(lim, clock, kind, n, latency=0.1):
    for _ in range(n):
        level = lim.start(clock.t)
        clock.t += 0.01
        lim.finish(kind, latency, "429" if kind == "rate" else "", None, level)


def test_a_process_that_started_starved_is_cut_no_lower_than_an_equal_share():
    clock, (first, second) = members()
    feed(first, clock, "success", 60)  # the first takes ~100/s over the last second
    assert not first.starved
    feed(second, clock, "rate", 3)  # the second's first sends: all refused, nothing out
    assert second.starved and second.board.others()[0][0] > 50
    share = second.share(clock.t)
    assert share > 25  # (what both took) / 2
    second._cut(clock.t, 2.0, "cut 429")
    assert second._r_ceiling == pytest.approx(share)
    assert "an equal share of the key's processes" in second.history[-1].reason
    first._cut(clock.t, 200.0, "cut 429")  # a cut over the share is left alone
    assert first._r_ceiling == 200.0


def test_no_process_started_starved_no_share():
    clock, (first, second) = members()
    feed(first, clock, "success", 60)
    feed(second, clock, "success", 2)
    feed(second, clock, "rate", 3)  # refused after sends taken: a cap of its own may be under the other's
    assert not second.starved and second.share(clock.t) == 0.0
    second._cut(clock.t, 2.0, "cut 429")
    assert second._r_ceiling == 2.0


def test_alone_on_the_board_no_share():
    clock, (only,) = members(1)
    feed(only, clock, "rate", 3)
    assert only.starved and only.share(clock.t) == 0.0


def without_board(monkeypatch, family, seed):
    monkeypatch.setattr(bf, "NOKEY", True)  # each process on its own (the limiter before the board)
    r = bf.run_draw((family, seed, "adaptive"))
    monkeypatch.setattr(bf, "NOKEY", False)
    return r


@pytest.mark.parametrize("seed", [92, 76])
def test_two_processes_on_a_key_wide_cap_even_out_through_the_board(monkeypatch, seed):
    # seed 92: a 17/s bucket at 0.17 s, the second process started into the bucket the first keeps empty: fairness
    # 0.66 on its own, 1.00 with the board; seed 76: 0.77 -> 1.00 (13.5/s)
    alone = without_board(monkeypatch, "processes", seed)
    shared = bf.run_draw(("processes", seed, "adaptive"))
    assert alone["fair"] < 0.8 and shared["fair"] >= 0.95, (alone, shared)
    assert shared["util"] >= 97 and shared["throttled"] <= 10


@pytest.mark.parametrize("seed", range(6))
def test_two_processes_each_behind_a_cap_of_its_own_are_left_alone(monkeypatch, seed):
    alone = without_board(monkeypatch, "own_processes", seed)
    shared = bf.run_draw(("own_processes", seed, "adaptive"))
    assert shared["util"] == alone["util"] and shared["throttled"] == alone["throttled"], (alone, shared)
