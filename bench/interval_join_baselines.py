"""The compiled interval join against two other ways of computing the same
rows (issue 16, part 5), each measured in the same run as Splice:

- ``batch``: Spark's batch join of the same Delta tables (the same
  condition, written to Delta). Goal: the streaming join takes at most
  1.5 times the batch join's time, i.e. a printed ratio of at least 0.67.
- ``defaults``: the hand-written streaming job of bench/interval_join_bench.py
  left on Spark's defaults (200 shuffle partitions, the default state
  store), as a first streaming job is usually written. Goal: Splice at
  least 2 times faster, i.e. a printed ratio of at least 2.

The printed ratio is Splice's rows per second over the other's, first runs
(each round a new pipeline and a new query), best of the rounds.

    .venv/bin/python bench/interval_join_baselines.py [--rows 1000000] [--rounds 2]
"""

from __future__ import annotations

import time
from pathlib import Path

from common import against_hand_written, arguments
from interval_join_bench import generate, hand_run, splice_run
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from splice.resources.warehouse import WarehouseResource


def batch_run(spark: SparkSession, root: Path, inputs: WarehouseResource) -> tuple[float, int]:
    """The same rows by Spark's batch join: (seconds, output rows)."""
    began = time.monotonic()
    orders = spark.read.format("delta").load(inputs.source_path("orders")).alias("o")
    payments = spark.read.format("delta").load(inputs.source_path("payments")).alias("p")
    joined = orders.join(payments, F.expr(
        "o.id = p.order_id AND p.ts BETWEEN o.ts - INTERVAL 1 MINUTE AND o.ts + INTERVAL 1 MINUTE"))
    out = joined.select(F.col("o.id").alias("_key"), "o.id", "o.customer", "o.amount", "p.paid",
                        F.greatest("o.ts", "p.ts").alias("ROWTIME"))
    out.write.format("delta").save(str(root / "batch"))
    seconds = time.monotonic() - began
    return seconds, spark.read.format("delta").load(str(root / "batch")).count()


def defaults_run(spark: SparkSession, root: Path,
                 inputs: WarehouseResource) -> tuple[float, int]:
    """The hand-written streaming job with Spark's default 200 shuffle
    partitions, in a session of its own (the setting is a session's)."""
    own = spark.newSession()
    own.conf.set("spark.sql.shuffle.partitions", "200")
    return hand_run(own, root, inputs)


def main() -> None:
    args = arguments(__doc__.splitlines()[0], "rows per side")
    what = f"{args.rows:,} orders and {args.rows:,} payments"
    print("== against Spark's batch join (goal: ratio at least 0.67)", flush=True)
    against_hand_written(args.rows, args.rounds, what, generate, splice_run, batch_run,
                         goal=0.67)
    print("== against the hand-written streaming job on Spark's defaults "
          "(goal: ratio at least 2)", flush=True)
    against_hand_written(args.rows, args.rounds, what, generate, splice_run, defaults_run,
                         goal=2)


if __name__ == "__main__":
    main()
