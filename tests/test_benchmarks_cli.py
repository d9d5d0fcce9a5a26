"""The benchmark scripts are not run here (they time things), but they must at least start and explain themselves."""
import subprocess
import sys

import pytest

from support.paths import REPO

SCRIPTS = sorted(p.name for p in (REPO / "benchmarks").glob("*.py") if p.name != "benchlib.py")


def test_there_are_benchmarks():
    assert {"bench_limiter.py", "bench_client.py", "run_all.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_help(script):
    p = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), "--help"], capture_output=True, text=True,
                       timeout=60, cwd=REPO)
    assert p.returncode == 0, p.stderr
    assert "usage" in p.stdout.lower()
