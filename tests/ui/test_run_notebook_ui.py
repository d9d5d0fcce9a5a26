"""The run notebook in a real Chromium, as a user drives it: `marimo edit notebooks/run.py` (and `marimo run`).

Each test opens its own copy of the notebook (a fresh kernel) from one `marimo edit` server over a folder of
copies, with the simulator as the target, and checks what the page shows and what the run's files hold (the
journal: every photo of every model once; live.json). Runs write under one OUT shared by the tests, so every
test ends its run (finished or stopped) before it returns. Screenshots go to $HOTDOGBENCH_SHOTS (a temp folder
by default); a failing test saves one of its page there too.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from support.browser import chromium, require_chromium
from support.cli import cli_env
from support.marimo import (clipping, full_page_screenshot, hidden_outputs, kill_runs, marimo_server,
                            outputs_text, wait_idle)
from support.waiting import wait_until
from hotdogbench_core.sim.app import SimConfig, Simulator, labels_from_parquet
from hotdogbench_core.store.dataset import SAMPLE
from hotdogbench_core.store.rundir import RunDir
from hotdogbench_core.ui.notebook import OUT_ENV

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
JEV, LUNA, HAIKU = "typesafe/jev-1.14", "openai/gpt-6-luna", "anthropic/claude-haiku-5.5"
CHEAP = "preset: cheap (4 models)"
PHOTOS = 66  # the bundled sample, with its two unscored extras


# -- the server, the pages -------------------------------------------------------------------------------------
def _work(root: Path) -> tuple[Path, dict]:
    work = root / "work"
    (work / "nb").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", work / "pyproject.toml")  # [tool.marimo]: the cells run on open
    shutil.copy(REPO / "notebooks" / "notebooks.css", work / "nb" / "notebooks.css")
    env = cli_env(**{OUT_ENV: str(root / "out")})
    return work, env


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One `marimo edit` server over a folder of notebook copies (each test opens its own: its own kernel).
    --session-ttl: a closed test tab's kernel ends 30 s later instead of lingering."""
    require_chromium()
    root = tmp_path_factory.mktemp("ui")
    work, env = _work(root)
    with marimo_server("edit", "nb", work, env, ["--session-ttl", "30"], root / "marimo-edit.log") as url:
        try:
            yield url, work / "nb", root / "out"
        finally:
            kill_runs(root / "out")


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    path = Path(os.environ.get("HOTDOGBENCH_SHOTS") or tmp_path_factory.mktemp("shots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


class Pages:
    """The notebook pages of the module's tests. shared(): one page (one kernel) the tests take turns on, each
    setting every field it relies on (a fresh kernel per test costs ~10 s); fresh(): a page of its own."""

    def __init__(self, url: str, folder: Path, out: Path, browser):
        self.url, self.folder, self.out, self.browser = url, folder, out, browser
        self.current: object | None = None
        self.opened: list = []

    def open(self, copy: str, wait: bool = True):
        if not (self.folder / copy).exists():
            shutil.copy(REPO / "notebooks" / "run.py", self.folder / copy)
        page = self.browser.new_page(viewport={"width": 1300, "height": 1000})
        page.set_default_timeout(60_000)
        page.goto(f"{self.url}/?file={copy}")
        page.get_by_text("No run in progress.", exact=True).or_(
            page.get_by_role("heading", name=re.compile(r"^In progress: "))).first.wait_for()
        if wait:
            wait_idle(page, 60_000)
        self.opened.append(page)
        return page

    def fresh(self):
        """A page on a kernel nothing has happened in: the shared one if no test has used it yet."""
        return self.shared() if self.current is None else self.open("fresh.py")

    def shared(self):
        if self.current is None or self.current.is_closed():
            self.current = self.open("shared.py")
        return self.current

    def reopen(self):
        """The shared notebook in a new tab (its old tab closed): `marimo edit` resumes the same session."""
        self.current = self.open("shared.py", wait=False)
        return self.current


@pytest.fixture(scope="module")
def pages(served, browser):
    url, folder, out = served
    p = Pages(url, folder, out, browser)
    yield p
    for page in p.opened:
        if not page.is_closed():
            page.close()


@pytest.fixture
def nb(pages, shots, request):
    """The tests' handle on the pages; a failing test leaves a screenshot of the pages it could see."""
    yield pages
    if getattr(request.node, "failed_call", False):
        for i, page in enumerate(p for p in pages.opened if not p.is_closed()):
            try:
                full_page_screenshot(page, shots / f"FAILED-{request.node.name}-{i}.png")
            except Exception:  # a page in the middle of closing
                pass
        kill_runs(pages.out)  # the next test must not find this one's run going on


# -- what a user does ------------------------------------------------------------------------------------------
def field(page, label):
    return page.locator("input").and_(page.get_by_label(label, exact=True))


def set_value(page, label, value, exact=False):
    """Type into a text or number field and press Enter (a number's accessible name is not exact)."""
    box = page.locator("input").and_(page.get_by_label(label, exact=exact))
    box.fill(str(value))
    box.press("Enter")


def choose_models(page, *wanted: str):
    """Pick exactly these entries of the models list (others, the default preset too, are unpicked)."""
    page.locator("marimo-multiselect button[aria-haspopup]").first.click()
    options = page.locator("[cmdk-item][role=option]")
    options.first.wait_for()
    for i in range(options.count()):
        option = options.nth(i)
        picked = option.locator("svg.lucide-check").count() > 0  # a picked entry has a check mark
        if (option.get_attribute("data-value") in wanted) != picked:
            option.click()
    page.keyboard.press("Escape")


def target(page, label):
    radio = page.get_by_role("radio", name=label, exact=True)
    if not radio.is_checked():
        page.get_by_text(label, exact=True).click()
        wait_idle(page)


def simulator(page, *, latency=None, rate=None, cap=None, errors=0.0):
    """The simulator's knobs. rate: requests per second, which sets how long a run takes (66 photos / rate)."""
    for label, value in (("median latency, s", latency), ("requests per second (0 = no limit)", rate),
                         ("hidden in-flight cap (0 = none)", cap), ("5xx rate", errors)):
        if value is not None:
            set_value(page, label, value)


def prepare(page, *models: str, other: str = "", name: str | None = None, latency=0.4, rate=0, cap=40):
    """Set every field a test relies on (the shared page keeps what the last test typed): the models, the
    other ids, the simulator (latency; rate: requests per second, which sets how long a run takes; the hidden
    in-flight cap), and the run name (a new one when not given). Waits for the page to settle."""
    target(page, "Simulator (no key, no network)")
    choose_models(page, *models)
    set_value(page, "Other model ids", other, exact=True)
    simulator(page, latency=latency, rate=rate, cap=cap)
    name = name or f"t{time.strftime('%H%M%S')}-{time.monotonic_ns() % 10_000}"
    set_value(page, "Run name", name, exact=True)
    # the Run section says what Run will start: wait until it says these settings (the kernel has them all)
    said = f"{f'in-flight cap {cap}' if cap else 'no in-flight cap'}, " \
           f"{f'{rate:g} requests/s' if rate else 'no rate limit'}, median latency {latency:g} s"
    n = len(models) + len([m for m in other.split(",") if m.strip()])
    page.get_by_text(re.compile(rf"{PHOTOS} photos × {n} model\(s\) → .*{re.escape(name)}.*{re.escape(said)}")) \
        .first.wait_for()
    wait_idle(page)
    return name


def run_name(page) -> str:
    return field(page, "Run name").input_value()


def press(page, label):
    button = page.get_by_role("button", name=label, exact=True)
    button.click()
    return button


def results_heading(page, name):
    return page.get_by_role("heading", name=re.compile(rf"^Results: {re.escape(name)}\b"))


def in_progress(page, name):
    return page.get_by_role("heading", name=re.compile(rf"^In progress: {re.escape(name)}\b"))


def bar(page, model):
    """The model's bar in the live panel (the results draw bars too, as .hdb-outcome)."""
    return page.locator(f'.hdb-live .hdb-bar[data-model="{model}"]')


# -- what the files hold ---------------------------------------------------------------------------------------
def journal(out: Path, name: str) -> dict[str, list[tuple[int, int]]]:
    """model -> every result line of its journal as (photo id, repeat), in order: a photo asked twice that
    was journaled twice shows twice."""
    rundir = RunDir(out, name)
    return {model: [(o["id"], o.get("repeat", 0)) for o in map(json.loads, path.read_text().splitlines())
                    if o.get("type") == "result"]
            for model, path in rundir.journals().items()}


def sessions(out: Path, name: str) -> dict[str, int]:
    """model -> how many sessions (starts) its journal records."""
    rundir = RunDir(out, name)
    return {model: sum(1 for line in path.read_text().splitlines() if json.loads(line).get("type") == "start")
            for model, path in rundir.journals().items()}


def settled(out, name) -> int:
    return sum(map(len, journal(out, name).values())) if (out / name / "journal").is_dir() else 0


def live(out: Path, name: str) -> dict:
    try:
        return json.loads((out / name / "live.json").read_text())
    except (OSError, ValueError):
        return {}


def every_photo_once(out, name, models):
    photos = journal(out, name)
    assert set(photos) == set(models), photos.keys()
    for model, keys in photos.items():
        assert len(keys) == len(set(keys)) == PHOTOS, (model, len(keys), len(set(keys)))


def wait_ended(out, name, timeout=90.0):
    """The run's process is done (live.json's final state); the page may take a poll to follow."""
    return wait_until(lambda: live(out, name).get("state") in ("done", "stopped", "failed") and live(out, name),
                      timeout, f"{name} to end")


# -- the cases -------------------------------------------------------------------------------------------------
def test_fresh_page_is_quiet_sends_nothing_and_says_errors_beside_their_field(nb, shots):
    page = nb.fresh()
    body = page.inner_text("body").lower()
    assert "ancestor" not in body and "nothing has been sent" not in body  # no mo.stop anywhere
    assert page.get_by_text(CHEAP).first.is_visible()  # the simulator's default: the cheap preset
    assert page.get_by_role("button", name="Run", exact=True).is_enabled()
    assert not any(nb.out.glob("*/journal"))  # nothing started before Run
    text = outputs_text(page)
    assert "USD per photo" in text and "estimated cost (USD)" in text and not re.search(r"\de-0\d", text)
    full_page_screenshot(page, shots / "fresh_page.png")
    set_value(page, "Other model ids", "foo", exact=True)  # not an id: said under the field, in the form's words
    error = page.locator(".hdb-field-error", has_text="'foo' is neither a preset")
    error.wait_for()
    below = error.bounding_box()["y"] - sum(field(page, "Other model ids").bounding_box()[k] for k in ("y", "height"))
    assert 0 <= below < 40 and "--models" not in error.inner_text()
    assert page.get_by_role("button", name="Run", exact=True).is_disabled()
    set_value(page, "Other model ids", "", exact=True)
    error.wait_for(state="detached")
    page.get_by_role("button", name="Conditions: image size, JPEG quality, question, provider").click()  # folded
    box = page.get_by_label("Conditions (optional)")
    box.fill("small=px:tiny")
    box.blur()
    page.locator(".hdb-field-error", has_text="small").wait_for()  # said under the box, naming the condition
    assert page.get_by_role("button", name="Run", exact=True).is_disabled()
    box.fill("")
    box.blur()
    page.locator(".hdb-field-error").first.wait_for(state="detached")


def test_widget_changed_mid_run_changes_the_next_run_and_results_stay(nb, shots):
    page, out = nb.shared(), nb.out
    first = prepare(page, JEV, latency=0.05)
    press(page, "Run")
    results_heading(page, first).wait_for(timeout=90_000)  # a finished run: its results are on the page
    name = prepare(page, LUNA, rate=4)  # 66 photos at 4/s: about 16 s, long enough to change things on a busy machine
    press(page, "Run")
    wait_until(lambda: settled(out, name) > 5, what="photos settled")
    simulator(page, latency=0.3)  # a simulator knob, mid-run
    set_value(page, "Run name", "third", exact=True)  # and the run name
    page.get_by_text("changes to the form apply to the next run", exact=False).first.wait_for()
    page.get_by_text(re.compile(rf"You changed, for the next run: .*Run name: {name} → third")).wait_for()
    assert page.get_by_text(re.compile(r"Simulator, median latency, s: 0\.4 → 0\.3")).is_visible()
    assert results_heading(page, first).is_visible()  # the last finished run's results stay during the run
    assert in_progress(page, name).is_visible()
    argv = live(out, name)["launch"]["argv"]
    assert json.loads(argv[argv.index("--sim-config") + 1])["latency_s"] == 0.4  # the run keeps its settings
    full_page_screenshot(page, shots / "widget_changed_mid_run.png")
    wait_ended(out, name)
    results_heading(page, name).wait_for()  # when it ends, its results replace the first's
    page.wait_for_timeout(1000)
    text = outputs_text(page)
    assert "Nothing has been sent" not in text and "already holds results" not in text
    assert not (out / "third").exists()  # the changes started nothing
    every_photo_once(out, name, [LUNA])
    assert live(out, name)["state"] == "done"


def test_run_pressed_twice_quickly_starts_one_run(nb):
    page, out = nb.shared(), nb.out
    # 66 photos at 12/s: about 5.5 s, so the page sees the run going however slow the machine (at no rate limit
    # it could end in under a second, before the page's watcher noticed it had started, and Stop never showed)
    name = prepare(page, JEV, latency=0.05, rate=12)
    run = page.get_by_role("button", name="Run", exact=True)
    run.scroll_into_view_if_needed()  # mouse coordinates are the viewport's
    box = run.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.dblclick(x, y)  # a double click...
    page.wait_for_timeout(150)
    page.mouse.click(x, y)  # ...and a third press where Run was (by now it may be Stop: a double click's Stop)
    page.get_by_role("button", name="Stop", exact=True).wait_for()  # Run became Stop
    assert page.get_by_role("button", name="Run", exact=True).count() == 0
    wait_ended(out, name)
    results_heading(page, name).wait_for()
    page.wait_for_timeout(800)
    assert sessions(out, name) == {JEV: 1}  # one process ran
    every_photo_once(out, name, [JEV])
    assert live(out, name)["state"] == "done"  # not stopped by the extra clicks
    text = outputs_text(page)
    assert "already holds results" not in text and "None" not in text.split() and "waiting" not in text
    # Run again for that name: it offers a new name; the results stay
    assert page.get_by_role("button", name="Run under a new name").is_visible()
    assert results_heading(page, name).is_visible()


def test_unknown_model_said_beside_the_field_or_failed_out_loud_beside_its_bar(nb, shots):
    page, out = nb.shared(), nb.out
    # The simulator lists its models: foo/bar is refused beside the Models field before anything is sent.
    prepare(page, JEV, latency=0.05)
    set_value(page, "Other model ids", "foo/bar", exact=True)
    error = page.locator(".hdb-field-error", has_text="'foo/bar' is not among the 10 models the server lists")
    error.wait_for()
    assert page.get_by_role("button", name="Run", exact=True).is_disabled()
    assert "--models" not in error.inner_text()
    # A server that lists nothing (another base URL): foo/bar is asked, every photo a 404, and it fails fast
    # (first, so its bar is seen while typesafe/jev runs: 66 photos at 20/s).
    with Simulator(SimConfig(models_listing="none", rate_per_s=20, latency_s=0.05),
                   labels=labels_from_parquet(SAMPLE)) as server:
        target(page, "Another base URL")
        set_value(page, "Base URL", server.base_url, exact=True)
        choose_models(page)
        set_value(page, "Other model ids", f"foo/bar, {JEV}", exact=True)
        name = f"t{time.strftime('%H%M%S')}-404"
        set_value(page, "Run name", name, exact=True)
        page.get_by_text(re.compile(rf"{PHOTOS} photos × 2 model\(s\) → .*{name} via {server.base_url}")).wait_for()
        wait_idle(page)
        press(page, "Run")
        bad = bar(page, "foo/bar")
        bad.locator(".hdb-errors", has_text="No endpoints found for foo/bar").wait_for(timeout=90_000)
        assert bad.get_attribute("data-verdict") == "failed"  # red, never done or green
        assert "failed: no answers" in bad.locator(".hdb-state").inner_text()
        assert "stopped early: fail fast" in bad.locator(".hdb-stop").inner_text()  # the stop and its reason
        assert re.search(r"\d+ errors?: 404", bad.inner_text())
        assert bar(page, JEV).get_attribute("data-verdict") in ("running", "waiting")
        full_page_screenshot(page, shots / "unknown_model_live.png")
        wait_ended(out, name)
        results_heading(page, name).wait_for()
        page.get_by_text("No answers from").first.wait_for()
        outcome = page.locator(f'.hdb-outcome[data-run="{name}"] .hdb-bar[data-model="foo/bar"]')
        assert outcome.get_attribute("data-verdict") == "failed" and "failed: no answers" in outcome.inner_text()
        assert server.stats.by_status.get(404, 0) == journal(out, name)["foo/bar"].__len__()  # each asked once
    beat = live(out, name)["models"]["foo/bar"]
    assert beat["answered"] == 0 and beat["errors"] == beat["done"] > 0 and "fail fast" in beat["stop_reason"]
    keys = journal(out, name)["foo/bar"]
    assert len(keys) == len(set(keys)) == beat["done"] < PHOTOS  # every 404 journaled once; the rest not asked
    every = journal(out, name)[JEV]
    assert len(every) == len(set(every)) == PHOTOS  # the other model went on to the end
    full_page_screenshot(page, shots / "unknown_model.png")


def test_stop_then_resume_asks_no_photo_twice(nb, shots):
    page, out = nb.shared(), nb.out
    name = prepare(page, JEV, LUNA, rate=15)  # 66 photos of each model at 15/s: the Stop lands in the first
    press(page, "Run")
    stop = page.get_by_role("button", name="Stop", exact=True)
    stop.wait_for()
    wait_until(lambda: settled(out, name) > 20, what="photos settled")
    stop.click()
    end = wait_ended(out, name, timeout=30)
    assert end["state"] == "stopped" and "interrupted" in end["reason"]
    resume = page.get_by_role("button", name=f"Resume {name}")
    resume.wait_for()
    results_heading(page, name).wait_for()  # the stopped run's results are shown, and say it can be resumed
    assert page.get_by_text(re.compile(r"stopped: .*\(resumable\)")).first.is_visible()
    stopped = journal(out, name)
    assert 20 < sum(map(len, stopped.values())) < 2 * PHOTOS
    time.sleep(1.0)
    assert journal(out, name) == stopped  # Stop sent nothing more (the requests in flight were saved first)
    full_page_screenshot(page, shots / "stopped.png")
    resume.click()
    in_progress(page, name).wait_for()
    expected = {m: 2 if m in stopped else 1 for m in (JEV, LUNA)}  # a model not yet started starts now
    wait_until(lambda: live(out, name).get("state") == "done" and sessions(out, name) == expected, timeout=90,
               what="the resumed run to finish")
    page.get_by_role("heading", name=re.compile(rf"^Results: {name} \(finished\)")).wait_for()
    every_photo_once(out, name, [JEV, LUNA])  # nothing asked twice, nothing left out
    for model, keys in journal(out, name).items():
        assert keys[:len(stopped.get(model, []))] == stopped.get(model, [])  # the first session's, kept


def test_three_models_full_page_nothing_clipped(nb, shots):
    page, out = nb.shared(), nb.out
    # (a rate that leaves the run live for several seconds after the wait: the checks below need its live view,
    # and a loaded machine takes seconds over them; at 25/s the run ended under them once)
    name = prepare(page, JEV, LUNA, HAIKU, rate=12, cap=8)
    press(page, "Run")
    page.locator(".hdb-live-chart svg, .hdb-live-chart canvas").first.wait_for()
    wait_until(lambda: len(journal(out, name)) == 3 and settled(out, name) > 2 * PHOTOS + 5, timeout=120,
               what="the third model")
    page.wait_for_timeout(1000)
    assert page.locator(".hdb-live .hdb-bar").count() == 3
    chart, panel = clipping(page, ".hdb-live-chart"), clipping(page, ".hdb-live")
    assert chart and panel and chart[0]["height"] > 200  # drawn, with its three lines
    assert chart[0]["problems"] == [] and panel[0]["problems"] == [], (chart, panel)
    assert hidden_outputs(page) == []  # no output box hides part of what it holds
    # the measure is not blind: under a cap like marimo's own (610 px; here 120 px) the chart is clipped
    page.add_style_tag(content=".marimo-cell.interactive .output-area{max-height:120px !important}")
    page.wait_for_timeout(300)
    assert settled(out, name) < 3 * PHOTOS, "the run ended before the clipping check: it needs the live view"
    assert clipping(page, ".hdb-live-chart")[0]["problems"] and hidden_outputs(page)
    page.evaluate("() => document.head.lastElementChild.remove()")
    full_page_screenshot(page, shots / "three_models_live.png")
    wait_ended(out, name)
    results_heading(page, name).wait_for()
    page.get_by_role("tab", name="Accuracy").click()
    page.wait_for_timeout(800)
    results = clipping(page, "marimo-tabs .vega-embed")
    assert len(results) >= 2 and all(r["problems"] == [] and r["height"] > 50 for r in results), results
    assert hidden_outputs(page) == []
    full_page_screenshot(page, shots / "three_models_results.png")


def test_tab_closed_and_reopened_mid_run(nb):
    page, out = nb.shared(), nb.out
    # 66 s at 1/s: still going when the tab comes back (at 3/s, 22 s, a loaded CI machine saw it end first)
    name = prepare(page, JEV, rate=1)
    press(page, "Run")
    in_progress(page, name).wait_for()
    wait_until(lambda: settled(out, name) > 3, what="photos settled")
    page.close()
    n0 = settled(out, name)
    time.sleep(1.5)
    assert settled(out, name) > n0  # the run goes on with no tab open
    page = nb.reopen()  # marimo edit resumes the session; the run is on the page again
    in_progress(page, name).wait_for()
    count = bar(page, JEV).locator(".hdb-count")
    first = count.inner_text()
    wait_until(lambda: count.inner_text() != first, timeout=10, what="the counts to move")
    assert live(out, name)["state"] == "running"  # (else the run was too short for this test)
    page.get_by_role("button", name="Stop", exact=True).click()  # (to end the test sooner)
    assert wait_ended(out, name, timeout=30)["state"] == "stopped"
    results_heading(page, name).wait_for()
    keys = journal(out, name)[JEV]
    assert len(keys) == len(set(keys)) and n0 < len(keys) <= PHOTOS  # (those in flight at the Stop are saved)


def test_app_view_runs_and_finds_the_run_after_the_session_ended(tmp_path, browser, shots):
    """`marimo run notebooks/run.py` (code hidden): Run, close the tab past --session-ttl (its kernel ends), and a
    new tab, a new kernel, finds the run going on, then its results."""
    require_chromium()
    work, env = _work(tmp_path)
    shutil.copy(REPO / "notebooks" / "run.py", work / "nb" / "run.py")
    out = tmp_path / "out"
    page = None
    try:
        with marimo_server("run", "nb/run.py", work, env, ["--session-ttl", "2"], tmp_path / "marimo-run.log") as url:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(url)
            page.get_by_text("No run in progress.", exact=True).wait_for()
            assert "ancestor" not in page.inner_text("body").lower()
            assert page.locator(".cm-editor").count() == 0  # the app view: no code
            choose_models(page, JEV)
            simulator(page, rate=1)  # 66 s at 1/s: it outlives the session and the reopened page
            page.wait_for_timeout(1500)  # the app view has no cell status to wait on
            name = run_name(page)
            press(page, "Run")
            in_progress(page, name).wait_for()
            full_page_screenshot(page, shots / "app_view_running.png")
            page.close()
            time.sleep(3.5)  # past the TTL: that session and its kernel are gone
            assert live(out, name)["state"] == "running"  # the run is not
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(url)
            in_progress(page, name).wait_for()
            assert run_name(page) != name  # a new kernel, with a name of its own for the next run
            page.locator(".hdb-live-chart svg, .hdb-live-chart canvas").first.wait_for()
            for part in (".hdb-live", ".hdb-live-chart"):  # the app view cuts nothing either
                measured = clipping(page, part)
                assert measured and measured[0]["in_cell"] and measured[0]["problems"] == [], (part, measured)
            assert hidden_outputs(page) == []
            assert live(out, name)["state"] == "running"  # (else the run was too short for this test)
            page.get_by_role("button", name="Stop", exact=True).click()  # a kernel that did not start it stops it
            end = wait_ended(out, name, timeout=30)
            assert end["state"] == "stopped"
            results_heading(page, name).wait_for()
            page.get_by_role("button", name=f"Resume {name}").wait_for()
            keys = journal(out, name)[JEV]
            assert len(keys) == len(set(keys)) < PHOTOS
            page.wait_for_timeout(800)
            full_page_screenshot(page, shots / "app_view_results.png")
            page.close()
    except Exception:
        if page is not None and not page.is_closed():
            full_page_screenshot(page, shots / "FAILED-test_app_view.png")
        raise
    finally:
        kill_runs(out)
