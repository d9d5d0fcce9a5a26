"""The limiter against a real reverse proxy's limits: nginx's limit_req (a leaky bucket) and limit_conn (in flight).

    uv run --group bench python benchmarks/bench_nginx.py [--seconds 30] [--policies adaptive,reference]
        [--cases strict,burst,slow,inflight,both]

nginx (Debian's; tests/gateway/nginx.py starts it) stands in front of the project's simulator, which answers
after a lognormal latency (median 0.2 s, sigma 0.3) and has no caps of its own. Each case runs rate x --seconds
photos through the real runner (`run_models`, as the CLI), one policy after another, each on a fresh nginx (its
bucket full). nginx's 429s carry no Retry-After. Cases:

- strict: limit_req 20/s, burst 0 (a request sooner than 50 ms after the last one taken is refused)
- burst: limit_req 20/s, burst 20, nodelay
- slow: limit_req 4/s, burst 0
- inflight: limit_conn 6 (at 0.2 s: about 29/s)
- both: limit_req 25/s burst 5, and limit_conn 4 (about 19/s: the in-flight cap binds)
- queue: limit_req 10/s, burst 20 without nodelay, nginx's default: requests past the rate wait in a queue of 20
  and are let through at the rate, refused only past it; the wait is part of each answer's latency
- processes: limit_req 20/s burst 10, shared by two hotdogbench processes started together (nginx counts per client
  address: both are 127.0.0.1), each with half the photos

Figures from nginx's own access log (the server's count, not the client's; tests/gateway/nginx.py's `use`):
throttled = 429s / chat requests; utilization over the saturated span, from 2 s after the first answer until 85%
of the photos were answered: limit_req, answers in the span / (rate x span); limit_conn, the mean number in flight
/ n; both, the greater of the two. lost = photos that ended "retries exhausted". fairness (processes): Jain's index
of the processes' answers until the first of them had 85% of its photos answered (the client's count). p50 s:
the median of nginx's request times of the answers (the model's is 0.2 s: more is nginx's queue, in the run's
latency figures too).
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))
from benchlib import SimProcess, machine, table, write_photos  # noqa: E402
from gateway.nginx import SATURATED, find_nginx, start_nginx, use  # noqa: E402

from hotdogbench_core import RunSettings, load_dataset  # noqa: E402
from hotdogbench_core.run.session import run_models  # noqa: E402

MODEL = "openai/gpt-6-luna"
LATENCY_S, SIGMA = 0.2, 0.3
CASES = {  # name: (limit_req rate per s or None, burst, limit_conn n or None, hotdogbench processes, nodelay)
    "strict": (20.0, 0, None, 1, True),
    "burst": (20.0, 20, None, 1, True),
    "slow": (4.0, 0, None, 1, True),
    "inflight": (None, 0, 6, 1, True),
    "both": (25.0, 5, 4, 1, True),
    "queue": (10.0, 20, None, 1, False),
    "processes": (20.0, 10, None, 2, True),
}


def ideal_rate(case: str) -> float:
    rate, _, n, _, _ = CASES[case]
    by_conn = n / (LATENCY_S * 1.046) if n else float("inf")  # (the lognormal's mean: median x e^(sigma^2 / 2))
    return min(rate or float("inf"), by_conn)


def run_one(base_url: str, photos_path: str, out: str, policy: str, conn=None) -> dict:
    """One hotdogbench run (a process of its own when conn is given: it sends the result back)."""
    answered: list[float] = []

    def on_event(e):
        if type(e).__name__ == "PhotoDone" and e.result.error is None:
            answered.append(time.time())

    settings = RunSettings(api_key="sk-bench", base_url=base_url, limiter=policy)
    res = asyncio.run(run_models([MODEL], load_dataset(photos_path), settings, out=out, run_name="r",
                                 on_event=on_event))
    conc = res.summaries[0]["concurrency"]
    out = {"answered": answered, "throttles": conc.get("throttles", 0), "lost": conc.get("retries_exhausted", 0)}
    if conn is not None:
        conn.send(out)
    return out


def jain(xs: list[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if any(xs) else 1.0


def run_case(case: str, policy: str, seconds: float, tmp: Path, upstream: str) -> dict:
    """Each process runs its own photos (a share of rate x seconds); several start together, as two people's
    notebooks on one key would."""
    rate, burst, n, k, nodelay = CASES[case]
    photos = max(20, round(ideal_rate(case) * seconds / k))
    path = str(write_photos(tmp / f"{case}.parquet", photos))
    with start_nginx(upstream, tmp / f"nginx-{case}-{policy}", rate_per_s=rate, burst=burst, max_in_flight=n,
                     nodelay=nodelay) as gw:
        t0 = time.time()
        if k == 1:
            runs = [run_one(gw.base_url, path, str(tmp / f"out-{case}-{policy}"), policy)]
        else:
            ctx = mp.get_context("spawn")
            pipes = [ctx.Pipe() for _ in range(k)]
            procs = [ctx.Process(target=run_one, args=(gw.base_url, path, str(tmp / f"out-{case}-{policy}-{i}"),
                                                       policy, child)) for i, (_, child) in enumerate(pipes)]
            for p in procs:
                p.start()
            runs = [parent.recv() for parent, _ in pipes]
            for p in procs:
                p.join()
        wall = time.time() - t0
    requests = gw.requests()  # (nginx's access log, read once)
    util, throttled = use(requests, photos * k, rate, n)
    took = [s for _, status, s in requests if status == 200]
    first_done = min(sorted(r["answered"])[max(0, int(SATURATED * photos) - 1)] for r in runs)
    return {"case": case, "policy": policy, "photos": photos * k, "answered": sum(len(r["answered"]) for r in runs),
            "wall": wall, "ideal": photos * k / ideal_rate(case), "lost": sum(r["lost"] for r in runs),
            "util": util, "throttled": throttled, "p50": statistics.median(took) if took else float("nan"),
            "fair": jain([sum(1 for t in r["answered"] if t <= first_done) for r in runs]) if k > 1 else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0, help="photos = the case's rate x this")
    ap.add_argument("--policies", default="adaptive,reference")
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args(argv)
    nginx, why = find_nginx()
    if nginx is None:
        print(why, file=sys.stderr)
        return 2
    version = subprocess.run([str(nginx), "-v"], capture_output=True, text=True).stderr.strip()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, \
            SimProcess({"latency_s": LATENCY_S, "latency_sigma": SIGMA, "seed": 0}) as sim:
        tmp = Path(tmp)
        for case in args.cases.split(","):
            for policy in args.policies.split(","):
                r = run_case(case, policy, args.seconds, tmp, sim.base_url)
                print(f"{case} {policy}: {r}", file=sys.stderr)
                rows.append([case, policy, r["photos"], f"{ideal_rate(case):.1f}", f"{r['util']:.1f}",
                             f"{r['throttled']:.1f}", f"{r['p50']:.2f}", "-" if r["fair"] is None else f"{r['fair']:.2f}", r["lost"],
                             r["photos"] - r["answered"], f"{r['wall']:.1f}", f"{r['ideal']:.1f}"])
    print(f"{version}; simulator latency {LATENCY_S} s (sigma {SIGMA}); {machine()}")
    print(table(rows, ["case", "policy", "photos", "cap /s", "util %", "throttled %", "p50 s", "fairness", "lost",
                       "unanswered",
                       "wall s", "ideal s"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
