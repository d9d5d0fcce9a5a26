"""hotdogbench's command line behind express-rate-limit (tests/gateway/express.py), the simulator upstream: a fixed
window per client that the server states in the IETF RateLimit fields (draft 6, 7 or 8), or only in the legacy
X-RateLimit-* headers. Stated, the window's policy paces the run from its first answer, one request a window under
it: only the start's sends past the first window's room are refused. Not stated, the limiter finds the window alone
and no photo is lost to it. The counts are the server's own (its log), not the client's.

Measured on the 2-core machine (2026-12-07, 90 photos, 30 a 5 s window): stated in any of the three drafts, 1 of 91
requests refused (at 3.8 s), the answers over 15.5-16.5 s (paced at 5.8/s; 10 s would take the first window's 30 at
once); legacy only, 9 of 99 refused (slow start's overshoot of the first window, then a probe a window), 13.5 s."""
from __future__ import annotations

import pytest

from .cli_runs import run_every_photo, write_photos
from .express import start_express

pytestmark = pytest.mark.gateway
WINDOW_S, LIMIT, PHOTOS = 5.0, 30, 90  # 6 a second, for about three windows
START = 8  # the runner's first sends, at once, before any answer can state a pace


def run(simulator, tmp_path, headers: str) -> tuple[dict, list[tuple[float, int]]]:
    path = write_photos(tmp_path / "photos.parquet", PHOTOS)
    with start_express(simulator.base_url, tmp_path / "express", window_s=WINDOW_S, limit=LIMIT,
                       headers=headers) as gw:
        summary = run_every_photo(gw, path, PHOTOS, tmp_path)
    return summary, gw.requests()


@pytest.mark.parametrize("headers", ["draft-6", "draft-7", "draft-8"])
def test_a_window_stated_in_the_ratelimit_fields_paces_the_run(slow_simulator, tmp_path, headers):
    summary, requests = run(slow_simulator, tmp_path, headers)
    assert summary["concurrency"]["max_rate_per_s"] == pytest.approx((LIMIT - 1) / WINDOW_S)  # its RateLimit-Policy
    first = min(t for t, _ in requests)
    refused = [t - first for t, status in requests if status == 429]
    assert len(refused) <= START and all(t < WINDOW_S + 1 for t in refused), refused  # the first window's only


def test_a_window_only_the_legacy_headers_tell_is_found_alone(slow_simulator, tmp_path):
    summary, requests = run(slow_simulator, tmp_path, "legacy")
    assert summary["concurrency"]["max_rate_per_s"] is None  # (X-RateLimit-Limit states no period: no pace)
    refused = sum(1 for _, status in requests if status == 429)
    assert refused <= 0.2 * len(requests), (refused, len(requests))  # (a limiter that ignores 429s: 80% and more)
