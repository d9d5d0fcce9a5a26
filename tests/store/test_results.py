import json
from pathlib import Path

import duckdb

from hotdogbench_core.store.journal import Journal, read_journal
from hotdogbench_core.stats.summary import summarize
from hotdogbench_core.store.results import PARQUET_SCHEMA, Result, write_results_parquet

REF = json.loads((Path(__file__).parents[1] / "fixtures" / "reference_bodies.json").read_text())


def test_summary_equals_reference_summarize():
    case = REF["summary_case"]
    results = [Result(**r) for r in case["results"]]
    assert summarize("openai/gpt-6-luna", results, case["wall"]) == case["summary"]


def test_parquet_has_reference_columns_and_types(tmp_path):
    rows = [Result(id=2, open_images_id=None, category="taco", is_hot_dog=False, pred=False, retries=["429", "503"]),
            Result(id=1, open_images_id="x", category="hot_dog", is_hot_dog=True, error="boom")]
    path = write_results_parquet(rows, tmp_path / "m.parquet")
    con = duckdb.connect()
    desc = con.sql(f"DESCRIBE SELECT * FROM '{path}'").fetchall()
    ref_cols = [k for k in REF["summary_case"]["results"][0]]
    assert [d[0] for d in desc][:len(ref_cols)] == ref_cols
    assert [d[0] for d in desc] == list(PARQUET_SCHEMA)
    got = con.sql(f"SELECT id, retries, pred, error FROM '{path}'").fetchall()
    assert got == [(1, "", None, "boom"), (2, "429,503", False, None)]  # sorted by id, retries joined


def test_journal_roundtrip_and_torn_last_line(tmp_path):
    p = tmp_path / "j" / "m.jsonl"
    with Journal(p) as j:
        j.header(model="m", dataset_sha256="abc")
        j.result(Result(id=1, open_images_id=None, category="c", is_hot_dog=True, pred=True, retries=["429"]))
        j.result(Result(id=2, open_images_id=None, category="c", is_hot_dog=False, pred=True))
        j.session(wall_s=1.5)
    with open(p, "ab") as f:
        f.write(b'{"type":"result","id":3,"categ')  # killed mid-write
    st = read_journal(p)
    assert st.header == {"model": "m", "dataset_sha256": "abc"}
    assert sorted(st.results) == [(1, 0), (2, 0)] and st.results[(1, 0)].retries == ("429",)
    assert st.sessions == [{"wall_s": 1.5}]


def test_journal_damage_in_the_middle_is_an_error(tmp_path):
    import pytest

    from hotdogbench_core.store.journal import JournalError
    p = tmp_path / "m.jsonl"
    p.write_text('{"type":"header"}\nnot json\n{"type":"session","wall_s":1}\n')
    with pytest.raises(JournalError, match="line 2"):
        read_journal(p)


def test_killed_session_wall_runs_to_its_last_result(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"type":"header"}\n{"type":"start","at":100.0}\n'
                 '{"type":"result","id":1,"open_images_id":null,"category":"c","is_hot_dog":true,"at":103.5}\n'
                 '{"type":"start","at":200.0}\n'
                 '{"type":"result","id":2,"open_images_id":null,"category":"c","is_hot_dog":true,"at":201.0}\n'
                 '{"type":"session","wall_s":4.25}\n')
    st = read_journal(p)
    assert [s["wall_s"] for s in st.sessions] == [3.5, 4.25]
    assert st.sessions[0]["stop_reason"] == "killed"


def test_results_of_one_loop_iteration_are_written_together_and_counted_after(tmp_path):
    import asyncio

    p = tmp_path / "m.jsonl"
    done = []

    errors = []

    async def main():
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context))
        j = Journal(p)
        for i in (1, 2, 3):
            j.result(Result(id=i, open_images_id=None, category="c", is_hot_dog=True, pred=True),
                     then=lambda i=i: done.append(i))
        assert done == [] and p.read_bytes() == b""  # buffered: not counted before it is in the OS's hands
        await asyncio.sleep(0)  # the end of this loop iteration
        assert done == [1, 2, 3] and len(p.read_bytes().splitlines()) == 3
        j.result(Result(id=4, open_images_id=None, category="c", is_hot_dog=True), then=lambda: done.append(4))
        j.close()  # closing in the same iteration writes it and counts it; the scheduled flush then does nothing
        assert done == [1, 2, 3, 4]
        await asyncio.sleep(0)

    asyncio.run(main())
    assert errors == []  # (a flush after close would raise in the loop's callback)
    assert sorted(read_journal(p).results) == [(1, 0), (2, 0), (3, 0), (4, 0)]
