"""The ``splice`` command: validate, explain, run and test pipelines."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from engine.claims import ClaimRefused
from engine.fs import FileSystemUnavailable
from engine.settings import SettingsError, parse_number
from runtime.tenure import TenureLost
from sql.errors import SqlErrors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="splice", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="parse and analyze; print every error")
    p.add_argument("paths", nargs="+", help="a pipeline (a .sql file or a folder of them), "
                                            "or a folder of pipelines")

    p = sub.add_parser("explain", help="the steps, strategies and step graph")
    p.add_argument("path", help="a pipeline, or a folder of pipelines")

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
    _spark_flags(p)
    p.add_argument("--rebuild", action="append", default=[], metavar="STEP|all",
                   help="drop the checkpoint and table of STEP (or of every step: 'all') "
                        "and of the steps downstream, then recompute them from their sources "
                        "(needed after a step's SQL changed); may be repeated")
    p.add_argument("--parallel", type=_at_least_one, default=4, metavar="N",
                   help="run up to N steps side by side (default 4; 1 runs them one by one, "
                        "in the pipeline's order)")
    p.add_argument("--wait", type=_not_negative, default=0, metavar="SECONDS",
                   help="wait this long for a run of the same pipeline that holds its lock "
                        "(default 0: exit at once, naming the holder)")

    p = sub.add_parser("serve", help="run every step continuously until SIGTERM or Ctrl-C",
                       description="Run every step continuously until SIGTERM or SIGINT "
                                   "(Ctrl-C), to the process or its group: each query then "
                                   "stops after its micro-batch in flight (up to 30 s), the "
                                   "lock is released, exit 0 (1 when a step failed while "
                                   "serving).")
    p.add_argument("path")
    _spark_flags(p)
    # Unset flags take runtime.serve.ServeOptions' defaults (imported only
    # when serving: it loads pyspark); the help names them.
    p.add_argument("--interval", type=_not_negative, metavar="SECONDS",
                   help="each step's trigger interval (default 0.25)")
    p.add_argument("--report-every", type=_above_zero, metavar="SECONDS",
                   help="how often to print each step's progress (default 10)")

    p = sub.add_parser("maintain", help="compact and vacuum the pipeline's own tables")
    p.add_argument("path")
    _spark_flags(p)
    p.add_argument("--retain-hours", type=_not_negative, default=None, metavar="H",
                   help="VACUUM's retention (default SPLICE_RETAIN_HOURS, else 168)")
    p.add_argument("--log-retain-hours", type=_not_negative, default=None, metavar="H",
                   help="set the tables' delta.logRetentionDuration (default: leave it)")
    p.add_argument("--wait", type=_not_negative, default=0, metavar="SECONDS",
                   help="wait this long for a run that holds the pipeline's lock")

    p = sub.add_parser("test", help="run case files against fresh warehouses")
    p.add_argument("cases", nargs="+", help="case .yaml files or folders of them")
    p.add_argument("--warehouse", default=None,
                   help="where the cases' warehouses go: <this>/<start time>/<case> (a "
                        "folder or URI, e.g. s3a://bucket/cases; default: temp folders)")
    p.add_argument("--sources", choices=("delta", "kafka", "kafka-in-place"), default="delta",
                   help="where the cases' sources live: Delta tables (as written), or a Kafka "
                        "topic each on SPLICE_KAFKA_BOOTSTRAP, else on scripts/kafka.sh's "
                        "broker (started if needed), the rows produced as records; "
                        "kafka-in-place: every stream topic a step can read in place is read "
                        "so (stored='false')")

    p = sub.add_parser("demo", help="write the demo data, run the demo pipeline, show outputs")
    p.add_argument("--warehouse", default=None,
                   help="the demo's warehouse folder (default SPLICE_WAREHOUSE, else warehouse)")
    p.add_argument("--pipeline", default="pipelines/demo")
    p.add_argument("--kafka", action="store_true",
                   help="the demo over Kafka topics (examples/kafka_demo): produce the data to "
                        "topics on SPLICE_KAFKA_BOOTSTRAP, else on scripts/kafka.sh's broker "
                        "(started if needed)")

    args = parser.parse_args(argv)
    if args.command in ("validate", "explain") and \
            threading.current_thread() is threading.main_thread():
        # `splice explain ... | head`: a closed pipe ends the output quietly
        # (only here: a process with sockets to Spark must see EPIPE, not die)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if args.command in ("run", "serve", "test", "demo"):
        from engine.errors import quiet_spark_error_logs

        quiet_spark_error_logs()
    handler = {"validate": _validate, "explain": _explain, "run": _run, "test": _test,
               "demo": _demo, "maintain": _maintain, "serve": _serve}[args.command]
    try:
        return handler(args)
    except SqlErrors as err:
        for e in err.errors:
            print(e.render(), file=sys.stderr)
        return 1
    except (ClaimRefused, TenureLost) as err:
        print(f"splice: {err}", file=sys.stderr)
        return 1
    except FileNotFoundError as err:
        # the OS's own error names the file (a case, a pipeline to maintain)
        what = f"{err.filename}: no such file or folder" if err.filename else err
        print(f"splice: {what}", file=sys.stderr)
        return 2
    except (SettingsError, FileSystemUnavailable) as err:
        print(f"splice: {err}", file=sys.stderr)
        return 2


def _flag_number(kind: type[int] | type[float] = float, least: float = 0, above: bool = False,
                 hint: str = "") -> Any:
    """An argparse type: a number read by the settings' own parser, so a
    flag refuses what its setting refuses, at the flag (a negative trigger
    interval was Spark's traceback after starting; --parallel 0 ran)."""
    def parse(text: str) -> Any:
        try:
            return parse_number(text, kind, least, above)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"{err}{hint}") from None
    return parse


