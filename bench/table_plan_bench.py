"""The table-table join's plan choice against both plans, in one run.

For each size (``--keys`` a side) and each change pattern, three
warehouses get the same two tables, joined once (a primary-key INNER join),
then the same changes round after round; in each, the join step runs under
one plan: ``auto`` (Splice's default: the cost-based choice), always
``incremental``, always ``recompute``. Each round applies the round's
changes to the input tables in all three (untimed), then times the join
step of each, in an order that rotates from round to round. The patterns:

- ``random``: 10,000 changed keys spread at random over the key space;
- ``range``: 1% of the keys, one contiguous range of them (as when the
  recent rows change);
- ``few``: 100 changed keys at random (not run by default: where the
  incremental plan is the cheaper one).

A tenth of the changed keys are deleted (tombstones). All three results are
compared row for row after the last round. Printed per size and pattern:
each plan's best and median seconds, the plan ``auto`` chose, its ratio to
the better of the other two (goal: at most 1.10), and the incremental
plan's best seconds beyond the best of the rounds' bare MERGEs (each round,
one MERGE of that round's changed rows into a copy of the incremental
plan's result, the floor any MERGE-kept table pays).

    .venv/bin/python bench/table_plan_bench.py [--keys 1000000,4000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from common import pipeline_io, scratch, session
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from splice.engine.io import StepIO, merge_by_key
from splice.joins.table_plan import PLAN_SETTING
from splice.resources.warehouse import WarehouseResource
from splice.runtime.runner import run_step
from table_table_bench import SQL  # the same two tables and primary-key join

PLANS = ("auto", "incremental", "recompute")
INPUTS = ("lefts", "rights", "lefts_table", "rights_table")
RANDOM_KEYS = 10_000
FEW_KEYS = 100


def load(spark: SparkSession, warehouse: WarehouseResource, keys: int) -> None:
    ids = spark.range(0, keys, 1, numPartitions=2)
    for name, column in (("lefts", "lv"), ("rights", "rv")):
        (ids.select("id", (F.col("id") * 7).alias(column),
                    F.timestamp_seconds(F.lit(1_700_000_000)).alias("ts"))
         .write.format("delta").save(warehouse.source_path(name)))


def changed_keys(pattern: str, keys: int, round_no: int) -> list[int]:
    """The keys a round changes: the same for every warehouse."""
    rng = random.Random(round_no)
    if pattern in ("random", "few"):
        return rng.sample(range(keys), RANDOM_KEYS if pattern == "random" else FEW_KEYS)
    width = keys // 100
    start = rng.randrange(0, keys - width)
    return list(range(start, start + width))


def change(spark: SparkSession, warehouse: WarehouseResource, ids: DataFrame,
           round_no: int) -> None:
    """The changed keys, alternately on the left and on the right; one in
    ten deleted (its value NULL)."""
    for name, column, side in (("lefts", "lv", 0), ("rights", "rv", 1)):
        rows = ids.where(F.col("id") % 2 == side).select(
            "id", F.when(F.col("id") % 20 < 2, None)
            .otherwise(F.col("id") * 7 + round_no).alias(column),
            F.timestamp_seconds(F.lit(1_700_000_000 + round_no)).alias("ts"))
        rows.write.format("delta").mode("append").save(warehouse.source_path(name))


def run_join(io: StepIO, plan: str) -> tuple[float, str, str]:
    """Seconds of the join step's run under ``plan``, the plan it ran and
    why."""
    io.spark.conf.set(PLAN_SETTING, plan)
    began = time.monotonic()
    report = run_step(io.pipeline.outputs["joined"], io)
    seconds = time.monotonic() - began
    return seconds, (report.plan or {}).get("name", "?"), (report.plan or {}).get("reason", "")


def bare_merge(spark: SparkSession, result: str, work: Path, changed: list[int],
               name: str) -> float:
    """One MERGE of the changed keys' rows into a copy of ``result`` (Change
    Data Feed on, as Splice's tables), and nothing else. ``name``: the
    copy's own (a copy reused by another size or pattern would hold the
    first one's mark, and its MERGE would be skipped as a replay)."""
    copy = str(work / f"floor-{name}")
    (spark.read.format("delta").load(result).write.format("delta")
     .option("delta.enableChangeDataFeed", "true").mode("overwrite").save(copy))
    keys = spark.createDataFrame([(k,) for k in changed], "id BIGINT")
    rows = (spark.read.format("delta").load(copy).join(keys, "id", "left_semi")
            .withColumn("lv", F.col("lv") + 1).withColumn("__delete", F.lit(False)).persist())
    rows.count()
    began = time.monotonic()
    merge_by_key(spark, copy, rows, "__delete", [c for c in rows.columns if c != "__delete"],
                 "floor", len(changed))
    seconds = time.monotonic() - began
    rows.unpersist()
    return seconds


