"""hotdogbench's command line: run, demo, build-dataset, simulate."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from .._version import __version__
from ..store.dataset import DATA_URL, SAMPLE, DatasetError, load_dataset
from ..run.keys import MissingKeyError, require_key
from ..protocol.models import PRESETS, UnknownModelError, resolve_models
from .progress import ProgressBar
from ..store.results import summary_line
from ..run.runner import DEFAULT_BASE_URL, LIMITER_POLICIES, Event, LimitChanged, ModelRun, ModelStarted, PhotoDone, RunError, RunSettings
from ..run.session import default_run_name, run_models

LOOPBACK = ("http://127.", "http://localhost", "http://[::1]")
# The demo's simulated provider: a hidden in-flight cap and a little noise, so the limiter has work to do.
DEMO_SIM = {"seed": 0, "max_in_flight": 40, "latency_s": 0.4, "latency_sigma": 0.4, "error_5xx": 0.01,
            "unanswered_rate": 0.02}


class TerminalDisplay:
    """A progress bar per model (plain periodic lines when stderr is not a terminal)."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.bar: ProgressBar | None = None
        self.run: ModelRun | None = None

    def on_model(self, run: ModelRun) -> None:
        self.run = run

    def on_tick(self) -> None:
        if self.bar is not None and not self.quiet:
            self.bar.update(self._counters())

    def _counters(self) -> str:
        lim = self.run.limiter if self.run else None
        return (f"limit {lim.limit}, in flight {lim.in_flight}, throttles {lim.throttles}, "
                f"dropped conns {lim.transport_errors}") if lim else ""

    def on_event(self, event: Event) -> None:
        if self.quiet:
            return
        if isinstance(event, ModelStarted):
            self.bar = ProgressBar(event.model, event.total)
            self.bar.done = event.already_done
        elif self.bar is not None and isinstance(event, (PhotoDone, LimitChanged)):
            if isinstance(event, PhotoDone):
                self.bar.done = event.done
            self.bar.update(self._counters(), force=isinstance(event, PhotoDone) and event.done == event.total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class ParallelDisplay:
    """One progress bar for models run at once (--parallel-models): photos done over all of them."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.runs: list[ModelRun] = []
        self.bar: ProgressBar | None = None

    def on_model(self, run: ModelRun) -> None:
        self.runs.append(run)

    def on_event(self, event: Event) -> None:
        if self.quiet or not isinstance(event, (ModelStarted, PhotoDone)):
            return
        if self.bar is None:
            self.bar = ProgressBar(f"{len(self.runs)} models", sum(r.total for r in self.runs))
        self.bar.done = sum(r.done for r in self.runs)
        self.bar.update(self._counters(), force=self.bar.done == self.bar.total)

    def _counters(self) -> str:
        running = sum(1 for r in self.runs if r.done < r.total and r.stop_reason is None)
        return (f"{running} running, in flight {sum(r.in_flight for r in self.runs)}, "
                f"throttles {sum(r.limiter.throttles for r in self.runs)}")

    def on_tick(self) -> None:
        if self.bar is not None and not self.quiet:
            self.bar.update(self._counters())

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _add_run_flags(p: argparse.ArgumentParser, *, demo: bool = False) -> None:
    p.add_argument("--input", default=str(SAMPLE) if demo else None,
                   help=f"photo table: a parquet file or an http(s) URL (default: {'the bundled sample' if demo else DATA_URL})")
    p.add_argument("--models", default="cheap" if demo else "all",
                   help=f"a preset ({', '.join(PRESETS)}) or comma-separated OpenRouter ids")
    p.add_argument("--start-concurrency", type=int, default=8, help="in-flight requests to start from")
    p.add_argument("--max-concurrency", type=int, default=256, help="ceiling for the adaptive limit")
    p.add_argument("--request-timeout", type=float, default=120.0, help="seconds before a request counts as dropped")
    p.add_argument("--max-cost-usd", type=float, default=None,
                   help="spending cap for the run: no new request once spent + in flight could pass it")
    p.add_argument("--limiter", choices=LIMITER_POLICIES, default=LIMITER_POLICIES[0],
                   help="in-flight limit policy: 'adaptive' (paced, tells rate signals from failure noise) or "
                        "'reference' (the original script's AIMD) (default %(default)s)")
    p.add_argument("--parallel-models", action="store_true",
                   help="run all models at once, each with its own limiter (default: one after another)")
    p.add_argument("--repeats", type=int, default=1, help="ask each photo K times (self-consistency)")
    p.add_argument("--run", default=None, help="run name: results go to OUT/RUN/ (default run_YYYYmmdd_HHMMSS)")
    p.add_argument("--out", default="out", help="results folder (default ./out)")
    p.add_argument("--resume", action="store_true", help="finish an interrupted --run: ask only what has no result")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="hotdogbench", description="Ask vision models 'is this a hot dog?' and score them.")
    ap.add_argument("--version", action="version", version=f"hotdogbench {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run models over a photo table through OpenRouter (or a compatible base URL)")
    _add_run_flags(run)
    run.add_argument("--base-url", default=os.environ.get("OPENROUTER_BASE_URL", DEFAULT_BASE_URL),
                     help="API base: requests go to BASE/v1/chat/completions and BASE/alpha/decisions "
                          "(default OPENROUTER_BASE_URL or %(default)s)")
    demo = sub.add_parser("demo", help="no key, no network: the built-in simulator answers (simulated answers!)")
    _add_run_flags(demo, demo=True)
    build = sub.add_parser("build-dataset", help="FOLDER/<category>/*.jpg -> a parquet in the dataset schema")
    build.add_argument("folder")
    build.add_argument("-o", "--output", required=True, help="the parquet file to write")
    build.add_argument("--per-group", type=int, default=25, help="photos per category (0: all)")
    rep = sub.add_parser("report", help="write a self-contained HTML report of runs (opens offline)")
    rep.add_argument("--out", default="out", help="results folder (default ./out)")
    rep.add_argument("--run", action="append", required=True, help="run name; repeat to compare runs")
    rep.add_argument("--input", default=None, help="the photo table, for thumbnails (default: found by its digest)")
    rep.add_argument("-o", "--output", default=None, help="the HTML file (default OUT/RUN/report_offline.html)")
    sim = sub.add_parser("simulate", help="serve the OpenRouter-compatible simulator on 127.0.0.1")
    sim.add_argument("--port", type=int, default=8000)
    sim.add_argument("--host", default="127.0.0.1")
    sim.add_argument("--labels", default=str(SAMPLE), help="parquet whose images the simulator knows the truth of")
    sim.add_argument("--config", default=None, help="SimConfig as JSON (caps, latency, faults), or @file.json")
    return ap


def _settings(args, key: str, base_url: str) -> RunSettings:
    return RunSettings(api_key=key, base_url=base_url, start_concurrency=args.start_concurrency,
                       max_concurrency=args.max_concurrency, request_timeout=args.request_timeout,
                       repeats=args.repeats, limiter=args.limiter)


STOP_GRACE_S = 5.0  # after Ctrl-C, how long requests in flight get to come back (they are paid for)


async def _run(args, models, dataset, settings) -> int:
    display = ParallelDisplay(args.quiet) if args.parallel_models else TerminalDisplay(args.quiet)
    run_name = args.run or default_run_name()
    active: list[ModelRun] = []
    interrupts = 0

    def on_model(mr: ModelRun):
        display.close()
        active.append(mr)
        display.on_model(mr)

    def on_sigint():
        nonlocal interrupts
        interrupts += 1
        grace = STOP_GRACE_S if interrupts == 1 else 0.0
        for mr in active:
            mr.stop("interrupted", grace_s=grace)
        if interrupts == 1:
            print(f"\nstopping: nothing more is sent; waiting up to {grace:.0f} s for requests in flight "
                  f"(Ctrl-C again to abandon them)", file=sys.stderr, flush=True)

    async def tick():  # keeps the plain-line display alive when nothing settles (stalls, long back-offs)
        while True:
            await asyncio.sleep(1.0)
            display.on_tick()

    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        pass
    print(f"{len(dataset)} photos x {len(models)} models -> {Path(args.out) / run_name}", flush=True)
    ticker = asyncio.create_task(tick())
    try:
        result = await run_models(models, dataset, settings, out=args.out, run_name=run_name, resume=args.resume,
                                  on_event=display.on_event, on_model=on_model, max_cost_usd=args.max_cost_usd,
                                  parallel=args.parallel_models)
    finally:
        ticker.cancel()
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):
            pass
    display.close()
    for s in result.summaries:
        print(json.dumps(summary_line(s)), flush=True)
    print(f"wrote {result.run_dir}/summary.json", flush=True)
    if result.stopped:
        hint = result.hint or "finish it with the same command and --resume"
        if "interrupted" in result.stopped:
            hint = f"finish it with: hotdogbench run ... --run {run_name} --resume"
        print(f"stopped early: {result.stopped}\nhint: {hint}", file=sys.stderr)
        return 130 if "interrupted" in result.stopped else 3
    return 0


def cmd_run(args) -> int:
    models = resolve_models(args.models)
    base_url = args.base_url.rstrip("/")
    try:
        key = require_key()
    except MissingKeyError:
        if not base_url.startswith(LOOPBACK):
            raise
        key = "sk-local-simulator"  # a local simulator needs no real key
    settings = _settings(args, key, base_url)  # flags are checked before the (maybe large) dataset is read
    dataset = load_dataset(args.input, quiet=args.quiet)
    return asyncio.run(_run(args, models, dataset, settings))


def cmd_demo(args) -> int:
    from ..sim.app import SimConfig, Simulator, labels_from_parquet

    models = resolve_models(args.models)
    _settings(args, "sk-demo-simulator", "http://127.0.0.1")  # check the flags first
    dataset = load_dataset(args.input, quiet=args.quiet)
    print("DEMO: the answers below come from hotdogbench's built-in simulator, not from real models.", flush=True)
    with Simulator(SimConfig.from_dict(DEMO_SIM), labels=labels_from_parquet(dataset.path)) as sim:
        settings = _settings(args, "sk-demo-simulator", sim.base_url)
        code = asyncio.run(_run(args, models, dataset, settings))
    print("DEMO: simulated answers. For real ones: export OPENROUTER_API_KEY=... and `hotdogbench run`.", flush=True)
    return code


def cmd_build(args) -> int:
    from ..store.build_dataset import build_dataset

    report = build_dataset(args.folder, args.output, per_group=args.per_group or None)
    for cat in getattr(report, "short_categories", []) or []:
        print(f"warning: category {cat} has fewer than {args.per_group} photos; all of them were kept", file=sys.stderr)
    print(f"wrote {report.path}: " + ", ".join(f"{c} {n}" for c, n in report.per_category.items()))
    return 0


def cmd_report(args) -> int:
    from ..report.html import write_offline_report

    names = [n.strip() for r in args.run for n in r.split(",") if n.strip()]
    print(f"wrote {write_offline_report(args.out, names, dataset=args.input, path=args.output)}")
    return 0


def cmd_simulate(args) -> int:
    from ..sim.app import SimConfig, labels_from_parquet, serve_forever

    config = SimConfig()
    if args.config:
        text = Path(args.config[1:]).read_text() if args.config.startswith("@") else args.config
        config = SimConfig.from_dict(json.loads(text))
    labels = labels_from_parquet(args.labels) if args.labels and Path(args.labels).exists() else {}
    serve_forever(config, host=args.host, port=args.port, labels=labels)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {"run": cmd_run, "demo": cmd_demo, "build-dataset": cmd_build, "report": cmd_report,
                "simulate": cmd_simulate}
    try:
        return handlers[args.command](args)
    except (DatasetError, UnknownModelError, MissingKeyError, RunError, ValueError) as e:
        print(f"hotdogbench: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nhotdogbench: interrupted; finish with the same command and --resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
