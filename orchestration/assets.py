"""The asset factory: a compiled pipeline in, one Dagster asset per step out.

Each asset runs its step once, incrementally (the same ``run_step`` the CLI
uses), and records what it wrote: rows, Delta version, duration, the output
schema. Its description carries the step's EXPLAIN tree.
"""

from dagster import (
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

from engine.io import StepIO
from engine.runner import StepFailed, run_step
from resources.spark import SparkResource
from resources.warehouse import WarehouseResource
from splice.explain import explain_step, step_header
from sql.plan import Pipeline, Step


def asset_key(pipeline: Pipeline, step_id: str) -> AssetKey:
    safe = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in step_id)
    return AssetKey([pipeline.name, safe])


def step_asset(pipeline: Pipeline, step: Step) -> AssetsDefinition:
    explain = explain_step(step).render()
    description = (f"{step_header(step)}\n\n```\n{explain}\n```\n\n"
                   f"From {step.where}:\n```sql\n{step.sql.strip()}\n```")

    @asset(
        key=asset_key(pipeline, step.id),
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
        try:
            report = run_step(step, io)
        except StepFailed as err:
            raise Failure(description=str(err),
                          metadata={"error": MetadataValue.text(err.detail)}) from None
        context.log.info(f"{step.id}: {report.rows_written} rows written in "
                         f"{report.seconds:.1f}s")
        metadata = dict(report.metadata())
        metadata["path"] = MetadataValue.path(report.path)
        metadata["dagster/column_schema"] = TableSchema(
            columns=[TableColumn(name=n, type=t) for n, t in report.schema])
        return MaterializeResult(metadata=metadata)

    return _step


def build_assets(pipeline: Pipeline) -> list[AssetsDefinition]:
    return [step_asset(pipeline, step) for step in pipeline.steps
            if step.id not in pipeline.explain]
