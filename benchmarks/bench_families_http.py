"""The scenario families over real HTTP: the real runner against the simulator in a child process, a few draws each.

    uv run python benchmarks/bench_families_http.py [--draws 2 | --seeds 3,35] [--families a,b]
        [--policies adaptive,reference] [--scale 0.3]

The fake-clock model (bench_families.py) is the primary evidence; this confirms it with the runner, the HTTP client,
the journal and the classifier in the loop. Each draw of benchmarks/scenarios.py becomes a SimConfig: buckets, fixed
windows (clock-aligned to the wall clock; 60 s windows become 10 s ones to keep runs short), in-flight caps, caps
that move (cap_schedule, drifts and oscillations in steps), the Retry-After and reset-hint variants, noise (5xx,
200-errors, drops, 402 in-flight budgets), several models at once with --parallel-models behind one key-wide cap
(caps_per="key") or caps of their own (caps_per="model", one rate for all: the simulator has no per-model rates),
and two processes on one key (two runner processes against one simulator). Not over HTTP: latency that grows with
the load (the simulator's latency does not depend on it), refusals as slow as answers (`gateway`: the simulator
refuses at once) and 402 in-flight caps (the simulator's 402s are random): those draws run with their plain latency,
quick refusals and a 429 in-flight cap. A client that hears answers late (`loaded`) is the simulator letting an
answer out of its in-flight count that long before sending it (`release_early_s`), on top of the runner's own lag.
The simulator sends X-RateLimit-Reset (epoch ms) on every 429, as OpenRouter does on its own: "none" here means no
Retry-After. Photos are `--scale` of the model's count (for a fixed window, at least three windows' quota, so that
the span holds two whole windows).

Measured from the simulator's own log of arrivals: utilization = admitted / allowed over the saturated span (until
85% of the photos were answered), allowed as in bench_families.py: a fixed window counts the admissions in the whole
windows of the span (the simulator's windows are aligned to the wall clock: the run starts inside one, which does not
count), n each; throttled = 429/402 / attempts; fairness = Jain over the models' (processes') answered photos at the
first one's 85% point.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_families import whole_windows  # noqa: E402
from benchlib import SimProcess, machine, table, write_photos  # noqa: E402
from scenarios import FAMILIES, draw  # noqa: E402

from hotdogbench_core import RunSettings, load_dataset  # noqa: E402
from hotdogbench_core.run.session import run_models  # noqa: E402

MODELS = ["openai/gpt-6-luna", "openai/gpt-6.1-sol", "openai/gpt-6-astra", "typesafe/jev-1.14", "cloudflare/clef",
          "anthropic/claude-haiku-5.5", "anthropic/claude-sonnet-5.5", "anthropic/claude-opus-5.5"]
# the model's refusal modes as the simulator's (reset_ms: "none", since the simulator always sends X-RateLimit-Reset)
RA_MODES = {"none": "none", "exact": "exact", "fixed": "fixed", "large": "large", "reset_requests": "reset_requests",
            "gateway": "gateway", "reset_ms": "none", "openrouter": "openrouter", "http_date": "http_date",
            "retry_after_ms": "retry_after_ms", "google": "google", "ratelimit": "ratelimit",
            "flask": "flask"}


def _schedule(cap, horizon: float) -> list:
    """A cap's scale(t) as steps of 1 s (what the simulator's cap_schedule takes)."""
    if cap.scale is None:
        return []
    out, last = [], None
    for t in range(int(horizon) + 1):
        f = round(cap.scale(float(t)), 2)
        if f != last:
            out.append([float(t), f])
            last = f
    return out


def sim_config(setup, seed: int) -> tuple[dict, float]:
    """The SimConfig fields for a draw's setup, and the allowed rate (requests/s) its utilization is judged by."""
    caps = setup.measure[0]
    srv = setup.servers[0]
    cfg = {"seed": seed, "latency_s": srv.latency, "latency_sigma": srv.sigma, "error_5xx": srv.error_5xx,
           "error_in_200": srv.error_200, "drop_connection": srv.drop, "in_flight_402": srv.refuse_402,
           "release_early_s": srv.client_lag, "caps_per": "key" if setup.shared or len(setup.servers) == 1 else "model"}
    allowed = math.inf
    for cap in caps:
        cfg["retry_after"] = RA_MODES[cap.retry_after]
        cfg["retry_after_s"] = cap.retry_after_s
        cfg["retry_after_share"] = cap.large_share
        if cap.kind == "bucket":
            cfg.update(rate_per_s=cap.rate, burst=max(1, int(cap.burst)), bucket_queue=cap.queue)
            allowed = min(allowed, cap.rate)
        elif cap.kind == "window":
            period = cap.period if cap.retry_after == "openrouter" else min(cap.period, 10.0)  # (a free model's
            #                                                           quota is named for its minute: kept whole)
            n = max(1, round(cap.n * period / cap.period))
            cfg.update(window_n=n, window_s=period, window_from_first=cap.from_first, window_slide=cap.slide,
                       window_counts_refused=cap.counts_refused)
            allowed = min(allowed, n / period)
        else:
            cfg.update(max_in_flight=cap.n)
            allowed = min(allowed, cap.n / setup.mean_latency)
        sched = _schedule(cap, 120)
        if sched:
            cfg["cap_schedule"] = sched
    return cfg, allowed


