"""Flask-Limiter in front of the simulator: the rate limiter of Flask servers, on the `limits` library (whose
strategies slowapi and others share).

Its moving window is a sliding log (n in any period), its sliding-window counter weighs the last clock window by its
share still inside the period; with headers on, every answer carries X-RateLimit-Limit, -Remaining, -Reset (epoch
seconds) and a Retry-After in whole seconds, truncated (0 for a refill less than the clock's second away). tests/
gateway/flask_limit_app.py is the server; Flask-Limiter comes from PyPI, pinned below, installed by `.ci/run` into
an environment of its own in the gateway cache (HOTDOGBENCH_FLASK_LIMITER names another Python with it). Without
it, every test that needs it is skipped with the reason.

    with start_flask_limiter(upstream_url, workdir, limit="30 per 5 second", strategy="moving-window") as gw:
        gw.base_url, gw.requests(), gw.log_tail()
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from .conftest import GATEWAY_HOME, free_port
from .servers import serve

FLASK_LIMITER_VERSION = "4.1.1"  # what .ci/run installs (with limits 5.8.0, flask 3.1.3); keep the two in step
SERVER = Path(__file__).with_name("flask_limit_app.py")
START_TIMEOUT_S = 30.0  # ready in ~0.5 s on the 2-core machine


def find_flask_limiter() -> tuple[Path | None, str]:
    """(a Python that imports flask_limiter, or None, why not)."""
    given = os.environ.get("HOTDOGBENCH_FLASK_LIMITER")
    python = Path(given) if given else GATEWAY_HOME / f"flask-limiter-{FLASK_LIMITER_VERSION}" / "bin" / "python"
    installed = python.parent.parent / ".hotdogbench-installed"
    if not python.is_file() or not (given or installed.is_file()):
        why = f"Flask-Limiter {FLASK_LIMITER_VERSION} is not installed at {python} (.ci/run installs it)"
        error = os.environ.get("HOTDOGBENCH_FLASK_LIMITER_ERROR")
        return None, why + (f"; the install step failed: {error}" if error else "")
    return python, ""


@contextlib.contextmanager
def start_flask_limiter(upstream_url: str, workdir: Path, *, limit: str, strategy: str, headers: bool = True):
    """The server on a free loopback port, proxying to upstream_url, its chat requests under `limit` (the limits
    library's notation) counted by `strategy`; stopped afterwards."""
    python, why = find_flask_limiter()
    if python is None:
        pytest.skip(why)
    workdir.mkdir(parents=True, exist_ok=True)
    port, log_path = free_port(), workdir / "requests.log"
    argv = [str(python), str(SERVER), str(port), upstream_url, limit, strategy, "on" if headers else "off",
            str(log_path)]
    with serve(argv, port, workdir, "Flask-Limiter's server", START_TIMEOUT_S, log_path=log_path) as gw:
        yield gw
