"""States a run folder can be left in (a torn journal line, a corrupt summary.json, a journal line of the wrong
shape) and values that cannot be used: each is named, none costs a request it should not."""
import asyncio
import json
import math

import pytest

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.errors import FieldError
from hotdogbench_core.run.events import Notice
from hotdogbench_core.run.plan import plan_run
from hotdogbench_core.sim.app import SimConfig, Simulator, image_digest, labels_from_parquet
from hotdogbench_core.store.journal import JournalError, read_journal
from hotdogbench_core.store.rundir import RunDir
from hotdogbench_core.ui.cli import main
from hotdogbench_core.ui.notebook import sim_config

MODEL = "openai/gpt-6-luna"


@pytest.fixture
def setup(tmp_path):
    table = write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=4))
    ds = load_dataset(table)
    sim = Simulator(SimConfig(seed=6, latency_s=0.0), labels=labels_from_parquet(table)).start()
    yield ds, sim, RunSettings(api_key="sk-states", base_url=sim.base_url, start_concurrency=2, max_concurrency=2)
    sim.stop()


def run(ds, settings, out, **kw):
    return asyncio.run(run_models([MODEL], ds, settings, out=out, run_name="r", **kw))


def test_a_torn_last_line_is_cut_said_and_the_resume_asks_only_that_photo(setup, tmp_path):
    ds, sim, settings = setup
    run(ds, settings, tmp_path / "out")
    journal = RunDir(tmp_path / "out", "r").journal(MODEL)
    lines = journal.read_bytes().splitlines(keepends=True)
    results = [i for i, x in enumerate(lines) if b'"type":"result"' in x]
    last = results[-1]
    torn_id = json.loads(lines[last])["id"]
    # as a process killed mid-write leaves it: the last result half written, nothing after it
    journal.write_bytes(b"".join(lines[:last]) + lines[last][: len(lines[last]) // 2])
    notices = []
    before = sim.stats.requests
    res = run(ds, settings, tmp_path / "out", resume=True,
              on_event=lambda e: notices.append(e.text) if isinstance(e, Notice) else None)
    assert res.stopped is None and sim.stats.requests == before + 1  # only the photo whose line was torn
    assert any("its last line was unfinished" in n and ".torn-" in n for n in notices), notices
    assert len(read_journal(journal).results) == len(ds)
    assert [p.name for p in journal.parent.glob("*.torn-*")]
    digest = image_digest(next(p.image for p in ds.stream() if p.id == torn_id))
    assert len(sim.stats.by_digest[digest]) == 2
    run(ds, settings, tmp_path / "out", resume=True)  # and again: the journal stays whole
    assert sim.stats.requests == before + 1


@pytest.mark.parametrize("content", [b'{"not": "a list"}', b"garbage", b"[1, 2]", b""])
def test_a_corrupt_summary_does_not_block_a_resume(setup, tmp_path, content):
    ds, sim, settings = setup
    run(ds, settings, tmp_path / "out")
    rd = RunDir(tmp_path / "out", "r")
    rd.summary.write_bytes(content)
    notices = []
    res = run(ds, settings, tmp_path / "out", resume=True,
              on_event=lambda e: notices.append(e.text) if isinstance(e, Notice) else None)
    assert res.stopped is None and [s["model"] for s in json.loads(rd.summary.read_text())] == [MODEL]
    assert any("summary.json was not a list" in n and "moved aside" in n for n in notices)
    assert list(rd.path.glob("summary.json.bad-*"))[0].read_bytes() == content


def test_a_journal_line_of_the_wrong_shape_is_named_before_any_request(setup, tmp_path, capsys):
    ds, sim, settings = setup
    run(ds, settings, tmp_path / "out")
    journal = RunDir(tmp_path / "out", "r").journal(MODEL)
    lines = journal.read_text().splitlines()
    lines[2] = json.dumps({"type": "result", "id": "three", "category": "taco", "is_hot_dog": False})
    journal.write_text("\n".join(lines) + "\n")
    before = sim.stats.requests
    with pytest.raises(JournalError, match=f"{journal}: line 3: a result whose id is"):
        run(ds, settings, tmp_path / "out", resume=True)
    code = main(["run", "--models", MODEL, "--input", str(ds.path), "--base-url", sim.base_url, "--out",
                 str(tmp_path / "out"), "--run", "r", "--resume", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and f"{journal}: line 3" in err and "Traceback" not in err
    assert sim.stats.requests == before


@pytest.mark.parametrize("values, field", [
    ({"request_timeout": math.nan}, "request_timeout"), ({"request_timeout": math.inf}, "request_timeout"),
    ({"max_backoff_s": math.inf}, "max_backoff_s"), ({"repeats": math.nan}, "repeats"),
    ({"repeats": 2.5}, "repeats"), ({"start_concurrency": math.inf}, "start_concurrency"),
    ({"max_cost_usd": math.nan}, "max_cost_usd"), ({"max_cost_usd": -math.inf}, "max_cost_usd"),
    ({"max_cost_usd": "5"}, "max_cost_usd"),
])
def test_values_that_cannot_be_used_are_refused_with_their_field(tmp_path, values, field):
    with pytest.raises(FieldError) as e:
        plan_run(models=MODEL, dataset=None, target="simulator", out=tmp_path, run_name="r", **values)
    assert e.value.field == field


@pytest.mark.parametrize("knob", ["latency_s", "error_5xx", "drop_connection", "rate_per_s", "max_in_flight"])
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_the_notebooks_simulator_knobs_refuse_non_finite_numbers(knob, bad):
    with pytest.raises(ValueError, match=f"{knob} must be"):
        sim_config({knob: bad})
