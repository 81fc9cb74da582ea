"""Each source's own data (a Delta table, a folder of files, a Kafka topic)
as an observable source asset: Dagster cannot materialize it, only observe
it. Its data version is the source's marker (engine/source_state.py: the
newest Delta commit, the files' count and newest name, a topic's end
offsets), so the UI shows when the data changed, and automation reacts:
the source step (which ingests the data) depends on it and is eager.

The source step stays an asset of its own: it does work (JSON and topics
are parsed into a Delta table, bad records go to the dead letter).
"""

from __future__ import annotations

from dagster import DataVersion, Failure, SourceAsset, observable_source_asset

from engine.settings import SettingsError
from engine.source_state import SourceStateUnreadable, source_marker
from orchestration.translator import SpliceTranslator
from resources.warehouse import WarehouseResource
from sql.plan import Pipeline, SourceStep


def source_data_asset(pipeline: Pipeline, source: SourceStep,
                      translator: SpliceTranslator | None = None) -> SourceAsset:
    """The observable asset of ``source``'s data."""
    t = translator or SpliceTranslator()

    @observable_source_asset(
        key=t.get_source_data_key(source, pipeline),
        group_name=t.get_group_name(source, pipeline),
        description=t.get_source_data_description(source, pipeline),
        metadata=dict(t.get_source_data_metadata(source, pipeline)),
        automation_condition=t.get_source_observation_condition(source, pipeline),
        tags=dict(t.get_tags(source, pipeline)),
    )
    def _observe(warehouse: WarehouseResource) -> DataVersion:
        try:
            return DataVersion(source_marker(warehouse, source) or "empty")
        except (SourceStateUnreadable, SettingsError) as err:
            raise Failure(description=str(err)) from None

    return _observe


def source_data_assets(pipeline: Pipeline,
                       translator: SpliceTranslator | None = None) -> list[SourceAsset]:
    """The observable data asset of every source the pipeline runs."""
    return [source_data_asset(pipeline, s, translator) for s in pipeline.sources.values()
            if s.id not in pipeline.explain]
