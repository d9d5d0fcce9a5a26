"""Two versions of the default limiter on the same scenario draws (fake clock): misses and each family's median and
worst side by side, then the draws that moved most. The research loop behind docs/limiter-log.md.

    uv run --group bench python benchmarks/compare_limiters.py --base HEAD [--variant .] [--families a,b]
        [--draws 100] [--first-seed 0] [--held-out] [--moved 10] [--jobs 2] [--no-cache]
    uv run --group bench python benchmarks/compare_limiters.py --trace strict:1 [--variant FILE]

A version is a git revision (its hotdogbench_core/limit/paced.py), a file holding a whole paced.py, or `.` (the
working tree's). Only paced.py is swapped: the key coordinator (limit/key.py), the scenarios and the measures are the
working tree's, so both versions meet the same draws and are judged alike (bench_families.run_draw, missed). Each
version runs in worker processes of its own with its PacedLimiter's methods and constants installed on the live
class, so KeyMember (a subclass) runs it too. --trace prints one draw's limit history and every send of one of its
clients (a model or a process): when, the pace and window then, the level, and whether it was refused.

A version's results are kept in ~/.cache/hotdogbench/compare (or $XDG_CACHE_HOME's), named by a hash of its
paced.py, of every other source file the draws run (hotdogbench_core and benchmarks) and of the draws asked for, so
comparing variants against one base runs the base once; --no-cache runs and keeps nothing.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
import types
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_families as bf  # noqa: E402
from benchlib import machine, table  # noqa: E402
from scenarios import FAMILIES, HELD_OUT, draw  # noqa: E402

from hotdogbench_core.limit import paced  # noqa: E402
from hotdogbench_core.sim.capmodel import FakeClock, simulate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MODULE = "hotdogbench_core/limit/paced.py"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hotdogbench" / "compare"
SHOWN = slice(0, 6)  # of bench_families.summarize's columns (bf.HEADER[2:]): utilization, throttled, fairness
LATE = (("util_late", min, "util"), ("throttled_late", max, "throttled"))  # the start left out: (key, worst, name)
HEADER = ["family", "version", "misses"] + bf.HEADER[2:][SHOWN] + \
    [h for _, _, name in LATE for h in (f"{name} after {bf.LATE_S:.0f} s med", "worst")]


def source(version: str) -> str:
    """paced.py's text at `version`: `.` (the working tree), a file, or a git revision."""
    if version == ".":
        return (REPO / MODULE).read_text()
    if Path(version).is_file():
        return Path(version).read_text()
    done = subprocess.run(["git", "show", f"{version}:{MODULE}"], cwd=REPO, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"--base/--variant {version!r} is neither a file nor a git revision with {MODULE}: "
                         f"{done.stderr.strip()}")
    return done.stdout


def install(text: str) -> None:
    """Run this process's PacedLimiter as the class in `text` does (methods and constants, on the live class)."""
    ns = {"__name__": paced.__name__, "__package__": paced.__package__}
    exec(compile(text, paced.__file__, "exec"), ns)
    live, new = paced.PacedLimiter, ns["PacedLimiter"]

    def rebind(f):  # a method that calls super() holds its class in a cell: the live class, not the new one
        if not isinstance(f, types.FunctionType) or not f.__closure__:
            return f
        cells = tuple(types.CellType(live) if name == "__class__" else cell
                      for name, cell in zip(f.__code__.co_freevars, f.__closure__))
        return types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, cells)

    skip = {"__dict__", "__weakref__", "__module__", "__qualname__"}
    for name in [k for k in vars(live) if k not in skip and k not in vars(new)]:
        delattr(live, name)
    for name, value in vars(new).items():
        if name not in skip:
            setattr(live, name, property(rebind(value.fget), value.fset, value.fdel) if isinstance(value, property)
                    else rebind(value))


def run_version(text: str, jobs: list, workers: int) -> list[dict]:
    with ProcessPoolExecutor(workers, initializer=install, initargs=(text,)) as ex:
        return list(ex.map(bf.run_draw, jobs, chunksize=4))


def results_key(text: str, jobs: list) -> str:
    """What a version's results depend on: its paced.py, the rest of the code the draws run (the working tree's
    hotdogbench_core but paced.py, and benchmarks/), and the draws."""
    digest = hashlib.sha256(text.encode())
    for path in sorted([*(REPO / "hotdogbench_core").rglob("*.py"), *(REPO / "benchmarks").glob("*.py")]):
        if path != REPO / MODULE:
            digest.update(path.relative_to(REPO).as_posix().encode() + b"\0" + path.read_bytes())
    digest.update(json.dumps(jobs).encode())
    return digest.hexdigest()[:20]


def run_cached(text: str, jobs: list, workers: int, cache: Path | None = CACHE) -> tuple[list[dict], bool]:
    """run_version's results, from the cache when this version met these draws before (and kept there if not);
    also whether they came from it. cache=None: run, keep nothing."""
    path = None if cache is None else cache / f"{results_key(text, jobs)}.json"
    if path is not None and path.exists():
        return json.loads(path.read_text()), True
    rows = run_version(text, jobs, workers)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(f".{os.getpid()}.part")  # whole or absent: a run stopped mid-write leaves no half
        part.write_text(json.dumps(rows))
        part.replace(path)
    return rows, False


def family_row(rows: list[dict]) -> list:
    """bench_families' summary of one family's draws: misses, utilization, throttled and fairness; then utilization
    and throttled after the start (LATE_S past the ramp; the sends from LATE_S on), median and worst."""
    summary = bf.summarize(rows)
    out = [summary[bf.HEADER.index("misses") - 2]] + summary[SHOWN]
    for key, worst, _ in LATE:
        xs = [r[key] for r in rows if not math.isnan(r.get(key, math.nan))]  # (results cached before it: none)
        out += [f"{statistics.median(xs):.1f}", f"{worst(xs):.1f}"] if xs else ["-", "-"]
    return out


