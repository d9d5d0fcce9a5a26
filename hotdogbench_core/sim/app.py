"""An OpenRouter-compatible simulator on loopback, so the real HTTP runner can be tested without internet.

    from hotdogbench_core.sim.app import Simulator, SimConfig, labels_from_parquet
    sim = Simulator(SimConfig(seed=0, max_in_flight=20), labels=labels_from_parquet("data/sample.parquet"))
    with sim:                       # background thread with its own event loop; port 0 -> a free port
        sim.base_url                # "http://127.0.0.1:54321"; post to base_url + CHAT_PATH / DECISIONS_PATH
        sim.update(rate_per_s=20)   # any SimConfig field, at runtime (or sim.config.rate_per_s = 20)
        sim.stats.requests, sim.stats.by_status, sim.stats.by_digest[digest]
    # or sim.start() / sim.stop(), or `async with sim:` inside a running event loop;
    # serve_forever(config, port=P) for a blocking standalone server.

Endpoints: POST /v1/chat/completions, POST /alpha/decisions, GET /v1/models (an "/api" prefix is accepted
too). Every model known to the simulator (the registry plus SimConfig.extra_models) works on both POST
endpoints. Answers are decided by a hash of (seed, model, sha256 of the image), so they don't depend on
request order or concurrency; latency and faults come from one seeded per-request RNG. See SimConfig for
caps and faults, SimStats for counters, sim_server.py for the response shapes.
"""
from __future__ import annotations

import asyncio
import hashlib
import signal
import threading
from dataclasses import fields
from pathlib import Path
from typing import Any

from aiohttp import web

from .config import MODEL_PROFILES, SimConfig
from .server import Labels, SimCore
from .counters import SimStats

__all__ = ["Simulator", "SimConfig", "SimStats", "MODEL_PROFILES", "labels_from_parquet", "image_digest",
           "serve_forever"]

_MAX_BODY = 64 * 1024 * 1024  # request bodies up to 64 MiB (aiohttp's default of 1 MiB is too small for photos)
_SHUTDOWN_S = 0.2  # on stop, how long a handler still running gets before it is cancelled


def image_digest(image: bytes) -> str:
    """The key of a photo in labels and stats.by_digest: sha256 hex of its bytes."""
    return hashlib.sha256(image).hexdigest()


class PhotoLabels(dict):
    """{sha256 hex of image: (is_hot_dog, category)}, and the table they were read from (`source`): the
    simulator finds the labelled photo a re-encoded image (a condition's) shows among that table's photos."""

    source: Path | None = None


def labels_from_parquet(path: str | Path) -> Labels:
    """{sha256 hex of image: (is_hot_dog, category)} from a parquet with columns image, is_hot_dog, category
    (a PhotoLabels: it remembers the file, for matching re-encoded photos)."""
    import duckdb

    con = duckdb.connect()
    try:
        rows = con.execute("SELECT image, is_hot_dog, category FROM read_parquet(?)", [str(path)]).fetchall()
    finally:
        con.close()
    labels = PhotoLabels({image_digest(bytes(img)): (bool(hd), None if cat is None else str(cat))
                          for img, hd, cat in rows if img is not None})
    labels.source = Path(path)
    return labels


async def _open(core: SimCore, host: str, port: int) -> tuple[web.ServerRunner, int]:
    loop = asyncio.get_running_loop()

    def request_factory(message, payload, protocol, writer, task):
        return web.BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=_MAX_BODY)

    server = web.Server(core.handle, request_factory=request_factory, handler_cancellation=True, access_log=None)
    runner = web.ServerRunner(server, shutdown_timeout=_SHUTDOWN_S)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, backlog=2048).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner, runner.addresses[0][1]


async def _close(runner: web.ServerRunner) -> None:
    """Close every connection at once (stalled requests included), then the listener."""
    server = runner.server
    if server is not None:
        for proto in server.connections:
            if proto.transport is not None:
                proto.transport.abort()
    await runner.cleanup()


