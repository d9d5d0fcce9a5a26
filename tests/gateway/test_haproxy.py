"""hotdogbench's command line behind HAProxy (tests/gateway/haproxy.py), the simulator upstream: a stick table's
request rate, 40 a 2 s period, a sliding-window counter that counts the refused requests too (HAProxy's guides set
it so: tracked before the deny rule), refused with a bare 429. A client that keeps asking while refused keeps itself
refused; the limiter's pause must let the count fall. The counts are HAProxy's own (its log), not the client's.

Measured on the 2-core machine (2026-12-07, 200 photos): 7 of 207 requests refused, the answers over 14.1 s (the
limit allows 10 s), but over 20 s in three runs of twelve (35 s where measured); `--limiter reference` 876 of 1,073
refused, 3 photos lost, 25.4 s."""
from __future__ import annotations

import time

import pytest

from .cli_runs import run_every_photo, write_photos
from .haproxy import start_haproxy

pytestmark = pytest.mark.gateway
LIMIT, PERIOD_S, PHOTOS = 40, 2, 200  # 20 a second, for about ten periods


def test_a_rate_that_counts_its_refusals_is_found_without_locking_the_run_out(slow_simulator, tmp_path):
    path = write_photos(tmp_path / "photos.parquet", PHOTOS)
    with start_haproxy(slow_simulator.base_url, tmp_path / "haproxy", limit=LIMIT, period_s=PERIOD_S) as gw:
        run_every_photo(gw, path, PHOTOS, tmp_path)
        deadline = time.monotonic() + 5.0  # (HAProxy writes a request's log line after its answer: the last may lag)
        while sum(1 for _, status in gw.requests() if status == 200) < PHOTOS and time.monotonic() < deadline:
            time.sleep(0.05)
    requests = gw.requests()
    refused = sum(1 for _, status in requests if status == 429)
    assert refused <= 0.1 * len(requests), (refused, len(requests))  # (the reference: 82%)
    taken = sorted(t for t, status in requests if status == 200)
    # (10 s would do; 14.1 s in most runs, over 20 s in three of twelve: the `counted` family's gap)
    assert len(taken) == PHOTOS and taken[-1] - taken[0] <= 5 * PHOTOS / (LIMIT / PERIOD_S), (len(taken),
                                                                                               taken[-1] - taken[0])
