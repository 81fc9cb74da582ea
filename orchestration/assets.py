"""The asset factory: a compiled pipeline in, Dagster assets out.

A pipeline is one multi-asset with an asset per step; the op runs each
selected step once, incrementally (the same ``run_step`` the CLI uses), and
records what it wrote: rows, Delta version, duration, the output schema.
A :class:`~orchestration.translator.SpliceTranslator` gives each
asset its key, group, description, metadata, tags, owners, code version and
automation condition. With ``hide_internal_steps`` an asset first runs the
hidden steps it reads (orchestration/layout.py), under the same lock.
"""

# No `from __future__ import annotations`: Dagster reads the asset function's
# annotations (the context type) at definition time.
import hashlib
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    AssetSpec,
    Failure,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    multi_asset,
)
from splice.orchestration.bridge import (
    ClaimRefused,
    DefinitionChanged,
    LockBusy,
    SparkResource,
    StepFailed,
    StepReport,
    TenureLost,
    WarehouseResource,
    Workspace,
    dagster_lock_wait,
    plan_packages,
    table_rows,
)
from splice.orchestration.checks import check_results, check_specs
from splice.orchestration.layout import AssetShape, asset_shapes, hidden_steps
from splice.orchestration.translator import SpliceTranslator, compiled_schema, safe_name
from splice.sql.plan import Pipeline, SourceStep, Step

FILES_UNCHANGED = "files_unchanged_after_ingest"


def asset_key(pipeline: Pipeline, step_id: str) -> AssetKey:
    """The default key of a step's asset, ``<pipeline>/<step>``."""
    return AssetKey([pipeline.name, safe_name(step_id)])


def _is_file_source(step: Step) -> bool:
    """A folder of files (JSON lines): a Kafka topic has no files to change."""
    return isinstance(step, SourceStep) and step.format == "json"


def files_unchanged(key: AssetKey, report: StepReport) -> AssetCheckResult:
    """Fails when a file of the source changed in place after it was ingested,
    naming each file with the bytes that were not read."""
    metadata: dict[str, object] = {f.name: MetadataValue.int(f.bytes_not_read)
                                   for f in report.changed_files}
    if report.changed_files:
        metadata["files"] = MetadataValue.md("\n".join(
            f"- {f.describe()}" for f in report.changed_files))
    return AssetCheckResult(asset_key=key, check_name=FILES_UNCHANGED,
                            passed=not report.changed_files,
                            metadata=metadata)


def _code_version(shape: AssetShape, pipeline: Pipeline,
                  translator: SpliceTranslator) -> str | None:
    """The translator's code version of the step; when the asset also runs
    hidden steps, a hash of theirs and its own, so that editing a hidden
    step shows as a new version of the asset that runs it."""
    own = translator.get_code_version(shape.step, pipeline)
    if not shape.runs_first:
        return own
    versions = [(s.id, translator.get_code_version(s, pipeline))
                for s in (*shape.runs_first, shape.step)]
    if all(v is None for _, v in versions):
        return None
    text = "\n".join(f"{i}={v or ''}" for i, v in versions)
    return hashlib.sha256(text.encode()).hexdigest()


def _jvm_log_since(path: str, offset: int, limit: int = 20_000) -> str:
    """What the JVM wrote to its log file after ``offset`` (its last
    ``limit`` characters): the JVM's output goes to one file per process,
    so the part a failed step wrote is copied into the step's own logs."""
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return text[-limit:]


