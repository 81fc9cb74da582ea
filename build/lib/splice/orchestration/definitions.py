"""The Dagster definitions: every pipeline under ``pipelines/``, the default
use of the factory (orchestration/factory.py).

Each pipeline (a folder of .sql files, or one .sql file) becomes a group of
assets, one per step, a job that runs them all, a sensor that runs the job
when a source has new data, a schedule, and a maintenance job. ``SPLICE_PIPELINES`` and
``SPLICE_WAREHOUSE`` point elsewhere; ``SPLICE_SPARK_MASTER`` picks the
cluster. To shape the assets, write your own module like this one that
calls ``splice_definitions`` with a translator (docs/dagster.md, "Shaping
the Dagster assets").
"""

import os
from pathlib import Path

from dagster import Definitions
from splice.orchestration.bridge import SparkResource, WarehouseResource
from splice.orchestration.factory import (
    PipelineLoadError,
    build_definitions,
    compile_all,
    discover,
    splice_definitions,
)

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["ROOT", "PipelineLoadError", "build_definitions", "compile_all", "defs", "discover"]


def _default_definitions() -> Definitions:
    folder = Path(os.environ.get("SPLICE_PIPELINES", ROOT / "pipelines"))
    # The same settings as the CLI's (environment over splice.yaml over the
    # defaults); the warehouse defaults to the project's own folder.
    warehouse = WarehouseResource.from_settings(default=str(ROOT / "warehouse"))
    spark = SparkResource()
    return splice_definitions(folder, warehouse=warehouse, spark=spark)


defs = _default_definitions()
