"""What the rate-limiting servers of tests/gateway share (express.py, flask_limit.py, haproxy.py): a process on a free
loopback port, its output in a file, ready when its /ready answers 200, stopped with its process group; and its own
log of the chat requests it answered or refused."""
from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .conftest import _die_with_parent, _stop, loopback_env, wait_ready


def ms_status(line: str) -> tuple[float, int] | None:
    """A request log's line "<epoch ms> <status>" (express_limit.cjs's, flask_limit_app.py's) as (unix time,
    status)."""
    ms, status = line.split()
    return int(ms) / 1000.0, int(status)


@dataclass
class ServerProcess:
    base_url: str
    out_path: Path  # its stdout and stderr
    process: subprocess.Popen
    log_path: Path | None = None  # its request log (None: the requests are in out_path, as HAProxy logs them)
    parse: Callable[[str], tuple[float, int] | None] = ms_status  # a log line as (unix time, status), or None

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.out_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def requests(self) -> list[tuple[float, int]]:
        """(unix time, status) of every chat completion the server answered or refused, in its own log."""
        with contextlib.suppress(OSError):
            lines = (self.log_path or self.out_path).read_text(errors="replace").splitlines()
            return [r for r in map(self.parse, lines) if r is not None]
        return []


@contextlib.contextmanager
def serve(argv: list[str], port: int, workdir: Path, name: str, timeout_s: float, *, env: dict | None = None,
          **fields):
    """Run argv (a server that listens on 127.0.0.1:port and answers /ready) until the block ends; yields its
    ServerProcess (`fields`: its log_path and parse)."""
    out_path = workdir / f"{Path(argv[0]).name}.out"
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(argv, cwd=workdir, env=env or loopback_env(), stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent)
    server = ServerProcess(f"http://127.0.0.1:{port}", out_path, proc, **fields)
    try:
        wait_ready(proc, server.base_url + "/ready", name, timeout_s, lambda: f"{out_path}:\n{server.log_tail()}",
                   ok=lambda r: r.status_code == 200)
        yield server
    finally:
        _stop(proc)
