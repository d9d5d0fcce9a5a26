"""Issue 10's real-world case, measured again: the LiteLLM proxy's per-minute request limit, over real HTTP.

    uv run --group bench python benchmarks/bench_gateway.py [--rpm 120] [--minutes 4] [--policies adaptive,reference]
                                                            [--max-rate 118/min]

LiteLLM (the version .ci/run installs; see docs/gateways.md) serves one deployment that answers by itself
(mock_response) and takes `--rpm` requests per UTC clock minute (usage-based-routing-v2; LiteLLM lets rpm - 1 of
them through). Its 429s carry `llm_provider-retry-after: 60` and no Retry-After. Each
policy runs `--minutes` x rpm photos through the real runner (`run_models`, as the CLI), one after another on one
proxy, each run starting at a clock minute.

Per policy: answers in each minute, utilization = answers in the whole minutes a run spans / (rpm x those minutes)
(the run starts at a minute's start, so every minute but the last is whole; the last, where the photos run out, is
left out), throttled = 429s / attempts, photos lost as "retries exhausted", and the wall time against the ideal
(photos / rpm minutes). On 2026-11-30 the limiter of then held 8-11% of a 120 rpm limit for 13 minutes.
`--max-rate` adds a row: the adaptive limiter told that cap (RunSettings.max_rate), as a user who knows it.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO / "tests"))
from benchlib import machine, table, write_photos  # noqa: E402
from gateway.conftest import LITELLM_VERSION, find_litellm, mock_deployment, start_litellm  # noqa: E402

from hotdogbench_core import RunSettings, load_dataset  # noqa: E402
from hotdogbench_core.run.session import run_models  # noqa: E402

MODEL = "mock/limited"


def gateway_config(rpm: int) -> dict:
    # (a routing_strategy_args ttl of 10 s did not shorten the window: with refused requests coming every few
    # seconds, answers came once a minute all the same, 2026-12-03)
    return {"model_list": [mock_deployment(MODEL, '{"hot_dog": false}', rpm=rpm)],
            "router_settings": {"routing_strategy": "usage-based-routing-v2"},
            "litellm_settings": {"num_retries": 0}}  # (the gateway would hold a refused request itself)


def wait_for_minute() -> float:
    """Sleep to the next UTC clock minute; return its time."""
    now = time.time()
    start = math.ceil(now / 60) * 60
    time.sleep(max(0.0, start - now))
    return start


def run_policy(gw, policy: str, photos_path: Path, rpm: int, out: Path, max_rate: str | None = None) -> dict:
    ds = load_dataset(photos_path)
    settings = RunSettings(api_key=gw.master_key, base_url=gw.base_url, limiter=policy, max_rate=max_rate)
    answered_at: list[float] = []

    def on_event(e):
        if type(e).__name__ == "PhotoDone" and e.result.error is None:
            answered_at.append(time.time())

    t0 = wait_for_minute()
    name = policy if max_rate is None else f"{policy}-max-rate"
    res = asyncio.run(run_models([MODEL], ds, settings, out=out, run_name=name, on_event=on_event))
    wall = time.time() - t0
    conc = res.summaries[0]["concurrency"]
    per_minute = Counter(int((t - t0) // 60) for t in answered_at)
    last = max(per_minute, default=0)
    whole = [per_minute.get(i, 0) for i in range(last)]  # every minute before the one where the photos ran out
    n = len(ds)
    throttles = conc.get("throttles", 0)
    return {"policy": policy if max_rate is None else f"{policy}, --max-rate {max_rate}", "photos": n,
            "answered": len(answered_at), "wall": wall,
            "ideal": n / rpm * 60, "per_minute": [per_minute.get(i, 0) for i in range(last + 1)],
            "util": 100 * sum(whole) / (rpm * len(whole)) if whole else float("nan"),
            "throttled": 100 * throttles / max(1, throttles + len(answered_at)),
            "lost": conc.get("retries_exhausted", 0)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rpm", type=int, default=120, help="the deployment's requests per clock minute (LiteLLM's rpm)")
    ap.add_argument("--minutes", type=float, default=4.0, help="photos = rpm x this")
    ap.add_argument("--policies", default="adaptive,reference")
    ap.add_argument("--max-rate", default=None, help="also run the adaptive limiter told this cap (as 118/min)")
    ap.add_argument("--keep", type=Path, help="keep the run folders (summary.json: the limiter's history) here")
    args = ap.parse_args(argv)
    if find_litellm()[0] is None:
        print(find_litellm()[1], file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        photos = write_photos(tmp / "photos.parquet", max(1, round(args.rpm * args.minutes)))
        with start_litellm(gateway_config(args.rpm), tmp / "gw") as gw:
            print(f"LiteLLM ready in {gw.startup_s:.1f} s; {args.rpm} requests per clock minute", file=sys.stderr)
            runs = [(p, None) for p in args.policies.split(",")]
            runs += [("adaptive", args.max_rate)] if args.max_rate else []
            for policy, max_rate in runs:
                r = run_policy(gw, policy, photos, args.rpm, args.keep or tmp / "out", max_rate)
                print(f"{r['policy']}: {r}", file=sys.stderr)
                rows.append([r["policy"], r["photos"], f"{r['util']:.1f}", f"{r['throttled']:.1f}", r["lost"],
                             f"{r['wall']:.0f}", f"{r['ideal']:.0f}", " ".join(map(str, r["per_minute"]))])
    print(f"LiteLLM {LITELLM_VERSION}, {args.rpm} requests per clock minute; {machine()}")
    print(table(rows, ["policy", "photos", "util %", "throttled %", "lost", "wall s", "ideal s",
                       "answers per minute"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
