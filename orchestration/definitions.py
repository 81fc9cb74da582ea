"""The Dagster definitions: every pipeline under ``pipelines/``.

Each pipeline (a folder of .sql files, or one .sql file) becomes a group of
assets, one per step, a job that runs them all, a sensor that runs the job
when a source has new data, a schedule, and a maintenance job. ``SPLICE_PIPELINES`` and
``SPLICE_WAREHOUSE`` point elsewhere; ``SPLICE_SPARK_MASTER`` picks the
cluster.
"""

import os
from pathlib import Path

from dagster import Definitions, in_process_executor

from orchestration.assets import build_assets
from orchestration.jobs import pipeline_job
from orchestration.maintenance import maintenance_job
from orchestration.schedules import pipeline_schedule
from orchestration.sensors import pipeline_sensor
from resources.spark import SparkResource
from resources.warehouse import WarehouseResource
from runtime.compile import compile_path
from sql.errors import SqlErrors
from sql.plan import Pipeline

ROOT = Path(__file__).resolve().parent.parent


class PipelineLoadError(Exception):
    """A pipeline under pipelines/ does not compile; the message lists every
    SQL error as file:line:col: rule; fix."""


def discover(folder: Path) -> list[Path]:
    entries = sorted(p for p in folder.iterdir()
                     if (p.is_dir() and any(p.glob("*.sql"))) or p.suffix == ".sql")
    return entries


def compile_all(folder: Path) -> list[Pipeline]:
    pipelines, errors = [], []
    for path in discover(folder):
        try:
            pipelines.append(compile_path(path))
        except SqlErrors as err:
            errors += [e.render() for e in err.errors]
    if errors:
        raise PipelineLoadError("pipelines that do not compile:\n" + "\n".join(errors))
    return pipelines


def build_definitions(pipelines: list[Pipeline], warehouse: WarehouseResource,
                      spark: SparkResource) -> Definitions:
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
    assets, jobs, sensors, schedules = [], [], [], []
    for p in pipelines:
        assets += build_assets(p)
        job = pipeline_job(p)
        jobs += [job, maintenance_job(p)]
        sensors.append(pipeline_sensor(p, job, warehouse))
        schedules.append(pipeline_schedule(job))
    # In process: one run starts one Spark session and every step shares it
    # (a process per step would start Spark once per step, ~10 s each).
    return Definitions(assets=assets, jobs=jobs, sensors=sensors, schedules=schedules,
                       resources={"spark": spark, "warehouse": warehouse},
                       executor=in_process_executor)


def _default_definitions() -> Definitions:
    folder = Path(os.environ.get("SPLICE_PIPELINES", ROOT / "pipelines"))
    warehouse = WarehouseResource(root=os.environ.get("SPLICE_WAREHOUSE",
                                                      str(ROOT / "warehouse")))
    spark = SparkResource(master=os.environ.get("SPLICE_SPARK_MASTER", "local[2]"))
    return build_definitions(compile_all(folder), warehouse, spark)


defs = _default_definitions()