class Simulator:
    """An OpenRouter-compatible server on host:port (port 0: a free port), run in a background thread.

    config: a SimConfig (default SimConfig()); read afresh on every request, so change it at runtime.
    labels: {sha256 hex of image bytes: (is_hot_dog, category)}; unlabelled photos get a seeded coin flip.
    api_key: if set, any other Bearer key gets 401 (a Bearer key is always required).
    """

    def __init__(self, config: SimConfig | None = None, labels: Labels | None = None, api_key: str | None = None,
                 *, host: str = "127.0.0.1", port: int = 0):
        self._core = SimCore(config if config is not None else SimConfig(), labels, api_key)
        self.host, self.port = host, port
        self._requested_port = port
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- state ---------------------------------------------------------------------------------------
    @property
    def config(self) -> SimConfig:
        return self._core.config

    @config.setter
    def config(self, config: SimConfig) -> None:
        config.validate()
        self._core.config = config

    @property
    def stats(self) -> SimStats:
        return self._core.stats

    @property
    def labels(self) -> Labels:
        return self._core.labels

    @labels.setter
    def labels(self, labels: Labels) -> None:
        self._core.labels = dict(labels)

    @property
    def api_key(self) -> str | None:
        return self._core.api_key

    @api_key.setter
    def api_key(self, key: str | None) -> None:
        self._core.api_key = key

    @property
    def base_url(self) -> str:
        if self._thread is None:
            raise RuntimeError("the simulator is not running: use `with sim:` or sim.start()")
        return f"http://{self.host}:{self.port}"

    def update(self, **changes: Any) -> SimConfig:
        """Change config fields at runtime (validated together, applied to the live config); returns it."""
        names = {f.name for f in fields(SimConfig)}
        unknown = set(changes) - names
        if unknown:
            raise TypeError(f"unknown SimConfig fields: {sorted(unknown)}")
        SimConfig.from_dict({**self.config.to_dict(), **changes})  # raises if the result is invalid
        for k, v in changes.items():
            setattr(self.config, k, v)
        return self.config

    def reset_stats(self) -> None:
        """Zero every counter (in_flight stays live) and refill the credits (spent_usd = 0)."""
        self._core.stats.reset()

    # --- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> "Simulator":
        """Start serving in a daemon thread; returns once the port is listening."""
        if self._thread is not None:
            raise RuntimeError("the simulator is already running")
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                runner, self.port = loop.run_until_complete(_open(self._core, self.host, self._requested_port))
            except BaseException as e:  # e.g. port in use: re-raised by start()
                failure.append(e)
                loop.close()
                ready.set()
                return
            self._loop = loop
            ready.set()
            try:
                loop.run_forever()
            finally:
                try:
                    loop.run_until_complete(_close(runner))
                    tasks = asyncio.all_tasks(loop)
                    for task in tasks:
                        task.cancel()
                    loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
                    loop.run_until_complete(loop.shutdown_asyncgens())
                finally:
                    loop.close()

        thread = threading.Thread(target=run, name="hotdogbench-simulator", daemon=True)
        thread.start()
        ready.wait()
        if failure:
            thread.join()
            raise failure[0]
        self._thread = thread
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Close every connection (stalled requests too) and the listener, and end the thread."""
        thread, loop = self._thread, self._loop
        if thread is None:
            return
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:  # loop closed meanwhile
                pass
        thread.join(timeout)
        self._thread = self._loop = None
        self.port = self._requested_port

    def __enter__(self) -> "Simulator":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> "Simulator":
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    def __repr__(self) -> str:
        state = f"running at http://{self.host}:{self.port}" if self._thread else "stopped"
        return f"<Simulator {state} seed={self.config.seed}>"


def serve_forever(config: SimConfig | None = None, host: str = "127.0.0.1", port: int = 0,
                  labels: Labels | None = None, api_key: str | None = None) -> None:
    """Serve in this thread until Ctrl-C or SIGTERM; prints the base URL (one line) once listening."""
    core = SimCore(config if config is not None else SimConfig(), labels, api_key)

    async def main() -> None:
        done = asyncio.Event()
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGTERM, done.set)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or Windows
            pass
        runner, actual = await _open(core, host, port)
        print(f"http://{host}:{actual}", flush=True)
        try:
            await done.wait()
        finally:
            await _close(runner)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
