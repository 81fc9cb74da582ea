"""Asset checks from what Splice knows about a step (issue 17): Dagster's
Checks tab shows, per run,

- ``no_dead_letters`` (WARN, file and Kafka sources; for a Kafka source
  read in place, the step that reads it): records the run sent to the
  dead-letter table, with the count;
- ``no_late_records_dropped`` (WARN, stream-stream joins): records that
  arrived after their window closed and were dropped, with the count;
- ``unique_keys`` (ERROR, table outputs): no two rows share a ``_key``;
- ``schema_matches_plan`` (ERROR, every step table): the table's columns
  are those the compiled plan says, in order, with their types.
"""

from __future__ import annotations

from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    MetadataValue,
)
from splice.orchestration.bridge import StepReport
from splice.orchestration.translator import compiled_schema
from splice.sql.plan import JoinStep, Kind, Pipeline, SourceStep, Step

DEAD_LETTERS = "no_dead_letters"
LATE_DROPPED = "no_late_records_dropped"
UNIQUE_KEYS = "unique_keys"
SCHEMA = "schema_matches_plan"


def _streams_joined(step: Step) -> bool:
    return isinstance(step, JoinStep) and step.left_kind == step.right_kind == Kind.STREAM \
        and step.asof is None


def check_specs(step: Step, key: AssetKey, pipeline: Pipeline) -> list[AssetCheckSpec]:
    """The checks the step's asset runs."""
    specs = []
    if isinstance(step, SourceStep):
        if step.format != "delta" and not step.in_place:
            specs.append(AssetCheckSpec(DEAD_LETTERS, asset=key, description=(
                "The run sent no record to the dead-letter table (WARN: the run goes on; "
                "the table says why each record was rejected).")))
        return specs
    in_place = pipeline.read_in_place(step.id)
    if in_place:
        specs.append(AssetCheckSpec(DEAD_LETTERS, asset=key, description=(
            f"The run sent no record of {', '.join(in_place)} (read in place) to their "
            "dead-letter tables (WARN: the run goes on; the tables say why each record was "
            "rejected).")))
    specs.append(AssetCheckSpec(SCHEMA, asset=key, description=(
        "The table's columns are the ones the compiled plan says, in order, with their "
        "types (ERROR: a table changed behind Splice's back).")))
    if _streams_joined(step):
        specs.append(AssetCheckSpec(LATE_DROPPED, asset=key, description=(
            "No record arrived after its window closed (WARN, with the count dropped).")))
    if step.kind == Kind.TABLE and step.output is not None:
        specs.append(AssetCheckSpec(UNIQUE_KEYS, asset=key, description=(
            "No two rows of the table share a key (ERROR).")))
    return specs


def check_results(step: Step, key: AssetKey, report: StepReport, spark: Any,
                  specs: list[AssetCheckSpec]) -> list[AssetCheckResult]:
    """The results of ``specs`` for one run of the step (whose asset is
    ``key``)."""
    wanted = {s.name for s in specs}
    results = []
    if DEAD_LETTERS in wanted:
        results.append(AssetCheckResult(
            asset_key=key, check_name=DEAD_LETTERS, passed=report.dead_letters == 0,
            severity=AssetCheckSeverity.WARN,
            metadata={"dead_letters": report.dead_letters}))
    if LATE_DROPPED in wanted:
        results.append(AssetCheckResult(
            asset_key=key, check_name=LATE_DROPPED, passed=report.late_dropped == 0,
            severity=AssetCheckSeverity.WARN,
            metadata={"late_records_dropped": report.late_dropped}))
    if SCHEMA in wanted or UNIQUE_KEYS in wanted:
        table = spark.read.format("delta").load(report.path)
        if SCHEMA in wanted:
            results.append(_schema(step, key, table.schema))
        if UNIQUE_KEYS in wanted:
            duplicated = table.groupBy("_key").count().where("count > 1")
            keys = duplicated.count()
            results.append(AssetCheckResult(
                asset_key=key, check_name=UNIQUE_KEYS, passed=keys == 0,
                severity=AssetCheckSeverity.ERROR,
                metadata={"duplicated_keys": keys}))
    return results


def _schema(step: Step, key: AssetKey, schema: Any) -> AssetCheckResult:
    expected = [(c.name, c.type) for c in compiled_schema(step).columns]
    actual = [(f.name, f.dataType.simpleString()) for f in schema.fields]
    differences = [f"{e} != {a}" for e, a in zip(expected, actual, strict=False) if e != a]
    if len(expected) != len(actual):
        differences.append(f"{len(expected)} columns planned, {len(actual)} in the table")
    return AssetCheckResult(
        asset_key=key, check_name=SCHEMA, passed=not differences, severity=AssetCheckSeverity.ERROR,
        metadata={"planned": MetadataValue.json(expected),
                  "in the table": MetadataValue.json(actual),
                  **({"differences": MetadataValue.md("\n".join(f"- {d}" for d in differences))}
                     if differences else {})})
