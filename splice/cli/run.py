"""``splice run``: every step of a pipeline once, incrementally, upstream
first, with a line per step and a summary."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from splice.cli.flags import at_least_one, not_negative, settings_of, spark_flags
from splice.cli.heartbeat import beating
from splice.engine.fs import FileSystemUnavailable
from splice.engine.settings import SettingsError
from splice.runtime.claims import ClaimRefused
from splice.runtime.tenure import TenureLost


def add_parser(sub: Any) -> None:
    p = sub.add_parser("run", help="run every step once, incrementally, upstream first",
                       description="Run every step once, incrementally, upstream first. "
                                   "Exit 0 when every step ran; 1 when one failed (a full "
                                   "disk, a store or broker that did not answer: one message "
                                   "saying where and that a rerun is safe); 2 for a bad "
                                   "setting or path; SIGTERM or SIGINT (Ctrl-C), to the "
                                   "process or its group, stops it where it is: no further "
                                   "step starts, the running ones are cut in their "
                                   "micro-batch, the lock is released, exit 143 (SIGTERM) "
                                   "or 130 (SIGINT); a rerun goes on from each step's last "
                                   "commit.")
    p.add_argument("path", help="a pipeline, or a folder of pipelines (run one after another)")
    spark_flags(p)
    p.add_argument("--rebuild", action="append", default=[], metavar="STEP|all",
                   help="drop the checkpoint and table of STEP (or of every step: 'all') "
                        "and of the steps downstream, then recompute them from their sources "
                        "(needed after a step's SQL changed); may be repeated")
    p.add_argument("--parallel", type=at_least_one, default=4, metavar="N",
                   help="run up to N steps side by side (default 4; 1 runs them one by one, "
                        "in the pipeline's order)")
    p.add_argument("--wait", type=not_negative, default=0, metavar="SECONDS",
                   help="wait this long for a run of the same pipeline that holds its lock "
                        "(default 0: exit at once, naming the holder)")

    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from splice.cli.stopping import RunStopper, Stopped
    from splice.engine.definitions import DefinitionChanged
    from splice.processes import on_stop_signals
    from splice.runtime.compile import compile_path, pipeline_paths
    from splice.runtime.lock import LockBusy
    from splice.runtime.maintenance import MaintenanceFailed
    from splice.runtime.runner import StepFailed

    # Every pipeline under a folder of pipelines (as Dagster loads them):
    # all compile before any runs; one failing does not stop the others.
    pipelines = [compile_path(p) for p in pipeline_paths(args.path)]
    rebuild = [t.strip() for arg in args.rebuild for t in arg.split(",") if t.strip()]
    failed = 0
    stopper = RunStopper()
    with on_stop_signals(stopper.request), contextlib.closing(stopper):
        for pipeline in pipelines:
            if len(pipelines) > 1:
                print(f"\n== pipeline '{pipeline.name}' ({pipeline.origin})", flush=True)
            settings = settings_of(args)
            try:
                stopper.check()
                run_and_report(pipeline, settings=settings, rebuild=rebuild,
                               parallel=args.parallel, wait=args.wait, stopper=stopper)
            except (StepFailed, DefinitionChanged, LockBusy, MaintenanceFailed) as err:
                if stopper.signum is not None:  # a step the stop cut: the stop says it
                    return _stopped(stopper, Stopped(stopper.signum))
                failed += 1
                said = fault_message(err, pipeline, settings)
                print(f"\nsplice: {said or err}", file=sys.stderr)
                if isinstance(err, StepFailed):
                    print(f"(the whole error is in {_log_detail(err)})", file=sys.stderr)
            except KeyError as err:  # --rebuild named no step of the pipeline
                print(f"splice: {err.args[0]}", file=sys.stderr)
                return 2
            except Stopped as err:
                return _stopped(stopper, err)
            except (SettingsError, FileSystemUnavailable, ClaimRefused, TenureLost):
                raise  # a setting or a claim is wrong: main's one line, not a fault
            except Exception as err:
                if stopper.signum is not None:
                    return _stopped(stopper, Stopped(stopper.signum))
                said = fault_message(err, pipeline, settings)
                if said is None:
                    raise
                failed += 1
                print(f"\nsplice: {said}", file=sys.stderr)
    return 1 if failed else 0


def _stopped(stopper, err) -> int:  # (RunStopper, Stopped)
    print(f"\n{stopper.message(err)}", file=sys.stderr, flush=True)
    return err.code


def fault_message(err: BaseException, pipeline, settings) -> str | None:
    """A fault of the machine or the network (a full disk, an object store
    or a broker that did not answer) in words: where, during what, and
    whether a rerun is safe; None for any other error."""
    from splice.engine.errors import fault

    return fault(err, pipeline, settings)


def _log_detail(err) -> str:
    """Append a failure's whole text (every cause, the JVM's stack trace) to
    the Spark log the JVM writes to; the screen gets the one paragraph."""
    from splice.engine.settings import SpliceSettings

    path = SpliceSettings.from_env().spark_log
    with open(path, "a") as log:
        log.write(f"\n== splice: {err}\n{err.detail}\n")
    return path


def _rows(step, report) -> str:
    """What the step's line says it did: rows written; for a Delta source
    (read where it is, no table of its own), the rows its check read."""
    if getattr(step, "format", None) == "delta" and report.rows_written == 0:
        if report.rows_read is None:  # no check to run, or its count not reported
            return "a Delta table, read where it is"
        return f"{report.rows_read} rows read (a Delta table, read where it is)"
    return f"{report.rows_written} rows written"


def run_and_report(pipeline, warehouse: str | None = None, master: str | None = None,
                   rebuild: list[str] | None = None, parallel: int = 4,
                   wait: float | None = None, settings=None, stopper=None):
    """Run a compiled pipeline with a progress display and a summary; first
    drop the steps ``rebuild`` names (and those downstream) when asked.
    ``settings`` (a SpliceSettings) is built from ``warehouse``, ``master``
    and the environment when not given. ``stopper`` (a
    splice.cli.stopping.RunStopper) stops the run on SIGTERM or SIGINT.
    Returns the reports and the run's Workspace."""
    from splice.engine.definitions import rebuild_targets
    from splice.engine.settings import SpliceSettings
    from splice.processes import stop_signals_ignored_by_children
    from splice.runtime.runner import StepReport
    from splice.runtime.workspace import Workspace
    from splice.sql.plan import Step

    if settings is None:
        settings = SpliceSettings.from_env(warehouse=warehouse, master=master)
    workspace = Workspace(pipeline, settings)
    # a --rebuild naming no step is refused before Spark starts
    dropped = rebuild_targets(pipeline, rebuild) if rebuild else []
    print(f"starting Spark ({workspace.settings.describe_spark()}) ...", flush=True)
    with stop_signals_ignored_by_children():  # a signal to the group stops us, not Spark
        spark = workspace.start()
    if stopper is not None:
        stopper.attach(spark)  # a signal during Spark's start stops the run here
    if dropped:
        print(f"rebuilding {len(dropped)} step(s) from their sources: {', '.join(dropped)}",
              flush=True)
    total = len(pipeline.steps)

    def progress(index: int, step: Step, report: StepReport | None) -> None:
        label = f"[{index + 1}/{total}] {step.op:<11} {step.id}"
        if stopper is not None:  # no step starts once a stop signal came
            (stopper.step_started if report is None else stopper.step_ended)(step.id)
        if report is None:
            heart.started(step.id, label)
            print(f"{label} ...", flush=True)
            return
        heart.ended(step.id)
        if step.in_place:  # a Kafka source read in place: no table of its own
            print(f"{label}: read in place by the step that reads it "
                  f"({report.seconds:.1f}s)", flush=True)
        else:
            extra = f", {report.dead_letters} to dead letter" if report.dead_letters else ""
            if report.changed_files:
                extra += f", {len(report.changed_files)} files changed after ingest"
            if report.plan:  # a table-table join: the plan it chose, and why
                extra += f"; {report.plan['name']}, {report.plan['reason']}"
            if report.retried:  # Spark's machinery failed, and the step ran again
                extra += f"; ran again {len(report.retried)}x: {report.retried[-1]}"
            print(f"{label}: {_rows(step, report)}{extra} ({report.seconds:.1f}s)", flush=True)

    with beating(pipeline.name, lambda line: print(line, flush=True)) as heart:
        reports = workspace.run(progress, parallel=parallel, wait=wait, rebuild=dropped)
    print("\nsummary")
    print(f"  {'step':<32} {'kind':<7} {'rows':>6} {'dead':>5} {'late':>5} {'version':>7}  path")
    for r in reports:
        version = "-" if r.delta_version is None else str(r.delta_version)
        path = "(read in place)" if pipeline.step(r.step_id).in_place else r.path
        print(f"  {r.step_id:<32} {r.kind:<7} {r.rows_written:>6} {r.dead_letters:>5} "
              f"{r.late_dropped:>5} {version:>7}  {path}")
    changed = [(r.step_id, f) for r in reports for f in r.changed_files]
    if changed:
        print("\nfiles changed after they were ingested (write a file elsewhere, or under a "
              "name starting with '_' or '.', then rename it into the folder):")
        for step_id, f in changed:
            print(f"  source '{step_id}': {f.describe()}")
    return reports, workspace
