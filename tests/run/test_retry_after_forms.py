"""Retry-After's other forms over real HTTP: an HTTP-date (RFC 9110; whole seconds, beside the answer's Date),
Azure's retry-after-ms, and Google's RetryInfo in the error's details (Gemini's OpenAI-compatible endpoint). The wait
they name is waited out in full, and one past max_wait_s (a date an hour off, a day's quota) stops the model."""
import asyncio
import datetime
import re
import time
import zoneinfo

import pytest

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset
from hotdogbench_core.run.runner import ModelRun
from hotdogbench_core.sim.app import SimConfig, Simulator

MODEL = "openai/gpt-6-luna"


def _photos(tmp_path, n_per_cat: int):
    return load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=n_per_cat, extras=0)))


@pytest.mark.parametrize("form", ["http_date", "retry_after_ms", "google", "ratelimit"])
def test_the_wait_a_refusal_names_in_any_form_is_waited_out(tmp_path, form):
    ds = _photos(tmp_path, 6)  # 18 photos against 6 per 1.5 s clock window: the window refuses at least twice
    cfg = SimConfig(seed=0, latency_s=0.02, window_n=6, window_s=1.5, retry_after=form)
    with Simulator(cfg) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url, max_wait_s=60.0)
        summary = asyncio.run(asyncio.wait_for(ModelRun(MODEL, ds, settings, tmp_path / "out").run(), 60))
        gaps = [t1 - t0 - ra for arrivals in sim.stats.by_digest.values()
                for (t0, status, ra), (t1, _, _) in zip(arrivals, arrivals[1:]) if status == 429]
    assert summary["answered"] == len(ds) and not summary.get("stopped")
    assert gaps and all(ra is not None for arrivals in sim.stats.by_digest.values() for _, s, ra in arrivals
                        if s == 429)  # every refusal named its wait
    assert min(gaps) >= -0.01  # no photo asked again before the wait its refusal named (10 ms clock slack)


def _spend_a_long_quota(tmp_path, per: int, period: float, form: str, offsets=(0.0,)):
    """A model run against a window of `per` requests a `period` (3 x `per` photos), refused in `form`, with
    max_wait_s 60 s: (its summary, the ModelRun). No window turns during it (nor a day `offsets` seconds ahead)."""
    for offset in offsets:
        left = period - (time.time() + offset) % period
        if left < 90:
            time.sleep(left + 0.2)
    ds = _photos(tmp_path, per)
    cfg = SimConfig(seed=0, latency_s=0.02, window_n=per, window_s=period, retry_after=form)
    with Simulator(cfg) as sim:
        settings = RunSettings(api_key="sk-test", base_url=sim.base_url, max_wait_s=60.0)
        mr = ModelRun(MODEL, ds, settings, tmp_path / "out")
        summary = asyncio.run(asyncio.wait_for(mr.run(), 30))  # a wait not read would hold the model, probing
    return summary, mr


def test_an_http_date_past_max_wait_s_stops_the_model_saying_until_when(tmp_path):
    summary, mr = _spend_a_long_quota(tmp_path, 10, 3600.0, "http_date")  # 30 photos, 10 an hour
    assert summary["answered"] == 10 and "asks to wait" in summary["stopped"] and "UTC" in summary["stopped"]
    assert mr.retries_exhausted == 0 and len(mr.results) == 10


def test_a_spent_daily_google_quota_stops_the_model_until_midnight_pacific_time(tmp_path):
    pacific_s = datetime.datetime.now(zoneinfo.ZoneInfo("America/Los_Angeles")).utcoffset().total_seconds()
    # 15 photos, 5 a day (neither the simulator's UTC day nor the Pacific one may turn during the test)
    summary, mr = _spend_a_long_quota(tmp_path, 5, 86400.0, "google", offsets=(0.0, pacific_s))
    pacific = datetime.datetime.now(zoneinfo.ZoneInfo("America/Los_Angeles"))
    midnight = datetime.datetime.combine(pacific.date() + datetime.timedelta(days=1), datetime.time(), pacific.tzinfo)
    utc = datetime.datetime.now(datetime.timezone.utc)  # the simulator's day is UTC's: its retryDelay runs to then,
    utc_midnight = datetime.datetime.combine(utc.date() + datetime.timedelta(days=1), datetime.time(), utc.tzinfo)
    later = max(midnight, utc_midnight)  # and the runner waits the later of the two (00:00-08:00 UTC: UTC's)
    said = re.search(r"until about (\d{4}-\d\d-\d\d \d\d:\d\d) UTC", summary["stopped"] or "")
    assert summary["answered"] == 5 and said, summary["stopped"]
    until = datetime.datetime.strptime(said.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=datetime.timezone.utc)
    assert abs((until - later).total_seconds()) <= 120, (until, later)  # (a retryDelay's whole seconds, a minute)
    assert mr.retries_exhausted == 0 and len(mr.results) == 5  # the other 10 unasked: a resume asks them
