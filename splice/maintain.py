"""``splice maintain``: compact and vacuum a pipeline's own tables now, under
its lock (engine/maintenance.py says what and why)."""

from __future__ import annotations

from dataclasses import replace

from engine.maintenance import MaintenancePolicy, TableMaintenance
from engine.settings import SpliceSettings
from sql.plan import Pipeline


def maintain_and_report(pipeline: Pipeline, warehouse: str | None = None,
                        master: str | None = None,
                        retain_hours: float | None = None,
                        log_retain_hours: float | None = None,
                        wait: float | None = 0,
                        settings: SpliceSettings | None = None) -> list[TableMaintenance]:
    """``settings`` is built from ``warehouse``, ``master`` and the
    environment when not given."""
    from engine.io import StepIO
    from engine.maintenance import maintain
    from engine.session import start_session
    from runtime.runner import run_steps
    from runtime.tenure import hold

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
