"""A table-table join kept up to date: the incremental run after 1% of keys
changed, against recomputing the whole join.

Two tables of ``--keys`` rows each (a primary-key INNER join) are loaded and
joined once by the compiled pipeline. Then 1% of the keys change: half of
them on the left, half on the right, each an update (a tenth of them
deletions). The figure is the seconds of the join step's next run (it reads
both change feeds and MERGEs the affected result rows); the materialization
steps that apply the changes to the two input tables are timed and printed
apart, since a full recompute needs up-to-date inputs as well. The full
recompute is the same join written in PySpark over the same two input tables,
overwriting its result table. Both results are compared row for row.

Last, the floor of any result kept by MERGE (LANGUAGE.md: a table is a Delta
table maintained by MERGE, with Change Data Feed on): one MERGE of as many
rows as changed, and nothing else, into a copy of the result table, with the
same ``merge_by_key`` the join uses.

    .venv/bin/python bench/table_table_bench.py [--keys 1000000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from common import alternate, pipeline_io, scratch, session, timed_steps
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from splice.engine.io import StepIO, merge_by_key
from splice.resources.warehouse import WarehouseResource
from splice.runtime.runner import run_step

SQL = """
CREATE TABLE lefts (id BIGINT, lv BIGINT, ts TIMESTAMP)
  WITH (location='lefts', key='id', timestamp='ts');
CREATE TABLE rights (id BIGINT, rv BIGINT, ts TIMESTAMP)
  WITH (location='rights', key='id', timestamp='ts');
CREATE TABLE joined AS SELECT l.id AS id, l.lv AS lv, r.rv AS rv
  FROM lefts l JOIN rights r ON l.id = r.id;
"""


def rows(spark: SparkSession, keys: int, version: int, every: int = 1) -> DataFrame:
    """One row per key (``id % every == 0``), values depending on ``version``."""
    ids = spark.range(0, keys, every, numPartitions=2)
    return ids.select(F.col("id"), (F.col("id") * 7 + version).alias("v"),
                      F.timestamp_seconds(F.lit(1_700_000_000 + version)).alias("ts"))


def load(spark: SparkSession, warehouse: WarehouseResource, keys: int) -> None:
    for name, column in (("lefts", "lv"), ("rights", "rv")):
        (rows(spark, keys, 0).withColumnRenamed("v", column)
         .write.format("delta").save(warehouse.source_path(name)))


def change(spark: SparkSession, warehouse: WarehouseResource, keys: int, version: int) -> int:
    """1% of the keys change: the even hundredths on the left, the odd ones on
    the right; one changed row in ten is a deletion (a tombstone: its value
    NULL). Returns the number of changed keys."""
    changed = 0
    for name, column, offset in (("lefts", "lv", 0), ("rights", "rv", 1)):
        df = (rows(spark, keys, version, every=200).withColumn("id", F.col("id") + offset)
              .where(F.col("id") < keys)
              .withColumn("v", F.when(F.col("id") % 2000 < 200, None).otherwise(F.col("v")))
              .withColumnRenamed("v", column))
        df.write.format("delta").mode("append").save(warehouse.source_path(name))
        changed += df.count()
    return changed


def full_recompute(spark: SparkSession, io: StepIO, out: Path) -> float:
    """The join of the two input tables as they stand, from scratch."""
    began = time.monotonic()
    left = io.read_table("lefts_table").alias("l")
    right = io.read_table("rights_table").alias("r")
    (left.join(right, F.col("l.id") == F.col("r.id"))
     .select(F.col("l._key").alias("_key"), F.col("l.id").alias("id"), "l.lv", "r.rv",
             F.greatest("l.ROWTIME", "r.ROWTIME").alias("ROWTIME"))
     .write.format("delta").mode("overwrite").save(str(out)))
    return time.monotonic() - began


def bare_merge(spark: SparkSession, result: str, work: Path, rows: int, n: int) -> float:
    """Seconds of one MERGE of ``rows`` changed rows into a copy of the
    result table (Change Data Feed on, as Splice's tables), and of nothing
    else."""
    copy = str(work / f"floor{n}")
    (spark.read.format("delta").load(result).write.format("delta")
     .option("delta.enableChangeDataFeed", "true")
     .save(copy))
    table = spark.read.format("delta").load(copy)
    every = max(1, table.count() // rows)
    changed = (table.where(F.col("id") % every == 0).withColumn("lv", F.col("lv") + n)
               .withColumn("__delete", F.lit(False)).persist())
    changed.count()
    began = time.monotonic()
    merge_by_key(spark, copy, changed, "__delete", table.columns, "floor", n)
    seconds = time.monotonic() - began
    changed.unpersist()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1_000_000, help="rows per table")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each, alternating")
    args = parser.parse_args()

    spark = session()
    with scratch() as work:
        warehouse = WarehouseResource(root=str(work / "warehouse"))
        io = pipeline_io(spark, warehouse, SQL, "bench")
        load(spark, warehouse, args.keys)
        began = time.monotonic()
        timed_steps(io, lambda step: True)
        print(f"loaded and joined {args.keys:,} keys a side in "
              f"{time.monotonic() - began:.1f} s", flush=True)
        full_recompute(spark, io, work / "warm")  # warm the JVM up on both paths

        changed_keys = 0

        def incremental(n: int) -> float:
            nonlocal changed_keys
            changed = changed_keys = change(spark, warehouse, args.keys, n)
            inputs = 0.0
            for step_id in ("lefts", "rights", "lefts_table", "rights_table"):
                began = time.monotonic()
                run_step(io.pipeline.step(step_id), io)
                inputs += time.monotonic() - began
            began = time.monotonic()
            run_step(io.pipeline.outputs["joined"], io)
            seconds = time.monotonic() - began
            print(f"round {n}: incremental join {seconds:6.1f} s for {changed:,} changed keys "
                  f"(applying them to the input tables: {inputs:.1f} s)", flush=True)
            return seconds

        def full(n: int) -> float:
            seconds = full_recompute(spark, io, work / f"full{n}")
            print(f"round {n}: full recompute   {seconds:6.1f} s", flush=True)
            return seconds

        times = alternate(args.rounds, incremental, full)
        result = spark.read.format("delta").load(io.table_path(io.pipeline.outputs["joined"]))
        recomputed = spark.read.format("delta").load(str(work / f"full{args.rounds}"))
        if args.rounds % 2 == 0:  # the last full recompute ran before the last changes
            full_recompute(spark, io, work / "check")
            recomputed = spark.read.format("delta").load(str(work / "check"))
        columns = ["_key", "id", "lv", "rv", "ROWTIME"]
        differ = (result.select(columns).exceptAll(recomputed.select(columns)).count()
                  + recomputed.select(columns).exceptAll(result.select(columns)).count())
        assert differ == 0, f"the incremental result differs from the recompute in {differ} rows"
        print(f"result: {result.count():,} rows, equal to the full recompute")
        print(f"best: incremental {times.best_splice:.1f} s, full recompute "
              f"{times.best_other:.1f} s, ratio {times.best_splice / times.best_other:.3f} "
              "(goal: at most 0.1)")
        path = io.table_path(io.pipeline.outputs["joined"])
        floor = min(bare_merge(spark, path, work, changed_keys, n)
                    for n in range(1, args.rounds + 1))
        print(f"floor: one MERGE of {changed_keys:,} rows into the result, and nothing else: "
              f"{floor:.1f} s, ratio {floor / times.best_other:.3f} to the full recompute")


if __name__ == "__main__":
    main()
