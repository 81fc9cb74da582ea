"""A sensor per pipeline: when any of its sources has new data (a new Delta
version, a new file), it requests a run of the pipeline's job."""

import json

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)
from splice.orchestration.bridge import (
    SettingsError,
    SourceStateUnreadable,
    WarehouseResource,
    source_marker,
)
from splice.sql.plan import Pipeline


def pipeline_sensor(pipeline: Pipeline, job_name: str,
                    warehouse: WarehouseResource) -> SensorDefinition:
    @sensor(name=f"{pipeline.name}_new_data", job_name=job_name, minimum_interval_seconds=30,
            default_status=DefaultSensorStatus.STOPPED,
            description=f"Runs '{pipeline.name}' when any of its sources has new data.")
    def _sensor(context: SensorEvaluationContext):
        try:
            markers = {name: source_marker(warehouse, step)
                       for name, step in pipeline.sources.items()}
        except (SourceStateUnreadable, SettingsError) as err:
            # Never a silent sensor: the tick shows the reason, the log has it
            # (unreadable storage, or a topic without a broker).
            context.log.error(str(err))
            return SkipReason(f"source state unreadable: {err}")
        previous = json.loads(context.cursor) if context.cursor else {}
        if markers == previous:
            return SkipReason("no new source data")
        context.update_cursor(json.dumps(markers))
        changed = sorted(k for k in markers if markers[k] != previous.get(k))
        return RunRequest(run_key=json.dumps(markers, sort_keys=True),
                          tags={"splice/sources": ",".join(changed)})

    return _sensor
