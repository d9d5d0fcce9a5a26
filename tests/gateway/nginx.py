"""A real reverse proxy's request limits in front of the simulator: nginx's limit_req and limit_conn.

Many API gateways are nginx, or count as it does. `limit_req` is a leaky bucket: requests at `rate` per second,
tracked to the millisecond, and `burst` more at most (with `nodelay` those are served at once, not queued); past
that, refused at once. With burst 0, a request sooner than 1 / rate after the last one taken is refused: the
strictest bucket there is, and sends spaced by a client's timers meet it with jitter. `limit_conn` refuses
requests past n in flight. Both refuse with `limit_req_status` / `limit_conn_status` (429 here) and an HTML
body, and send no Retry-After.

nginx comes from Debian (`.ci/run` installs it); HOTDOGBENCH_NGINX names another binary. Without one, every test
that needs it is skipped with the reason.

    with start_nginx(upstream_url, workdir, rate_per_s=20, burst=0, max_in_flight=None) as gw:
        gw.base_url, gw.requests(), gw.log_tail()
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import _die_with_parent, _stop, free_port, loopback_env, wait_ready

START_TIMEOUT_S = 20.0  # nginx is ready in ~0.05 s; a loaded CI machine may take longer
SATURATED = 0.85  # a run's saturated span ends when this share of its photos is answered
CONFIG = """\
daemon off;
master_process off;
error_log {prefix}/error.log warn;
pid {prefix}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    log_format st '$msec $status $request_time $uri';
    access_log {prefix}/access.log st;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    client_max_body_size 64m;
    limit_req_zone $binary_remote_addr zone=api:1m rate={rate};
    limit_conn_zone $binary_remote_addr zone=conn:1m;
    limit_req_status 429;
    limit_conn_status 429;
    upstream sim {{ server {upstream}; keepalive 64; }}
    server {{
        listen 127.0.0.1:{port};
        location /v1/chat/completions {{
            {limit_req}
            {limit_conn}
            proxy_pass http://sim;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_read_timeout 300s;
        }}
        location / {{
            proxy_pass http://sim;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


def find_nginx() -> tuple[Path | None, str]:
    """(the nginx executable or None, why not)."""
    given = os.environ.get("HOTDOGBENCH_NGINX")
    if given:
        p = Path(given)
        return (p, "") if p.is_file() and os.access(p, os.X_OK) else (None, f"HOTDOGBENCH_NGINX={given} is not an "
                                                                              "executable file")
    for c in (shutil.which("nginx"), "/usr/sbin/nginx"):
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return Path(c), ""
    return None, "nginx is not installed (.ci/run installs Debian's: apt-get install nginx)"


@dataclass
class Nginx:
    base_url: str
    prefix: Path
    process: subprocess.Popen

    def log_tail(self, lines: int = 20) -> str:
        with contextlib.suppress(OSError):
            return "\n".join((self.prefix / "error.log").read_text(errors="replace").splitlines()[-lines:])
        return ""

    def requests(self) -> list[tuple[float, int, float]]:
        """(unix time it ended, status, seconds it took) of every chat completion nginx logged."""
        out = []
        with contextlib.suppress(OSError):
            for line in (self.prefix / "access.log").read_text().splitlines():
                t, status, took, uri = line.split()
                if uri.endswith("/chat/completions"):
                    out.append((float(t), int(status), float(took)))
        return out


def use(requests: list[tuple[float, int, float]], photos: int, rate_per_s: float | None = None,
        max_in_flight: int | None = None) -> tuple[float, float]:
    """(utilization %, throttled %) of a run, from nginx's log (the server's count, not the client's).

    throttled: 429s / chat requests. Utilization over the saturated span, from 2 s after the first answer (a slow
    start's ramp) until SATURATED of the photos were answered (after that too few are left to fill a cap):
    limit_req, the answers in the span / (rate x span); limit_conn, the mean number in flight (the answers' request
    times inside the span / span) / n; both limits, the more used."""
    refused = sum(1 for _, status, _ in requests if status == 429)
    throttled = 100 * refused / max(1, len(requests))
    answered = sorted(t for t, status, _ in requests if status == 200)
    k = max(1, int(SATURATED * photos))
    if len(answered) < k:
        return float("nan"), throttled
    t0, t1 = answered[0] + 2.0, answered[k - 1]
    span = max(t1 - t0, 1e-3)
    ok = [(t, took) for t, status, took in requests if status == 200 and t0 <= t < t1]
    used = [100 * len(ok) / (rate_per_s * span)] if rate_per_s else []
    if max_in_flight:
        used.append(100 * sum(min(took, t - t0) for t, took in ok) / span / max_in_flight)
    return max(used), throttled


@contextlib.contextmanager
def start_nginx(upstream_url: str, workdir: Path, *, rate_per_s: float | None = None, burst: int = 0,
                max_in_flight: int | None = None, nodelay: bool = True, executable: Path | None = None):
    """nginx on a free loopback port, proxying to upstream_url (http://127.0.0.1:PORT), with a limit_req of
    rate_per_s (burst, nodelay; nodelay=False: the burst is a queue, nginx's default) and/or a limit_conn of
    max_in_flight; stopped afterwards."""
    if executable is None:
        executable, why = find_nginx()
        if executable is None:
            pytest.skip(why)
    prefix = workdir.resolve()
    prefix.mkdir(parents=True, exist_ok=True)
    port = free_port()
    # nginx takes a rate in whole requests per second or per minute
    rate = f"{round(rate_per_s)}r/s" if rate_per_s and rate_per_s >= 1 else f"{round((rate_per_s or 1) * 60)}r/m"
    limit_req = (f"limit_req zone=api burst={burst}{' nodelay' if nodelay else ''};" if burst else
                 "limit_req zone=api;") if rate_per_s else ""
    limit_conn = f"limit_conn conn {max_in_flight};" if max_in_flight else ""
    conf = prefix / "nginx.conf"
    conf.write_text(CONFIG.format(prefix=prefix, rate=rate, upstream=upstream_url.split("://", 1)[-1].rstrip("/"),
                                  port=port, limit_req=limit_req, limit_conn=limit_conn))
    log = open(prefix / "stderr.log", "wb")
    proc = subprocess.Popen([str(executable), "-p", str(prefix), "-e", str(prefix / "error.log"), "-c", str(conf)],
                            env=loopback_env(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=_die_with_parent)
    gw = Nginx(f"http://127.0.0.1:{port}", prefix, proc)
    try:
        wait_ready(proc, gw.base_url + "/v1/models", "nginx", START_TIMEOUT_S, poll_s=0.02,
                   tail=lambda: f"{gw.log_tail()}\n{(prefix / 'stderr.log').read_text(errors='replace')[-2000:]}")
        yield gw
    finally:
        _stop(proc, signal.SIGQUIT)  # (nginx's graceful stop: the access log is complete)
        log.close()
