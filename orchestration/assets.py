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
import queue
import sys
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
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
from splice.orchestration.checks import check_results, check_specs, last_run_results
from splice.orchestration.layout import AssetShape, asset_shapes, hidden_steps
from splice.orchestration.lineage import column_lineage
from splice.orchestration.run_config import RebuildRefused, SpliceRunConfig, steps_to_drop
from splice.orchestration.translator import SpliceTranslator, compiled_schema, safe_name
from splice.sql.plan import Pipeline, SourceStep, Step


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
         jvm_log: str, on_report: Any, dropped: list[str]) -> None:
    """Run ``steps`` under the pipeline's lock (a `splice run` of the
    pipeline cannot run at the same time), side by side as ``splice run``
    runs them (each after the steps it reads); ``on_report`` gets each
    report as its step ends. One clear Failure otherwise, with what the JVM
    logged meanwhile (also in the run's compute logs)."""
    pipeline = workspace.plan
    offset = _log_size(jvm_log)

    def ended(_index: int, step: Step, report: StepReport | None) -> None:
        if report is not None:
            on_report(report)

    try:
        # The same claims and lock as `splice run` and `serve` take.
        with workspace.hold(wait=dagster_lock_wait(),
                            owner=f"dagster run {context.run.run_id}, pipeline {pipeline.name}"):
            if dropped:  # the run config's rebuild, as `splice run --rebuild`
                workspace.drop_steps(dropped)
            workspace.run_steps(ended, only={s.id for s in steps})
    except StepFailed as err:
        logged = _jvm_log_since(jvm_log, offset)
        if logged:
            print(f"-- the JVM's log ({jvm_log}) during this step --\n{logged}",
                  file=sys.stderr, flush=True)
        raise Failure(description=str(err),
                      metadata={"error": MetadataValue.text(err.detail),
                                "jvm_log": MetadataValue.text(logged)}) from None
    except DefinitionChanged as err:
        targets = ", ".join(sorted({c.step.id for c in err.changes}))
        raise Failure(description=f"{err}\nHere: launch with the run config\n"
                                  f"ops:\n  {context.op_def.name}:\n    config:\n"
                                  f"      rebuild: [{targets}]") from None
    except (ClaimRefused, LockBusy, TenureLost) as err:
        raise Failure(description=str(err)) from None


def _ended_line(report: StepReport) -> str:
    """A step's log line: rows written, and rows read where its query counted
    them (as `splice run` and `splice serve` say them)."""
    read = f", {report.rows_read} rows read" if report.rows_read is not None else ""
    return (f"{report.step_id}: {report.rows_written} rows written in {report.seconds:.1f}s"
            f"{read}" + (" (no new input)" if report.skipped else ""))


def _spec(pipeline: Pipeline, shape: AssetShape, t: SpliceTranslator,
          visible: set[str]) -> AssetSpec:
    step = shape.step
    metadata = dict(t.get_metadata(step, pipeline))
    if shape.runs_first:
        metadata["splice/runs_first"] = ", ".join(s.id for s in shape.runs_first)
    lineage = column_lineage(step, pipeline, lambda s: t.get_asset_key(s, pipeline)
                             if s.id in visible else None)
    if lineage is not None and "dagster/column_lineage" not in metadata:
        metadata["dagster/column_lineage"] = lineage
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
        freshness_policy=t.get_freshness_policy(step, pipeline),
        # A run that read nothing new for the step records no materialization.
        skippable=True,
    )


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
            checks: list[AssetCheckSpec], dropped: list[str]) -> tuple[Any, list[AssetCheckResult]]:
    """What one step's run records: a materialization with its check
    results, or, when it read nothing new (nor did the hidden steps it ran
    first), an observation and the check results on their own."""
    step = shape.step
    earlier = [reports[s.id] for s in shape.runs_first]
    results = check_results(step, key, report, session, checks)
    if report.skipped and all(r.skipped for r in earlier):
        return AssetObservation(asset_key=key, metadata={
            **report.metadata(), "dagster/uri": MetadataValue.path(report.path)}), results
    metadata = _materialized(step, key, report, earlier, session)
    rebuilt = [s.id for s in (*shape.runs_first, step) if s.id in dropped]
    if rebuilt:  # the run config's rebuild dropped it first
        metadata["splice/rebuilt"] = MetadataValue.text(
            f"rebuilt from its sources ({', '.join(rebuilt)} dropped first)")
    return MaterializeResult(asset_key=key, metadata=metadata,
                             check_results=results or None), []


def _last_metadata(context: AssetExecutionContext, key: AssetKey) -> dict[str, Any] | None:
    """The metadata of the asset's latest materialization, as plain values."""
    event = context.instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return None
    return {k: getattr(v, "value", v) for k, v in event.asset_materialization.metadata.items()}


