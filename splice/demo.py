"""The demo: data the demo pipeline reads, written by the demo itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sql.plan import Pipeline

CUSTOMERS = [{"id": 1, "name": "John"}, {"id": 2, "name": "Frank"}]
ORDERS = [
    {"id": 1, "customer_id": 1, "item": "Computer"},
    {"id": 2, "customer_id": 1, "item": "Mouse"},
    {"id": 3, "customer_id": 3, "item": "Keyboard"},
    # Not an order: customer_id is not a number. It goes to the dead-letter table.
    {"id": 4, "customer_id": "three", "item": "Screen"},
]


class DemoRefused(Exception):
    """The demo will not delete a folder that is not a Splice warehouse."""


def write_demo_data(pipeline: Pipeline, warehouse: str, settings: Any = None) -> None:
    """Start the demo warehouse afresh and write its source data."""
    from engine.io import StepIO
    from engine.session import start_session
    from engine.settings import SpliceSettings, Warehouse
    from splice.cases import append_rows

    # The session first: on s3a:// it checks the bucket and sets up the file
    # layer (engine/fs.py) with the storage's endpoint and credentials.
    spark = start_session(settings or SpliceSettings.from_env(warehouse=warehouse))
    fresh_warehouse(spark, warehouse)
    io = StepIO(spark=spark, warehouse=Warehouse(root=warehouse), pipeline=pipeline)
    sources = pipeline.sources
    append_rows(io, sources["customers"], CUSTOMERS)
    append_rows(io, sources["orders"], ORDERS)


def fresh_warehouse(spark: Any, warehouse: str) -> None:
    """Empty the demo's warehouse, unless it holds something else than a
    Splice warehouse (then :class:`DemoRefused`)."""
    from engine import fs

    root = warehouse if "://" in warehouse else str(Path(warehouse).resolve())
    names = fs.list_names(spark, root)
    if names and "_splice" not in names:
        raise DemoRefused(f"{root} is not empty and is not a Splice warehouse; "
                          "the demo starts its warehouse afresh, so give it an empty or new "
                          "folder with --warehouse")
    fs.remove_tree(spark, root)


def show_outputs(io: Any, limit: int = 10) -> None:
    """Each output table: its location, its row count and its first rows; then
    what went to the dead-letter tables."""
    spark = io.spark
    for name, step in io.pipeline.outputs.items():
        path = io.table_path(step)
        df = spark.read.format("delta").load(path)
        print(f"\noutput {name} ({step.kind.value}) at {path}: {df.count()} rows")
        df.show(limit, truncate=False)
    for source in io.pipeline.sources.values():
        path = io.warehouse.dead_letter_path(io.pipeline.name, source.name)
        from engine.io import delta_exists

        if delta_exists(spark, path):
            dead = spark.read.format("delta").load(path)
            if dead.count():
                print(f"dead-letter table of {source.name} at {path}:")
                dead.select("record", "reason").show(limit, truncate=False)
