"""Issue 15 item 8, a design measured before it is built: the interval join
of bench/kafka_interval_bench.py written as one query over the two topics
(no source step), against the same hand-written job, on the same topics.

Variants, each a first run on a new checkpoint (every record from the
earliest offset), after a round that warms the JVM:

- ``good-only-per-reference``: each record decoded, a reason column for bad
  records, the good ones joined, Delta's sink; no dead letters. Spark pushes
  the bad-record filter under the projection that decodes, and decodes once
  per reference of the decoded struct.
- ``good-only``: the same with the decode under a generator
  (``explode(array(from_json(...)))``), which filters are not pushed under.
- ``dead-in-query``: decoded once; the bad records unioned after the join;
  a foreachBatch persists the micro-batch and writes the output and the
  dead letter, each with Delta's idempotent marks.
- ``dead-query``: ``good-only``, then a second query over the topics that
  writes only the dead letters.

Two bad records are produced to the orders topic: each variant that keeps
dead letters must write both, and every variant the 1M joined rows.

    .venv/bin/python bench/kafka_single_pass_bench.py [--rows 1000000] [--rounds 2]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from common import arguments
from kafka_interval_bench import filled_topics, hand_run
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from engine.kafka_topics import Record, produce

WINDOW = "o.id = p.order_id AND p.ts BETWEEN o.ts - INTERVAL 1 MINUTE AND o.ts + INTERVAL 1 MINUTE"
DEAD = "struct<topic:string,partition:int,offset:bigint,raw:string,reason:string>"
TOPICS = (("orders", "id BIGINT, customer BIGINT, amount DOUBLE, ts TIMESTAMP", "o", "id"),
          ("payments", "order_id BIGINT, paid DOUBLE, ts TIMESTAMP", "p", "order_id"))


def _topic(spark: SparkSession, bootstrap: str, name: str, schema: str, alias: str, key: str,
           once: bool) -> tuple[DataFrame, DataFrame]:
    """(the good records, decoded and watermarked; the bad ones with why)."""
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", name).option("startingOffsets", "earliest").load())
    parsed: Column = F.from_json(F.col("value").cast("string"), schema)
    if once:
        parsed = F.explode(F.array(parsed))
    decoded = raw.select("topic", "partition", "offset",
                         F.col("value").cast("string").alias("raw"), parsed.alias("v"))
    decoded = decoded.withColumn("reason", F.when(F.col("v").isNull(), F.lit("not JSON"))
                                 .when(F.col(f"v.{key}").isNull(), F.lit("missing key"))
                                 .when(F.col("v.ts").isNull(), F.lit("missing event time")))
    good = decoded.where("reason IS NULL").select("v.*").withWatermark("ts", "0 seconds")
    bad = decoded.where("reason IS NOT NULL").select("topic", "partition", "offset", "raw",
                                                     "reason")
    return good.alias(alias), bad


def _await(query: StreamingQuery) -> None:
    query.awaitTermination()


def run_variant(spark: SparkSession, bootstrap: str, root: Path, variant: str
                ) -> tuple[float, int, int]:
    """(seconds, output rows, dead letters) of one first run of ``variant``."""
    began = time.monotonic()
    once = variant != "good-only-per-reference"
    (o, bad_o), (p, bad_p) = (_topic(spark, bootstrap, *t, once=once) for t in TOPICS)
    joined = o.join(p, F.expr(WINDOW)).select(
        F.col("o.id").alias("_key"), F.col("o.id").alias("id"), "o.customer", "o.amount",
        "p.paid", F.greatest("o.ts", "p.ts").alias("ROWTIME"))
    out, dead = str(root / "out"), str(root / "dead")
    if variant == "dead-in-query":
        def as_dead(bad: DataFrame) -> DataFrame:
            return bad.select(*[F.lit(None).cast(f.dataType).alias(f.name)
                                for f in joined.schema.fields],
                              F.struct("topic", "partition", "offset", "raw", "reason")
                              .alias("__dead"))

        both = (joined.withColumn("__dead", F.lit(None).cast(DEAD))
                .unionByName(as_dead(bad_o)).unionByName(as_dead(bad_p)))

        def write(batch: DataFrame, batch_id: int) -> None:
            batch = batch.persist(StorageLevel.MEMORY_AND_DISK)
            try:
                for rows, path, app in ((batch.where("__dead IS NULL").drop("__dead"), out, "out"),
                                        (batch.where("__dead IS NOT NULL").select("__dead.*"),
                                         dead, "dead")):
                    (rows.write.format("delta").mode("append").option("txnAppId", app)
                     .option("txnVersion", batch_id).save(path))
            finally:
                batch.unpersist()

        _await(both.writeStream.foreachBatch(write).option("checkpointLocation",
               str(root / "cp")).trigger(availableNow=True).start())
    else:
        _await(joined.writeStream.format("delta").option("checkpointLocation", str(root / "cp"))
               .trigger(availableNow=True).start(out))
        if variant == "dead-query":
            _await(bad_o.unionByName(bad_p).writeStream.format("delta")
                   .option("checkpointLocation", str(root / "cp-dead"))
                   .trigger(availableNow=True).start(dead))
    seconds = time.monotonic() - began
    dead_rows = spark.read.format("delta").load(dead).count() if variant.startswith("dead") else 0
    return seconds, spark.read.format("delta").load(out).count(), dead_rows


VARIANTS = ("good-only-per-reference", "good-only", "dead-in-query", "dead-query")


def main() -> None:
    args = arguments(__doc__.splitlines()[0], "records per topic")
    with filled_topics("splice-kafka-single-pass-", args.rows) as (work, bootstrap, spark):
        produce(bootstrap, "orders", [
            Record("not json", key="x"),
            Record({"customer": 1, "ts": "2024-01-01T00:00:00Z"}, key="y")])
        for n in range(args.rounds):
            runs: dict[str, Callable[[Path], tuple[float, int, int]]] = {
                "hand-written": lambda root: (*hand_run(spark, bootstrap, root), 0),
                **{v: (lambda root, v=v: run_variant(spark, bootstrap, root, v))
                   for v in VARIANTS}}
            hand = None
            for name, run in runs.items():
                seconds, rows, dead = run(work / f"{name}-{n}")
                assert rows == args.rows, f"{name}: {rows} rows"
                assert dead in (0, 2) and (dead == 2) == name.startswith("dead"), f"{name}: {dead}"
                hand = hand or seconds
                print(f"round {n}: {name:24s} {seconds:6.1f} s  hand-written/this "
                      f"{hand / seconds:5.2f}  ({rows:,} rows, {dead} dead letters)", flush=True)


if __name__ == "__main__":
    main()
