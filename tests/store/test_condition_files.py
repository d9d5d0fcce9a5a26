"""The files of a condition: one journal and parquet per (model, condition), the reference's plain."""
import polars as pl

from hotdogbench_core.store.conditioned import CONDITION_SCHEMA, ConditionResult
from hotdogbench_core.store.journal import Journal, read_journal
from hotdogbench_core.store.results import PARQUET_SCHEMA, Result, write_results_parquet
from hotdogbench_core.store.rundir import STEM_BYTES, RunDir, arm_stem, model_stem


def test_arm_stems_are_one_to_one_and_fit():
    models = ["a/b", "a__b", "a/b@c", "x/" + "y" * 195, "x/" + "y" * 300]
    stems = {(m, c): arm_stem(m, c) for m in models for c in (None, "small", "s" * 40)}
    assert len(set(stems.values())) == len(stems)
    assert all(arm_stem(m, None) == arm_stem(m, "reference") == model_stem(m) for m in models)
    assert arm_stem("a/b", "small") == "a__b@small"
    assert all(len(s.encode()) <= STEM_BYTES for s in stems.values())


def test_a_condition_journal_keeps_what_was_sent(tmp_path):
    rd = RunDir(tmp_path, "r").create()
    res = ConditionResult(id=3, open_images_id=None, category="taco", is_hot_dog=False, pred=False,
                          condition="small", image_sha256="ab" * 32, image_width=64, image_height=48, image_bytes=900)
    with Journal(rd.journal("a/b", "small")) as j:
        j.header(model="a/b", condition={"name": "small", "spec": {"px": 64}}, dataset_sha256="d")
        j.result(res)
    with Journal(rd.journal("a/b")) as j:
        j.header(model="a/b", dataset_sha256="d")
        j.result(Result(id=3, open_images_id=None, category="taco", is_hot_dog=False))
    back = read_journal(rd.journal("a/b", "small")).results[(3, 0)]
    assert isinstance(back, ConditionResult) and back == res
    assert type(read_journal(rd.journal("a/b")).results[(3, 0)]) is Result
    assert rd.arms() == {("a/b", "reference"): rd.journal("a/b"), ("a/b", "small"): rd.journal("a/b", "small")}
    assert rd.journals() == {"a/b": rd.journal("a/b")}  # a plain run's view: the reference's journals
    path = write_results_parquet([back], rd.results("a/b", "small"), CONDITION_SCHEMA)
    frame = pl.read_parquet(path)
    assert frame.columns[:len(PARQUET_SCHEMA)] == list(PARQUET_SCHEMA)
    assert frame.row(0, named=True)["image_sha256"] == "ab" * 32 and frame["image_width"][0] == 64