def window_utilization(cfg: dict, arrivals: list, span: float, per: int) -> float:
    """Admissions in the whole windows of the span over n each, as bench_families.py counts them: the simulator's
    windows are aligned to the wall clock (boundaries at whole multiples of window_s) and its arrival times are
    time.monotonic(), one clock for every process of this machine."""
    start = arrivals[0][0]
    wall = time.time() - time.monotonic()  # wall-clock time at monotonic 0
    steps = cfg.get("cap_schedule") or []  # [[seconds since the first request, factor], ...]

    window = SimpleNamespace(  # the simulator's window, on the run's clock (seconds since its first request)
        period=cfg["window_s"], n=cfg["window_n"] * per, phase=-(start + wall) % cfg["window_s"],
        factor=lambda t: next((f for at, f in reversed(steps) if t >= at), 1.0))
    wins = whole_windows(window, span)
    admitted = sum(1 for t, s in arrivals if s not in (429, 402) and any(a <= t - start < b for a, b, _ in wins))
    return 100 * admitted / sum(n for *_, n in wins)


def _process_child(base_url: str, table_path: str, out: str, model: str, conn) -> None:
    ds = load_dataset(table_path)
    settings = RunSettings(api_key="sk-bench", base_url=base_url)
    done = []

    def on_event(e):
        if type(e).__name__ == "PhotoDone":
            done.append(time.time())
    asyncio.run(run_models([model], ds, settings, out=out, run_name="p", on_event=on_event))
    conn.send(done)


