"""A real OpenAI-compatible gateway for the tests: the LiteLLM proxy, started as a subprocess on loopback.

The proxy lives in its own environment, never in the project's (its dependencies must not pin ours): `.ci/run`
installs it and exports HOTDOGBENCH_LITELLM=/path/to/bin/litellm. Without that variable the default install
place is searched, then PATH. When the proxy is not there, every test that needs it is skipped with the reason
(and, under CI, what the install step said: HOTDOGBENCH_LITELLM_ERROR).

    with start_litellm(config, workdir) as gw:     # config: LiteLLM's config.yaml as a dict
        gw.base_url, gw.master_key, gw.log_tail()

The proxy runs offline (LITELLM_LOCAL_MODEL_COST_MAP=True: no cost map fetched at start; LiteLLM sends no
telemetry unless a LITELLM_TELEMETRY_* destination is set, and those are removed from its environment) and without
a database. LiteLLM 1.108 refuses to start without a master key, so each proxy gets a fresh random one.
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

try:
    from hotdogbench_core.sim import SimConfig, Simulator, labels_from_parquet
except ImportError:  # the layout before the package was split into subpackages
    from hotdogbench_core.simulator import SimConfig, Simulator, labels_from_parquet

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "sample.parquet"
LITELLM_VERSION = "1.108.7"  # the version .ci/run installs; keep the two in step
GATEWAY_HOME = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hotdogbench-gateway"
START_TIMEOUT_S = 120.0  # 9.5-18 s measured on the 2-core machine; CI may be slower
MINUTE_RPM = 20  # mock/minute's requests per clock minute
SIM_UPSTREAM_KEY = "sk-sim-upstream"  # the key the gateway sends the simulator (not the client's)


try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before any fork
except (OSError, AttributeError):
    _prctl = None
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the test process dies, even by SIGKILL (Linux only), so a proxy in
    a session of its own is never left running."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def pytest_configure(config):
    config.addinivalue_line("markers", "gateway: runs hotdogbench through a real gateway (the LiteLLM proxy)")


def find_litellm() -> tuple[Path | None, str]:
    """(the proxy's `litellm` executable or None, why not)."""
    given = os.environ.get("HOTDOGBENCH_LITELLM")
    if given:
        p = Path(given)
        if p.is_file() and os.access(p, os.X_OK):
            return p, ""
        return None, f"HOTDOGBENCH_LITELLM={given} is not an executable file"
    candidates = [GATEWAY_HOME / f"litellm-{LITELLM_VERSION}" / "bin" / "litellm"]
    candidates += sorted(GATEWAY_HOME.glob("litellm-*/bin/litellm"), reverse=True)
    on_path = shutil.which("litellm")
    if on_path:
        candidates.append(Path(on_path))
    for p in candidates:
        if p.is_file() and os.access(p, os.X_OK):
            return p, ""
    why = (f"the LiteLLM proxy is not installed: HOTDOGBENCH_LITELLM is unset, nothing in {GATEWAY_HOME}/litellm-*, "
           f"no `litellm` on PATH (.ci/run installs litellm[proxy]=={LITELLM_VERSION})")
    install_error = os.environ.get("HOTDOGBENCH_LITELLM_ERROR")
    if install_error:
        why += f"; the install step failed: {install_error}"
    return None, why


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def loopback_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment minus what must not leak into a test process: OpenRouter keys and settings, LiteLLM's
    own settings; loopback never goes through an HTTP(S) proxy."""
    env = {k: v for k, v in (base if base is not None else os.environ).items()
           if not k.startswith(("OPENROUTER", "LITELLM_"))}
    no_proxy = ",".join(x for x in (env.get("NO_PROXY") or env.get("no_proxy"), "127.0.0.1,localhost") if x)
    env["NO_PROXY"] = env["no_proxy"] = no_proxy
    return env


@dataclass
class LiteLLMProxy:
    base_url: str
    master_key: str
    config_path: Path
    log_path: Path
    process: subprocess.Popen
    startup_s: float

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def headers(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or self.master_key}"}


def _stop(proc: subprocess.Popen, first: int = signal.SIGTERM) -> None:
    """A server and everything it started: its process group (it was started in a session of its own); `first`
    asks it to stop, SIGKILL follows after 10 s."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, first)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def wait_ready(proc: subprocess.Popen, url: str, name: str, timeout_s: float, tail, poll_s: float = 0.1,
               ok=lambda response: True) -> float:
    """Poll `url` until `ok(response)`; fail the test if the server exits or is not ready within timeout_s, with
    `tail()` (its log's end). Returns the seconds it took."""
    t0 = time.monotonic()
    with httpx.Client(trust_env=False, timeout=2.0) as client:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{name} exited ({proc.returncode}) before it was ready:\n{tail()}")
            if time.monotonic() - t0 > timeout_s:
                pytest.fail(f"{name} was not ready after {timeout_s:.0f} s:\n{tail()}")
            with contextlib.suppress(httpx.TransportError):
                if ok(client.get(url)):
                    return time.monotonic() - t0
            time.sleep(poll_s)