def _log_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _run(steps: list[Step], workspace: Workspace, context: AssetExecutionContext,
         jvm_log: str, done: dict[str, StepReport]) -> None:
    """Run ``steps`` under the pipeline's lock (a `splice run` of the
    pipeline cannot run at the same time), side by side as ``splice run``
    runs them (each after the steps it reads); ``done`` gets each report as
    its step ends. One clear Failure otherwise, with what the JVM logged
    meanwhile (also in the run's compute logs)."""
    pipeline = workspace.plan
    offset = _log_size(jvm_log)

    def ended(_index: int, step: Step, report: StepReport | None) -> None:
        if report is not None:
            done[step.id] = report

    try:
        # The same claims and lock as `splice run` and `serve` take.
        with workspace.hold(wait=dagster_lock_wait(),
                            owner=f"dagster run {context.run.run_id}, pipeline {pipeline.name}"):
            workspace.run_steps(ended, only={s.id for s in steps})
    except StepFailed as err:
        logged = _jvm_log_since(jvm_log, offset)
        if logged:
            print(f"-- the JVM's log ({jvm_log}) during this step --\n{logged}",
                  file=sys.stderr, flush=True)
        raise Failure(description=str(err),
                      metadata={"error": MetadataValue.text(err.detail),
                                "jvm_log": MetadataValue.text(logged)}) from None
    except (ClaimRefused, DefinitionChanged, LockBusy, TenureLost) as err:
        raise Failure(description=str(err)) from None


def _spec(pipeline: Pipeline, shape: AssetShape, t: SpliceTranslator) -> AssetSpec:
    step = shape.step
    metadata = dict(t.get_metadata(step, pipeline))
    if shape.runs_first:
        metadata["splice/runs_first"] = ", ".join(s.id for s in shape.runs_first)
    return AssetSpec(
        key=t.get_asset_key(step, pipeline),
        deps=[t.get_asset_key(pipeline.step(i), pipeline) for i in shape.reads]
        + ([t.get_source_data_key(step, pipeline)] if isinstance(step, SourceStep) else []),
        group_name=t.get_group_name(step, pipeline),
        description=t.get_description(step, pipeline),
        kinds={"spark", "delta"},
        tags=dict(t.get_tags(step, pipeline)),
        metadata=metadata,
        owners=list(t.get_owners(step, pipeline)),
        code_version=_code_version(shape, pipeline, t),
        automation_condition=t.get_automation_condition(step, pipeline),
        # A run that read nothing new for the step records no materialization.
        skippable=True,
    )


def _checks(step: Step, key: AssetKey, pipeline: Pipeline) -> list[AssetCheckSpec]:
    return [*([AssetCheckSpec(FILES_UNCHANGED, asset=key, description=(
        "Every file of the source was read whole: none changed in place after it "
        "was ingested (write a file elsewhere, then rename it into the folder)."))]
        if _is_file_source(step) else []), *check_specs(step, key, pipeline)]


def _materialized(step: Step, key: AssetKey, report: StepReport, first: list[StepReport],
                  session: Any) -> dict[str, Any]:
    """The metadata of a materialization of ``step``'s asset."""
    metadata: dict[str, Any] = dict(report.metadata())
    metadata["dagster/table_name"] = step.output or step.id
    if report.delta_version is not None:  # a source read in place has no table
        metadata["path"] = MetadataValue.path(report.path)
        metadata["dagster/uri"] = MetadataValue.path(report.path)
        metadata["dagster/row_count"] = table_rows(session, report.path)
    else:
        metadata.pop("path", None)
    metadata["dagster/column_schema"] = TableSchema(columns=[
        TableColumn(name=n, type=ty) for n, ty in report.schema]) if report.schema \
        else compiled_schema(step)
    if first:
        metadata["splice/rows_written_first"] = MetadataValue.json(
            {r.step_id: r.rows_written for r in first})
    return metadata


def _events(shape: AssetShape, key: AssetKey, report: StepReport,
            reports: dict[str, StepReport], session: Any,
            checks: list[AssetCheckSpec]) -> tuple[Any, list[AssetCheckResult]]:
    """What one step's run records: a materialization with its check
    results, or, when it read nothing new (nor did the hidden steps it ran
    first), an observation and the check results on their own."""
    step = shape.step
    earlier = [reports[s.id] for s in shape.runs_first]
    results = check_results(step, key, report, session, checks)
    if _is_file_source(step):
        results.append(files_unchanged(key, report))
    if report.skipped and all(r.skipped for r in earlier):
        return AssetObservation(asset_key=key, metadata={
            **report.metadata(), "dagster/uri": MetadataValue.path(report.path)}), results
    return MaterializeResult(asset_key=key, metadata=_materialized(
        step, key, report, earlier, session), check_results=results or None), []


