"""Each source's own data (a Delta table, a folder of files, a Kafka topic)
as an observable external asset: Dagster cannot materialize it, only observe
it. Its data version is the source's marker (engine/source_state.py: the
newest Delta commit, the files' count and newest name, a topic's end
offsets), so the UI shows when the data changed, and automation reacts:
the source step (which ingests the data) depends on it and is eager.

The source step stays an asset of its own: it does work (JSON and topics
are parsed into a Delta table, bad records go to the dead letter).

An ``AssetSpec`` observed by ``multi_observable_source_asset``, one per
source: an ``AssetsDefinition`` like every other asset of the factory (no
``SourceAsset``), and one source's unreadable storage fails its own
observation only.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

from dagster import (
    AssetsDefinition,
    AssetSpec,
    BetaWarning,
    DataVersion,
    Failure,
    ObserveResult,
    multi_observable_source_asset,
)
from splice.orchestration.bridge import (
    SettingsError,
    SourceStateUnreadable,
    WarehouseResource,
    source_marker,
)
from splice.orchestration.translator import SpliceTranslator
from splice.sql.plan import Pipeline, SourceStep


def source_data_spec(pipeline: Pipeline, source: SourceStep,
                     translator: SpliceTranslator | None = None) -> AssetSpec:
    """What Dagster shows of ``source``'s data, as the translator shapes it."""
    t = translator or SpliceTranslator()
    return AssetSpec(
        key=t.get_source_data_key(source, pipeline),
        group_name=t.get_group_name(source, pipeline),
        description=t.get_source_data_description(source, pipeline),
        metadata=dict(t.get_source_data_metadata(source, pipeline)),
        automation_condition=t.get_source_observation_condition(source, pipeline),
        tags=dict(t.get_tags(source, pipeline)),
        owners=list(t.get_owners(source, pipeline)),
    )


def source_data_asset(pipeline: Pipeline, source: SourceStep,
                      translator: SpliceTranslator | None = None) -> AssetsDefinition:
    """The observable asset of ``source``'s data; its observation's data
    version is the source's marker (``empty`` while there is no data)."""
    spec = source_data_spec(pipeline, source, translator)

    def _observe(warehouse: WarehouseResource) -> Iterator[ObserveResult]:
        try:
            marker = source_marker(warehouse, source)
        except (SourceStateUnreadable, SettingsError) as err:
            raise Failure(description=str(err)) from None
        yield ObserveResult(asset_key=spec.key, data_version=DataVersion(marker or "empty"))

    # Dagster marks the decorator beta and warns at each use, once per
    # source at every load of the code location: the factory chose it
    # (module docstring), the user cannot act on the warning.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)
        return multi_observable_source_asset(
            name=f"observe_{spec.key.to_python_identifier()}", specs=[spec])(_observe)


def source_data_assets(pipeline: Pipeline,
                       translator: SpliceTranslator | None = None) -> list[AssetsDefinition]:
    """The observable data asset of every source the pipeline runs."""
    return [source_data_asset(pipeline, s, translator) for s in pipeline.sources.values()
            if s.id not in pipeline.explain]
