"""benchmarks/compare_limiters.py swaps the default limiter for another version of paced.py on the live class: the
version it installs must be the one that runs (KeyMember included), and the live class must come back whole."""
import json
import sys

import pytest

from support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_families as bf  # noqa: E402
import compare_limiters as cl  # noqa: E402

from hotdogbench_core.limit import paced  # noqa: E402

DRAWS = [("strict", 1, "adaptive"), ("shared", 3, "adaptive")]  # one model alone; two on a key (KeyMember)


@pytest.fixture
def live_class():
    """The live PacedLimiter exactly as it was, after the test."""
    saved = dict(vars(paced.PacedLimiter))
    yield paced.PacedLimiter
    for name in [k for k in vars(paced.PacedLimiter) if k not in saved]:
        delattr(paced.PacedLimiter, name)
    for name, value in saved.items():
        if name not in ("__dict__", "__weakref__"):
            setattr(paced.PacedLimiter, name, value)


def test_the_working_tree_installed_runs_as_the_class_does(live_class):
    before = [bf.run_draw(job) for job in DRAWS]
    cl.install(cl.source("."))
    after = [bf.run_draw(job) for job in DRAWS]
    assert [(r["util"], r["throttled"], r["fair"]) for r in after] == \
        [(r["util"], r["throttled"], r["fair"]) for r in before]


def test_a_variant_installed_is_what_runs(live_class):
    before = [bf.run_draw(job) for job in DRAWS]
    text = cl.source(".")
    assert text.count("    BETA = 0.9") == 1
    cl.install(text.replace("    BETA = 0.9", "    BETA = 0.5") + "\n\nPacedLimiter.only_in_variant = True\n")
    assert live_class.BETA == 0.5
    varied = [bf.run_draw(job) for job in DRAWS]
    assert all(v["util"] != b["util"] for v, b in zip(varied, before))  # a member of a key runs it too
    cl.install(cl.source("."))  # and back: the variant's own attributes go with it
    assert live_class.BETA == 0.9 and not hasattr(live_class, "only_in_variant")
    assert [bf.run_draw(job)["util"] for job in DRAWS] == [r["util"] for r in before]


def test_compare_names_the_draws_that_moved():
    base = [{"family": "strict", "seed": s, "util": u, "throttled": 1.0, "fair": None, "params": f"p{s}", "down": None,
             "up": None, "lost": 0, "early": 0, "why": "", "util_late": u, "throttled_late": 0.5,
             "held": 0.0}
            for s, u in ((0, 80.0), (1, 95.0))]
    variant = [dict(base[0], util=92.0), dict(base[1], util=94.0, throttled=6.0, throttled_late=4.0)]
    out = cl.compare(base, variant, ["strict"], moved=1)
    variant_row = next(line for line in out.splitlines() if "| variant" in line)
    assert variant_row.replace(" ", "").endswith("|87.5|80.0|2.2|4.0|")  # after 10 s: utilization, then throttled
    assert "misses: base 1, variant 1 of 2 draws" in out  # 80% under 90; then 6% throttled over 5
    assert "strict seed 0: util 80.0 -> 92.0%" in out and "seed 1:" not in out
    assert "no draw's utilization moved" in cl.compare(base, base, ["strict"], moved=5)


def test_an_unknown_version_names_the_flag():
    with pytest.raises(SystemExit, match="--base/--variant 'no-such-rev'"):
        cl.source("no-such-rev")


def test_a_trace_follows_the_client_asked_for():
    out = cl.trace("processes", 6, client=1)
    sends = [line for line in out.splitlines() if line.startswith("  ") and line.split()[0].replace(".", "").isdigit()]
    assert "sends of client 1 of 2" in out and any(line.rstrip().endswith("REFUSED") for line in sends)
    assert out != cl.trace("processes", 6, client=0)
    with pytest.raises(SystemExit, match="has clients 0-1, not 2"):
        cl.trace("processes", 6, client=2)


def test_a_versions_results_are_kept_and_read_back(tmp_path, monkeypatch):
    text = cl.source(".")
    rows, kept = cl.run_cached(text, DRAWS, 1, tmp_path)
    assert not kept and len(list(tmp_path.glob("*.json"))) == 1 and not list(tmp_path.glob("*.part"))
    monkeypatch.setattr(cl, "run_version", lambda *args: pytest.fail("the kept results were run again"))
    again, kept = cl.run_cached(text, DRAWS, 1, tmp_path)
    assert kept and json.dumps(again) == json.dumps(rows)  # (json: a NaN is not equal to itself)
    with pytest.raises(pytest.fail.Exception):  # another version, other draws, or no cache: run
        cl.run_cached(text.replace("    BETA = 0.9", "    BETA = 0.5"), DRAWS, 1, tmp_path)
    with pytest.raises(pytest.fail.Exception):
        cl.run_cached(text, DRAWS[:1], 1, tmp_path)
    with pytest.raises(pytest.fail.Exception):
        cl.run_cached(text, DRAWS, 1, None)


def test_the_results_key_follows_the_code_the_draws_run(tmp_path, monkeypatch):
    for rel in ("hotdogbench_core/sim/capmodel.py", "hotdogbench_core/limit/paced.py", "benchmarks/scenarios.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    monkeypatch.setattr(cl, "REPO", tmp_path)
    key = cl.results_key("paced", DRAWS)
    (tmp_path / "hotdogbench_core/limit/paced.py").write_text("x = 2\n")  # the swapped module: only `text` counts
    assert cl.results_key("paced", DRAWS) == key
    for rel in ("hotdogbench_core/sim/capmodel.py", "benchmarks/scenarios.py"):
        (tmp_path / rel).write_text("x = 3\n")
        assert cl.results_key("paced", DRAWS) != key, rel
        key = cl.results_key("paced", DRAWS)
