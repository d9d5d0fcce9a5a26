"""express-rate-limit in front of the simulator: the Node middleware most Express servers limit requests with.

Its default store counts a fixed window per client (from the client's first request after the last window), and
it says so in the IETF RateLimit fields (draft 6, 7 or 8: the window's policy on every answer, what is left and
when it refills), or in the legacy X-RateLimit-* headers; every 429 carries Retry-After. tests/gateway/
express_limit.cjs is the server; express and express-rate-limit come from npm, pinned below, installed by `.ci/run`
into the gateway cache (HOTDOGBENCH_EXPRESS_MODULES names another node_modules). Without node or the modules, every
test that needs them is skipped with the reason.

    with start_express(upstream_url, workdir, window_s=10, limit=30, headers="draft-8") as gw:
        gw.base_url, gw.requests(), gw.log_tail()
"""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from .conftest import GATEWAY_HOME, free_port, loopback_env
from .servers import serve

EXPRESS_VERSION, EXPRESS_RATE_LIMIT_VERSION = "5.3.0", "8.7.4"  # what .ci/run installs; keep the two in step
SERVER = Path(__file__).with_name("express_limit.cjs")
START_TIMEOUT_S = 30.0  # ready in ~0.3 s on the 2-core machine


def find_express() -> tuple[tuple[Path, Path] | None, str]:
    """((node, its node_modules with express and express-rate-limit) or None, why not)."""
    node = shutil.which("node")
    if node is None:
        return None, "node is not installed (.ci/run installs Debian's nodejs and npm)"
    given = os.environ.get("HOTDOGBENCH_EXPRESS_MODULES")
    home = GATEWAY_HOME / f"express-{EXPRESS_VERSION}-rate-limit-{EXPRESS_RATE_LIMIT_VERSION}"
    modules = Path(given) if given else home / "node_modules"
    if not (modules / "express-rate-limit" / "package.json").is_file() or not (modules / "express").is_dir():
        why = f"express-rate-limit is not installed in {modules} (.ci/run installs it with npm)"
        error = os.environ.get("HOTDOGBENCH_EXPRESS_ERROR")
        return None, why + (f"; the install step failed: {error}" if error else "")
    return (Path(node), modules), ""


@contextlib.contextmanager
def start_express(upstream_url: str, workdir: Path, *, window_s: float, limit: int, headers: str):
    """The server on a free loopback port, proxying to upstream_url, `limit` chat requests a `window_s` window
    (headers: draft-6 | draft-7 | draft-8 | legacy); stopped afterwards."""
    found, why = find_express()
    if found is None:
        pytest.skip(why)
    node, modules = found
    workdir.mkdir(parents=True, exist_ok=True)
    port, log_path = free_port(), workdir / "requests.log"
    env = loopback_env()
    env["NODE_PATH"] = str(modules)  # (a CommonJS require searches it; the server file lives in the repo)
    argv = [str(node), str(SERVER), str(port), upstream_url, str(int(window_s * 1000)), str(limit), headers,
            str(log_path)]
    with serve(argv, port, workdir, "express-rate-limit's server", START_TIMEOUT_S, env=env, log_path=log_path) as gw:
        yield gw
