"""Start `marimo edit|run NOTEBOOK` on a free port for the browser tests, and look at the page it serves.

Facts these helpers rely on (marimo 0.25.2; docs/notebooks.md has the long version): the edit view marks each
cell with data-status (idle, queued, running); the app view has none, so there one waits for text. marimo
keeps the document at the viewport's height and scrolls an inner element, so a full-page screenshot grows the
viewport first. Runs started from a notebook are processes in their own session: killing marimo's process
group does not end them, so `kill_runs` ends them by the pid in their live.json.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def marimo_server(mode: str, target: str, cwd: Path, env: dict, extra: list[str] = (), log_path: Path | None = None):
    """Yield the URL of `marimo MODE TARGET --headless --no-token` on a free port; stop its process group after."""
    port = free_port()
    log_path = log_path or cwd / f"marimo-{mode}-{port}.log"
    log = open(log_path, "wb")
    cmd = [sys.executable, "-m", "marimo", mode, target, "--headless", "--no-token", "--port", str(port),
           "--host", "127.0.0.1", *extra]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
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
                raise RuntimeError(f"marimo {mode} did not start:\n" + log_path.read_text()[-3000:])
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
        log.close()


def kill_runs(out: Path) -> None:
    """End every run process under OUT (by the pid in its live.json)."""
    for live in Path(out).glob("*/live.json"):
        try:
            os.kill(json.loads(live.read_text())["pid"], signal.SIGKILL)
        except (OSError, ValueError, KeyError, TypeError):
            pass


IDLE_JS = """() => document.querySelectorAll('[data-status="running"], [data-status="queued"]').length === 0"""


def wait_idle(page, timeout_ms: int = 30_000, settle_ms: int = 300) -> None:
    """No cell queued or running (the edit view's data-status), twice, settle_ms apart."""
    deadline = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < deadline:
        if page.evaluate(IDLE_JS):
            page.wait_for_timeout(settle_ms)
            if page.evaluate(IDLE_JS):
                return
        page.wait_for_timeout(100)
    raise TimeoutError("marimo did not become idle")


CLIP_JS = """(els) => els.map(el => {
  // The ancestors of el within its cell (crossing shadow roots and slots: a chart in marimo's tabs) that clip
  // it (overflow auto|scroll|hidden|clip, and el reaches outside their box) or hide content behind a scroll bar.
  const up = (a) => a.assignedSlot || a.parentElement ||
                    (a.getRootNode() instanceof ShadowRoot ? a.getRootNode().host : null);
  const r = el.getBoundingClientRect();
  let cell = null;
  for (let a = up(el); a; a = up(a)) if (a.matches('[data-cell-id], .marimo-cell')) { cell = a; break; }
  const problems = [];
  for (let a = up(el); a && cell && a !== cell; a = up(a)) {
    const cs = getComputedStyle(a);
    if (!/(auto|scroll|hidden|clip)/.test(cs.overflowY + cs.overflowX)) continue;
    const ar = a.getBoundingClientRect();
    if (r.top < ar.top - 1 || r.bottom > ar.bottom + 1 || r.left < ar.left - 1 || r.right > ar.right + 1)
      problems.push({cls: String(a.className).slice(0, 60), el: [r.top, r.bottom, r.left, r.right],
                     box: [ar.top, ar.bottom, ar.left, ar.right]});
    if (/(auto|scroll|hidden|clip)/.test(cs.overflowY) && a.scrollHeight > a.clientHeight + 2)
      problems.push({cls: String(a.className).slice(0, 60), scrollHeight: a.scrollHeight,
                     clientHeight: a.clientHeight});
  }
  return {width: r.width, height: r.height, in_cell: !!cell, problems};
})"""


def clipping(page, selector: str) -> list[dict]:
    """[{width, height, in_cell, problems}] for each element matching selector (Playwright's selectors reach into
    shadow roots); problems == [] when no scrolling or clipping ancestor within its cell cuts it."""
    return page.locator(selector).evaluate_all(CLIP_JS)


HIDDEN_JS = """() => [...document.querySelectorAll('.output-area')]
    .filter(e => e.scrollHeight > e.clientHeight + 2).map(e => [e.scrollHeight, e.clientHeight])"""


def hidden_outputs(page, settle_ms: int = 3000) -> list:
    """Output boxes that hide part of what they hold behind a scroll bar, once the layout has settled: a live panel
    re-rendering mid-run is a few pixels over its box for a frame (44 px in 40, once in CI), a clip stays."""
    found = page.evaluate(HIDDEN_JS)
    for _ in range(settle_ms // 250):
        if not found:
            break
        page.wait_for_timeout(250)
        found = page.evaluate(HIDDEN_JS)
    return found


FULL_HEIGHT_JS = """() => {
  let h = document.documentElement.scrollHeight;
  for (const el of document.querySelectorAll('*')) {
    const cs = getComputedStyle(el);
    if (/(auto|scroll)/.test(cs.overflowY) && el.scrollHeight > el.clientHeight) h = Math.max(h, el.scrollHeight);
  }
  return h; }"""


def full_page_screenshot(page, path) -> None:
    """The whole notebook in one PNG: grow the viewport to the inner scroller's height first."""
    vp = page.viewport_size
    height = page.evaluate(FULL_HEIGHT_JS)
    page.set_viewport_size({"width": vp["width"], "height": min(int(height) + 40, 16000)})
    page.wait_for_timeout(800)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(vp)


def outputs_text(page) -> str:
    """The text of every cell's output (in the edit view the body also holds the code and side panels)."""
    return "\n".join(page.locator(".output-area").all_inner_texts())