def pipeline_asset(pipeline: Pipeline, translator: SpliceTranslator | None = None,
                   hide_internal_steps: bool = False) -> AssetsDefinition:
    """One multi-asset for the pipeline, as dagster-dbt makes one for a dbt
    project: an asset per step (with ``hide_internal_steps``, per step the
    translator does not call internal; sources and outputs always), run by
    one op that runs the selected steps in the pipeline's order (and the
    hidden steps they read first), under one lock.

    A step that read nothing new records no materialization, so automation
    and freshness see only the tables that changed; it logs an observation
    instead, and its checks still run. Steps downstream of it in the same
    run still run: they may have other new input."""
    t = translator or SpliceTranslator()
    hidden = hidden_steps(pipeline, t) if hide_internal_steps else set()
    shapes = asset_shapes(pipeline, hidden)
    keys = {shape.step.id: t.get_asset_key(shape.step, pipeline) for shape in shapes}
    checks = {shape.step.id: _checks(shape.step, keys[shape.step.id], pipeline)
              for shape in shapes}
    first = shapes[0].step

    @multi_asset(
        name=f"{safe_name(pipeline.name)}_steps",
        specs=[_spec(pipeline, shape, t) for shape in shapes],
        check_specs=[c for found in checks.values() for c in found],
        can_subset=True,
        pool=t.get_pool(first, pipeline),
        retry_policy=t.get_retry_policy(first, pipeline),
    )
    def _steps(context: AssetExecutionContext, spark: SparkResource,
               warehouse: WarehouseResource) -> Iterator[Any]:
        workspace = Workspace(pipeline, spark.settings(), warehouse=warehouse,
                              spark=spark.session(packages=plan_packages(pipeline)))
        session = workspace.spark
        selected = [s for s in shapes if keys[s.step.id] in context.selected_asset_keys]
        wanted = {s.id for shape in selected for s in (*shape.runs_first, shape.step)}
        steps = [s for s in pipeline.steps if s.id in wanted]
        visible = {shape.step.id: shape for shape in selected}
        order = {s.id: n for n, s in enumerate(pipeline.steps)}
        reports: dict[str, StepReport] = {}
        failure: Failure | None = None
        try:
            _run(steps, workspace, context, workspace.settings.spark_log, reports)
        except Failure as err:  # the steps that ended before it are still recorded
            failure = err
        ended = sorted(reports.values(), key=lambda r: order[r.step_id])
        for report in ended:
            context.log.info(f"{report.step_id}: {report.rows_written} rows written in "
                             f"{report.seconds:.1f}s" + (" (no new input)"
                                                         if report.skipped else ""))
        # Each asset's checks and row count are Spark jobs of a few rows:
        # computed side by side, they cost about one job's time, not one per
        # asset. The events go out in the pipeline's order.
        shown = [(visible[r.step_id], r) for r in ended if r.step_id in visible]
        with ThreadPoolExecutor(max_workers=4) as pool:
            events = list(pool.map(lambda item: _events(
                item[0], keys[item[1].step_id], item[1], reports, session,
                checks[item[1].step_id]), shown))
        for observation, results in events:
            if isinstance(observation, AssetObservation):
                context.log_event(observation)
                yield from results
            else:
                yield observation
        if failure is not None:
            raise failure

    return _steps


def build_assets(pipeline: Pipeline, translator: SpliceTranslator | None = None,
                 hide_internal_steps: bool = False) -> list[AssetsDefinition]:
    """The assets of a pipeline: its one multi-asset (:func:`pipeline_asset`)."""
    return [pipeline_asset(pipeline, translator, hide_internal_steps)]


def asset_keys(pipeline: Pipeline, translator: SpliceTranslator | None = None,
               hide_internal_steps: bool = False) -> dict[str, AssetKey]:
    """The asset key of every step that is an asset, by step id."""
    t = translator or SpliceTranslator()
    hidden = hidden_steps(pipeline, t) if hide_internal_steps else set()
    return {shape.step.id: t.get_asset_key(shape.step, pipeline)
            for shape in asset_shapes(pipeline, hidden)}
