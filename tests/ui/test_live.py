"""Live run state, plans and runs started from them, notebook arguments, thumbnails."""
import io

import pytest

from support.tables import make_rows, write_table
from hotdogbench_core import load_dataset
from hotdogbench_core.store.dataset import SAMPLE
from hotdogbench_core.ui import notebook as nbargs
from hotdogbench_core.limit.aimd import LimitChange
from hotdogbench_core.run.live import LiveRun, ModelLive
from hotdogbench_core.run.events import LimitChanged, ModelFinished, ModelStarted, PhotoDone
from hotdogbench_core.store.results import Result
from hotdogbench_core.report.thumbs import image_data_uri, preview_ids, thumbnails


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _res(i):
    return Result(id=i, open_images_id=None, category="taco", is_hot_dog=False, pred=False)


def test_live_state_from_events():
    clock = Clock()
    live = LiveRun(["m/a", "m/b"], 10, clock=clock)
    assert [s["state"] for s in live.status().values()] == ["waiting", "waiting"] and not live.finished
    live.models["m/a"].limit = 8  # what on_model copies from the limiter
    live.on_event(ModelStarted("m/a", 10, 2))  # resumed: 2 already done
    clock.t += 2
    live.on_event(PhotoDone("m/a", _res(1), 6, 10))
    live.on_event(PhotoDone("m/a", Result(id=2, open_images_id=None, category="taco", is_hot_dog=False,
                                          error="404: no endpoints"), 6, 10))
    live.on_event(LimitChanged("m/a", LimitChange(1.5, 16, "slow start")))
    a = live.models["m/a"]
    assert a.rate(clock()) == pytest.approx(2.0)  # 4 photos this session in 2 s
    assert a.eta_s(clock()) == pytest.approx(2.0)
    assert "2.0 photos/s" in a.subtitle(clock()) and "~2 s left" in a.subtitle(clock())
    trace = live.trace_frame()
    assert trace.rows() == [("m/a", 0.0, 8), ("m/a", 1.5, 16), ("m/a", 2.0, 16)]  # reaches to now
    live.on_event(ModelFinished("m/a", {"model": "m/a"}))
    live.on_event(ModelStarted("m/b", 10, 0))
    live.on_event(ModelFinished("m/b", {"model": "m/b", "stopped": "fatal: 401"}))
    status = live.status()
    assert [s["state"] for s in status.values()] == ["done", "stopped"] and live.finished
    assert (status["m/a"]["answered"], status["m/a"]["errors"], status["m/a"]["first_error"]) == \
        (1, 1, "404: no endpoints")
    assert status["m/b"]["stop_reason"] == "fatal: 401" and status["m/a"]["trace"][:2] == [[0.0, 8], [1.5, 16]]
    assert ModelLive("m/c", 5).subtitle(0) == "waiting" and ModelLive("m/c", 5).eta_s(0) is None


@pytest.fixture
def small(tmp_path):
    return load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=4)))


