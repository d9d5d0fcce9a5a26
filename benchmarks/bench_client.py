"""Client benchmark: the runner's overhead against a bare aiohttp loop, and peak memory on a large table.

    uv run python benchmarks/bench_client.py [--quick] [--only overhead|memory]

overhead: a ~1 ms local server (its own process) answers a fixed chat completion. In the same run, rounds
alternate between a bare aiohttp request loop (256 workers, the same request bytes) and the runner (256 in
flight: start and max concurrency 256, journal and all); the table gives each and their ratio (the median
round), plus the runner with an httpx client on httpx-aiohttp's transport and with the reference's plain httpx
pool, for comparison.
memory: 20,000 photos of 100 KB (quick: 2,000) in a parquet written with small row groups and with a single
row group; the runner, in a child process, asks them all from the same server; its peak RSS is reported.
parallel: three models over the same photos against the simulator (0.2 s latency, at most 8 in flight per
model, no cap), one after another and then with --parallel-models.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import REPO, FastServer, SimProcess, machine, table, write_photos

import aiohttp
import httpx

from hotdogbench_core import RunSettings, load_dataset, run_models
from hotdogbench_core.protocol.request import request_for
from hotdogbench_core.run.runner import ModelRun

MODEL = "openai/gpt-6-luna"
IN_FLIGHT = 256


async def bare_loop(url: str, body: bytes, n: int) -> float:
    """Requests per second of 256 workers posting `body` and reading the answer, nothing else."""
    headers = {"Authorization": "Bearer sk-bench", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=IN_FLIGHT)) as session:
        todo = iter(range(n))

        async def worker():
            for _ in todo:
                async with session.post(url, data=body, headers=headers) as r:
                    await r.read()

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))
        return n / (time.perf_counter() - t0)


async def runner_rate(ds, base_url: str, out: Path, client: str = "default") -> float:
    settings = RunSettings(api_key="sk-bench", base_url=base_url, start_concurrency=IN_FLIGHT,
                           max_concurrency=IN_FLIGHT)
    mr = ModelRun(MODEL, ds, settings, out)
    if client == "default":
        await mr.run()
    else:
        limits = httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)
        transport = None
        if client == "httpx-aiohttp":
            from httpx_aiohttp import AiohttpTransport
            transport = AiohttpTransport(limits=limits)
        async with httpx.AsyncClient(timeout=httpx.Timeout(120), limits=limits, transport=transport) as c:
            await mr.run(c)
    assert mr.done == len(ds) and not any(r.error for r in mr.results.values()), "the runner had errors"
    return len(ds) / mr.wall_s


def overhead(quick: bool, tmp: Path) -> list[list]:
    n = 4000 if quick else 8000
    rounds = 3 if quick else 5
    ds = load_dataset(write_photos(tmp / "overhead.parquet", n, image_bytes=2000))
    request = request_for(MODEL)
    body = request.encode(next(ds.stream()).image)
    rows, pairs = [], []
    with FastServer(0.001) as srv:
        url = srv.base_url + request.path
        asyncio.run(bare_loop(url, body, 2000))  # warm up the server
        for i in range(rounds):
            bare = asyncio.run(bare_loop(url, body, n))
            ours = asyncio.run(runner_rate(ds, srv.base_url, tmp / f"out-{i}"))
            pairs.append((ours / bare, bare, ours))
            print(f"  round {i + 1}: bare aiohttp {bare:.0f} req/s, runner {ours:.0f} photos/s "
                  f"({100 * ours / bare:.0f}%)", flush=True)
        ratio, bare, ours = sorted(pairs)[len(pairs) // 2]
        small = load_dataset(write_photos(tmp / "overhead-small.parquet", 1000 if quick else 2000, image_bytes=2000))
        hx = asyncio.run(runner_rate(small, srv.base_url, tmp / "out-hx", "httpx-aiohttp"))
        ref = asyncio.run(runner_rate(small, srv.base_url, tmp / "out-ref", "httpx"))
    rows.append(["bare aiohttp loop (256 workers)", f"{bare:.0f}", "100%", ""])
    rows.append(["runner, default client (aiohttp session)", f"{ours:.0f}", f"{100 * ratio:.0f}%", ">= 60%"])
    rows.append(["runner, httpx client on httpx-aiohttp transport", f"{hx:.0f}", f"{100 * hx / bare:.0f}%", ""])
    rows.append(["runner, httpx's own pool (the reference's client)", f"{ref:.0f}", f"{100 * ref / bare:.0f}%", ""])
    print(f"  (median of {rounds} rounds; all rounds: {[f'{100 * p[0]:.0f}%' for p in pairs]})", flush=True)
    return rows


MEMORY_CHILD = r"""
import asyncio, json, resource, sys, tempfile, time
from pathlib import Path
from hotdogbench_core import RunSettings, load_dataset
from hotdogbench_core.run.runner import ModelRun
path, base_url = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
ds = load_dataset(path)
load_s = time.perf_counter() - t0
mr = ModelRun("openai/gpt-6-luna", ds, RunSettings(api_key="sk-bench", base_url=base_url, start_concurrency=256,
              max_concurrency=256), Path(tempfile.mkdtemp()))