def _live(steps: list[Step], workspace: Workspace, context: AssetExecutionContext,
          session: Any, visible: dict[str, AssetShape], keys: dict[str, AssetKey],
          checks: dict[str, list[AssetCheckSpec]], dropped: list[str]) -> Iterator[Any]:
    """Run ``steps`` and yield each asset's events as its step ends, while
    the later steps still run: Dagster writes them to the event log as they
    come, so the UI shows the first tables materialized (with their log
    line) before the run is over, as dagster-dbt streams an event per model.

    The steps run in a thread of their own (the runner runs them side by
    side). Each ended step's checks and row count, Spark jobs of a few rows,
    are computed in a small pool meanwhile; this generator yields whatever
    is ready, in the order the steps end. A failure is raised after the
    events of every step that ended before it."""
    reports: dict[str, StepReport] = {}
    ready: queue.Queue[tuple[str, Any]] = queue.Queue()
    pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="splice-events")

    def ended(report: StepReport) -> None:
        reports[report.step_id] = report
        shape = visible.get(report.step_id)
        future = None if shape is None else pool.submit(
            _events, shape, keys[report.step_id], report, reports, session,
            checks[report.step_id], dropped)
        ready.put(("ended", (report, future)))
        if future is not None:
            future.add_done_callback(lambda _: ready.put(("computed", None)))

    def work() -> None:
        try:
            _run(steps, workspace, context, workspace.settings.spark_log, ended, dropped)
        except BaseException as err:  # raised again by the generator, below
            ready.put(("failed", err))
        finally:
            pool.shutdown(wait=True)
            ready.put(("end", None))

    runner = threading.Thread(target=work, name=f"splice-{workspace.plan.name}", daemon=True)
    runner.start()
    failure: BaseException | None = None
    # Dagster takes a multi-asset's outputs in the order of its graph: the
    # events go out in the order the steps ended (each after those it
    # reads), each once its checks are computed.
    waiting: deque[Future[Any]] = deque()
    try:
        while True:
            what, item = ready.get()
            if what == "ended":
                report, future = item
                context.log.info(_ended_line(report))
                if future is not None:
                    waiting.append(future)
            elif what == "failed":
                failure = item
            while waiting and (waiting[0].done() or what == "end"):
                observation, results = waiting.popleft().result()
                if isinstance(observation, AssetObservation):
                    context.log_event(observation)
                    yield from results
                else:
                    yield observation
            if what == "end":
                break
    finally:
        runner.join()
    if failure is not None:
        raise failure


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
    checks = {shape.step.id: check_specs(shape.step, keys[shape.step.id], pipeline)
              for shape in shapes}
    first = shapes[0].step

    @multi_asset(
        name=f"{safe_name(pipeline.name)}_steps",
        specs=[_spec(pipeline, shape, t, {s.step.id for s in shapes}) for shape in shapes],
        check_specs=[c for found in checks.values() for c in found],
        can_subset=True,
        pool=t.get_pool(first, pipeline),
        retry_policy=t.get_retry_policy(first, pipeline),
    )
    def _steps(context: AssetExecutionContext, spark: SparkResource,
               warehouse: WarehouseResource, config: SpliceRunConfig) -> Iterator[Any]:
        selected = [s for s in shapes if keys[s.step.id] in context.selected_asset_keys]
        wanted = {s.id for shape in selected for s in (*shape.runs_first, shape.step)}
        steps = [s for s in pipeline.steps if s.id in wanted]
        visible = {shape.step.id: shape for shape in selected}
        chosen = context.selected_asset_check_keys
        try:  # refused before Spark starts
            dropped = steps_to_drop(pipeline, config, wanted)
        except RebuildRefused as err:
            raise Failure(description=str(err)) from None
        workspace = Workspace(pipeline, spark.settings(), warehouse=warehouse,
                              spark=spark.session(packages=plan_packages(pipeline)))
        session = workspace.spark
        # Checks selected without their asset (from the UI's Checks tab, a
        # job or the API) judge the asset's last materialization.
        for shape in shapes:
            key = keys[shape.step.id]
            alone = [c for c in checks[shape.step.id]
                     if c.key in chosen and shape.step.id not in visible]
            if alone:
                yield from last_run_results(shape.step, key, _last_metadata(context, key),
                                            session, alone)
        if dropped:
            context.log.info(f"rebuilding {len(dropped)} step(s) from their sources: "
                             f"{', '.join(dropped)}")
        if steps:
            yield from _live(steps, workspace, context, session, visible, keys, {
                i: [c for c in found if c.key in chosen] for i, found in checks.items()},
                dropped)

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