def test_run_args(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.delenv("OPENROUTER_TOKEN", raising=False)
    monkeypatch.delenv(nbargs.OUT_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    a = nbargs.run_args({})
    assert (a.go, a.target, a.models, str(a.out)) == (False, "simulator", None, "out")  # no key: the simulator
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-test-SECRET")
    monkeypatch.setenv(nbargs.OUT_ENV, str(tmp_path / "o"))
    a = nbargs.run_args({})
    assert (a.go, a.target, a.out) == (False, "openrouter", tmp_path / "o")
    a = nbargs.run_args({"simulate": "", "models": "cheap", "out": "x", "start-concurrency": 3, "run": "r"})
    assert (a.go, a.target, a.models, str(a.out), a.start_concurrency, a.run) == (True, "simulator", "cheap", "x", 3,
                                                                                   "r")
    assert nbargs.run_args({"base-url": "http://h:1"}).target == "base_url"
    assert nbargs.run_args({"max-cost-usd": "2.5"}).max_cost_usd == 2.5 and a.max_cost_usd is None


def test_report_args_and_models(monkeypatch):
    monkeypatch.delenv(nbargs.OUT_ENV, raising=False)
    r = nbargs.report_args({"out": "o", "run": ["a", "b,c"]})
    assert (str(r.out), r.runs, r.offline) == ("o", ["a", "b", "c"], True)
    assert nbargs.report_args({}).runs == [] and not nbargs.report_args({}).offline
    assert not nbargs.report_args({"run": "a", "offline": "no"}).offline
    picked, other = nbargs.split_models("cheap, openai/gpt-6-luna, x/y")
    assert picked == ["preset: cheap (4 models)", "openai/gpt-6-luna"] and other == "x/y"
    values = [nbargs.model_options()[p] for p in picked]
    assert nbargs.chosen_models(values, "x/y, openai/gpt-6-luna")[-1] == "x/y"
    assert nbargs.chosen_models([], " ") == []
    with pytest.raises(ValueError):
        nbargs.chosen_models([], "noslash")


def test_dataset_sources(tmp_path):
    assert nbargs.source_for(None) == "sample" and nbargs.source_for(str(SAMPLE)) == "sample"
    assert nbargs.source_for(nbargs.DATA_URL) == "public" and nbargs.source_for("x.parquet") == "path"
    assert len(nbargs.open_dataset("sample")) == len(load_dataset(SAMPLE))
    table = write_table(tmp_path / "t.parquet", make_rows(n_per_cat=2))
    assert len(nbargs.open_dataset("path", str(table))) == 7
    up = nbargs.open_dataset("upload", upload=("my table.parquet", table.read_bytes()), data_dir=tmp_path / "d")
    assert up.path.parent == tmp_path / "d" / "uploads" and up.path.name.endswith("-my_table.parquet")
    assert nbargs.save_upload("my table.parquet", table.read_bytes(), tmp_path / "d") == up.path  # same bytes
    for source, kw in (("path", {}), ("upload", {}), ("nope", {})):
        with pytest.raises(ValueError):
            nbargs.open_dataset(source, **kw)


def test_sim_config_from_knobs():
    c = nbargs.sim_config({"max_in_flight": 0, "rate_per_s": 5, "latency_s": 0.1, "unknown": 1})
    assert (c.max_in_flight, c.rate_per_s, c.latency_s, c.error_5xx) == (None, 5, 0.1, 0.01)
    assert nbargs.sim_config().max_in_flight == 40  # the demo's cap


def test_thumbnails():
    from PIL import Image

    ds = load_dataset(SAMPLE)
    ids = preview_ids(ds, 10)
    assert len(ids) == 10 and len({ds.photos[[p.id for p in ds.photos].index(i)].category for i in ids}) == 10
    thumbs = thumbnails(ds, ids[:3], 32)
    assert set(thumbs) == set(ids[:3]) and all(u.startswith("data:image/") for u in thumbs.values())
    buf = io.BytesIO()
    Image.new("RGB", (400, 200), "red").save(buf, "JPEG")
    small = image_data_uri(buf.getvalue(), 64)
    assert small.startswith("data:image/jpeg;base64,") and len(small) < len(buf.getvalue())
    assert image_data_uri(b"\xff\xd8\xffnot really").startswith("data:image/jpeg;base64,")  # unreadable: as is
    assert thumbnails(None, [1]) == {}




def test_run_args_carry_the_max_rate_as_typed():
    assert nbargs.run_args({"max-rate": "20/min"}).max_rate == "20/min" and nbargs.run_args({}).max_rate is None


@pytest.mark.parametrize("flag, value", [("start-concurrency", "nan"), ("max-concurrency", "1.5"),
                                         ("max-cost-usd", "inf"), ("max-cost-usd", "nan"), ("start-concurrency", "x")])
def test_run_args_name_a_number_that_cannot_be_used(flag, value):
    from hotdogbench_core.errors import FieldError

    with pytest.raises(FieldError) as e:
        nbargs.run_args({flag: value})
    assert e.value.field == flag.replace("-", "_") and repr(value) in str(e.value)