def measure(spark: SparkSession, work: Path, keys: int, pattern: str, rounds: int) -> None:
    ios = {}
    for plan in PLANS:
        warehouse = WarehouseResource(root=str(work / f"{keys}-{pattern}-{plan}"))
        io = ios[plan] = pipeline_io(spark, warehouse, SQL, "bench")
        load(spark, warehouse, keys)
        for step_id in INPUTS:
            run_step(io.pipeline.step(step_id), io)
        run_join(io, plan)
    times: dict[str, list[float]] = {p: [] for p in PLANS}
    floors: list[float] = []
    chosen: list[str] = []
    reason = ""
    for n in range(1, rounds + 1):
        changed = changed_keys(pattern, keys, n)
        ids = spark.createDataFrame([(k,) for k in changed], "id BIGINT").persist()
        for plan in PLANS:
            change(spark, ios[plan].warehouse, ids, n)
            for step_id in INPUTS:
                run_step(ios[plan].pipeline.step(step_id), ios[plan])
        ids.unpersist()
        order = PLANS[n % 3:] + PLANS[:n % 3]
        line = []
        for plan in order:
            seconds, ran, why = run_join(ios[plan], plan)
            times[plan].append(seconds)
            if plan == "auto":
                chosen.append(ran)
                reason = why
            line.append(f"{plan} {seconds:5.1f} s" + (f" ({ran})" if plan == "auto" else ""))
        floors.append(bare_merge(spark, ios["incremental"].table_path(
            ios["incremental"].pipeline.outputs["joined"]), work, changed,
            f"{keys}-{pattern}-{n}"))
        print(f"  round {n}: {len(changed):,} changed keys: " + ", ".join(line)
              + f"; one bare MERGE {floors[-1]:.1f} s", flush=True)
    columns = ["_key", "id", "lv", "rv", "ROWTIME"]
    results = {p: spark.read.format("delta").load(
        ios[p].table_path(ios[p].pipeline.outputs["joined"])).select(columns) for p in PLANS}
    for plan in ("incremental", "recompute"):
        differ = (results["auto"].exceptAll(results[plan]).count()
                  + results[plan].exceptAll(results["auto"]).count())
        assert differ == 0, f"{keys} {pattern}: auto and {plan} differ in {differ} rows"
    best = {p: min(t) for p in PLANS for t in [times[p]]}
    median = {p: statistics.median(times[p]) for p in PLANS}
    better = min(best["incremental"], best["recompute"])
    floor = min(floors)
    print(f"{keys:,} keys a side, {pattern}: best auto {best['auto']:.1f} s "
          f"(ran {', '.join(chosen)}), incremental {best['incremental']:.1f} s, recompute "
          f"{best['recompute']:.1f} s; medians {median['auto']:.1f} / "
          f"{median['incremental']:.1f} / {median['recompute']:.1f} s; "
          f"auto / the better plan: {best['auto'] / better:.3f} (goal at most 1.10); "
          f"best bare MERGE {floor:.1f} s, the incremental plan beyond it "
          f"{best['incremental'] - floor:.1f} s; results equal; auto's last reason: "
          f"{reason}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", default="1000000,4000000", help="rows per table, a list")
    parser.add_argument("--patterns", default="random,range", help="random, range, few")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs of each plan")
    args = parser.parse_args()
    spark = session()
    with scratch() as work:
        for keys in (int(k) for k in args.keys.split(",")):
            for pattern in args.patterns.split(","):
                measure(spark, work, keys, pattern, args.rounds)


if __name__ == "__main__":
    main()
