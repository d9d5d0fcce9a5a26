"""The command line's run through a gateway on loopback, and the photos for it: what the server-side tests share
(tests/gateway/test_nginx.py, test_express.py, test_flask_limiter.py, test_haproxy.py)."""
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


def run_every_photo(gw, photos_path: Path, photos: int, workdir: Path) -> dict:
    """run_cli through a gateway `gw` (its base_url, log_tail()): exit 0, every photo answered, none an error, none
    lost to retries exhausted. Returns the model's summary."""
    proc, summary = run_cli(gw.base_url, photos_path, workdir)
    assert proc.returncode == 0, proc.stderr[-2000:] + gw.log_tail()
    assert (summary["photos"], summary["answered"], summary["errors"]) == (photos, photos, 0)
    assert summary["concurrency"]["retries_exhausted"] == 0
    return summary
