"""Asset checks from what Splice knows about a step (issue 17): Dagster's
Checks tab shows, per run,

- ``no_dead_letters`` (WARN, file and Kafka sources; for a Kafka source
  read in place, the step that reads it): records the run sent to the
  dead-letter table, with the count;
- ``no_late_records_dropped`` (WARN, stream-stream joins): records that
  arrived after their window closed and were dropped, with the count;
- ``unique_keys`` (ERROR, table outputs): no two rows share a ``_key``;
- ``schema_matches_plan`` (ERROR, every step table): the table's columns
  are those the compiled plan says, in order, with their types;
- ``files_unchanged_after_ingest`` (file sources): no file of the source
  changed in place after it was ingested.

A check selected without its asset (alone, from the Checks tab, a job or
the API) judges the asset's last materialization: its counts, and its
table as it is now (:func:`last_run_results`).
"""

from __future__ import annotations

from collections.abc import Mapping
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
FILES_UNCHANGED = "files_unchanged_after_ingest"


def _is_file_source(step: Step) -> bool:
    """A folder of files (JSON lines): a Kafka topic has no files to change."""
    return isinstance(step, SourceStep) and step.format == "json"


def _streams_joined(step: Step) -> bool:
    return isinstance(step, JoinStep) and step.left_kind == step.right_kind == Kind.STREAM \
        and step.asof is None


def check_specs(step: Step, key: AssetKey, pipeline: Pipeline) -> list[AssetCheckSpec]:
    """The checks the step's asset runs."""
    specs = []
    if _is_file_source(step):
        specs.append(AssetCheckSpec(FILES_UNCHANGED, asset=key, description=(
            "Every file of the source was read whole: none changed in place after it "
            "was ingested (write a file elsewhere, then rename it into the folder).")))
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
    if FILES_UNCHANGED in wanted:
        results.append(_files_unchanged(key, report))
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


def _files_unchanged(key: AssetKey, report: StepReport) -> AssetCheckResult:
    """Fails when a file of the source changed in place after it was
    ingested, naming each file with the bytes that were not read."""
    metadata: dict[str, object] = {f.name: MetadataValue.int(f.bytes_not_read)
                                   for f in report.changed_files}
    if report.changed_files:
        metadata["files"] = MetadataValue.md("\n".join(
            f"- {f.describe()}" for f in report.changed_files))
    return AssetCheckResult(asset_key=key, check_name=FILES_UNCHANGED,
                            passed=not report.changed_files, metadata=metadata)


def last_run_results(step: Step, key: AssetKey, last: Mapping[str, Any] | None, spark: Any,
                     specs: list[AssetCheckSpec]) -> list[AssetCheckResult]:
    """The results of ``specs`` run alone, without a run of the step: the
    counts of the asset's last materialization (``last``, its metadata;
    None when it has none), the table as it is now. An asset never
    materialized fails each check (WARN), saying so."""
    if last is None or not last.get("path"):
        return [AssetCheckResult(
            asset_key=key, check_name=s.name, passed=False, severity=AssetCheckSeverity.WARN,
            description=f"{key.to_user_string()} has no materialization to check yet: "
                        "materialize the asset (its checks run with it)",
            metadata={"materialized": False}) for s in specs]
    report = StepReport(
        step_id=step.id, op=step.op, kind=str(step.kind), path=str(last["path"]),
        rows_written=int(last.get("rows_written", 0)),
        delta_version=int(last.get("delta_version", -1)), seconds=0.0,
        dead_letters=int(last.get("dead_letters", 0)),
        late_dropped=int(last.get("late_records_dropped", 0)))
    others = [s for s in specs if s.name != FILES_UNCHANGED]
    results = check_results(step, key, report, spark, others)
    if len(others) < len(specs):
        changed = int(last.get("changed_files", 0))
        results.append(AssetCheckResult(
            asset_key=key, check_name=FILES_UNCHANGED, passed=changed == 0,
            metadata={"changed_files": changed}))
    return [_from_last(r, last) for r in results]


def _from_last(result: AssetCheckResult, last: Mapping[str, Any]) -> AssetCheckResult:
    """A result run alone says which materialization it judged."""
    version = last.get("delta_version")
    return result._replace(metadata={**result.metadata, "judged": MetadataValue.text(
        f"the last materialization (Delta version {version}), checked alone")})
