"""What both of a pipeline's source sensors do on a tick: read each
source's marker (engine/source_state.py), compare it with the cursor, and
report each source whose data changed as an observation of its data asset
(its data version: the new marker). An observation reported by a sensor
launches no run: the UI and declarative automation see the new version
without a run per observation (issue 53: observing every minute launched
1,440 runs a day per source)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from dagster import (
    AssetKey,
    AssetObservation,
    DataVersion,
    SensorEvaluationContext,
    SkipReason,
)
from splice.orchestration.bridge import (
    SettingsError,
    SourceStateUnreadable,
    WarehouseResource,
    source_marker,
)
from splice.sql.plan import Pipeline


@dataclass(frozen=True)
class SourceTick:
    """One tick's reading: every source's marker, the ones that changed
    since the cursor, their observations, and the cursor to store; or why
    the sources could not be read."""

    markers: dict[str, str | None]
    changed: list[str]
    observations: list[AssetObservation]
    cursor: str
    unreadable: str | None = None

    @property
    def skip(self) -> SkipReason | None:
        """Why the tick does nothing: the sources unreadable, or unchanged."""
        if self.unreadable is not None:
            return SkipReason(f"source state unreadable: {self.unreadable}")
        return None if self.changed else SkipReason("no new source data")


def read_sources(context: SensorEvaluationContext, pipeline: Pipeline,
                 warehouse: WarehouseResource, data_keys: dict[str, AssetKey]) -> SourceTick:
    """``data_keys``: the data asset of each source, by source name."""
    try:
        markers = {name: source_marker(warehouse, step)
                   for name, step in pipeline.sources.items()}
    except (SourceStateUnreadable, SettingsError) as err:
        # Never a silent sensor: the tick shows the reason, the log has it
        # (unreadable storage, or a topic without a broker).
        context.log.error(str(err))
        return SourceTick({}, [], [], context.cursor or "", unreadable=str(err))
    previous = json.loads(context.cursor) if context.cursor else {}
    changed = sorted(k for k in markers if markers[k] != previous.get(k))
    observations = [AssetObservation(
        asset_key=data_keys[name],
        tags={"dagster/data_version": DataVersion(markers[name] or "empty").value},
        metadata={"splice/observed_by": "sensor"}) for name in changed if name in data_keys]
    return SourceTick(markers, changed, observations, json.dumps(markers))
