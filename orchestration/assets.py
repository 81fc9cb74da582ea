"""The asset factory: a compiled pipeline in, one Dagster asset per step out.

Each asset runs its step once, incrementally (the same ``run_step`` the CLI
uses), and records what it wrote: rows, Delta version, duration, the output
schema. Its description carries the step's EXPLAIN tree.
"""

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    asset,
)

from engine.definitions import DefinitionChanged
from engine.io import StepIO
from engine.lock import LockBusy, dagster_lock_wait, pipeline_lock
from resources.spark import SparkResource
from resources.warehouse import WarehouseResource
from runtime.explain import explain_step, step_header
from runtime.runner import StepFailed, StepReport, run_step
from sql.plan import Pipeline, SourceStep, Step

FILES_UNCHANGED = "files_unchanged_after_ingest"


def asset_key(pipeline: Pipeline, step_id: str) -> AssetKey:
    safe = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in step_id)
    return AssetKey([pipeline.name, safe])


def _is_file_source(step: Step) -> bool:
    return isinstance(step, SourceStep) and step.format != "delta"


def files_unchanged(report: StepReport) -> AssetCheckResult:
    """Fails when a file of the source changed in place after it was ingested,
    naming each file with the bytes that were not read."""
    metadata: dict[str, object] = {f.name: MetadataValue.int(f.bytes_not_read)
                                   for f in report.changed_files}
    if report.changed_files:
        metadata["files"] = MetadataValue.md("\n".join(
            f"- {f.describe()}" for f in report.changed_files))
    return AssetCheckResult(check_name=FILES_UNCHANGED, passed=not report.changed_files,
                            metadata=metadata)


def step_asset(pipeline: Pipeline, step: Step) -> AssetsDefinition:
    key = asset_key(pipeline, step.id)
    checks = ([AssetCheckSpec(FILES_UNCHANGED, asset=key, description=(
        "Every file of the source was read whole: none changed in place after it "
        "was ingested (write a file elsewhere, then rename it into the folder)."))]
        if _is_file_source(step) else [])
    explain = explain_step(step).render()
    description = (f"{step_header(step)}\n\n```\n{explain}\n```\n\n"
                   f"From {step.where}:\n```sql\n{step.sql.strip()}\n```")

    @asset(
        key=key,
        check_specs=checks,
        deps=[asset_key(pipeline, i) for i in step.inputs],
        group_name=pipeline.name,
        description=description,
        kinds={"spark", "delta"},
        tags={"splice/op": step.op, "splice/kind": step.kind.value},
        metadata={"splice/explain": MetadataValue.md(f"```\n{explain}\n```"),
                  "splice/step": step.id, "splice/kind": step.kind.value},
    )
    def _step(context: AssetExecutionContext, spark: SparkResource,
              warehouse: WarehouseResource) -> MaterializeResult:
        io = StepIO(spark=spark.session(), warehouse=warehouse, pipeline=pipeline)
        try:  # the pipeline's lock: a `splice run` of it cannot run at the same time
            with pipeline_lock(warehouse, pipeline.name, wait=dagster_lock_wait(),
                               owner=f"dagster run {context.run_id}, step {step.id}"):
                report = run_step(step, io)
        except StepFailed as err:
            raise Failure(description=str(err),
                          metadata={"error": MetadataValue.text(err.detail)}) from None
        except (DefinitionChanged, LockBusy) as err:
            raise Failure(description=str(err)) from None
        context.log.info(f"{step.id}: {report.rows_written} rows written in "
                         f"{report.seconds:.1f}s")
        metadata = dict(report.metadata())
        metadata["path"] = MetadataValue.path(report.path)
        metadata["dagster/column_schema"] = TableSchema(
            columns=[TableColumn(name=n, type=t) for n, t in report.schema])
        return MaterializeResult(metadata=metadata, check_results=(
            [files_unchanged(report)] if checks else None))

    return _step


def build_assets(pipeline: Pipeline) -> list[AssetsDefinition]:
    return [step_asset(pipeline, step) for step in pipeline.steps
            if step.id not in pipeline.explain]
