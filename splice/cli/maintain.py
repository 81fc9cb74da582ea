"""``splice maintain``: compact and vacuum a pipeline's own tables now, under
its lock (runtime/maintenance.py says what and why)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from splice.cli.flags import not_negative, settings_of, spark_flags
from splice.engine.settings import SpliceSettings
from splice.physical.base import PhysicalPlan
from splice.runtime.maintenance import MaintenancePolicy, TableMaintenance


def maintain_and_report(pipeline: PhysicalPlan, warehouse: str | None = None,
                        master: str | None = None,
                        retain_hours: float | None = None,
                        log_retain_hours: float | None = None,
                        wait: float | None = 0,
                        settings: SpliceSettings | None = None) -> list[TableMaintenance]:
    """``settings`` is built from ``warehouse``, ``master`` and the
    environment when not given."""
    from splice.runtime.workspace import Workspace

    if settings is None:
        settings = SpliceSettings.from_env(warehouse=warehouse, master=master)

    policy = MaintenancePolicy.from_env()
    if retain_hours is not None:
        policy = replace(policy, retain_hours=retain_hours)
    if log_retain_hours is not None:
        policy = replace(policy, log_retain_hours=log_retain_hours)
    workspace = Workspace(pipeline, settings)
    print(f"starting Spark ({workspace.settings.describe_spark()}) ...", flush=True)
    workspace.start()
    reports = workspace.maintain(policy, wait=wait)
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
    from splice.runtime.compile import compile_path
    from splice.runtime.lock import LockBusy
    from splice.runtime.maintenance import MaintenanceFailed
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

