"""The journal against torn lines, lines of the wrong shape and writes that fail (ENOSPC, EROFS, EIO)."""
import asyncio
import errno
import json

import pytest

from hotdogbench_core.store import journal as journal_mod
from hotdogbench_core.store.journal import Journal, JournalError, read_journal
from hotdogbench_core.store.results import Result


def res(i, **kw):
    return Result(id=i, open_images_id=None, category="taco", is_hot_dog=False, **kw)


def write_lines(path, objs, tail=b""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(json.dumps(o).encode() + b"\n" for o in objs) + tail)


HEADER = {"type": "header", "model": "m/a"}


def test_a_torn_tail_is_cut_saved_aside_and_the_next_line_starts_clean(tmp_path):
    path = tmp_path / "journal" / "m__a.jsonl"
    write_lines(path, [HEADER, {"type": "result", **res(1).to_json()}], tail=b'{"type":"result","id":2,"cat')
    with Journal(path) as j:
        assert j.torn is not None and j.torn.nbytes == len(b'{"type":"result","id":2,"cat')
        assert j.torn.saved_to.read_bytes() == b'{"type":"result","id":2,"cat'
        assert j.torn.saved_to.name.startswith("m__a.jsonl.torn-")
        j.result(res(3))
    state = read_journal(path)  # before the fix: "line 3 is not valid JSON; the journal is damaged"
    assert sorted(state.results) == [(1, 0), (3, 0)]
    assert path.read_bytes().endswith(b"\n") and b"cat{" not in path.read_bytes()


def test_a_file_that_is_all_torn_is_emptied_and_a_whole_one_is_left_alone(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"type":"hea')
    with Journal(path) as j:
        assert j.torn.nbytes == 12 and j.size == 0
    assert path.read_bytes() == b""
    write_lines(path, [HEADER])
    before = path.read_bytes()
    with Journal(path) as j:
        assert j.torn is None and j.size == len(before)
    assert path.read_bytes() == before and not list(tmp_path.glob("*.torn-*"))[1:]


@pytest.mark.parametrize("line, says", [
    (b"[1, 2, 3]", "line 2 is a JSON list, not an object"),
    (b'"text"', "line 2 is a JSON str, not an object"),
    (b'{"type": "result", "id": "seven", "category": "taco", "is_hot_dog": false}', "line 2: a result whose id is"),
    (b'{"type": "result", "id": true, "category": "taco", "is_hot_dog": false}', "a result whose id is true"),
    (b'{"type": "result", "id": 1, "category": "taco", "is_hot_dog": "no"}', "a result whose is_hot_dog is"),
    (b'{"type": "result", "id": 1, "category": "taco", "is_hot_dog": false, "repeat": 1.5}', "repeat is 1.5"),
    (b'{"type": "result", "id": 1, "category": "taco"}', "a result whose is_hot_dog is null"),
    (b'{"type": "session", "wall_s": "long"}', "a session whose wall_s"),
])
def test_a_line_of_the_wrong_shape_is_named_by_file_and_line(tmp_path, line, says):
    path = tmp_path / "j.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n" + line + b"\n" + b'{"type":"start","at":1}\n')
    with pytest.raises(JournalError) as e:
        read_journal(path)
    assert str(path) in str(e.value) and says in str(e.value) and "--resume" in str(e.value)


def test_lines_of_an_unknown_kind_are_skipped_and_listed(tmp_path):
    path = tmp_path / "j.jsonl"
    write_lines(path, [HEADER, {"type": "future-thing", "x": 1}, {"no": "type"},
                       {"type": "result", **res(1).to_json()}])
    state = read_journal(path)
    assert state.skipped == [2, 3] and list(state.results) == [(1, 0)]


class Disk:
    """os.write for the journal that fails with `err` from the n-th call on (or only for the calls listed)."""

    def __init__(self, monkeypatch, err=errno.ENOSPC, after=0, partial=True):
        self.calls, self.err, self.after, self.partial, self.full = 0, err, after, partial, True
        monkeypatch.setattr(journal_mod, "_os_write", self)

    def __call__(self, fd, data):
        self.calls += 1
        if self.full and self.calls > self.after:
            if self.partial and len(data) > 10 and self.calls == self.after + 1:
                return journal_mod.os.write(fd, bytes(data[:7]))  # a short write first, as a filling disk does
            raise OSError(self.err, journal_mod.os.strerror(self.err))
        return journal_mod.os.write(fd, data)


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS, errno.EIO])
def test_a_failed_write_is_undone_to_whole_lines_kept_and_retried(tmp_path, monkeypatch, err):
    path = tmp_path / "j.jsonl"
    disk = Disk(monkeypatch, err, after=2)
    failures = []

    async def main():
        j = Journal(path, on_failure=failures.append)
        j.header(model="m/a")
        j.start()
        done = []
        for i in range(5):
            assert j.result(res(i), then=lambda i=i: done.append(i))
        await asyncio.sleep(0)  # the loop iteration ends: the batch goes out and fails
        assert j.error is not None and j.error.errno == err and len(failures) == 1
        assert j.unsaved == 5 and done == []
        assert path.read_bytes().endswith(b"\n") and path.stat().st_size == j.size  # the short write was undone
        j.result(res(5), then=lambda: done.append(5))  # a request in flight came back: kept too, tried again
        await asyncio.sleep(0)
        assert j.unsaved == 6 and len(failures) == 1
        assert not await j.retry(0.3, every=0.05)  # still full
        disk.full = False  # room again
        assert await j.retry(0.3, every=0.05)
        assert j.unsaved == 0 and done == [0, 1, 2, 3, 4, 5]
        j.close()

    asyncio.run(main())
    assert sorted(i for i, _ in read_journal(path).results) == [0, 1, 2, 3, 4, 5]


def test_a_header_that_cannot_be_written_raises_and_leaves_an_empty_file(tmp_path, monkeypatch):
    Disk(monkeypatch, errno.ENOSPC, after=0)
    j = Journal(tmp_path / "j.jsonl")
    with pytest.raises(OSError) as e:
        j.header(model="m/a")
    assert e.value.errno == errno.ENOSPC
    j.close()
    assert (tmp_path / "j.jsonl").read_bytes() == b""


def test_the_last_defence_redacts_every_line(tmp_path):
    path = tmp_path / "j.jsonl"
    with Journal(path, redact=lambda b: b.replace(b"sk-SECRET-1", b"[REDACTED]")) as j:
        j.result(res(1, raw="echo sk-SECRET-1", error="Bearer sk-SECRET-1"))
    assert b"sk-SECRET-1" not in path.read_bytes() and b"[REDACTED]" in path.read_bytes()
