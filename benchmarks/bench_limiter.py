"""Limiter benchmark: every scenario of issue 5, for the reference AIMD and for the adaptive limiter, in one run.

    uv run python benchmarks/bench_limiter.py [--quick] [--scenarios rate,inflight,...] [--seeds 1]

The project's simulator runs in its own process with the cap hidden from the runner; the real runner (HTTP,
journal, retries) runs here. Prints one table. Utilization = ideal wall / measured wall; throttled = 429s /
attempts; Retry-After violations = retries the simulator saw before the Retry-After it had sent had passed.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from benchlib import SimProcess, machine, table, write_photos

from hotdogbench_core import RunSettings, load_dataset
from hotdogbench_core.run.runner import ModelRun

MODEL = "openai/gpt-6-luna"
LAT = 0.2
# name: (what, SimConfig fields, photos, ideal wall(photos), targets (utilization %, throttled %))
SCENARIOS = {
    "rate": ("requests/s cap 100/s, burst 10",
             dict(rate_per_s=100, burst=10, latency_s=LAT, latency_sigma=0.5), 2000,
             lambda n: n / 100 + LAT, (97, 3)),
    "inflight": ("in-flight cap 20 (100/s at 0.2 s)",
                 dict(max_in_flight=20, latency_s=LAT, latency_sigma=0.2), 3000,
                 lambda n: n / (20 / LAT) + LAT, (95, 3)),
    "bucket": ("bucket 10/s, burst 100",
               dict(rate_per_s=10, burst=100, latency_s=0.3, latency_sigma=0.5), 400,
               lambda n: (n - 100) / 10 + 0.3, (95, 10)),
    "retry_after": ("100/s cap, 429 with exact Retry-After",
                    dict(rate_per_s=100, burst=10, latency_s=LAT, latency_sigma=0.5, retry_after="exact"), 2000,
                    lambda n: n / 100 + LAT, (97, 3)),
    "noise": ("100/s cap + 4% 5xx + 2% dropped conns",
              dict(rate_per_s=100, burst=10, latency_s=LAT, latency_sigma=0.5, error_5xx=0.04,
                   drop_connection=0.02), 2000,
              lambda n: n / 100 + LAT, (90, None)),
}
NOTES = """Ideal wall: a rate cap: photos / rate + one median latency; the in-flight cap: photos / (cap / median latency)
+ one median latency (latency is lognormal, sigma 0.2, so the mean is 2% above the median: ~98% is the ceiling);
the bucket: (photos - burst) / rate + one median latency. In the noise scenario failed attempts use the cap too
(a 5xx or a dropped connection took a token), so ~94% is its ceiling. Latency is lognormal with median 0.2 s
(0.3 s for the bucket), sigma 0.5 unless said; runs are 100-150 median round trips long, so a slow start from
8 in flight costs each policy about the same. Both policies use the same client, runner and retry cap (20
attempts); a run longer than 2.5x its ideal is stopped and scored on the photos it settled."""


def violations(stats: dict) -> int:
    bad = 0
    for arrivals in stats["by_digest"].values():
        arrivals = sorted(arrivals)  # by arrival time (the list is in order of completion)
        for (t0, status, ra), (t1, _, _) in zip(arrivals, arrivals[1:]):
            if status == 429 and ra is not None and t1 - t0 < ra - 0.001:
                bad += 1
    return bad


async def _run(ds, base_url: str, policy: str, out: Path, limit_s: float) -> ModelRun:
    settings = RunSettings(api_key="sk-bench", base_url=base_url, limiter=policy, max_attempts=20)
    mr = ModelRun(MODEL, ds, settings, out)
    task = asyncio.create_task(mr.run())
    done, _ = await asyncio.wait({task}, timeout=limit_s)
    if not done:
        mr.stop("benchmark time limit")
        await task
    return mr


def run_one(name: str, policy: str, photos: int, seed: int, tmp: Path) -> dict:
    what, cfg, _, ideal_of, _ = SCENARIOS[name]
    ds = load_dataset(write_photos(tmp / f"{name}-{photos}.parquet", photos, seed=seed))
    with SimProcess({**cfg, "seed": seed}) as sim:
        out = tmp / f"out-{name}-{policy}-{seed}"
        mr = asyncio.run(_run(ds, sim.base_url, policy, out, max(20.0, 2.5 * ideal_of(photos))))
        stats = sim.stats()
    done = mr.done
    ideal = ideal_of(done) if done else float("nan")
    attempts = stats["requests"]
    return {"scenario": name, "policy": policy, "seed": seed, "util": 100 * ideal / mr.wall_s,
            "throttled": 100 * stats["rate_limited"] / max(1, attempts), "wall": mr.wall_s, "ideal": ideal,
            "violations": violations(stats), "done": done, "photos": photos, "stopped": mr.stop_reason,
            "errors": sum(1 for r in mr.results.values() if r.error), "diagnosis": diagnosis(mr)}


def diagnosis(mr: ModelRun) -> str:
    """What to look at when a run falls short: the limiter's changes (not the probe's steps) and the retry tail."""
    lim = mr.limiter
    changes = [f"{c.t:.1f}s {c.reason} -> {c.limit}" + (f" @{c.rate}/s" if c.rate else "")
               for c in lim.history if c.reason != "probe"]
    most = max((len(r.retries) for r in mr.results.values()), default=0)
    head = f"cap {getattr(lim, 'cap_rate', None)}/s, window {lim.limit}, most retries of one photo {most}"
    if len(changes) > 24:
        changes = changes[:12] + [f"... {len(changes) - 24} more ..."] + changes[-12:]
    return head + "\n      " + "\n      ".join(changes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a quarter of the photos per scenario")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--policies", default="reference,adaptive")
    ap.add_argument("--seeds", type=int, default=1, help="runs per scenario and policy (median reported)")
    args = ap.parse_args(argv)
    print(f"# bench_limiter: {machine()}", flush=True)
    rows = []
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in args.scenarios.split(","):
            what, _, photos, _, (u_target, t_target) = SCENARIOS[name]
            if args.quick:
                photos = max(200, photos // 4) if name != "bucket" else 250
            for policy in args.policies.split(","):
                runs = [run_one(name, policy, photos, seed, tmp) for seed in range(args.seeds)]
                r = sorted(runs, key=lambda x: x["util"])[len(runs) // 2]
                ok = r["util"] >= u_target and (t_target is None or r["throttled"] <= t_target) and \
                    (name != "retry_after" or r["violations"] == 0)
                target = f">= {u_target}%" + (f", <= {t_target}%" if t_target is not None else "")
                rows.append([what, policy, f"{r['util']:.1f}", f"{r['throttled']:.1f}", f"{r['wall']:.1f}",
                             f"{r['ideal']:.1f}", r["violations"], f"{r['done']}/{r['photos']}", r["errors"],
                             target, "yes" if ok else "no"])
                print(f"  {name:11s} {policy:9s} util {r['util']:5.1f}%  throttled {r['throttled']:4.1f}%  "
                      f"wall {r['wall']:6.1f}s  ideal {r['ideal']:6.1f}s  RA violations {r['violations']}"
                      + (f"  ({r['stopped']})" if r["stopped"] else "")
                      + (f"  all runs: {[round(x['util'], 1) for x in runs]}" if len(runs) > 1 else ""), flush=True)
                for x in runs:  # an adaptive run below target says why, so an outlier can be understood
                    if x["util"] < u_target and policy == "adaptive":
                        print(f"    below target (seed {x['seed']}, {x['util']:.1f}%): {x['diagnosis']}", flush=True)
    print()
    print(table(rows, ["scenario", "policy", "utilization %", "throttled %", "wall s", "ideal s",
                       "Retry-After violations", "photos done", "errors", "target", "met"]))
    print()
    print(NOTES)
    if args.quick:
        print("--quick: a quarter of the photos, so the slow start and the first measurement weigh about four times "
              "as much;\nthe targets are meant for the full run.")
    print(f"\n(benchmark took {time.perf_counter() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