def moved_by(base: dict, variant: dict) -> float:
    """How far one draw's utilization moved (0 for a draw left out by either version)."""
    moved = abs(variant["util"] - base["util"])
    return 0.0 if math.isnan(moved) else moved


def compare(base: list[dict], variant: list[dict], families: list[str], moved: int) -> str:
    """Per family: the base's row, then the variant's; then the draws whose utilization moved most."""
    rows = []
    for f in families:
        for name, results in (("base", base), ("variant", variant)):
            rows.append([f if name == "base" else "", name] + family_row([r for r in results if r["family"] == f]))
    out = [table(rows, HEADER)]
    out.append(f"misses: base {sum(map(bf.missed, base))}, variant {sum(map(bf.missed, variant))} "
               f"of {len(base)} draws")
    pairs = [p for p in sorted(zip(base, variant), key=lambda pair: moved_by(*pair), reverse=True) if moved_by(*p)]
    if moved:
        out.append(f"\nthe {min(moved, len(pairs))} draws whose utilization moved most (base -> variant):"
                   if pairs else "\nno draw's utilization moved")
        for b, v in pairs[:moved]:
            out.append(f"  {b['family']} seed {b['seed']}: util {b['util']:.1f} -> {v['util']:.1f}%, throttled "
                       f"{b['throttled']:.1f} -> {v['throttled']:.1f}% ({b['params']})")
    return "\n".join(out)


def trace(family: str, seed: int, client: int = 0) -> str:
    """One draw under the installed limiter: one client's limit history, then its every send."""
    sent = []
    start = paced.PacedLimiter.start

    def recorded(self, now=None):
        now = self.clock() if now is None else now
        rate, window = self.rate(now), self.window(now)
        level = start(self, now)
        sent.append((self, rate, window, level))
        return level

    paced.PacedLimiter.start = recorded
    try:
        d = draw(family, seed)
        setup, clock = d.make(), FakeClock(0.0)
        clients = bf.make_clients("adaptive", setup, clock)
        simulate(clients, clock, seed=seed, until=1500.0)
    finally:
        paced.PacedLimiter.start = start
    if not 0 <= client < len(clients):
        raise SystemExit(f"--trace: {family} seed {seed} has clients 0-{len(clients) - 1}, not {client}")
    c = clients[client]
    r = bf.run_draw((family, seed, "adaptive"))
    lines = [f"{family} seed {seed}: {d.describe()}",
             f"utilization {r['util']:.1f}%, throttled {r['throttled']:.1f}%, {r['wall']:.1f} s",
             f"\nclient {client}'s limit history (s, in-flight limit, pace/s, reason):"]
    lines += [f"  {e.t:8.2f} {e.limit:4d} {e.rate!s:>8} {e.reason}" for e in c.limiter.history]
    lines.append(f"\nsends of client {client} of {len(clients)} (s, gap ms, pace/s, window, in flight with it, refused):")
    mine = [(rate, window, level) for lim, rate, window, level in sent if lim is c.limiter]
    prev = 0.0
    for (t, _, refused), (rate, window, level) in zip(c.sends, mine):
        lines.append(f"  {t:8.3f} {1000 * (t - prev):7.1f} {rate:8.2f} {window:6.1f} {level:4d}"
                     f" {'REFUSED' if refused else ''}")
        prev = t
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="HEAD", help="a git revision, a paced.py file, or . (default HEAD)")
    ap.add_argument("--variant", default=".", help="likewise (default .: the working tree)")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--held-out", action="store_true", help="the held-out seeds (scenarios.HELD_OUT) only")
    ap.add_argument("--moved", type=int, default=10, help="list this many draws whose utilization moved most")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-cache", action="store_true", help="run both versions afresh and keep nothing")
    ap.add_argument("--trace", metavar="FAMILY:SEED[:CLIENT]",
                    help="print one draw under --variant instead (its client 0, or CLIENT: a model or process)")
    args = ap.parse_args(argv)
    if args.trace:
        family, seed, client = (args.trace.split(":") + ["0"])[:3]
        if family not in FAMILIES or not seed.isdigit() or not client.isdigit():
            ap.error(f"--trace wants FAMILY:SEED[:CLIENT] with a known family (got {args.trace!r})")
        install(source(args.variant))
        print(trace(family, int(seed), int(client)))
        return 0
    families = args.families.split(",")
    for f in families:
        if f not in FAMILIES:
            ap.error(f"unknown family {f!r} (known: {', '.join(FAMILIES)})")
    seeds = list(HELD_OUT) if args.held_out else list(range(args.first_seed, args.first_seed + args.draws))
    jobs = [(f, s, "adaptive") for f in families for s in seeds]
    print(f"# compare_limiters: {machine()}; base {args.base}, variant {args.variant}; {len(seeds)} draws per family",
          flush=True)
    t0 = time.perf_counter()
    cache = None if args.no_cache else CACHE
    (base, base_kept), (variant, variant_kept) = (run_cached(source(v), jobs, args.jobs, cache)
                                                  for v in (args.base, args.variant))
    print(compare(base, variant, families, args.moved))
    kept = [name for name, k in (("base", base_kept), ("variant", variant_kept)) if k]
    if kept:
        print(f"\n({' and '.join(kept)} from the cache, {CACHE}; --no-cache runs afresh)")
    print(f"\n(took {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