@contextlib.contextmanager
def start_litellm(config: dict, workdir: Path, *, executable: Path | None = None,
                  timeout_s: float = START_TIMEOUT_S):
    """Write `config` to workdir/config.yaml, start the proxy on a free loopback port, wait until
    /health/liveliness answers, yield a LiteLLMProxy; always stop its process group afterwards."""
    if executable is None:
        executable, why = find_litellm()
        if executable is None:
            pytest.skip(why)
    workdir.mkdir(parents=True, exist_ok=True)
    config = json.loads(json.dumps(config))  # a copy; JSON is YAML, so no YAML library is needed here
    config.setdefault("general_settings", {})["master_key"] = "os.environ/LITELLM_MASTER_KEY"
    config_path = workdir / "config.yaml"
    config_path.write_text(json.dumps(config, indent=2))
    master_key = "sk-hdb-" + secrets.token_hex(16)
    env = loopback_env()
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True",  # else it fetches the model cost map from the internet
               LITELLM_MASTER_KEY=master_key, LITELLM_DONT_SHOW_FEEDBACK_BOX="True", PYTHONUNBUFFERED="1")
    log_path = workdir / "litellm.log"
    port = free_port()
    t0 = time.monotonic()
    with open(log_path, "wb") as log:
        # cwd is the work dir: LiteLLM reads a .env from its working directory, and the repo's may hold a key
        proc = subprocess.Popen([str(executable), "--config", str(config_path), "--host", "127.0.0.1",
                                 "--port", str(port)], cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_die_with_parent)
    base_url = f"http://127.0.0.1:{port}"
    gw = LiteLLMProxy(base_url, master_key, config_path, log_path, proc, 0.0)
    try:
        wait_ready(proc, base_url + "/health/liveliness", "the LiteLLM proxy", timeout_s,
                   lambda: f"{log_path}:\n{gw.log_tail()}", ok=lambda r: r.status_code == 200)
        gw.startup_s = time.monotonic() - t0
        yield gw
    finally:
        _stop(proc)


def mock_deployment(name: str, content: str, **params) -> dict:
    """A deployment that answers `content` itself (LiteLLM's mock_response): no upstream, whatever the image."""
    return {"model_name": name, "litellm_params": {"model": f"openai/{name.replace('/', '-')}", "api_key": "sk-unused",
                                                   "mock_response": content, **params}}


def gateway_config(sim_base_url: str) -> dict:
    """The deployments the gateway tests use.

    - mock/hotdog, hotdog-mock: always {"hot_dog": true}; no cost anywhere (no price is known for them).
    - mock/priced: the same with a price, so LiteLLM puts a cost in its x-litellm-response-cost header (only there).
    - mock/limited, mock/limited-probe: rpm 1 each (one for the CLI test, one for the direct probe); mock/minute:
      rpm MINUTE_RPM (LiteLLM lets rpm - 1 through in a window: 119 of 120, 19 of 20, measured).
      usage-based-routing-v2 enforces `rpm` (the default simple-shuffle only uses it as a weight) in a window
      that ends at the next UTC clock minute (or `routing_strategy_args.ttl` seconds after its first request,
      if sooner; ttl is a whole number >= 1 and applies to every deployment of the proxy).
    - sim/luna: the project's simulator as an OpenAI-compatible upstream (as openai/gpt-6-luna): answers that
      depend on the image, with the simulator's usage.cost and provider passed through.
    """
    return {
        "model_list": [
            mock_deployment("mock/hotdog", '{"hot_dog": true}'),
            mock_deployment("hotdog-mock", '{"hot_dog": true}'),
            mock_deployment("mock/priced", '{"hot_dog": true}', input_cost_per_token=1e-6, output_cost_per_token=2e-6),
            mock_deployment("mock/limited", '{"hot_dog": false}', rpm=1),
            mock_deployment("mock/limited-probe", '{"hot_dog": false}', rpm=1),
            mock_deployment("mock/minute", '{"hot_dog": false}', rpm=MINUTE_RPM),
            {"model_name": "sim/luna", "litellm_params": {"model": "openai/openai/gpt-6-luna",
                                                          "api_base": sim_base_url + "/v1",
                                                          "api_key": SIM_UPSTREAM_KEY}},
        ],
        "router_settings": {"routing_strategy": "usage-based-routing-v2"},
        # no retries inside the gateway: with them it holds a rate-limited request until the window reopens
        "litellm_settings": {"num_retries": 0},
    }


@pytest.fixture(scope="module")
def slow_simulator():
    """The simulator with a model's latency (median 0.2 s), no key checked: an in-flight cap of n then holds about
    5n a second (the upstream of tests/gateway's nginx and express-rate-limit)."""
    with Simulator(SimConfig(seed=0, latency_s=0.2, latency_sigma=0.3), labels=None, api_key=None) as sim:
        yield sim


@pytest.fixture(scope="session")
def litellm_executable() -> Path:
    executable, why = find_litellm()
    if executable is None:
        pytest.skip(why)
    return executable


# package scope, not session: both are stopped once tests/gateway is done (other tests check that no simulator
# thread is left running)
@pytest.fixture(scope="package")
def upstream_simulator():
    """The project's simulator, in-process, as the gateway's upstream (it checks the gateway's upstream key)."""
    sim = Simulator(SimConfig(seed=0, latency_s=0.01), labels=labels_from_parquet(SAMPLE), api_key=SIM_UPSTREAM_KEY)
    with sim:
        yield sim


@pytest.fixture(scope="package")
def gateway(litellm_executable, upstream_simulator, tmp_path_factory) -> LiteLLMProxy:
    """One LiteLLM proxy for all of tests/gateway (it takes 9-18 s to start), with gateway_config's deployments."""
    with start_litellm(gateway_config(upstream_simulator.base_url), tmp_path_factory.mktemp("litellm"),
                       executable=litellm_executable) as gw:
        print(f"LiteLLM proxy ready in {gw.startup_s:.1f} s at {gw.base_url}", file=sys.stderr)
        yield gw