_not_negative = _flag_number()
_above_zero = _flag_number(above=True)
_at_least_one = _flag_number(int, least=1, hint=" (1 runs one step at a time)")


def _spark_flags(p: argparse.ArgumentParser) -> None:
    """Flags that override the settings' environment variables
    (engine/settings.py: flag > environment > default)."""
    p.add_argument("--warehouse", default=None,
                   help="the warehouse folder or URI (default SPLICE_WAREHOUSE, else warehouse)")
    p.add_argument("--master", default=None,
                   help="Spark master URL (default SPLICE_SPARK_MASTER, else local[2])")
    p.add_argument("--connect", default=None, metavar="URL",
                   help="a Spark Connect server, sc://host:port (default SPLICE_SPARK_REMOTE; "
                        "overrides --master)")


def _settings(args: argparse.Namespace):  # -> SpliceSettings
    from engine.settings import SpliceSettings

    return SpliceSettings.from_env(warehouse=getattr(args, "warehouse", None),
                                   master=getattr(args, "master", None),
                                   connect_url=getattr(args, "connect", None))


def _validate(args: argparse.Namespace) -> int:
    from splice.compile import compile_path, pipeline_paths

    failed = False
    for path in [p for arg in args.paths for p in pipeline_paths(arg)]:
        try:
            pipeline = compile_path(path)
        except SqlErrors as err:
            failed = True
            for e in err.errors:
                print(e.render())
            continue
        steps = len(pipeline.steps)
        if steps == 0:  # valid, but a user who expected statements should hear it
            print(f"{path}: ok, but pipeline '{pipeline.name}' has no statements: nothing to run")
        else:
            print(f"{path}: ok, pipeline '{pipeline.name}' with {steps} "
                  f"step{'s' if steps > 1 else ''}")
    return 1 if failed else 0


def _explain(args: argparse.Namespace) -> int:
    from splice.compile import analyze_path, pipeline_paths
    from splice.explain import explain_pipeline

    paths = pipeline_paths(args.path)
    for path in paths:
        if len(paths) > 1:
            print(f"== {path}")
        print(explain_pipeline(analyze_path(path)))
    return 0


def _run(args: argparse.Namespace) -> int:
    from engine.definitions import DefinitionChanged
    from engine.lock import LockBusy
    from engine.maintenance import MaintenanceFailed
    from runtime.runner import StepFailed
    from splice.compile import compile_path, pipeline_paths
    from splice.processes import on_stop_signals
    from splice.stopping import RunStopper, Stopped

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
            settings = _settings(args)
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
    from engine.errors import fault

    return fault(err, pipeline, settings)


def _serve(args: argparse.Namespace) -> int:
    from engine.definitions import DefinitionChanged
    from engine.lock import LockBusy
    from runtime.runner import StepFailed
    from splice.compile import compile_path
    from splice.serving import serve_and_report

    pipeline = compile_path(args.path)
    settings = _settings(args)
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


def _maintain(args: argparse.Namespace) -> int:
    from engine.lock import LockBusy
    from engine.maintenance import MaintenanceFailed
    from runtime.runner import StepFailed
    from splice.compile import compile_path
    from splice.maintain import maintain_and_report

    pipeline = compile_path(args.path)
    try:
        maintain_and_report(pipeline, settings=_settings(args),
                            retain_hours=args.retain_hours,
                            log_retain_hours=args.log_retain_hours, wait=args.wait)
    except (LockBusy, MaintenanceFailed, StepFailed) as err:
        print(f"splice: {err}", file=sys.stderr)
        return 1
    return 0


def _log_detail(err) -> str:
    """Append a failure's whole text (every cause, the JVM's stack trace) to
    the Spark log the JVM writes to; the screen gets the one paragraph."""
    from engine.settings import SpliceSettings

    path = SpliceSettings.from_env().spark_log
    with open(path, "a") as log:
        log.write(f"\n== splice: {err}\n{err.detail}\n")
    return path


