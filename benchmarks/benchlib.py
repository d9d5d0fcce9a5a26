"""Shared pieces of the benchmarks: servers in their own processes, synthetic photo tables, machine facts.

Servers run in a child process (multiprocessing, spawn) so they don't take the runner's core: the project's
simulator (with a control pipe for its stats) and a minimal ~1 ms chat-completions server for client overhead.
"""
from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import platform
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]


# -- the project's simulator in a child process ---------------------------------------------------------------
def _sim_child(conn, config: dict) -> None:
    from hotdogbench_core.sim.app import SimConfig, Simulator

    sim = Simulator(SimConfig.from_dict(config))
    sim.start()
    conn.send(sim.base_url)
    while True:
        cmd = conn.recv()
        if cmd == "stats":
            conn.send(sim.stats.snapshot())
        elif cmd == "reset":
            sim.reset_stats()
            conn.send(True)
        else:
            sim.stop()
            conn.send(True)
            return


def _recv(conn, proc, timeout: float = 60.0):
    """The child's first message, or an error if it died first (e.g. an unguarded __main__ under spawn)."""
    end = time.monotonic() + timeout
    while not conn.poll(0.2):
        if not proc.is_alive() or time.monotonic() > end:
            raise RuntimeError(f"server process did not start (exit code {proc.exitcode})")
    return conn.recv()


class SimProcess:
    """`with SimProcess({...SimConfig fields...}) as sim:` sim.base_url, sim.stats() (a SimStats snapshot)."""

    def __init__(self, config: dict):
        self.config = config

    def __enter__(self) -> "SimProcess":
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_sim_child, args=(child, self.config), daemon=True)
        self._proc.start()
        self.base_url = _recv(self._conn, self._proc)
        return self

    def stats(self) -> dict:
        self._conn.send("stats")
        return self._conn.recv()

    def __exit__(self, *exc) -> None:
        try:
            self._conn.send("stop")
            self._conn.recv()
        except (OSError, EOFError):
            pass
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.terminate()


# -- a minimal fast server: reads the body, waits ~1 ms, answers a fixed chat completion -----------------------
FAST_BODY = (b'{"id":"gen-1","provider":"bench","model":"m","choices":[{"finish_reason":"stop","index":0,'
             b'"message":{"role":"assistant","content":"{\\"hot_dog\\": true}"}}],'
             b'"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107,"cost":0.00001}}')


def _fast_child(conn, delay: float) -> None:
    from aiohttp import web

    async def handle(request):
        await request.read()
        await asyncio.sleep(delay)
        return web.Response(body=FAST_BODY, content_type="application/json")

    async def main():
        loop = asyncio.get_running_loop()

        def factory(message, payload, protocol, writer, task):
            return web.BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=64 << 20)

        runner = web.ServerRunner(web.Server(handle, request_factory=factory, access_log=None))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, backlog=4096).start()
        conn.send(f"http://127.0.0.1:{runner.addresses[0][1]}")
        await loop.run_in_executor(None, conn.recv)  # until told to stop
        await runner.cleanup()

    asyncio.run(main())


class FastServer:
    def __init__(self, delay: float = 0.001):
        self.delay = delay

    def __enter__(self) -> "FastServer":
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_fast_child, args=(child, self.delay), daemon=True)
        self._proc.start()
        self.base_url = _recv(self._conn, self._proc)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._conn.send("stop")
        except OSError:
            pass
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.terminate()


# -- synthetic photo tables -----------------------------------------------------------------------------------
def write_photos(path: Path, n: int, image_bytes: int = 200, row_group_size: int = 1024, seed: int = 0) -> Path:
    """n distinct JPEG-by-magic photos of image_bytes each, written in batches (never all in memory at once
    unless one row group must hold them all)."""
    schema = pa.schema([("id", pa.int64()), ("image", pa.binary()), ("is_hot_dog", pa.bool_()),
                        ("category", pa.string())])
    filler = (bytes(range(256)) * (image_bytes // 256 + 1))[:max(0, image_bytes - 12)]
    step = min(row_group_size, n)
    with pq.ParquetWriter(path, schema, compression="none", use_dictionary=False) as w:
        for start in range(0, n, step):
            ids = list(range(start + 1, min(n, start + step) + 1))
            images = [b"\xff\xd8\xff" + (seed * 10_000_000 + i).to_bytes(9, "big") + filler for i in ids]
            w.write_table(pa.table({"id": ids, "image": images, "is_hot_dog": [i % 4 == 0 for i in ids],
                                    "category": ["hot_dog" if i % 4 == 0 else "taco" for i in ids]}, schema=schema),
                          row_group_size=row_group_size)
    return path


# -- machine facts ----------------------------------------------------------------------------------------------
def machine() -> str:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{time.strftime('%Y-%m-%d %H:%M %Z')}; {os.cpu_count()} cores, {cpu}; Python {platform.python_version()}; "
            f"load average {load:.2f} at start")


def table(rows: list[list], header: list[str]) -> str:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"
    return "\n".join([line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells[1:]])


def git_rev() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return "?"
