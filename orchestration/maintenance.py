"""A maintenance job per pipeline, ``<pipeline>_maintain``: compact and vacuum
the pipeline's own tables now, under its lock (runtime/maintenance.py).

One op, not an asset: maintenance changes no table's content, so it
materializes nothing. It waits for a run of the pipeline like a step does.
"""

from dagster import Failure, JobDefinition, OpExecutionContext, job, op
from splice.orchestration.bridge import (
    ClaimRefused,
    LockBusy,
    MaintenanceFailed,
    MaintenancePolicy,
    PhysicalPlan,
    SparkResource,
    StepFailed,
    TenureLost,
    WarehouseResource,
    Workspace,
    dagster_lock_wait,
    plan_packages,
)


def maintenance_job(pipeline: PhysicalPlan) -> JobDefinition:
    @op(name=f"{pipeline.name}_maintain_op",
        description=f"OPTIMIZE and VACUUM the tables of pipeline '{pipeline.name}'.")
    def _maintain(context: OpExecutionContext, spark: SparkResource,
                  warehouse: WarehouseResource) -> None:
        workspace = Workspace(pipeline, spark.settings(), warehouse=warehouse,
                              spark=spark.session(packages=plan_packages(pipeline)))
        policy = MaintenancePolicy.from_env()
        try:
            reports = workspace.maintain(policy, wait=dagster_lock_wait(),
                                         owner=f"dagster run {context.run.run_id}, maintenance")
        except (ClaimRefused, LockBusy, MaintenanceFailed, StepFailed, TenureLost) as err:
            raise Failure(description=str(err)) from None
        for r in reports:
            context.log.info(f"{r.path}: {r.files_compacted} small files compacted into "
                             f"{r.files_written}")

    @job(name=f"{pipeline.name}_maintain",
         description=f"Compact and vacuum the tables of pipeline '{pipeline.name}' "
                     "(SPLICE_RETAIN_HOURS, SPLICE_LOG_RETAIN_HOURS).")
    def _job() -> None:
        _maintain()

    return _job
