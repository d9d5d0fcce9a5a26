"""The command line's run through a gateway on loopback, and the photos for it: what the server-side tests share
(tests/gateway/test_nginx.py, test_express.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .conftest import loopback_env

MODEL = "openai/gpt-6-luna"


def write_photos(path: Path, n: int) -> Path:
    ids = list(range(1, n + 1))
    pq.write_table(pa.table({"id": ids, "image": [b"\xff\xd8\xff" + i.to_bytes(8, "big") + b"\x00" * 64 for i in ids],
                             "is_hot_dog": [i % 4 == 0 for i in ids],
                             "category": ["hot_dog" if i % 4 == 0 else "taco" for i in ids]}), path)
    return path


def run_cli(base_url: str, photos: Path, workdir: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    """`hotdogbench_core run` of MODEL on `photos` against base_url: (the process, its model's summary or {})."""
    env = loopback_env()
    env["OPENROUTER_API_KEY"] = "sk-gateway-test"
    out = workdir / "out"
    proc = subprocess.run([sys.executable, "-m", "hotdogbench_core", "run", "--base-url", base_url, "--models", MODEL,
                           "--input", str(photos), "--run", "r", "--out", str(out), "--quiet", *extra],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
    summary = out / "r" / "summary.json"
    return proc, (json.loads(summary.read_text())[0] if summary.exists() else {})