def run_and_report(pipeline, warehouse: str | None = None, master: str | None = None,
                   rebuild: list[str] | None = None, parallel: int = 4,
                   wait: float | None = None, settings=None, stopper=None):
    """Run a compiled pipeline with a progress display and a summary; first
    drop the steps ``rebuild`` names (and those downstream) when asked.
    ``settings`` (a SpliceSettings) is built from ``warehouse``, ``master``
    and the environment when not given. ``stopper`` (a
    splice.stopping.RunStopper) stops the run on SIGTERM or SIGINT."""
    from engine.definitions import rebuild_targets
    from engine.io import StepIO
    from engine.session import start_session
    from engine.settings import SpliceSettings
    from runtime.planner import planned
    from runtime.runner import StepReport, run_pipeline
    from sql.plan import Step

    if settings is None:
        settings = SpliceSettings.from_env(warehouse=warehouse, master=master)
    # The Spark connectors the pipeline's readers need (Kafka), with Delta's.
    settings = settings.with_packages(planned(pipeline).packages())
    # a --rebuild naming no step is refused before Spark starts
    dropped = rebuild_targets(pipeline, rebuild) if rebuild else []
    print(f"starting Spark ({settings.describe_spark()}) ...", flush=True)
    from splice.processes import stop_signals_ignored_by_children

    with stop_signals_ignored_by_children():  # a signal to the group stops us, not Spark
        spark = start_session(settings)
    if stopper is not None:
        stopper.attach(spark)  # a signal during Spark's start stops the run here
    io = StepIO(spark=spark, warehouse=settings.warehouse_layout(), pipeline=pipeline,
                kafka_bootstrap=settings.kafka_bootstrap,
                kafka_lost_records=settings.kafka_lost_records)
    if dropped:
        print(f"rebuilding {len(dropped)} step(s) from their sources: {', '.join(dropped)}",
              flush=True)
    total = len(pipeline.steps)
    started: dict[str, float] = {}

    def progress(index: int, step: Step, report: StepReport | None) -> None:
        label = f"[{index + 1}/{total}] {step.op:<11} {step.id}"
        if stopper is not None:  # no step starts once a stop signal came
            (stopper.step_started if report is None else stopper.step_ended)(step.id)
        if report is None:
            started[step.id] = time.monotonic()
            print(f"{label} ...", flush=True)
        elif step.in_place:  # a Kafka source read in place: no table of its own
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
            print(f"{label}: {report.rows_written} rows written{extra} "
                  f"({report.seconds:.1f}s)", flush=True)

    reports = run_pipeline(pipeline, io, progress, parallel=parallel, wait=wait,
                           rebuild=dropped)
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
    return reports, io


def _case_files(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.glob("*.yaml")) if p.is_dir() else [p]
    return files


def _test(args: argparse.Namespace) -> int:
    from engine.session import start_session
    from engine.settings import SpliceSettings
    from splice.cases import CaseFileError, load_case, run_case

    files = _case_files(args.cases)
    spark = None
    passed = failed = 0
    # one folder per case under a folder of this invocation: never a warehouse
    # an earlier run left there
    root = f"{args.warehouse.rstrip('/')}/{time.strftime('%Y%m%dT%H%M%S')}" \
        if args.warehouse else None
    settings = SpliceSettings.from_env(warehouse=root)
    bootstrap = None
    if args.sources != "delta":
        from operators.nodes import KafkaSource
        from splice.kafka_demo import broker_address

        bootstrap = broker_address(settings)
        settings = settings.with_packages(KafkaSource.packages)
    for file in files:
        try:
            case = load_case(file)
        except CaseFileError as err:  # this file fails; the others still run
            print(f"FAIL {file}\n  {err}", flush=True)
            failed += 1
            continue
        if case.error is None and spark is None:
            spark = start_session(settings)
        result = run_case(case, str(file), spark,
                          workdir=f"{root}/{case.case}" if root else None,
                          sources=_case_sources(bootstrap, args.sources == "kafka-in-place"))
        print(result.render(), flush=True)
        passed, failed = passed + result.passed, failed + (not result.passed)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def _case_sources(bootstrap: str | None, in_place: bool) -> Any:
    """A case's sources on Kafka topics of ``bootstrap`` (``in_place``: the
    streams a step can read in place read so); None: on Delta."""
    if bootstrap is None:
        return None
    from splice.kafka_cases import KafkaCaseSources

    return KafkaCaseSources(bootstrap, in_place=in_place)


def _demo(args: argparse.Namespace) -> int:
    from runtime.planner import planned
    from splice.compile import compile_path
    from splice.demo import DemoRefused, show_outputs, write_demo_data

    settings = _settings(args)
    pipeline = None if args.kafka else compile_path(args.pipeline)  # before a word is printed
    shown = settings.warehouse if "://" in settings.warehouse \
        else Path(settings.warehouse).resolve()
    print(f"demo warehouse: {shown} (written afresh)")
    if args.kafka:
        from splice.kafka_demo import run_kafka_demo

        try:
            show_outputs(run_kafka_demo(settings.warehouse, settings))
        except DemoRefused as err:
            print(f"splice: {err}", file=sys.stderr)
            return 2
        return 0
    assert pipeline is not None
    try:
        write_demo_data(pipeline, settings.warehouse, settings.with_packages(
            planned(pipeline).packages()))
    except DemoRefused as err:
        print(f"splice: {err}", file=sys.stderr)
        return 2
    _, io = run_and_report(pipeline, settings=settings)
    show_outputs(io)
    return 0


if __name__ == "__main__":
    sys.exit(main())
