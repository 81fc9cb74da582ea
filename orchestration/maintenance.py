"""A maintenance job per pipeline, ``<pipeline>_maintain``: compact and vacuum
the pipeline's own tables now, under its lock (engine/maintenance.py).

One op, not an asset: maintenance changes no table's content, so it
materializes nothing. It waits for a run of the pipeline like a step does.
"""

from dagster import Failure, JobDefinition, OpExecutionContext, job, op
from splice.orchestration.bridge import (
    ClaimRefused,
    LockBusy,
    MaintenanceFailed,
    MaintenancePolicy,
    SparkResource,
    StepFailed,
    StepIO,
    TenureLost,
    WarehouseResource,
    dagster_lock_wait,
    hold,
    maintain,
    run_steps,
)
from splice.sql.plan import Pipeline


def maintenance_job(pipeline: Pipeline) -> JobDefinition:
    @op(name=f"{pipeline.name}_maintain_op",
        description=f"OPTIMIZE and VACUUM the tables of pipeline '{pipeline.name}'.")
    def _maintain(context: OpExecutionContext, spark: SparkResource,
                  warehouse: WarehouseResource) -> None:
        io = StepIO(spark=spark.session(), warehouse=warehouse, pipeline=pipeline)
        policy = MaintenancePolicy.from_env()
        try:
            with hold(pipeline, warehouse, wait=dagster_lock_wait(),
                      owner=f"dagster run {context.run.run_id}, maintenance"):
                reports = maintain(io, policy, lambda: run_steps(pipeline, io))
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
