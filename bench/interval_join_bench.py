"""The compiled interval join against the same join written by hand in PySpark.

Both read the same generated Delta tables (orders and payments, one payment
per order a few seconds to 50 s after it, so every pair lies inside a
1-minute window), run as Structured Streaming queries with
``trigger(availableNow=True)``, and write the same rows to a Delta table. The
figure compared is output rows per second of the join query; for Splice
that is the join step's whole run (``splice.runtime.runner.run_step``), its Delta
source steps (which check every record for a missing event time) are timed
and printed apart. After a warm-up of both on a small data set, each round
runs both (Splice first in odd rounds, PySpark first in even ones), and the
best time of each is compared.

    .venv/bin/python bench/interval_join_bench.py [--rows 1000000] [--rounds 2]
"""

from __future__ import annotations

import datetime as dt
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
from splice.sql.plan import SourceStep

SQL = """
CREATE STREAM orders (id BIGINT, customer BIGINT, amount DOUBLE, ts TIMESTAMP)
  WITH (location='orders', key='id', timestamp='ts');
CREATE STREAM payments (order_id BIGINT, paid DOUBLE, ts TIMESTAMP)
  WITH (location='payments', key='order_id', timestamp='ts');
INSERT INTO paid_orders_{tag}
SELECT o.id, o.customer, o.amount, p.paid
FROM orders o JOIN payments p WITHIN 1 MINUTE ON o.id = p.order_id;
"""
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def generate(spark: SparkSession, warehouse: WarehouseResource, rows: int) -> None:
    """``rows`` orders a millisecond apart and one payment each, 0-49 s later."""
    start = int(START.timestamp() * 1000)
    ids = spark.range(rows, numPartitions=4)
    (ids.select(F.col("id"), (F.col("id") % 10_000).alias("customer"),
                (F.col("id") % 997 + 0.5).alias("amount"),
                F.timestamp_millis(F.col("id") + F.lit(start)).alias("ts"))
        .write.format("delta").save(warehouse.source_path("orders")))
    (ids.select(F.col("id").alias("order_id"), (F.col("id") % 997 + 0.5).alias("paid"),
                F.timestamp_millis(F.col("id") + F.lit(start) + (F.col("id") % 50) * 1000)
                .alias("ts"))
        .write.format("delta").save(warehouse.source_path("payments")))


def splice_run(spark: SparkSession, warehouse: WarehouseResource,
               tag: str, cold: bool) -> tuple[float, float, int]:
    """The compiled pipeline on the generated tables, as pipeline
    ``bench_<tag>``: (join seconds, source step seconds, output rows)."""
    io = pipeline_io(spark, warehouse, SQL.format(tag=tag), f"bench_{tag}")
    joins, sources = timed_steps(io, lambda step: not isinstance(step, SourceStep),
                                   cold)
    output = io.pipeline.outputs[f"paid_orders_{tag}"]
    return joins, sources, spark.read.format("delta").load(io.table_path(output)).count()


def hand_run(spark: SparkSession, root: Path, inputs: WarehouseResource) -> tuple[float, int]:
    """The same join as one writes it with PySpark: (seconds, output rows)."""
    began = time.monotonic()
    orders = (spark.readStream.format("delta").load(inputs.source_path("orders"))
              .withWatermark("ts", "0 seconds").alias("o"))
    payments = (spark.readStream.format("delta").load(inputs.source_path("payments"))
                .withWatermark("ts", "0 seconds").alias("p"))
    joined = orders.join(payments, F.expr(
        "o.id = p.order_id AND p.ts BETWEEN o.ts - INTERVAL 1 MINUTE AND o.ts + INTERVAL 1 MINUTE"))
    out = joined.select(F.col("o.id").alias("_key"), "o.id", "o.customer", "o.amount", "p.paid",
                        F.greatest("o.ts", "p.ts").alias("ROWTIME"))
    return write_hand_written(out, root, began)


def main() -> None:
    args = arguments(__doc__.splitlines()[0], "rows per side")

    what = f"{args.rows:,} orders and {args.rows:,} payments"
    against_hand_written(args.rows, args.rounds, what, generate, splice_run, hand_run)


if __name__ == "__main__":
    main()
