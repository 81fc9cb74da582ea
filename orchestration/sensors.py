"""A pipeline's two source sensors (orchestration/source_sensor.py reads the
sources on each tick):

- ``<pipeline>_new_data``, the default automation path: when a source has
  new data (a new Delta version, a new file, new offsets) it records the new
  data versions and requests one run of the pipeline's job. A run starts
  only then: a source that changes once an hour costs 24 runs a day; the
  ticks in between (every 30 s) are no runs.
- ``<pipeline>_observe_sources``, for declarative automation instead (the
  steps' eager conditions, under Dagster's automation sensor): it records
  the new data versions only, and the eager source steps react to them.

Use one of the two: with both, a change can start two runs (the second
waits for the pipeline's lock and reads nothing new).
"""

import json

from dagster import (
    AssetKey,
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)
from splice.orchestration.bridge import WarehouseResource
from splice.orchestration.source_sensor import read_sources
from splice.orchestration.translator import SpliceTranslator
from splice.sql.plan import Pipeline


def source_data_keys(pipeline: Pipeline,
                     translator: SpliceTranslator | None = None) -> dict[str, AssetKey]:
    """The data asset of each source the pipeline runs, by source name."""
    t = translator or SpliceTranslator()
    return {name: t.get_source_data_key(step, pipeline)
            for name, step in pipeline.sources.items() if step.id not in pipeline.explain}


def pipeline_sensor(pipeline: Pipeline, job_name: str, warehouse: WarehouseResource,
                    data_keys: dict[str, AssetKey] | None = None) -> SensorDefinition:
    """``data_keys``: the data asset of each source, by source name (default:
    the default translator's, :func:`source_data_keys`)."""
    data_keys = data_keys if data_keys is not None else source_data_keys(pipeline)

    @sensor(name=f"{pipeline.name}_new_data", job_name=job_name, minimum_interval_seconds=30,
            default_status=DefaultSensorStatus.STOPPED,
            description=f"Runs '{pipeline.name}' when any of its sources has new data, and "
                        "records the sources' new data versions (one run per change).")
    def _sensor(context: SensorEvaluationContext):
        tick = read_sources(context, pipeline, warehouse, data_keys)
        if tick.skip is not None:
            return tick.skip
        return SensorResult(
            run_requests=[RunRequest(run_key=json.dumps(tick.markers, sort_keys=True),
                                     tags={"splice/sources": ",".join(tick.changed)})],
            asset_events=tick.observations, cursor=tick.cursor)

    return _sensor


def observation_sensor(pipeline: Pipeline, warehouse: WarehouseResource,
                       data_keys: dict[str, AssetKey] | None = None) -> SensorDefinition:
    data_keys = data_keys if data_keys is not None else source_data_keys(pipeline)

    @sensor(name=f"{pipeline.name}_observe_sources", minimum_interval_seconds=30,
            default_status=DefaultSensorStatus.STOPPED,
            description=f"Records the new data versions of '{pipeline.name}''s sources, "
                        "without a run: for declarative automation (the steps' eager "
                        "conditions), instead of the pipeline's new-data sensor.")
    def _sensor(context: SensorEvaluationContext):
        tick = read_sources(context, pipeline, warehouse, data_keys)
        if tick.skip is not None:
            return tick.skip
        return SensorResult(asset_events=tick.observations, cursor=tick.cursor)

    return _sensor
