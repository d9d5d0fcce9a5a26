"""hotdogbench's command line: run, demo, build-dataset, report, simulate."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from .._version import __version__
from ..errors import FieldError, StorageError, describe
from ..protocol.conditions import arm_label
from ..protocol.models import PRESETS
from ..run.plan import RunPlan, plan_run, run_plan
from ..run.preflight import KeyRefusedError
from ..run.runner import ModelRun
from ..run.settings import DEFAULT_BASE_URL, LIMITER_POLICIES, RunError, RunSettings
from ..sim.config import demo_config
from ..stats.summary import summary_line
from ..store.dataset import DATA_URL, SAMPLE
from ..store.lock import RunLockedError
from .progress import download_bar
from .terminal import ParallelDisplay, TerminalDisplay

# How the CLI names the fields of a run plan in its messages.
FLAGS = {"models": "--models", "input": "--input", "dataset": "--input", "run_name": "--run", "out": "--out",
         "api_key": "OPENROUTER_API_KEY", "base_url": "--base-url", "start_concurrency": "--start-concurrency",
         "max_concurrency": "--max-concurrency", "request_timeout": "--request-timeout", "repeats": "--repeats",
         "limiter": "--limiter", "max_cost_usd": "--max-cost-usd", "resume": "--resume", "api": "--api",
         "prices": "--prices", "body_timeout": "--body-timeout", "logprobs": "--logprobs", "max_wait_s": "--max-wait-s",
         "max_rate": "--max-rate",
         "conditions": "--condition", "conditions_file": "--conditions", "sim_config": "--sim-config"}
# Exit codes (docs/reliability.md): 0 done; 2 a flag, the photo table or the run folder refused (nothing sent);
# 3 stopped early (bad key, no credits, budget, a spent quota): resume; 4 a file could not be written or read (disk full,
# read-only): the message says how many paid answers were lost, resume once fixed; 5 the run folder is in use by
# another process (nothing sent); 6 the run ended but a model got no answer at all (its errors are said);
# 130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM: resume.
EXIT_USAGE, EXIT_STOPPED, EXIT_STORAGE, EXIT_LOCKED, EXIT_NO_ANSWER, EXIT_INTERRUPTED = 2, 3, 4, 5, 6, 130
EXIT_TERMINATED = 128 + signal.SIGTERM


def _add_run_flags(p: argparse.ArgumentParser, *, demo: bool = False) -> None:
    p.add_argument("--input", default=str(SAMPLE) if demo else None,
                   help=f"photo table: a parquet file or an http(s) URL (default: {'the bundled sample' if demo else DATA_URL})")
    p.add_argument("--models", default="cheap" if demo else "all",
                   help=f"a preset ({', '.join(PRESETS)}) or comma-separated OpenRouter ids")
    p.add_argument("--start-concurrency", type=int, default=8, help="in-flight requests to start from")
    p.add_argument("--max-concurrency", type=int, default=256, help="ceiling for the adaptive limit")
    p.add_argument("--request-timeout", type=float, default=120.0, help="seconds before a request counts as dropped")
    p.add_argument("--max-wait-s", type=float, default=RunSettings.max_wait_s,
                   help="a refusal asking a longer wait (a spent hourly or daily quota, a 503 down for hours) "
                        "stops that model, its answers kept, saying when to resume (default %(default)g)")
    p.add_argument("--max-rate", default=None, metavar="RATE",
                   help="a cap you know, per model: the pace never goes over it (20/min, 5/s, 300/h; default: none, "
                        "the adaptive limiter finds the cap; OpenRouter's :free models share their known 20/min)")
    p.add_argument("--max-cost-usd", type=float, default=None,
                   help="spending cap for the run: no new request once spent + in flight could pass it")
    p.add_argument("--limiter", choices=LIMITER_POLICIES, default=LIMITER_POLICIES[0],
                   help="in-flight limit policy: 'adaptive' (paced, tells rate signals from failure noise) or "
                        "'reference' (the original script's AIMD) (default %(default)s)")
    p.add_argument("--parallel-models", action="store_true",
                   help="run all models at once, each with its own limiter (default: one after another)")
    p.add_argument("--repeats", type=int, default=1, help="ask each photo K times (self-consistency)")
    p.add_argument("--logprobs", default=None, metavar="MODELS",
                   help="ask these chat models (comma-separated ids, or 'all') for token log-probabilities "
                        "(logprobs true, top_logprobs 5 in their body): each row gets p_hot_dog and summary.json "
                        "the calibration (Brier, ECE, AUROC); Decisions models state a probability anyway. It "
                        "changes their request body: a --resume must give it again")
    p.add_argument("--condition", action="append", default=None, metavar="NAME=SPEC",
                   help="run every model under this condition too (repeatable; docs/experiments.md): SPEC is "
                        "comma-separated px:512 (longest side), q:80 (JPEG quality), prompt:\"...\" (the question), "
                        "provider:only=A|B, provider:order=A|B, provider:allow_fallbacks=false, "
                        "provider:quantizations=fp8; 'reference' alone is the reference question and photos")
    p.add_argument("--conditions", default=None, metavar="FILE",
                   help="conditions from a TOML or JSON file: [conditions.NAME] with px, q, prompt, provider")
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
    run.add_argument("--api", choices=("auto", "openrouter", "openai"), default="auto",
                     help="the server's dialect: 'openrouter' (its bodies, with usage.include, provider, reasoning), "
                          "'openai' (any other OpenAI-compatible server), or 'auto': OpenRouter's host or a "
                          "/v1/models listing shaped like its own (default %(default)s)")
    run.add_argument("--prices", default=None, metavar="FILE",
                     help="a price table (JSON or TOML: {model: {prompt: USD per million tokens, completion: ...}}) "
                          "for servers that report no cost; needed for --max-cost-usd there")
    run.add_argument("--base-url", default=os.environ.get("OPENROUTER_BASE_URL", DEFAULT_BASE_URL),
                     help="API base: requests go to BASE/v1/chat/completions and BASE/alpha/decisions "
                          "(default OPENROUTER_BASE_URL or %(default)s)")
    demo = sub.add_parser("demo", help="no key, no network: the built-in simulator answers (simulated answers!)")
    _add_run_flags(demo, demo=True)
    demo.add_argument("--sim-config", default=None,
                      help="how the simulator behaves: SimConfig as JSON, or @file.json (default: the demo's "
                           "provider, a hidden cap of 40 in flight and a little noise)")
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


STOP_GRACE_S = 5.0  # after Ctrl-C, how long requests in flight get to come back (they are paid for)


def _plan(args, **target) -> RunPlan:
    """The run the flags describe, every flag checked before the (maybe large) photo table is read."""
    return plan_run(models=args.models, dataset=args.input, out=args.out, run_name=args.run, resume=args.resume,
                    max_cost_usd=args.max_cost_usd, parallel=args.parallel_models,
                    on_download=None if args.quiet else download_bar(),
                    start_concurrency=args.start_concurrency, max_concurrency=args.max_concurrency,
                    request_timeout=args.request_timeout, repeats=args.repeats, limiter=args.limiter,
                    max_wait_s=args.max_wait_s, max_rate=args.max_rate,
                    logprobs=args.logprobs, conditions=args.condition, conditions_file=args.conditions, **target)


def _launch(argv: list[str]) -> dict:
    """How this run was started, for live.json: the command line, its base URL without a query (a token there
    is written nowhere under OUT/RUN)."""
    from ..store.redact import public_url

    out, hide = [], False
    for a in argv:
        if hide:
            a, hide = public_url(a), False
        elif a == "--base-url":
            hide = True
        elif a.startswith("--base-url="):
            a = "--base-url=" + public_url(a.split("=", 1)[1])
        out.append(a)
    return {"command": argv[0] if argv else None, "argv": out}


def _sim_config(text: str | None, conditions: bool = False) -> dict:
    """--sim-config: JSON, or @file.json (taken whole); when not given, the demo's provider (with its condition
    effects when the run has conditions)."""
    if not text:
        return demo_config(conditions)
    try:
        data = json.loads(Path(text[1:]).read_text() if text.startswith("@") else text)
    except (OSError, ValueError) as e:
        raise FieldError(f"is not JSON or a readable @file ({e})", "sim_config") from None
    if not isinstance(data, dict):
        raise FieldError("must be a JSON object of SimConfig fields", "sim_config")
    return data


class _StopSignals:
    """Ctrl-C and SIGTERM (kill, systemd, docker stop) as one graceful stop while a run is on: the first sends
    nothing more and waits STOP_GRACE_S for requests in flight; a second abandons them."""

    def __init__(self):
        self.models: list[ModelRun] = []
        self.received: list[int] = []

    def on_signal(self, signum: int = signal.SIGINT) -> None:
        self.received.append(signum)
        first = len(self.received) == 1
        grace = STOP_GRACE_S if first else 0.0
        name = "" if signum == signal.SIGINT else f" ({signal.Signals(signum).name})"
        for mr in self.models:
            mr.stop(f"interrupted{name}", grace_s=grace)
        if first:
            print(f"\nstopping{name}: nothing more is sent; waiting up to {grace:.0f} s for requests in flight "
                  f"(Ctrl-C again to abandon them)", file=sys.stderr, flush=True)

    def __enter__(self) -> "_StopSignals":
        self._loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                self._loop.add_signal_handler(signum, self.on_signal, signum)
            except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
                pass
        return self

    def __exit__(self, *exc) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                self._loop.remove_signal_handler(signum)
            except (NotImplementedError, RuntimeError):
                pass


async def _run(plan: RunPlan, quiet: bool, command: str, launch: dict | None = None) -> int:
    display = ParallelDisplay(quiet) if plan.parallel else TerminalDisplay(quiet)
    finish = f"finish with: hotdogbench {command} ... --run {plan.rundir.name} --resume"

    async def tick():  # keeps the plain-line display alive when nothing settles (stalls, long back-offs)
        while True:
            await asyncio.sleep(1.0)
            display.on_tick()

    conditions = f" x {len(plan.conditions)} conditions ({', '.join(c.name for c in plan.conditions)})" \
        if plan.conditions else ""
    print(f"{len(plan.dataset)} photos x {len(plan.models)} models{conditions} -> {plan.run_dir}", flush=True)
    with _StopSignals() as stops:
        def on_model(mr: ModelRun):
            display.close()
            stops.models.append(mr)
            display.on_model(mr)

        ticker = asyncio.create_task(tick())
        try:
            result = await run_plan(plan, on_event=display.on_event, on_model=on_model, launch=launch)
        except StorageError as e:
            display.close()
            print(f"hotdogbench: error: {e}\n{finish}", file=sys.stderr, flush=True)
            return EXIT_STORAGE
        finally:
            ticker.cancel()
    display.close()
    return _report(result, plan, finish, stops.received[:1])


def _report(result, plan: RunPlan, finish: str, first_signal: list[int]) -> int:
    """Print each model's summary line, its errors and how the run ended; the exit code that says it."""
    for s in result.summaries:
        line = summary_line(s)
        if "condition" in s:  # (model, condition) names the line in a run with conditions
            line = {"model": line.pop("model"), "condition": s["condition"], **line}
        print(json.dumps(line), flush=True)
    print(f"wrote {plan.rundir.summary}", flush=True)
    unanswered = _say_errors(result.summaries)
    if result.stopped:
        hint = result.hint or "finish it with the same command and --resume"
        print(f"stopped early: {result.stopped}\nhint: {hint}\n{finish}", file=sys.stderr)
        if "interrupted" in result.stopped:
            return EXIT_TERMINATED if first_signal == [signal.SIGTERM] else EXIT_INTERRUPTED
        return EXIT_STOPPED
    if any(s.get("stopped") for s in result.summaries):  # a model stopped alone (fail fast, a spent quota)
        print(finish, file=sys.stderr)
        return EXIT_NO_ANSWER if unanswered else EXIT_STOPPED
    return EXIT_NO_ANSWER if unanswered else 0


