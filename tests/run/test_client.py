"""The runner's HTTP client: the request deadline, dropped connections, the body-size cap, the wire body."""
import asyncio
import json
import time

import httpx
import pytest
from aiohttp import web

from support.tables import make_rows, write_table
from hotdogbench_core import RunSettings, load_dataset
from hotdogbench_core.protocol.models import MODELS
from hotdogbench_core.protocol.request import body_for, request_for
from hotdogbench_core.run.runner import ModelRun
from hotdogbench_core.run.transport import MAX_BODY_BYTES
from hotdogbench_core.sim.app import SimConfig, Simulator

MODEL = "openai/gpt-6-luna"


@pytest.fixture
def ds(tmp_path):
    return load_dataset(write_table(tmp_path / "photos.parquet", make_rows(n_per_cat=2, extras=0)))


def run_once(ds, tmp_path, base_url, client=None, **kw):
    settings = RunSettings(api_key="sk-test", base_url=base_url, **kw)
    mr = ModelRun(MODEL, ds, settings, tmp_path / "out")
    summary = asyncio.run(mr.run(client))
    return mr, summary


def test_encode_body_is_the_wire_body_of_body_for():
    for model in list(MODELS) + ["someone/unknown-vlm"]:
        for image in (b"\xff\xd8\xff", bytes(range(256)) * 3 + b"\xff\xd8\xff", bytes(range(256)) * 400):
            wire = json.dumps(body_for(model, image), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            assert request_for(model).encode(image) == wire.encode()


def test_stalled_request_times_out_as_a_transport_retry(ds, tmp_path):
    cfg = SimConfig(seed=0, latency_s=0.0, stall=1.0, stall_s=30.0)
    with Simulator(cfg) as sim:
        t0 = time.perf_counter()
        mr, summary = run_once(ds, tmp_path, sim.base_url, request_timeout=0.3, max_attempts=2)
        took = time.perf_counter() - t0
    assert took < 10  # not the 30 s stall
    assert all(r.error == "retries exhausted: TimeoutError,TimeoutError" for r in mr.results.values())
    assert mr.limiter.transport_errors == 2 * len(ds)
    assert summary["errors"] == len(ds)


def test_a_stop_wins_over_the_deadline_watchdog(ds, tmp_path):
    # Requests stalled past their deadline are cancelled by the watchdog (a retry); a stop with a grace cancels
    # them too. Either way the run ends soon, without an unhandled error, and nothing unanswered is journaled.
    cfg = SimConfig(seed=0, latency_s=0.0, stall=1.0, stall_s=30.0)
    errors = []

    async def main(sim):
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context))
        mr = ModelRun(MODEL, ds, RunSettings(api_key="sk-test", base_url=sim.base_url, request_timeout=0.4,
                                             max_attempts=50), tmp_path / "out")
        task = asyncio.create_task(mr.run())
        await asyncio.sleep(1.0)  # past a deadline or two: the watchdog has cancelled and retried some
        mr.stop("test", grace_s=0.1)
        await asyncio.wait_for(task, 10)
        return mr

    with Simulator(cfg) as sim:
        t0 = time.perf_counter()
        mr = asyncio.run(main(sim))
        took = time.perf_counter() - t0
    assert took < 5 and errors == []
    assert mr.limiter.transport_errors >= len(ds)  # every photo's first attempt timed out at least once
    assert mr.results == {} and mr.stop_reason == "test"  # nothing settled: a resume asks them all


def test_dropped_connections_are_transport_retries(ds, tmp_path):
    cfg = SimConfig(seed=0, latency_s=0.001, drop_connection=0.5)
    with Simulator(cfg) as sim:
        mr, summary = run_once(ds, tmp_path, sim.base_url, max_attempts=8)
        dropped = sim.stats.dropped
    assert dropped > 0 and mr.limiter.transport_errors == dropped
    assert summary["errors"] == 0 and summary["answered"] == len(ds)
    assert any("Disconnected" in tag for r in mr.results.values() for tag in r.retries)


def test_response_over_the_size_cap_is_refused(ds, tmp_path):
    big = b'{"choices": "' + b"x" * (MAX_BODY_BYTES + 100) + b'"}'

    async def handle(request):
        await request.read()
        return web.Response(body=big, content_type="application/json")

    async def main():
        runner = web.ServerRunner(web.Server(handle))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            settings = RunSettings(api_key="sk-test", base_url=f"http://127.0.0.1:{port}")
            mr = ModelRun(MODEL, ds, settings, tmp_path / "out")
            await mr.run()
            return mr
        finally:
            await runner.cleanup()

    mr = asyncio.run(main())
    assert {r.error for r in mr.results.values()} == {f"200: response body over {MAX_BODY_BYTES} bytes"}


def test_an_httpx_client_can_still_be_passed(ds, tmp_path):
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content)["model"])
        return httpx.Response(200, json={"choices": [{"message": {"content": '{"hot_dog": true}'}}],
                                         "usage": {"prompt_tokens": 10, "completion_tokens": 3}})

    async def main():
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            mr = ModelRun(MODEL, ds, RunSettings(api_key="k", base_url="http://mock"), tmp_path / "out")
            return mr, await mr.run(client)

    mr, summary = asyncio.run(main())
    assert seen == [MODEL] * len(ds)
    assert summary["answered"] == len(ds) and all(r.pred is True for r in mr.results.values())
