"""The run notebook in a real browser: `marimo edit notebooks/run.py`, choose, press Run, watch, see results."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from support.browser import chromium, require_chromium
from hotdogbench_core.ui.notebook import OUT_ENV

REPO = Path(__file__).resolve().parents[2]
MODELS = ["typesafe/jev-1.14", "openai/gpt-6-luna"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def editor(tmp_path):
    """`marimo edit notebooks/run.py --headless --no-token` on a free port, from a copy of the notebook (with
    the project's marimo settings), writing runs under tmp_path/out. Stopped at the end."""
    require_chromium()
    work = tmp_path / "work"
    (work / "notebooks").mkdir(parents=True)
    shutil.copy(REPO / "notebooks" / "run.py", work / "notebooks" / "run.py")
    shutil.copy(REPO / "pyproject.toml", work / "pyproject.toml")  # [tool.marimo]: run the cells on open
    env = {k: v for k, v in os.environ.items() if k not in ("OPENROUTER_API_KEY", "OPENROUTER_TOKEN")}
    env[OUT_ENV] = str(tmp_path / "out")
    port = free_port()
    log = open(tmp_path / "marimo.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "marimo", "edit", "notebooks/run.py", "--headless", "--no-token",
                             "--port", str(port), "--host", "127.0.0.1"], cwd=work, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("marimo edit did not start:\n" + (tmp_path / "marimo.log").read_text()[-3000:])
            time.sleep(0.3)
        yield url, tmp_path / "out"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        log.close()


@pytest.mark.slow
def test_choose_simulator_and_two_models_run_and_see_results(editor, tmp_path):
    url, out = editor
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.set_default_timeout(90_000)
        page.goto(url)
        page.get_by_text("5. Estimated cost").wait_for()  # every cell ran; nothing sent yet
        assert not out.exists()
        page.get_by_text("Simulator (no key, no network)", exact=True).click()
        latency = page.locator("input").and_(page.get_by_label("median latency, s"))
        latency.fill("0.05")  # a quicker simulated provider: the test watches the run, it needn't wait long
        latency.press("Enter")
        page.locator("marimo-multiselect button[aria-haspopup]").first.click()
        for m in MODELS:
            page.get_by_role("option", name=m, exact=True).click()
        page.keyboard.press("Escape")
        page.get_by_text(re.compile(r"66 photos × 2 model\(s\)")).wait_for()
        page.get_by_role("button", name="Run", exact=True).click()
        progress = page.get_by_text(re.compile(r"\b\d+ / 66\b")).first
        progress.wait_for()
        progress.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "run_progress.png"))
        chart = page.locator(".hdb-accuracy canvas, .hdb-accuracy svg").first
        chart.wait_for(timeout=120_000)
        page.locator(".hdb-accuracy").first.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(tmp_path / "run_results.png"))
        box = chart.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 50
    runs = [p for p in out.iterdir() if (p / "summary.json").is_file()]
    assert len(runs) == 1
    assert {p.name for p in runs[0].glob("*.parquet")} == {m.replace("/", "__") + ".parquet" for m in MODELS}
