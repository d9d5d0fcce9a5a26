"""RunDir: every file name under OUT/RUN in one place; model stems one-to-one; run names that cannot escape."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotdogbench_core.protocol.models import MODELS
from hotdogbench_core.store.rundir import STEM_BYTES, RunDir, RunNameError, model_stem


def test_ordinary_ids_keep_the_reference_file_names():
    for m in MODELS:
        assert model_stem(m) == m.replace("/", "__")
    assert model_stem("meta-llama/llama-3.2-11b-vision-instruct:free") == "meta-llama__llama-3.2-11b-vision-instruct:free"
    assert model_stem("hotdog-mock") == "hotdog-mock"  # no slash: as given


@pytest.mark.parametrize("a, b", [("a/b__c", "a__b/c"), ("a_/b", "a/_b"), ("a/b", "a__b"), ("x/y", "x/y/"),
                                  ("A/b c", "A/b_c"), ("../x", "__/x")])
def test_ids_that_collide_under_the_reference_rule_get_files_of_their_own(a, b):
    assert model_stem(a) != model_stem(b)
    rd = RunDir("out", "r")
    assert rd.journal(a) != rd.journal(b) and rd.results(a) != rd.results(b)


def test_stems_are_safe_file_names_within_the_length_limit():
    for m in ("x" * 300, "a/" + "é" * 200, "../../etc/passwd", "a\x00b", ".hidden/x", "/abs/x"):
        s = model_stem(m)
        assert "/" not in s and "\x00" not in s and not s.startswith(".")
        assert len((s + ".parquet.tmp").encode()) <= 255 and len(s.encode()) <= STEM_BYTES + 20


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="ab_/.:-~é", min_size=1, max_size=12), min_size=2, max_size=8, unique=True))
def test_stems_are_injective(ids):
    assert len({model_stem(m) for m in ids}) == len(ids)


@pytest.mark.parametrize("name", ["", " ", "a/b", "../escape", "/abs", ".", "..", ".hidden", "x\x00y", "r" * 300,
                                  " padded"])
def test_run_names_are_single_plain_folder_names(name):
    with pytest.raises(RunNameError, match="run_name: "):
        RunDir("out", name)


def test_file_names_live_here(tmp_path):
    rd = RunDir(tmp_path, "r1").create()
    assert rd.path == tmp_path / "r1" and rd.path.is_dir()
    assert (rd.summary.name, rd.pairs.name, rd.manifest.name, rd.offline_report.name) == \
        ("summary.json", "pairs.json", "manifest.json", "report_offline.html")
    assert rd.journal("openai/gpt-6-luna") == tmp_path / "r1" / "journal" / "openai__gpt-6-luna.jsonl"
    assert rd.results("openai/gpt-6-luna") == tmp_path / "r1" / "openai__gpt-6-luna.parquet"
    assert rd.summaries() is None and rd.models() == [] and not rd.has_results()
    rd.summary.write_text('{"not": "a list"}')
    assert rd.summaries() is None
    rd.summary.write_text('[{"model": "m/a"}]')
    assert rd.summaries() == [{"model": "m/a"}]