def _say_errors(summaries: list[dict]) -> list[str]:
    """Say, for each model with errors, how many and the first; return the models that got no answer at all."""
    none = []
    for s in summaries:
        name = arm_label(s["model"], s.get("condition"))
        if s.get("errors"):
            print(f"{name}: {s['errors']} of {s['photos']} photos errored; the first: {s.get('first_error')}",
                  file=sys.stderr)
        if s.get("stopped") and s.get("hint"):
            print(f"{name} stopped: {s['stopped']}\nhint: {s['hint']}", file=sys.stderr)
        if s.get("photos") and not s.get("answered"):
            none.append(name)
    if none:
        print(f"no answer at all from {', '.join(none)}", file=sys.stderr)
    return none


def cmd_run(args) -> int:
    plan = _plan(args, target="base_url", base_url=args.base_url, api=args.api, prices=args.prices)
    return asyncio.run(_run(plan, args.quiet, args.command, _launch(args.argv)))


def cmd_demo(args) -> int:
    plan = _plan(args, target="simulator",
                 sim_config=_sim_config(args.sim_config, bool(args.condition or args.conditions)))
    print("DEMO: the answers below come from hotdogbench's built-in simulator, not from real models.", flush=True)
    code = asyncio.run(_run(plan, args.quiet, args.command, _launch(args.argv)))
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
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    handlers = {"run": cmd_run, "demo": cmd_demo, "build-dataset": cmd_build, "report": cmd_report,
                "simulate": cmd_simulate}
    try:
        return handlers[args.command](args)
    except KeyRefusedError as e:
        print(f"hotdogbench: stopped: {e}", file=sys.stderr)
        return EXIT_STOPPED
    except RunLockedError as e:
        print(f"hotdogbench: error: {describe(e, FLAGS)}", file=sys.stderr)
        return EXIT_LOCKED
    except StorageError as e:
        print(f"hotdogbench: error: {e}", file=sys.stderr)
        return EXIT_STORAGE
    except (FieldError, RunError, ValueError) as e:
        print(f"hotdogbench: error: {describe(e, FLAGS)}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:  # a path that cannot be written or read: say which, and what to do
        print(f"hotdogbench: error: {describe(e, FLAGS)}", file=sys.stderr)
        return EXIT_STORAGE
    except KeyboardInterrupt:
        print("\nhotdogbench: interrupted; finish with the same command and --resume", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
