"""A sensor per pipeline that reports its tables changing outside Dagster
runs (``splice serve``, or a ``splice run`` from the CLI): each new Delta
version of a step's table becomes a materialization of the step's asset,
so the UI, freshness and automation see what the served queries wrote.
Stopped by default; turn it on while the pipeline is served (with Dagster's
own runs as well it would report their writes a second time)."""

import json

from dagster import (
    AssetKey,
    AssetMaterialization,
    DefaultSensorStatus,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)
from splice.orchestration.bridge import WarehouseResource, table_version
from splice.sql.plan import Pipeline, SourceStep, Step


def _table_path(warehouse: WarehouseResource, pipeline: Pipeline, step: Step) -> str:
    if step.output:
        return warehouse.output_path(step.output)
    return warehouse.step_path(pipeline.name, step.id)


def tables_sensor(pipeline: Pipeline, keys: dict[str, AssetKey],
                  warehouse: WarehouseResource) -> SensorDefinition:
    """``keys``: the asset key of each step that is an asset (sources have
    their own sensor)."""
    steps = [pipeline.step(i) for i in keys if not isinstance(pipeline.step(i), SourceStep)]

    @sensor(name=f"{pipeline.name}_tables_changed", minimum_interval_seconds=30,
            default_status=DefaultSensorStatus.STOPPED,
            description=f"Reports new versions of '{pipeline.name}''s tables written outside "
                        "Dagster (splice serve) as materializations.")
    def _sensor(context: SensorEvaluationContext):
        versions = {s.id: table_version(_table_path(warehouse, pipeline, s)) for s in steps}
        previous = json.loads(context.cursor) if context.cursor else None
        if previous is None:  # the first tick notes where every table is
            return SensorResult(cursor=json.dumps(versions), skip_reason=SkipReason(
                "noted the tables' versions; later ticks report what changes"))
        changed = [i for i, v in versions.items() if v is not None and previous.get(i) != v]
        if not changed:
            return SkipReason("no table changed")
        return SensorResult(cursor=json.dumps(versions), asset_events=[
            AssetMaterialization(asset_key=keys[i], metadata={
                "delta_version": versions[i],
                "dagster/uri": _table_path(warehouse, pipeline, pipeline.step(i)),
                "splice/written_by": "outside Dagster (splice serve or splice run)"})
            for i in changed])

    return _sensor
