"""Every benchmark of issue 5 in one run: the limiter scenarios (reference vs adaptive) over HTTP and on the
fake-clock model, the randomized scenario families (bench_families.py), then client overhead, memory and parallel models. About 9 minutes on 2 cores; --quick about 3.

    uv run python benchmarks/run_all.py [--quick]
"""
import argparse
import sys
from pathlib import Path

import bench_client
import bench_families
import bench_limiter
import bench_model

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer photos and rounds (the targets are for the full run)")
    args = ap.parse_args()
    quick = ["--quick"] if args.quick else []
    bench_limiter.main(quick)
    print()
    bench_model.main(["--seeds", "10" if args.quick else "30"])
    print()
    bench_families.main(["--fast"] if args.quick else [])
    print()
    bench_client.main(quick)
