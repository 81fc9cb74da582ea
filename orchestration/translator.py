"""How a step of a pipeline looks in Dagster, as methods a user can override.

The counterpart of dagster-dbt's ``DagsterDbtTranslator``: subclass
:class:`SpliceTranslator`, override the methods you want to change, and hand
an instance to :func:`splice.orchestration.factory.splice_definitions` (or
:func:`splice.orchestration.factory.splice_assets`). Every method gets the step
(``splice.sql.plan.Step``: its ``id``, ``op``, ``kind``, ``output``, ``inputs``,
``where``, ``sql``) and the compiled pipeline it belongs to. The defaults
are what ``orchestration/definitions.py`` shows: one asset per step keyed
``<pipeline>/<step>``, grouped by pipeline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from dagster import (
    AssetKey,
    AutomationCondition,
    Backoff,
    FreshnessPolicy,
    MetadataValue,
    RetryPolicy,
    TableColumn,
    TableSchema,
)
from splice.orchestration.bridge import definition_hash, explain_step, explainable, step_header
from splice.sql.plan import Pipeline, SourceStep, Step


def safe_name(step_id: str) -> str:
    """A step id as an asset key part: anything but letters, digits and ``_``
    becomes ``_``."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in step_id)


class SpliceTranslator:
    """Maps each step of a compiled pipeline to the parts of its Dagster asset."""

    def get_asset_key(self, step: Step, pipeline: Pipeline) -> AssetKey:
        """The asset's key; its dependencies use the keys of the steps it
        reads. Default: ``<pipeline>/<step>``."""
        return AssetKey([pipeline.name, safe_name(step.id)])

    def get_group_name(self, step: Step, pipeline: Pipeline) -> str | None:
        """The asset group. Default: the pipeline's name."""
        return pipeline.name

    def explain_tree(self, step: Step, pipeline: Pipeline) -> str:
        """The step's EXPLAIN tree, from the compiled plan's node (the
        description and the metadata both show it)."""
        return explain_step(step, explainable(pipeline)).render()

    def get_description(self, step: Step, pipeline: Pipeline) -> str | None:
        """Default: what the step computes, its EXPLAIN tree and its SQL."""
        explain = self.explain_tree(step, pipeline)
        return (f"{step_header(step)}\n\n```\n{explain}\n```\n\n"
                f"From {step.where}:\n```sql\n{step.sql.strip()}\n```")

    def get_metadata(self, step: Step, pipeline: Pipeline) -> Mapping[str, Any]:
        """Definition metadata (what the asset is, not what a run wrote).
        Default: the EXPLAIN tree, the step id and its kind, the table's columns as
        compiled (shown before the first run) and its name."""
        explain = self.explain_tree(step, pipeline)
        return {"splice/explain": MetadataValue.md(f"```\n{explain}\n```"),
                "splice/step": step.id, "splice/kind": step.kind.value,
                "dagster/column_schema": compiled_schema(step),
                "dagster/table_name": step.output or step.id}

    def get_tags(self, step: Step, pipeline: Pipeline) -> Mapping[str, str]:
        """Asset tags (Dagster's rules for tag keys and values apply).
        Default: the step's operation and kind."""
        return {"splice/op": step.op, "splice/kind": step.kind.value}

    def get_owners(self, step: Step, pipeline: Pipeline) -> Sequence[str]:
        """Owners: e-mail addresses or ``team:<name>``. Default: none."""
        return []

    def get_code_version(self, step: Step, pipeline: Pipeline) -> str | None:
        """Default: the hash of the step's definition, the one that decides
        whether its checkpoint must be rebuilt (engine/definitions.py), so the
        UI shows a step whose SQL changed what it computes, and only that: a
        moved statement or an edited comment keeps the version."""
        return definition_hash(step)

    def get_pool(self, step: Step, pipeline: Pipeline) -> str | None:
        """The Dagster concurrency pool of the step's asset. Default
        ``splice_<pipeline>``: give it a limit of 1 (``dagster instance
        concurrency set splice_<pipeline> 1``) and Dagster itself keeps a
        pipeline's steps from running in two runs at once; without a limit
        the pipeline's lock still makes the second run wait (docs/dagster.md)."""
        return f"splice_{pipeline.name}"

    def get_retry_policy(self, step: Step, pipeline: Pipeline) -> RetryPolicy | None:
        """How Dagster retries the step after a failure. Default: the
        number of retries in ``SPLICE_DAGSTER_RETRIES`` (none when unset),
        10 s apart, doubling. A retry is safe (every write is idempotent),
        but a SQL or data error fails every retry the same way."""
        retries = int(os.environ.get("SPLICE_DAGSTER_RETRIES", "0") or 0)
        if retries <= 0:
            return None
        return RetryPolicy(max_retries=retries, delay=10, backoff=Backoff.EXPONENTIAL)

    def get_automation_condition(self, step: Step,
                                 pipeline: Pipeline) -> AutomationCondition | None:
        """Default: eager (materialize when an upstream asset was updated)
        for every step; a source step's upstream is its data's observable
        asset (:meth:`get_source_observation_condition`). Dagster evaluates conditions
        only while its ``default_automation_condition_sensor`` runs (stopped
        until a user starts it): an alternative to the pipeline's sensor,
        not both. ``SPLICE_AUTOMATION=none`` gives none; per pipeline,
        override this method and look at ``pipeline.name``."""
        mode = os.environ.get("SPLICE_AUTOMATION", "eager").strip().lower() or "eager"
        if mode not in ("eager", "none"):
            raise ValueError(f"SPLICE_AUTOMATION is 'eager' or 'none', not {mode!r}")
        if mode == "none":
            return None
        return AutomationCondition.eager()

    def get_freshness_policy(self, step: Step,
                             pipeline: Pipeline) -> FreshnessPolicy | None:
        """How fresh the step's table must be (Dagster's freshness policy:
        the asset fails its freshness when its last materialization is older
        than the window). Default: for outputs only, when
        ``SPLICE_FRESHNESS_MINUTES`` is set, a window of that many minutes
        (warned at half of it); none otherwise."""
        raw = os.environ.get("SPLICE_FRESHNESS_MINUTES", "").strip()
        if not raw or step.output is None:
            return None
        try:
            minutes = float(raw)
        except ValueError:
            raise ValueError(f"SPLICE_FRESHNESS_MINUTES is a number of minutes, not {raw!r}"
                             ) from None
        return FreshnessPolicy.time_window(fail_window=timedelta(minutes=minutes),
                                           warn_window=timedelta(minutes=minutes / 2))

    # -- a source's own data (orchestration/source_data.py) -------------------
    def get_source_data_key(self, source: SourceStep, pipeline: Pipeline) -> AssetKey:
        """The key of the observable asset of ``source``'s data, upstream of
        the source step's asset. Default: the step's key with ``_data``
        appended (``<pipeline>/<source>_data`` by default)."""
        *prefix, last = self.get_asset_key(source, pipeline).path
        return AssetKey([*prefix, f"{last}_data"])

    def get_source_data_description(self, source: SourceStep, pipeline: Pipeline) -> str:
        where = (f"Kafka topic '{source.options.get('topic')}'" if source.format == "kafka"
                 else f"{source.format} at '{source.location}' in the warehouse's sources")
        return (f"The data of source '{source.name}': {where}. Observed, never "
                f"materialized: its data version changes when new data arrives, and the "
                f"source step '{source.id}' then ingests it.")

    def get_source_data_metadata(self, source: SourceStep,
                                 pipeline: Pipeline) -> Mapping[str, Any]:
        return {"splice/source": source.name, "splice/format": source.format,
                "dagster/column_schema": compiled_schema(source)}

    def get_source_observation_condition(self, source: SourceStep,
                                         pipeline: Pipeline) -> AutomationCondition | None:
        """When Dagster's automation launches a run to observe the source's
        data. Default: never. The pipeline's sensors record each new data
        version without a run, and every run of the pipeline's job observes
        its sources first (issue 53: an observation every minute was 1,440
        runs a day per source)."""
        return None

    # -- a pipeline that does not compile (orchestration/broken.py) ----------
    def get_sql_errors_key(self, pipeline_name: str) -> AssetKey:
        """The key of the one asset of a pipeline that does not compile
        (there are no steps to key). Default: ``<pipeline>/sql_errors``."""
        return AssetKey([pipeline_name, "sql_errors"])

    def get_sql_errors_group_name(self, pipeline_name: str) -> str | None:
        """Its group. Default: the pipeline's name, as its steps' would be."""
        return pipeline_name

    def get_sql_errors_owners(self, pipeline_name: str) -> Sequence[str]:
        """Its owners (who fixes the SQL). Default: none."""
        return []

    def is_internal(self, step: Step, pipeline: Pipeline) -> bool:
        """Whether the step is hidden when internal steps are hidden
        (``hide_internal_steps=True``): it is then no asset of its own, and
        runs inside the assets of the steps that read it. Sources and outputs
        are always assets, whatever this says. Default: every step between
        them (repartitions, table materializations, WITH steps), so the asset
        graph shows sources -> outputs."""
        return not isinstance(step, SourceStep) and step.output is None


def compiled_schema(step: Step) -> TableSchema:
    """The columns the step's table stores, known at compile time: a
    source's declared columns (its own table, or the one it is ingested
    into); ``_key``, the value columns and ``ROWTIME`` for every other step."""
    relation = step.relation
    if isinstance(step, SourceStep):
        return TableSchema(columns=[TableColumn(name=c.name, type=c.type)
                                    for c in step.declared])
    return TableSchema(columns=[
        TableColumn(name="_key", type=relation.key_type),
        *(TableColumn(name=c.name, type=c.type) for c in relation.columns),
        TableColumn(name="ROWTIME", type="timestamp")])
