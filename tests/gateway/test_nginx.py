"""hotdogbench's command line behind nginx's request limits (tests/gateway/nginx.py), the project's simulator
upstream: the limiter finds a real server's leaky bucket and in-flight cap, and no photo is lost to them.

The figures are nginx's own (its access log), not the client's. Measured on the 2-core machine (2026-12-03,
benchmarks/bench_nginx.py): a 20/s bucket with a burst of 20 99% used with 3.2% refused, without a burst 82% and
2.1% (86-87% and 2.4-2.6% on 2026-12-06), an in-flight cap 98% and 1.7%. The bounds below leave room for a loaded CI machine and fail for a limiter that
ignores 429s (the reference's 82-86% refused) or collapses under them.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

import httpx
import pytest

from .cli_runs import MODEL, run_cli, write_photos
from .conftest import loopback_env
from .nginx import start_nginx, use

pytestmark = pytest.mark.gateway


# measured on 2 cores: burst 0, 92.7-94.0% used, 5.7% refused on 2026-12-06 (76%, 6.1% on 2026-12-03, before its
# cuts were from the spacing nginx refused: 7 of the 13 refusals are the start's 8 sends at once); burst 10, 99.6%
@pytest.mark.parametrize("rate, burst, photos, least_used", [(10, 0, 200, 80), (10, 10, 200, 85)])
def test_a_leaky_bucket_is_found_and_no_photo_lost(slow_simulator, tmp_path, rate, burst, photos, least_used):
    # burst 0: a request sooner than 100 ms after the last one nginx took is refused; the limiter's cut goes to what
    # the last 25 sends took, most of them on the climb from the cut before, so it holds about 3/4 of the rate
    path = write_photos(tmp_path / "photos.parquet", photos)
    with start_nginx(slow_simulator.base_url, tmp_path / "nginx", rate_per_s=rate, burst=burst) as gw:
        proc, s = run_cli(gw.base_url, path, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (s["photos"], s["answered"], s["errors"]) == (photos, photos, 0)
    assert s["concurrency"]["retries_exhausted"] == 0
    util, throttled = use(gw.requests(), photos, rate_per_s=rate)
    assert util >= least_used and throttled <= 10, (util, throttled, s["concurrency"].get("rate_trace", [])[-10:])


def test_a_known_bucket_told_with_max_rate_is_never_refused(slow_simulator, tmp_path):
    # nginx's limit_req with no burst refuses a request sooner than 100 ms after the last it took: found, the start's
    # 8 at once and the probes are refused (above); told 9.5/s (a known cap, a little under), every send is taken.
    # Measured 2026-12-06 on 2 cores: 92% used, 0 refused.
    photos = 120
    path = write_photos(tmp_path / "photos.parquet", photos)
    with start_nginx(slow_simulator.base_url, tmp_path / "nginx", rate_per_s=10, burst=0) as gw:
        proc, s = run_cli(gw.base_url, path, tmp_path, "--max-rate", "9.5/s")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (s["photos"], s["answered"], s["errors"]) == (photos, photos, 0)
    util, throttled = use(gw.requests(), photos, rate_per_s=10)
    assert throttled == 0 and util >= 85, (util, throttled)  # 95% is the pace told; a loaded machine sends late


def test_an_in_flight_cap_is_found_and_no_photo_lost(slow_simulator, tmp_path):
    # 94-96% used, 5.1% refused on the 2-core machine (2026-12-06). A busy machine's client hears answers late and
    # counts more in flight than nginx does: CI once measured 74.6%, 7.4% (the start read a cap of 4, then a level of
    # 4 taken now and then made every refusal there a cut of the pace). Modelled (tests/limit/test_paced.py, answers
    # heard 10 ms late): worst of 20 seeds 76% (59% before such levels, mostly refused, read as the cap)
    photos, n = 150, 3
    path = write_photos(tmp_path / "photos.parquet", photos)
    with start_nginx(slow_simulator.base_url, tmp_path / "nginx", max_in_flight=n) as gw:
        proc, s = run_cli(gw.base_url, path, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (s["photos"], s["answered"], s["errors"]) == (photos, photos, 0)
    util, throttled = use(gw.requests(), photos, max_in_flight=n)
    assert util >= 70 and throttled <= 10, (util, throttled, s["concurrency"].get("limit_trace", [])[-10:])


def _run_behind_a_queue(slow_simulator, tmp_path, *extra) -> tuple[float, float, float, dict]:
    """120 photos through nginx's limit_req of 10/s with burst=20 and no nodelay (its default): past the rate,
    requests wait in a queue of 20, let through at the rate, refused only past it. (utilization %, throttled %, the
    answers' median request time in nginx's log, the summary)."""
    photos = 120
    path = write_photos(tmp_path / "photos.parquet", photos)
    with start_nginx(slow_simulator.base_url, tmp_path / "nginx", rate_per_s=10, burst=20, nodelay=False) as gw:
        proc, s = run_cli(gw.base_url, path, tmp_path, *extra)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (s["photos"], s["answered"], s["errors"]) == (photos, photos, 0)
    assert s["concurrency"]["retries_exhausted"] == 0
    requests = gw.requests()
    util, throttled = use(requests, photos, rate_per_s=10)
    return util, throttled, statistics.median(t for _, status, t in requests if status == 200), s


def test_a_queue_in_front_of_a_rate_loses_nothing(slow_simulator, tmp_path):
    # measured 2026-12-08 on 2 cores (200 photos): 99.5% used, 3.4-5.2% refused, but every answer waited in the
    # queue: nginx's median request time 2.03 s where the model's is 0.2 s (the next test)
    util, throttled, _, _ = _run_behind_a_queue(slow_simulator, tmp_path)
    assert util >= 85 and throttled <= 10, (util, throttled)


def test_a_queue_told_its_rate_stays_empty_and_the_latency_is_the_models(slow_simulator, tmp_path):
    # paced under the rate (--max-rate), nothing waits: measured 93.6% used, 0 refused, median 0.198 s
    util, throttled, p50, s = _run_behind_a_queue(slow_simulator, tmp_path, "--max-rate", "9.5/s")
    assert throttled == 0 and p50 <= 0.3 and s["latency_p50_s"] <= 0.3, (util, throttled, p50)


@pytest.mark.xfail(strict=True, reason="issue 10: the limiter fills a server's queue (it reads it as an in-flight "
                   "cap), and the run's latency figures are then the queue's: 2.03 s for a model's 0.2 s")
def test_the_limiter_alone_keeps_a_servers_queue_short(slow_simulator, tmp_path):
    _, _, p50, s = _run_behind_a_queue(slow_simulator, tmp_path)
    assert p50 <= 0.3 and s["latency_p50_s"] <= 0.3, (p50, s["latency_p50_s"])


def test_nginx_refuses_as_the_tests_assume(slow_simulator, tmp_path):
    """The shape the limiter meets: 429 at once with nginx's HTML page and no Retry-After, the refused requests in
    the access log. If an nginx upgrade changes one, the figures above and docs/gateways.md need a look."""
    with start_nginx(slow_simulator.base_url, tmp_path / "nginx", rate_per_s=2) as gw:
        photo = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/2wBD"}}
        body = {"model": MODEL, "messages": [{"role": "user", "content": [{"type": "text", "text": "hot dog?"}, photo]}]}
        with httpx.Client(trust_env=False, timeout=10) as c:
            first = c.post(gw.base_url + "/v1/chat/completions", json=body, headers={"Authorization": "Bearer x"})
            second = c.post(gw.base_url + "/v1/chat/completions", json=body, headers={"Authorization": "Bearer x"})
    assert first.status_code == 200, first.text
    assert second.status_code == 429 and "retry-after" not in second.headers
    assert "text/html" in second.headers.get("content-type", "")
    assert [status for _, status, _ in gw.requests()] == [200, 429]


def test_two_processes_on_one_bucket_finish_and_lose_nothing(slow_simulator, tmp_path):
    # two people's runs on one key, started together: nginx counts them as one client (both 127.0.0.1). Each has its
    # own limiter and nothing shared: both must finish, lose nothing and refuse little. How much of the bucket they
    # use is not asserted: measured 2026-12-03 (11 runs), 8.7-11.9% refused, 37-100% used. When one run's first
    # sends all met the other's burst, its pace is cut to the floor (0.25/s) and climbs back doubling every 8-18 s:
    # it ends at 52 s where the other ended at 12 s (issue 10). How evenly they share: benchmarks/bench_nginx.py
    # --cases processes
    rate, photos = 10, 100
    path = write_photos(tmp_path / "photos.parquet", photos)
    env = loopback_env()
    env["OPENROUTER_API_KEY"] = "sk-nginx-test"
    with start_nginx(slow_simulator.base_url, tmp_path / "nginx", rate_per_s=rate, burst=5) as gw:
        procs, ended = [], {}
        for i in range(2):
            work = tmp_path / f"p{i}"
            work.mkdir()
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "hotdogbench_core", "run", "--base-url", gw.base_url, "--models", MODEL,
                 "--input", str(path), "--run", "r", "--out", str(work / "out"), "--quiet"],
                cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        t0 = time.monotonic()
        while len(ended) < 2 and time.monotonic() - t0 < 300:
            for i, p in enumerate(procs):
                if i not in ended and p.poll() is not None:
                    ended[i] = time.monotonic() - t0
            time.sleep(0.05)
        for p in procs:
            if p.poll() is None:
                p.kill()
            _, err = p.communicate()
            assert p.returncode == 0, err[-2000:]
    for i in range(2):
        s = json.loads((tmp_path / f"p{i}" / "out" / "r" / "summary.json").read_text())[0]
        assert (s["answered"], s["errors"], s["concurrency"]["retries_exhausted"]) == (photos, 0, 0)
    util, throttled = use(gw.requests(), 2 * photos, rate_per_s=rate)
    assert throttled <= 15, (util, throttled, ended)
