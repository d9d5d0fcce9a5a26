"""HAProxy's request-rate limit in front of the simulator: a stick table's `http_req_rate`, as HAProxy's guides set it.

`http-request track-sc0 src` counts every chat request of a client, and `http-request deny deny_status 429 if
{ sc_http_req_rate(0) gt N }` refuses past N a period. The count is a sliding-window counter (the current period's
count plus the last one's, weighted by its share still inside the period), and it counts the refused requests too:
tracking comes before the deny, so a client that keeps asking while refused keeps itself refused. The 429 carries no
Retry-After. HAProxy comes from Debian (`.ci/run` installs it); HOTDOGBENCH_HAPROXY names another binary. Without
one, every test that needs it is skipped with the reason.

    with start_haproxy(upstream_url, workdir, limit=40, period_s=2) as gw:
        gw.base_url, gw.requests(), gw.log_tail()
"""
from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .conftest import free_port
from .servers import serve

START_TIMEOUT_S = 20.0  # ready in ~0.05 s on the 2-core machine
CONFIG = """\
global
    log stdout format raw local0
    maxconn 2000
defaults
    mode http
    log global
    timeout connect 5s
    timeout client 300s
    timeout server 300s
frontend api
    bind 127.0.0.1:{port}
    monitor-uri /ready
    log-format "%Ts.%ms %ST %HP"
    stick-table type ip size 1k expire {expire}s store http_req_rate({period}s)
    acl chat path_beg /v1/chat/completions
    http-request track-sc0 src if chat
    http-request deny deny_status 429 if chat {{ sc_http_req_rate(0) gt {limit} }}
    default_backend sim
backend sim
    server upstream {upstream}
"""


def find_haproxy() -> tuple[Path | None, str]:
    """(the haproxy binary or None, why not)."""
    given = os.environ.get("HOTDOGBENCH_HAPROXY")
    found = Path(given) if given else next((Path(p) for p in (shutil.which("haproxy"), "/usr/sbin/haproxy")
                                            if p and Path(p).is_file()), None)
    if found is None or not os.access(found, os.X_OK):
        return None, f"haproxy is not installed{f' at {given}' if given else ''} (.ci/run installs Debian's)"
    return found, ""


def chat_line(line: str) -> tuple[float, int] | None:
    """A line of HAProxy's log ("<epoch s>.<ms> <status> <path>") as (unix time, status), if a chat completion's."""
    parts = line.split()
    if len(parts) == 3 and parts[2].startswith("/v1/chat/completions"):
        return float(parts[0]), int(parts[1])
    return None


@contextlib.contextmanager
def start_haproxy(upstream_url: str, workdir: Path, *, limit: int, period_s: int):
    """HAProxy on a free loopback port, proxying to upstream_url, refusing a client's chat requests past `limit` a
    `period_s` (its refusals counted too); stopped afterwards."""
    executable, why = find_haproxy()
    if executable is None:
        pytest.skip(why)
    workdir.mkdir(parents=True, exist_ok=True)
    port, up = free_port(), urlsplit(upstream_url)
    config = workdir / "haproxy.cfg"
    config.write_text(CONFIG.format(port=port, upstream=f"{up.hostname}:{up.port}", limit=limit, period=period_s,
                                    expire=max(60, 4 * period_s)))
    with serve([str(executable), "-db", "-f", str(config)], port, workdir, "HAProxy", START_TIMEOUT_S,
               parse=chat_line) as gw:
        yield gw
