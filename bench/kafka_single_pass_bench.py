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
- ``dead-observed``: ``good-only`` with each topic's bad records counted
  and located (the least and greatest offset of a bad record in each
  partition) by an observation on the decoded records, which Spark reports
  with the micro-batch's progress; then a batch read of only those offset
  ranges writes the dead letters. A prototype of the measurement only: a
  run killed between the query's commit and that read would lose them (the
  observation lives in the progress report, not the checkpoint).
- ``splice-observed``: ``dead-observed`` with Splice's own check of each
  record (``splice.operators.kafka_source.decode``: UTF-8, one whole JSON object,
  every declared type, the key, the event time) in place of a decode that
  only finds records that are not JSON or lack the key or event time.

The orders topic holds two bad records: each variant that keeps
dead letters must write both, and every variant the 1M joined rows.

    .venv/bin/python bench/kafka_single_pass_bench.py [--rows 1000000] [--rounds 2]
        [--variants good-only,dead-query,dead-observed]
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from common import arguments
from kafka_interval_bench import PARTITIONS, filled_topics, hand_run
from kafka_interval_bench import SQL as KAFKA_SQL
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from splice.operators.kafka_source import RECORD_TOPIC, RECORD_VALUE, decode
from splice.runtime.compile import compile_text
from splice.sql.plan import SourceStep

WINDOW = "o.id = p.order_id AND p.ts BETWEEN o.ts - INTERVAL 1 MINUTE AND o.ts + INTERVAL 1 MINUTE"
DEAD = "struct<topic:string,partition:int,offset:bigint,raw:string,reason:string>"
TOPICS = (("orders", "id BIGINT, customer BIGINT, amount DOUBLE, ts TIMESTAMP", "o", "id"),
          ("payments", "order_id BIGINT, paid DOUBLE, ts TIMESTAMP", "p", "order_id"))


Decoder = Callable[[DataFrame, str], DataFrame]
"""Kafka records of a topic (its name given) to ``topic``, ``partition``,
``offset``, ``raw``, the decoded value ``v`` and why a bad record is bad
(``reason``, NULL for a good one)."""


def simple_decoder(once: bool) -> Decoder:
    """A decode that finds records that are not JSON or lack the key or the
    event time; ``once``: under a generator, so it runs once a record."""
    def decoded(raw: DataFrame, name: str) -> DataFrame:
        schema, key = next((t[1], t[3]) for t in TOPICS if t[0] == name)
        parsed: Column = F.from_json(F.col("value").cast("string"), schema)
        if once:
            parsed = F.explode(F.array(parsed))
        rows = raw.select("topic", "partition", "offset",
                          F.col("value").cast("string").alias("raw"), parsed.alias("v"))
        return rows.withColumn("reason", F.when(F.col("v").isNull(), F.lit("not JSON"))
                               .when(F.col(f"v.{key}").isNull(), F.lit("missing key"))
                               .when(F.col("v.ts").isNull(), F.lit("missing event time")))
    return decoded


def splice_decoder() -> Decoder:
    """Splice's own check of each record, as its Kafka source step runs it."""
    pipeline = compile_text(KAFKA_SQL.format(tag="proto", stored=""), file="proto.sql",
                            name="proto")
    steps = {s.options["topic"]: s for s in pipeline.steps if isinstance(s, SourceStep)}

    def decoded(raw: DataFrame, name: str) -> DataFrame:
        step = steps[name]
        rows = decode(step, raw)
        return rows.select(
            F.col(RECORD_TOPIC).alias("topic"), F.col("__partition").alias("partition"),
            F.col("__offset").alias("offset"), F.col(RECORD_VALUE).alias("raw"),
            F.struct(*[c.name for c in step.declared]).alias("v"),
            F.nullif(F.col("__reason"), F.lit("")).alias("reason"))
    return decoded


def _bad(decoded: DataFrame) -> DataFrame:
    return decoded.where("reason IS NOT NULL").select("topic", "partition", "offset", "raw",
                                                      "reason")


def _located(decoded: DataFrame, name: str) -> DataFrame:
    """``decoded``, observed as ``bad_<name>``: how many bad records, and
    the least and greatest offset of one in each partition."""
    bad = F.col("reason").isNotNull()
    where = [F.when(bad & (F.col("partition") == n), F.col("offset")) for n in range(PARTITIONS)]
    return decoded.observe(f"bad_{name}", F.count(F.when(bad, 1)).alias("n"),
                           *[F.min(w).alias(f"first{n}") for n, w in enumerate(where)],
                           *[F.max(w).alias(f"last{n}") for n, w in enumerate(where)])


