"""``splice serve``: the pipeline's steps as long-running streaming queries
(runtime/serve.py), with progress on the screen, until SIGTERM or Ctrl-C.

A stop signal (SIGTERM, what systemd sends, or SIGINT, Ctrl-C; to the
process or to its whole group) stops every query between micro-batches
(runtime/serve.py), releases the pipeline's lock and exits 0: a clean
stop is serve's normal end. Spark's JVM ignores both signals
(splice/processes.py), so a signal to the group does not stop Spark under
the queries' stop."""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any

from splice.cli.flags import above_zero, not_negative, settings_of, spark_flags
from splice.cli.run import fault_message
from splice.engine.fs import FileSystemUnavailable
from splice.engine.settings import SettingsError, SpliceSettings
from splice.physical.base import PhysicalPlan
from splice.processes import on_stop_signals, say_now, stop_signals_ignored_by_children
from splice.runtime.claims import ClaimRefused
from splice.runtime.serve import ServeOptions
from splice.runtime.tenure import TenureLost
from splice.runtime.workspace import Workspace


def serve_and_report(pipeline: PhysicalPlan, settings: SpliceSettings, interval_s: float | None,
                     report_every_s: float | None) -> int:
    """Serve ``pipeline`` until SIGTERM or Ctrl-C, printing each step's
    progress; ``interval_s`` and ``report_every_s`` None: ServeOptions'
    defaults. 0 after a stop signal; 1 when a step failed while serving."""
    given = {"interval_s": interval_s, "report_every_s": report_every_s}
    options = ServeOptions(**{k: v for k, v in given.items() if v is not None})
    workspace = Workspace(pipeline, settings)
    stop = threading.Event()

    def on_signal(signum: int) -> None:
        if stop.is_set():
            return  # already stopping; the first signal said so
        name = "SIGINT" if signum == 2 else "SIGTERM"
        say_now(f"\n{name}: stopping every query (each after its micro-batch in flight, "
                f"up to {options.drain_s:g} s) ...\n")
        stop.set()

    def report(lines: list[str]) -> None:
        print(time.strftime("%H:%M:%S"), flush=True)
        for line in lines:
            print(f"  {line}", flush=True)

    def started() -> None:
        print(f"serving '{pipeline.name}': every step's query triggers every "
              f"{options.interval_s:g} s (Ctrl-C or SIGTERM stops them)", flush=True)

    with on_stop_signals(on_signal):
        print(f"starting Spark ({workspace.settings.describe_spark()}) ...", flush=True)
        with stop_signals_ignored_by_children():
            workspace.start()
        served = workspace.serve(stop, on_report=report, on_started=started, options=options)
    print("stopped; what each step read while serving:")
    report([s.line() for s in served])
    failed = [s for s in served if s.failures]
    if failed:
        print(f"splice: {len(failed)} step(s) failed while serving (restarted each time)",
              file=sys.stderr)
        return 1
    return 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("serve", help="run every step continuously until SIGTERM or Ctrl-C",
                       description="Run every step continuously until SIGTERM or SIGINT "
                                   "(Ctrl-C), to the process or its group: each query then "
                                   "stops after its micro-batch in flight (up to 30 s), the "
                                   "lock is released, exit 0 (1 when a step failed while "
                                   "serving).")
    p.add_argument("path")
    spark_flags(p)
    # Unset flags take runtime.serve.ServeOptions' defaults (imported only
    # when serving: it loads pyspark); the help names them.
    p.add_argument("--interval", type=not_negative, metavar="SECONDS",
                   help="each step's trigger interval (default 0.25)")
    p.add_argument("--report-every", type=above_zero, metavar="SECONDS",
                   help="how often to print each step's progress (default 10)")

    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from splice.engine.definitions import DefinitionChanged
    from splice.runtime.compile import compile_path
    from splice.runtime.lock import LockBusy
    from splice.runtime.runner import StepFailed

    pipeline = compile_path(args.path)
    settings = settings_of(args)
    try:
        return serve_and_report(pipeline, settings, args.interval, args.report_every)
    except (StepFailed, DefinitionChanged, LockBusy) as err:
        print(f"\nsplice: {fault_message(err, pipeline, settings) or err}", file=sys.stderr)
        return 1
    except (SettingsError, FileSystemUnavailable, ClaimRefused, TenureLost):
        raise  # a setting or a claim is wrong: main's one line, not a fault
    except Exception as err:  # a full disk, a store that did not answer: said, not a bug
        said = fault_message(err, pipeline, settings)
        if said is None:
            raise
        print(f"\nsplice: {said}", file=sys.stderr)
        return 1