asyncio.run(mr.run())
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "photos": mr.done,
                  "errors": sum(1 for r in mr.results.values() if r.error), "photos_per_s": mr.done / mr.wall_s,
                  "load_s": load_s}))
"""

WRITE_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from benchlib import write_photos
write_photos(__import__("pathlib").Path(sys.argv[2]), int(sys.argv[3]), image_bytes=100_000,
             row_group_size=int(sys.argv[4]))
"""


def memory(quick: bool, tmp: Path) -> list[list]:
    n = 2000 if quick else 20000
    rows = []
    with FastServer(0.001) as srv:
        for layout, rg in (("row groups of 64", 64), ("one row group", n)):
            path = tmp / f"big-{rg}.parquet"
            t0 = time.perf_counter()
            # written in a child: a single row group has to be held whole by the writer
            subprocess.run([sys.executable, "-c", WRITE_CHILD, str(Path(__file__).parent), str(path), str(n), str(rg)],
                           check=True)
            write_s = time.perf_counter() - t0
            out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(path), srv.base_url], check=True,
                                 capture_output=True, text=True, cwd=REPO)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            size_mb = path.stat().st_size / 2**20
            path.unlink()
            print(f"  {layout}: {n} photos, {size_mb:.0f} MB file (written in {write_s:.0f} s): peak RSS "
                  f"{r['peak_rss_mb']:.0f} MB, {r['photos_per_s']:.0f} photos/s, {r['errors']} errors", flush=True)
            rows.append([f"{n} x 100 KB, {layout} ({size_mb:.0f} MB)", f"{r['peak_rss_mb']:.0f}",
                         f"{r['photos_per_s']:.0f}", f"{r['photos']}/{n}", r["errors"], "<= 600 MB"])
    return rows


def parallel(quick: bool, tmp: Path) -> list[list]:
    models = ["openai/gpt-6-luna", "typesafe/jev-1.14", "anthropic/claude-haiku-5.5"]
    n = 150 if quick else 400
    ds = load_dataset(write_photos(tmp / "parallel.parquet", n))
    rows = []
    with SimProcess({"latency_s": 0.2, "latency_sigma": 0.3}) as sim:
        settings = RunSettings(api_key="sk-bench", base_url=sim.base_url, start_concurrency=8, max_concurrency=8)
        for label, par in (("one after another (default)", False), ("--parallel-models", True)):
            t0 = time.perf_counter()
            res = asyncio.run(run_models(models, ds, settings, out=tmp / "par-out", run_name=label[:3], parallel=par))
            wall = time.perf_counter() - t0
            slowest = max(s["wall_s"] for s in res.summaries)
            rows.append([f"3 models x {n} photos, {label}", f"{wall:.1f}", f"{slowest:.1f}",
                         sum(s["answered"] for s in res.summaries)])
            print(f"  {label}: {wall:.1f} s (slowest model {slowest:.1f} s)", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=("overhead", "memory", "parallel"))
    args = ap.parse_args(argv)
    print(f"# bench_client: {machine()}", flush=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.only in (None, "overhead"):
            rows = overhead(args.quick, tmp)
            print()
            print(table(rows, ["client overhead at 256 in flight, ~1 ms server", "per s", "of bare", "target"]))
            print()
        if args.only in (None, "memory"):
            rows = memory(args.quick, tmp)
            print()
            print(table(rows, ["memory: runner in a child process", "peak RSS MB", "photos/s", "photos done",
                               "errors", "target"]))
            print()
        if args.only in (None, "parallel"):
            rows = parallel(args.quick, tmp)
            print()
            print(table(rows, ["models in parallel", "run wall s", "slowest model s", "answered"]))
    print(f"\n(benchmark took {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
