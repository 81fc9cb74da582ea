"""Small helpers the Spark tests share: compile SQL, append rows, read tables,
forget a checkpoint's last commit."""

from __future__ import annotations

import os
from typing import Any

from splice.engine.io import StepIO
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_text
from splice.runtime.workspace import Workspace
from splice.sql.plan import Pipeline

from splice.testing.cases import append_rows

LENSES_LEFT = """
CREATE STREAM customers (id INT, name STRING) WITH (location='customers', key='id');
CREATE STREAM orders (id INT, customer_id INT, item STRING) WITH (location='orders', key='id');
WITH customersTable AS (SELECT TABLE * FROM customers);
WITH ordersStream AS (SELECT STREAM * FROM orders);
INSERT INTO result
SELECT STREAM customersTable.name, ordersStream.item
FROM ordersStream LEFT JOIN customersTable ON customersTable.id = ordersStream.customer_id;
"""


def make_io(spark: Any, warehouse: WarehouseResource, sql: str, name: str = "t") -> StepIO:
    pipeline: Pipeline = compile_text(sql, file=f"{name}.sql", name=name)
    return Workspace(pipeline, warehouse=warehouse, spark=spark).io


def append(io: StepIO, source: str, rows: list[dict[str, Any]]) -> None:
    append_rows(io, io.pipeline.sources[source], rows)


def output_rows(io: StepIO, name: str, *columns: str) -> list[tuple]:
    step = io.pipeline.outputs[name]
    df = io.spark.read.format("delta").load(io.table_path(step))
    return sorted((tuple(r[c] for c in columns) for r in df.collect()), key=repr)


def forget_last_batch(checkpoint: str) -> str:
    """Forget that a step's last micro-batch committed, as a crash between
    the write and the checkpoint's commit would; the step's input markers go
    too, or the runner would skip the step (its inputs did not change).
    Returns the path of the forgotten commit, which a replay writes again."""
    commits = os.path.join(checkpoint, "commits")
    last = max((n for n in os.listdir(commits) if n.isdigit()), key=int)
    for name in (last, f".{last}.crc"):
        if os.path.exists(os.path.join(commits, name)):
            os.remove(os.path.join(commits, name))
    os.remove(os.path.join(checkpoint, "splice_inputs.json"))
    return os.path.join(commits, last)
