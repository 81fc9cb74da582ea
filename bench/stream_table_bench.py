"""The compiled stream-table join against the same join hand-written in
PySpark.

A stream of ``--rows`` orders is joined (LEFT) with a table of 10,000
customers (one in a hundred orders has no customer). Both sides read the
same Delta tables, run as Structured Streaming queries with
``trigger(availableNow=True)``, look every order up in the customers table as
it stands, and append the same rows to a Delta table. The figure compared is
output rows per second of the join: for Splice the join step's run
(``splice.runtime.runner.run_step``); its source and table materialization steps are
run and timed apart (the hand-written job reads a customers table that is
already there). The hand-written job is the usual stream-static join.

Two measures: first runs (each round a new pipeline and a new hand-written
query, so both also create their output table and checkpoint; each starts
with Delta's snapshot cache empty, as in a new process), and then
incremental runs, as a streaming job spends its life: both keep their
checkpoints, each round appends ``--rows`` more orders, and each job
processes exactly those.

    .venv/bin/python bench/stream_table_bench.py [--rows 1000000] [--rounds 2]
"""

from __future__ import annotations

import time
from pathlib import Path

from common import (
    against_hand_written,
    arguments,
    pipeline_io,
    timed_steps,
    write_hand_written,
)
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from splice.resources.warehouse import WarehouseResource

CUSTOMERS = 10_000
SQL = """
CREATE TABLE customers (id BIGINT, name STRING, region STRING)
  WITH (location='customers', key='id');
CREATE STREAM orders (id BIGINT, customer_id BIGINT, amount DOUBLE, ts TIMESTAMP)
  WITH (location='orders', key='id', timestamp='ts');
INSERT INTO enriched_{tag}
SELECT o.id, o.amount, c.name, c.region
FROM orders o LEFT JOIN customers c ON o.customer_id = c.id;
"""


def generate(spark: SparkSession, warehouse: WarehouseResource, rows: int) -> None:
    (spark.range(CUSTOMERS, numPartitions=1)
     .select("id", F.concat(F.lit("customer "), F.col("id")).alias("name"),
             (F.col("id") % 7).cast("string").alias("region"))
     .write.format("delta").save(warehouse.source_path("customers")))
    more_orders(spark, warehouse, 0, rows)


def more_orders(spark: SparkSession, warehouse: WarehouseResource, first: int,
                rows: int) -> None:
    """Append orders ``first`` to ``first + rows - 1``."""
    (spark.range(first, first + rows, numPartitions=4)
     .select("id", (F.col("id") * 7919 % (CUSTOMERS + 100)).alias("customer_id"),
             (F.col("id") % 997 + 0.5).alias("amount"),
             F.timestamp_millis(F.col("id") + F.lit(1_700_000_000_000)).alias("ts"))
     .write.format("delta").mode("append").save(warehouse.source_path("orders")))


def splice_run(spark: SparkSession, warehouse: WarehouseResource,
               tag: str, cold: bool) -> tuple[float, float, int]:
    """(join seconds, seconds of the other steps, output rows)."""
    io = pipeline_io(spark, warehouse, SQL.format(tag=tag), f"bench_{tag}")
    output = io.pipeline.outputs[f"enriched_{tag}"]
    join, others = timed_steps(io, lambda step: step.id == output.id, cold)
    return join, others, spark.read.format("delta").load(io.table_path(output)).count()


def hand_run(spark: SparkSession, root: Path, inputs: WarehouseResource) -> tuple[float, int]:
    """The same join as one writes it with PySpark: (seconds, output rows so
    far)."""
    began = time.monotonic()
    orders = spark.readStream.format("delta").load(inputs.source_path("orders")).alias("o")
    customers = spark.read.format("delta").load(inputs.source_path("customers")).alias("c")
    out = orders.join(customers, F.col("o.customer_id") == F.col("c.id"), "left").select(
        F.col("o.id").alias("_key"), "o.id", "o.amount", "c.name", "c.region",
        F.col("o.ts").alias("ROWTIME"))
    return write_hand_written(out, root, began)


def main() -> None:
    args = arguments(__doc__.splitlines()[0], "orders")

    what = f"{args.rows:,} orders and {CUSTOMERS:,} customers"
    against_hand_written(args.rows, args.rounds, what, generate, splice_run, hand_run,
                         incremental=more_orders)


if __name__ == "__main__":
    main()
