"""``splice maintain``: compact and vacuum a pipeline's own tables now, under
its lock (engine/maintenance.py says what and why)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from splice.cli.flags import not_negative, settings_of, spark_flags
from splice.engine.maintenance import MaintenancePolicy, TableMaintenance
from splice.engine.settings import SpliceSettings
from splice.sql.plan import Pipeline


def maintain_and_report(pipeline: Pipeline, warehouse: str | None = None,
                        master: str | None = None,
                        retain_hours: float | None = None,
                        log_retain_hours: float | None = None,
                        wait: float | None = 0,
                        settings: SpliceSettings | None = None) -> list[TableMaintenance]:
    """``settings`` is built from ``warehouse``, ``master`` and the
    environment when not given."""
    from splice.engine.io import StepIO
    from splice.engine.maintenance import maintain
    from splice.engine.session import start_session
    from splice.runtime.runner import run_steps
    from splice.runtime.tenure import hold

    if settings is None:
        settings = SpliceSettings.from_env(warehouse=warehouse, master=master)

    policy = MaintenancePolicy.from_env()
    if retain_hours is not None:
        policy = replace(policy, retain_hours=retain_hours)
    if log_retain_hours is not None:
        policy = replace(policy, log_retain_hours=log_retain_hours)
    print(f"starting Spark ({settings.describe_spark()}) ...", flush=True)
    spark = start_session(settings)
    io = StepIO(spark=spark, warehouse=settings.warehouse_layout(), pipeline=pipeline)
    with hold(pipeline, io.warehouse, wait=wait):
        reports = maintain(io, policy, lambda: run_steps(pipeline, io))
    print(f"maintained {len(reports)} tables of '{pipeline.name}' "
          f"(VACUUM retention {policy.retain_hours:g} h)")
    for r in reports:
        print(f"  {r.path}: {r.files_compacted} small files compacted into {r.files_written}")
    return reports


def add_parser(sub: Any) -> None:
    p = sub.add_parser("maintain", help="compact and vacuum the pipeline's own tables")
    p.add_argument("path")
    spark_flags(p)
    p.add_argument("--retain-hours", type=not_negative, default=None, metavar="H",
                   help="VACUUM's retention (default SPLICE_RETAIN_HOURS, else 168)")
    p.add_argument("--log-retain-hours", type=not_negative, default=None, metavar="H",
                   help="set the tables' delta.logRetentionDuration (default: leave it)")
    p.add_argument("--wait", type=not_negative, default=0, metavar="SECONDS",
                   help="wait this long for a run that holds the pipeline's lock")

    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from splice.cli.maintain import maintain_and_report
    from splice.engine.lock import LockBusy
    from splice.engine.maintenance import MaintenanceFailed
    from splice.runtime.compile import compile_path
    from splice.runtime.runner import StepFailed

    pipeline = compile_path(args.path)
    try:
        maintain_and_report(pipeline, settings=settings_of(args),
                            retain_hours=args.retain_hours,
                            log_retain_hours=args.log_retain_hours, wait=args.wait)
    except (LockBusy, MaintenanceFailed, StepFailed) as err:
        print(f"splice: {err}", file=sys.stderr)
        return 1
    return 0

