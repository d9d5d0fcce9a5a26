"""Limiter policies on the fake-clock model of capped servers (hotdogbench_core/sim/capmodel.py): many seeds in seconds, no sockets.

    uv run python benchmarks/bench_model.py [--seeds 30]

The same scenarios as bench_limiter.py, but on a discrete-event model: no client CPU, no HTTP, exact timing. It is
where tails are seen (the worst of many seeds), and what a change to the limiter is tried on first; the real
runner over HTTP (bench_limiter.py) has the last word. The randomized families are in bench_families.py.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

from benchlib import machine, table

from hotdogbench_core.sim.capmodel import FakeClock, legacy_server, run

from hotdogbench_core.limit.aimd import AIMDLimiter
from hotdogbench_core.limit.paced import PacedLimiter

# name: (what, Server fields, photos, ideal wall(photos))
SCENARIOS = {
    "rate": ("requests/s cap 100/s, burst 10", dict(rate=100, burst=10, latency=0.2, sigma=0.5), 2000,
             lambda n: n / 100 + 0.2),
    "inflight": ("in-flight cap 20", dict(max_in_flight=20, latency=0.2, sigma=0.2), 3000,
                 lambda n: n / 100 + 0.2),
    "bucket": ("bucket 10/s, burst 100", dict(rate=10, burst=100, latency=0.3, sigma=0.5), 400,
               lambda n: (n - 100) / 10 + 0.3),
    "retry_after": ("100/s cap, exact Retry-After",
                    dict(rate=100, burst=10, latency=0.2, sigma=0.5, retry_after="exact"), 2000,
                    lambda n: n / 100 + 0.2),
    "noise": ("100/s cap + 4% 5xx + 2% dropped", dict(rate=100, burst=10, latency=0.2, sigma=0.5, error_5xx=0.04,
                                                      drop=0.02), 2000, lambda n: n / 100 + 0.2),
}


def one(policy: str, name: str, seed: int) -> tuple[float, float]:
    _, server, photos, ideal = SCENARIOS[name]
    clock = FakeClock()
    lim = PacedLimiter(8, 256, clock=clock) if policy == "adaptive" else AIMDLimiter(8, 256, clock=clock)
    out = run(lim, clock, legacy_server(**server), photos, seed=seed, max_attempts=20,
              retry_budget_s=180.0 if policy == "adaptive" else None)
    return 100 * ideal(photos) / out.wall, 100 * out.rejects / max(1, out.attempts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--policies", default="reference,adaptive")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = ap.parse_args(argv)
    if args.seeds < 1:
        ap.error("--seeds must be >= 1")
    print(f"# bench_model: {machine()}; {args.seeds} seeds", flush=True)
    t0 = time.perf_counter()
    rows = []
    for name in args.scenarios.split(","):
        if name not in SCENARIOS:
            ap.error(f"--scenarios: unknown scenario {name!r} (known: {', '.join(SCENARIOS)})")
        for policy in args.policies.split(","):
            if policy not in ("reference", "adaptive"):
                ap.error(f"--policies: unknown policy {policy!r} (known: reference, adaptive)")
            runs = [one(policy, name, seed) for seed in range(args.seeds)]
            util = sorted(u for u, _ in runs)
            thr = sorted(t for _, t in runs)
            rows.append([SCENARIOS[name][0], policy, f"{statistics.median(util):.1f}", f"{util[len(util) // 10]:.1f}",
                         f"{util[0]:.1f}", f"{statistics.median(thr):.1f}", f"{thr[-1]:.1f}"])
    print(table(rows, ["scenario", "policy", "utilization % median", "p10", "worst", "throttled % median",
                       "worst"]))
    print(f"\n(benchmark took {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
