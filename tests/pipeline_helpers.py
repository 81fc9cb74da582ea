"""Small helpers the Spark tests share: compile SQL, append rows, read tables."""

from __future__ import annotations

from typing import Any

from engine.io import StepIO
from resources.warehouse import WarehouseResource
from splice.cases import append_rows
from splice.compile import compile_text
from sql.plan import Pipeline

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
    return StepIO(spark=spark, warehouse=warehouse, pipeline=pipeline)


def append(io: StepIO, source: str, rows: list[dict[str, Any]]) -> None:
    append_rows(io, io.pipeline.sources[source], rows)


def output_rows(io: StepIO, name: str, *columns: str) -> list[tuple]:
    step = io.pipeline.outputs[name]
    df = io.spark.read.format("delta").load(io.table_path(step))
    return sorted((tuple(r[c] for c in columns) for r in df.collect()), key=repr)
