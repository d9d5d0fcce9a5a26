"""The notebooks, headless: marimo check, `marimo export html` over a simulated run, `python notebook.py`.

They run from a copy of notebooks/ in a temporary folder, so marimo's session files and any output stay out
of the repository. A fake key is in the environment throughout, and must appear in no output.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hotdogbench_core.report.format import fmt
from hotdogbench_core.ui.notebook import OUT_ENV

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-test-SECRET"
MODELS = ["typesafe/jev-1.14", "openai/gpt-6-luna"]
pytestmark = pytest.mark.slow


def notebook_env(tmp: Path, key: bool = True) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENROUTER_API_KEY", "OPENROUTER_TOKEN", "OPENROUTER_BASE_URL", OUT_ENV)}
    if key:
        env["OPENROUTER_API_KEY"] = SECRET
    env[OUT_ENV] = str(tmp / "default_out")  # whatever is written without --out would land here
    return env


def marimo(*args, cwd: Path, env: dict, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "marimo", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def outputs(html: str) -> list[dict]:
    """The cell outputs an exported notebook carries (its session snapshot)."""
    start = html.index('"session": ') + len('"session": ')
    session, _ = json.JSONDecoder().raw_decode(html[start:])
    return session["cells"]


def files_containing(root: Path, needle: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("notebooks")
    shutil.copytree(REPO / "notebooks", work / "notebooks", ignore=shutil.ignore_patterns("__marimo__"))
    return work


@pytest.fixture(scope="module")
def exported_run(work):
    """`marimo export html notebooks/run.py -- --simulate --models ...`: a simulated run, headless."""
    out = work / "out"
    proc = marimo("export", "html", "notebooks/run.py", "-o", str(work / "run.html"), "--", "--simulate",
                  "--models", ",".join(MODELS), "--out", str(out), "--run", "nb", cwd=work, env=notebook_env(work))
    return proc, work / "run.html", out


def test_marimo_check_is_clean():
    proc = subprocess.run([sys.executable, "-m", "marimo", "check", "--strict", "notebooks/run.py",
                           "notebooks/report.py"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in (proc.stdout + proc.stderr).lower()


def test_run_notebook_exports_a_simulated_run(exported_run):
    proc, html_path, out = exported_run
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    summary = json.loads((out / "nb" / "summary.json").read_text())
    assert [s["model"] for s in summary] == MODELS and all(s["answered"] > 60 for s in summary)
    html = html_path.read_text()
    cells = outputs(html)
    text = json.dumps(cells)
    assert "vnd.marimo+traceback" not in text and "vnd.marimo+error" not in text
    assert text.count("marimo-progress") >= 2 and "photos/s" in text  # a progress bar per model
    assert "Results: <code>nb</code> (finished)" in text and 'data-verdict=\\"done\\"' in text  # each model done
    assert "Accuracy by category" in text and "vnd.vegalite" in text  # the report's sections, charts included
    assert "Download summary.json" in text
    for m in MODELS:
        assert m in text


def test_report_notebook_exports_every_model_and_an_offline_copy(exported_run, work):
    _, _, out = exported_run
    report = out / "nb" / "report.html"
    proc = marimo("export", "html", "notebooks/report.py", "-o", str(report), "--", "--out", str(out), "--run", "nb",
                  cwd=work, env=notebook_env(work))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    text = json.dumps(outputs(report.read_text()))
    for s in json.loads((out / "nb" / "summary.json").read_text()):
        assert s["model"] in text and f"{s['accuracy']:.1%}" in text
        assert f"{s['latency_p50_s']:.3f}" in text and fmt(s["cost_per_1000_photos_usd"], "usd") in text
    assert len(re.findall(r"vnd\.vegalite\.v\d\+json", text)) >= 6  # the charts travel with the export
    assert "vnd.marimo+traceback" not in text
    for tab in ("How many photos a claim needs", "Agreement between models", "Calibration",
                "Bootstrap beside the closed-form intervals"):  # issue 16's sections, as tabs
        assert tab in text, tab
    offline = out / "nb" / "report_offline.html"
    assert offline.is_file() and offline.read_text().count("<svg") >= 6


def test_the_key_appears_in_no_output(exported_run, work):
    _, html_path, _ = exported_run
    assert html_path.is_file()
    assert files_containing(work, SECRET) == []  # exports, session snapshots, run files, offline report


def test_plain_python_run_launches_nothing(tmp_path):
    shutil.copy(REPO / "notebooks" / "run.py", tmp_path / "run.py")
    proc = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, env=notebook_env(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (tmp_path / "default_out").exists()  # no run folder: nothing was sent
    assert SECRET not in proc.stdout + proc.stderr


@pytest.mark.parametrize("name", ["../escape"])
def test_the_run_name_field_goes_through_plan_run(work, tmp_path, name):
    """--run fills the Run name field; plan_run refuses a name that is not one folder, and nothing is written."""
    out = tmp_path / "out"
    html = tmp_path / "bad.html"
    proc = marimo("export", "html", "notebooks/run.py", "-o", str(html), "--", "--simulate", "--models",
                  MODELS[0], "--out", str(out), "--run", name, cwd=work, env=notebook_env(work))
    text = json.dumps(outputs(html.read_text()))
    assert "Not ready to run" in text and "Run name: " in text and "must be a plain folder name" in text, \
        proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not out.exists() and not (tmp_path / "escape").exists()
