"""The Dagster factory: SQL pipelines in, Dagster ``Definitions`` out.

:func:`splice_definitions` turns a pipeline folder (or a folder of them)
into definitions: per pipeline, its assets, a job, a sensor, a schedule and
a maintenance job. A :class:`~orchestration.translator.SpliceTranslator`
subclass shapes the assets (keys, groups, descriptions, metadata, tags,
owners, code versions, automation conditions), as a ``DagsterDbtTranslator``
shapes dbt's; ``hide_internal_steps=True`` shows only sources and outputs,
each output asset running the steps between them. :func:`splice_assets` is
the same for one compiled pipeline, assets only.
``orchestration/definitions.py`` is the default use of this factory.
"""

from __future__ import annotations

import os
from pathlib import Path

from dagster import AssetsDefinition, Definitions, in_process_executor
from splice.orchestration.assets import asset_keys, build_assets
from splice.orchestration.bridge import (
    SparkResource,
    WarehouseResource,
    compile_path,
    discover,
    pipeline_paths,
)
from splice.orchestration.broken import broken_pipeline_asset
from splice.orchestration.jobs import job_name, pipeline_job
from splice.orchestration.maintenance import maintenance_job
from splice.orchestration.schedules import pipeline_schedule
from splice.orchestration.sensors import observation_sensor, pipeline_sensor, source_data_keys
from splice.orchestration.source_data import source_data_assets
from splice.orchestration.table_sensor import tables_sensor
from splice.orchestration.translator import SpliceTranslator
from splice.sql.errors import SqlErrors
from splice.sql.plan import Pipeline


class PipelineLoadError(Exception):
    """A pipeline does not compile (the message lists every SQL error as
    file:line:col: rule; fix), or two pipelines clash."""


def compile_all(folder: Path) -> list[Pipeline]:
    return _compile(discover(folder))


def _compile(paths: list[Path]) -> list[Pipeline]:
    pipelines, broken = _compile_each(paths)
    if broken:
        errors = [e for _, found in broken for e in found]
        raise PipelineLoadError("pipelines that do not compile:\n" + "\n".join(errors))
    return pipelines


def _compile_each(paths: list[Path]) -> tuple[list[Pipeline], list[tuple[Path, list[str]]]]:
    """The pipelines that compile, and each one that does not with every
    SQL error of its files."""
    pipelines, broken = [], []
    for path in paths:
        try:
            pipelines.append(compile_path(path))
        except SqlErrors as err:
            broken.append((path, [e.render() for e in err.errors]))
    return pipelines, broken


def _check_unique(pipelines: list[Pipeline]) -> None:
    names: dict[str, Pipeline] = {}
    for p in pipelines:
        if p.name in names:
            raise PipelineLoadError(f"{names[p.name].origin} and {p.origin} both compile to "
                                    f"pipeline '{p.name}'; rename one of the two")
        names[p.name] = p
    outputs: dict[str, str] = {}
    for p in pipelines:
        for name in p.outputs:
            if name.lower() in outputs:
                raise PipelineLoadError(f"pipelines '{outputs[name.lower()]}' and '{p.name}' "
                                        f"both write output '{name}'")
            outputs[name.lower()] = p.name


def splice_assets(pipeline: Pipeline, *, translator: SpliceTranslator | None = None,
                  hide_internal_steps: bool = False) -> list[AssetsDefinition]:
    """The assets of one compiled pipeline (``splice.runtime.compile.compile_path``)."""
    return build_assets(pipeline, translator, hide_internal_steps)


def splice_source_assets(pipeline: Pipeline, *, translator: SpliceTranslator | None = None
                         ) -> list[AssetsDefinition]:
    """The observable assets of the pipeline's sources' data, which the
    source steps of :func:`splice_assets` depend on (a Definitions of your own
    holds both)."""
    return source_data_assets(pipeline, translator)


def build_definitions(pipelines: list[Pipeline], warehouse: WarehouseResource,
                      spark: SparkResource, *, translator: SpliceTranslator | None = None,
                      hide_internal_steps: bool = False,
                      broken: list[tuple[Path, list[str]]] | None = None) -> Definitions:
    """Definitions for compiled pipelines (see :func:`splice_definitions`);
    each of ``broken`` (a pipeline that does not compile, with its errors)
    is one error asset."""
    _check_unique(pipelines)
    assets = [broken_pipeline_asset(path, errors, translator) for path, errors in broken or []]
    jobs, sensors, schedules = [], [], []
    for p in pipelines:
        mine = build_assets(p, translator, hide_internal_steps)
        observed = source_data_assets(p, translator)
        assets += [*observed, *mine]
        jobs += [pipeline_job(p, [*observed, *mine]), maintenance_job(p)]
        data_keys = source_data_keys(p, translator)
        sensors.append(pipeline_sensor(p, job_name(p), warehouse, data_keys))
        sensors.append(observation_sensor(p, warehouse, data_keys))
        sensors.append(tables_sensor(p, asset_keys(p, translator, hide_internal_steps),
                                     warehouse))
        schedules.append(pipeline_schedule(job_name(p)))
    # In process: one run starts one Spark session and every step shares it
    # (a process per step would start Spark once per step, ~10 s each).
    return Definitions(assets=assets, jobs=jobs, sensors=sensors, schedules=schedules,
                       resources={"spark": spark, "warehouse": warehouse},
                       executor=in_process_executor)


def splice_definitions(path: str | os.PathLike[str], *,
                       translator: SpliceTranslator | None = None,
                       hide_internal_steps: bool = False,
                       warehouse: WarehouseResource | None = None,
                       spark: SparkResource | None = None) -> Definitions:
    """Dagster definitions for the pipeline(s) at ``path``.

    ``path``: a pipeline (a folder of .sql files, or one .sql file), or a
    folder of pipelines. ``translator``: a :class:`SpliceTranslator` (or a
    subclass) that shapes each asset. ``hide_internal_steps``: show sources
    and outputs only (and whatever the translator's ``is_internal`` keeps);
    each asset runs the hidden steps it reads first. ``warehouse`` and
    ``spark`` default to ``SPLICE_WAREHOUSE`` (else ``warehouse/`` under the
    working directory) and ``SPLICE_SPARK_MASTER`` (else ``local[2]``).
    A pipeline that does not compile becomes one asset, ``<name>/sql_errors``,
    that lists all of its SQL errors (orchestration/broken.py); the others
    load as usual.
    """
    folder = Path(path)
    if not folder.exists():
        raise PipelineLoadError(f"{folder}: no such pipeline file or folder")
    # Unset: the CLI's settings (environment over splice.yaml over defaults).
    warehouse = warehouse or WarehouseResource.from_settings()
    spark = spark or SparkResource()
    pipelines, broken = _compile_each(pipeline_paths(folder))
    return build_definitions(pipelines, warehouse, spark, translator=translator,
                             hide_internal_steps=hide_internal_steps, broken=broken)