def _topic(spark: SparkSession, bootstrap: str, name: str, alias: str, decoder: Decoder,
           located: bool = False) -> tuple[DataFrame, DataFrame]:
    """(the good records, decoded and watermarked; the bad ones with why)."""
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", name).option("startingOffsets", "earliest").load())
    decoded = decoder(raw, name)
    if located:
        decoded = _located(decoded, name)
    good = decoded.where("reason IS NULL").select("v.*").withWatermark("ts", "0 seconds")
    return good.alias(alias), _bad(decoded)


def _write_located(spark: SparkSession, bootstrap: str, query: StreamingQuery,
                   decoder: Decoder, dead: str) -> None:
    """The dead letters the observations of ``query``'s micro-batches
    located: each topic's offset ranges read again as a batch."""
    for name, *_ in TOPICS:
        spans: dict[int, tuple[int, int]] = {}
        for report in query.recentProgress:
            seen = report.observedMetrics.get(f"bad_{name}")
            if seen is None or not seen["n"]:
                continue
            for n in range(PARTITIONS):
                first, last = seen[f"first{n}"], seen[f"last{n}"]
                if first is not None:
                    was = spans.get(n, (first, last))
                    spans[n] = (min(was[0], first), max(was[1], last))
        if not spans:
            continue
        raw = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
               .option("assign", json.dumps({name: sorted(spans)}))
               .option("startingOffsets", json.dumps(
                   {name: {str(n): first for n, (first, _) in spans.items()}}))
               .option("endingOffsets", json.dumps(
                   {name: {str(n): last + 1 for n, (_, last) in spans.items()}})).load())
        _bad(decoder(raw, name)).write.format("delta").mode("append").save(dead)


def _await(query: StreamingQuery) -> None:
    query.awaitTermination()


def run_variant(spark: SparkSession, bootstrap: str, root: Path, variant: str
                ) -> tuple[float, int, int]:
    """(seconds, output rows, dead letters) of one first run of ``variant``."""
    began = time.monotonic()
    decoder = (splice_decoder() if variant == "splice-observed" else
               simple_decoder(once=variant != "good-only-per-reference"))
    located = variant.endswith("-observed")
    (o, bad_o), (p, bad_p) = (_topic(spark, bootstrap, name, alias, decoder, located)
                              for name, _, alias, _ in TOPICS)
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
        query = (joined.writeStream.format("delta").option("checkpointLocation", str(root / "cp"))
                 .trigger(availableNow=True).start(out))
        _await(query)
        if located:
            _write_located(spark, bootstrap, query, decoder, dead)
        if variant == "dead-query":
            _await(bad_o.unionByName(bad_p).writeStream.format("delta")
                   .option("checkpointLocation", str(root / "cp-dead"))
                   .trigger(availableNow=True).start(dead))
    seconds = time.monotonic() - began
    dead_rows = spark.read.format("delta").load(dead).count() if keeps_dead(variant) else 0
    return seconds, spark.read.format("delta").load(out).count(), dead_rows


def keeps_dead(variant: str) -> bool:
    """Whether ``variant`` writes the dead letters (the others drop them)."""
    return variant.startswith("dead") or variant.endswith("-observed")


VARIANTS = ("good-only-per-reference", "good-only", "dead-in-query", "dead-query",
            "dead-observed", "splice-observed")


def main() -> None:
    args = arguments(__doc__.splitlines()[0], "records per topic",
                     variants=",".join(VARIANTS))
    variants = args.variants.split(",")
    unknown = set(variants) - set(VARIANTS)
    assert not unknown, f"no such variants: {sorted(unknown)}; known: {', '.join(VARIANTS)}"
    with filled_topics("splice-kafka-single-pass-", args.rows) as (work, bootstrap, spark):
        # filled_topics produced two bad orders (kafka_interval_bench.BAD_ORDERS).
        for n in range(args.rounds):
            runs: dict[str, Callable[[Path], tuple[float, int, int]]] = {
                "hand-written": lambda root: (*hand_run(spark, bootstrap, root), 0),
                **{v: (lambda root, v=v: run_variant(spark, bootstrap, root, v))
                   for v in variants}}
            hand = None
            for name, run in runs.items():
                seconds, rows, dead = run(work / f"{name}-{n}")
                assert rows == args.rows, f"{name}: {rows} rows"
                assert dead in (0, 2) and (dead == 2) == keeps_dead(name), f"{name}: {dead}"
                hand = hand or seconds
                print(f"round {n}: {name:24s} {seconds:6.1f} s  hand-written/this "
                      f"{hand / seconds:5.2f}  ({rows:,} rows, {dead} dead letters)", flush=True)


if __name__ == "__main__":
    main()
