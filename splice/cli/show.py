"""``splice show``: a step's table (an output, a source, any step) or a
source's dead letters, printed, so that looking at a result needs no PySpark.

It only reads: no lock is taken, so it can look while a run or ``serve``
writes (Delta gives it the last committed version)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from splice.cli.flags import flag_number, settings_of, spark_flags
from splice.sql.plan import Pipeline


class NothingToShow(Exception):
    """The name is no step of the pipeline, or its table is not written yet."""


def _step(pipeline: Pipeline, name: str) -> Any:
    from splice.runtime.workspace import step_named

    step = step_named(pipeline, name)
    if step is None:
        names = sorted({*pipeline.outputs, *pipeline.sources})
        raise NothingToShow(f"pipeline '{pipeline.name}' has no output, source or step "
                            f"'{name}'; its outputs and sources: {', '.join(names)}")
    return step


def show_table(io: Any, name: str, limit: int = 20, dead_letters: bool = False) -> int:
    """Print the table of step ``name`` (or, with ``dead_letters``, the dead
    letters of source ``name``): where it is, its row count, its first
    ``limit`` rows ordered by every column. Returns the row count."""
    from splice.engine.io import delta_exists

    pipeline, spark = io.pipeline, io.spark
    step = _step(pipeline, name)
    if dead_letters:
        if name not in pipeline.sources:
            raise NothingToShow(f"'{name}' is not a source of pipeline '{pipeline.name}': "
                                "only a source has dead letters")
        path, what = io.warehouse.dead_letter_path(pipeline.name, name), "dead letters of"
    else:
        what = ("output" if name in pipeline.outputs else
                "source" if name in pipeline.sources else f"step ({step.op})")
        path = io.table_path(step)
    if not delta_exists(spark, path):
        raise NothingToShow(f"{what} '{name}' has no table at {path} yet: run the pipeline "
                            f"first (splice run {pipeline.origin or pipeline.name})")
    df = spark.read.format("delta").load(path)
    rows = df.count()
    print(f"{what} {name} at {path}: {rows} row{'' if rows == 1 else 's'}")
    if rows:
        from pyspark.sql import functions as F

        df.orderBy(*[F.asc_nulls_last(f"`{c}`") for c in df.columns]).show(
            limit, truncate=False)
    return rows


def add_parser(sub: Any) -> None:
    p = sub.add_parser("show", help="print a step's table (an output, a source) or a source's "
                                    "dead letters",
                       description="Print the rows of a step's table: an output, a source "
                                   "or any step of the pipeline, ordered by every column. "
                                   "It only reads (no lock): it may look while a run or serve "
                                   "writes.")
    p.add_argument("path", help="the pipeline")
    p.add_argument("name", help="an output, a source or a step of the pipeline")
    spark_flags(p)
    p.add_argument("--limit", type=flag_number(int, least=1), default=20, metavar="N",
                   help="print at most N rows (default 20; the count is of all of them)")
    p.add_argument("--dead-letters", action="store_true",
                   help="the dead letters of source NAME instead of its table")

    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from splice.runtime.workspace import Workspace

    workspace = Workspace.open(args.path, settings_of(args))
    try:
        show_table(workspace.io, args.name, limit=args.limit, dead_letters=args.dead_letters)
    except NothingToShow as err:
        print(f"splice: {err}", file=sys.stderr)
        return 1
    return 0