def run_draw(family: str, seed: int, policy: str, scale: float, tmp: Path) -> dict:
    d = draw(family, seed)
    setup = d.make()
    cfg, allowed = sim_config(setup, seed)
    k = len(setup.servers)
    per = 1 if setup.shared or k == 1 else k  # caps of their own: k of them
    windowed = "window_n" in cfg and "rate_per_s" not in cfg  # a fixed window is the cap to judge
    from_first = windowed and (cfg.get("window_from_first") or cfg.get("window_slide"))  # (one from the first
    #                                 request, or a sliding one: n a period at best)
    photos = max(40, int(setup.photos[0] * scale))
    if windowed:  # at least two whole windows to judge (a run starts inside one)
        photos = max(photos, math.ceil(3 * cfg["window_n"] * per / k))
    if setup.models:
        cfg["extra_models"] = {m: {} for m in setup.models}  # (the simulator serves them)
    path = write_photos(tmp / f"{family}-{seed}.parquet", photos, seed=seed)
    ds = load_dataset(path)
    models = setup.models or MODELS[:k]  # (a family's own ids where they matter: OpenRouter's free variants)
    t_done: dict[str, list[float]] = {m: [] for m in models}
    p50x = None  # the run's median latency over the model's (a server's queue adds to it)
    keyed = None  # several models in one run: did they go through the key's limiter (summary.json's key_shared)?
    with SimProcess(cfg) as sim:
        t0 = time.time()
        if setup.processes:
            ctx = mp.get_context("spawn")
            pipes, procs = [], []
            for i, m in enumerate(models):
                a, b = ctx.Pipe()
                out = tmp / f"o-{family}-{seed}-{i}"  # (per family: two families' processes draw the same seeds)
                p = ctx.Process(target=_process_child, args=(sim.base_url, str(path), str(out), m, b))
                p.start()
                pipes.append(a)
                procs.append(p)
            for m, a, p in zip(models, pipes, procs):
                t_done[m] = [t - t0 for t in a.recv()]
                p.join()
        else:
            settings = RunSettings(api_key="sk-bench", base_url=sim.base_url, limiter=policy)

            def on_event(e):
                if type(e).__name__ == "PhotoDone":
                    t_done[e.model].append(time.time() - t0)
            res = asyncio.run(run_models(models, ds, settings, out=tmp / f"out-{family}-{seed}-{policy}",
                                         run_name="r", on_event=on_event, parallel=k > 1))
            p50s = [s.get("latency_p50_s") for s in res.summaries]
            if cfg["latency_s"] > 0 and all(p50s):
                p50x = max(p50s) / cfg["latency_s"]
            if k > 1:
                keyed = sum(bool(s["concurrency"].get("key_shared")) for s in res.summaries)
        stats = sim.stats()
    arrivals = sorted((t, status) for v in stats["by_digest"].values() for t, status, _ in v)
    if not arrivals:
        return {"family": family, "seed": seed, "util": float("nan"), "throttled": float("nan"), "fair": None}
    start = arrivals[0][0]
    q = math.ceil(0.85 * photos)
    spans = [sorted(v)[q - 1] if len(v) >= q else max(v, default=0.0) for v in t_done.values()]
    span = mono_span = min(spans)  # (the runner's clock and the simulator's start together, to a few ms)
    if windowed and not from_first:
        util = window_utilization(cfg, arrivals, mono_span, per)
    else:  # (a window from the first request: n a period over the span, its first n at once no pace, so a short
        admitted = sum(1 for t, s in arrivals if s not in (429, 402) and t - start < mono_span)  # run may pass 100%)
        util = 100 * admitted / (allowed * mono_span * per + cfg.get("burst", 0))
    refused = sum(1 for _, s in arrivals if s in (429, 402))
    fair = None
    if k > 1 and setup.shared:
        xs = [sum(1 for t in v if t <= span) for v in t_done.values()]
        fair = sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if any(xs) else 1.0
    return {"family": family, "seed": seed, "policy": policy, "util": min(util, 100.0 * 1.5),
            "throttled": 100 * refused / len(arrivals), "fair": fair, "params": d.describe(), "keyed": keyed,
            "models": k, "p50x": p50x}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=2)
    ap.add_argument("--seeds", help="these seeds (comma-separated, e.g. a family's worst draws on the model) "
                                    "instead of the first --draws")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--policies", default="adaptive")
    ap.add_argument("--scale", type=float, default=0.3, help="photos per draw, as a share of the model's")
    args = ap.parse_args(argv)
    try:
        seeds = [int(x) for x in args.seeds.split(",")] if args.seeds else list(range(args.draws))
    except ValueError:
        ap.error(f"--seeds must be whole numbers separated by commas, not {args.seeds!r}")
    print(f"# bench_families_http: {machine()}; seeds {', '.join(map(str, seeds))} of each family, photos "
          f"x{args.scale}", flush=True)
    t_start = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for fam in args.families.split(","):
            for policy in args.policies.split(","):
                rs = [run_draw(fam, seed, policy, args.scale, tmp) for seed in seeds]
                for r in rs:
                    print(f"  {fam:9s} {policy:9s} seed {r['seed']}: util {r['util']:5.1f}% throttled "
                          f"{r['throttled']:4.1f}%" + (f" fair {r['fair']:.2f}" if r["fair"] is not None else "")
                          + (f" key's limiter {r['keyed']}/{r['models']}" if r.get("keyed") is not None else "")
                          + (f" p50 latency x{r['p50x']:.2f}" if r.get("p50x") else "")
                          + f"  ({r.get('params', '')})", flush=True)
                us = [r["util"] for r in rs]
                ts = [r["throttled"] for r in rs]
                fs = [r["fair"] for r in rs if r["fair"] is not None]
                xs = [r["p50x"] for r in rs if r.get("p50x")]
                rows.append([fam, policy, f"{statistics.median(us):.1f}", f"{min(us):.1f}",
                             f"{statistics.median(ts):.1f}", f"{max(ts):.1f}",
                             f"{min(fs):.2f}" if fs else "-", f"{max(xs):.2f}" if xs else "-"])
    print()
    print(table(rows, ["family", "policy", "util % med", "worst", "throttled % med", "worst", "fair worst",
                       "p50 latency / model's, worst"]))
    print(f"\n(benchmark took {time.perf_counter() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
