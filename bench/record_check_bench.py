"""What Splice's check of each JSON record costs, piece by piece, against
the typed ``from_json`` a hand-written job decodes with (issue 15 item 8:
the check is what keeps a single pass over Kafka topics from the goal).

A million JSON objects like the Kafka benchmark's orders, cached; each
piece of the check (operators/json_source.py, the pieces the Kafka source's
``decode`` uses) is computed alone over all of them and summed into a hash,
so nothing is pruned away; then the whole of ``decode`` over the same
records as Kafka gives them (key, value, topic, partition, offset,
timestamp), as the Kafka source step runs it. The first round warms the
JVM.

    .venv/bin/python bench/record_check_bench.py [--rows 1000000] [--rounds 2]
"""

from __future__ import annotations

import time

from common import arguments, session
from kafka_interval_bench import SQL as KAFKA_SQL
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from splice.operators.json_source import (
    convert_text,
    text_fields,
    verdict_in_expressions,
    verdict_in_jar,
)
from splice.operators.kafka_source import decode
from splice.runtime.compile import compile_text
from splice.sql.plan import SourceStep


def pieces(spark: SparkSession, orders: SourceStep, value: Column) -> dict[str, Column]:
    """Each piece of the check of ``orders``' records, and the hand-written
    job's decode."""
    is_object = F.schema_of_variant(F.try_parse_json(value)).startswith("OBJECT")
    text = text_fields(orders, value)
    converted = F.struct(*[convert_text(text.getField(c.name), c.type).alias(c.name)
                           for c in orders.declared])
    return {
        "nothing (a hash of 1)": F.lit(1),
        "valid UTF-8": F.is_valid_utf8(value),
        "one strict object (variant)": is_object,
        "strict and whole, Spark's expressions": verdict_in_expressions(value),
        "strict and whole, Splice's jar": verdict_in_jar(value, spark),
        "text parse": text,
        "text parse and conversion": converted,
        "hand-written: typed from_json": F.from_json(
            value, ", ".join(f"`{c.name}` {c.type}" for c in orders.declared)),
    }


def main() -> None:
    args = arguments(__doc__.splitlines()[0], "records")
    spark = session()
    start_ms = 1_704_067_200_000  # 2024-01-01T00:00:00Z
    records = spark.range(args.rows, numPartitions=2).select(F.to_json(F.struct(
        "id", (F.col("id") % 10_000).alias("customer"), (F.col("id") % 997 + 0.5).alias("amount"),
        F.date_format(F.timestamp_millis(F.col("id") + start_ms),
                      "yyyy-MM-dd'T'HH:mm:ss.SSSXXX").alias("ts"))).alias("value")).cache()
    print(f"{records.count():,} records cached", flush=True)
    sql = KAFKA_SQL.format(tag="check", stored="")
    orders = next(s for s in compile_text(sql, file="check.sql", name="check").steps
                  if isinstance(s, SourceStep) and s.options["topic"] == "orders")
    as_kafka = records.select(
        F.col("value").cast("binary").alias("value"),
        F.get_json_object("value", "$.id").cast("binary").alias("key"),
        F.lit("orders").alias("topic"), F.lit(0).alias("partition"),
        F.monotonically_increasing_id().alias("offset"), F.current_timestamp().alias("timestamp"))
    decoded = decode(orders, as_kafka)
    whole_decode = F.struct(*[F.col(f"`{c}`") for c in decoded.columns])
    for n in range(args.rounds):
        for name, piece in pieces(spark, orders, F.col("value")).items():
            _timed(n, name, records.select(piece.alias("x")))
        _timed(n, "all of the Kafka source's decode", decoded.select(whole_decode.alias("x")))


def _timed(n: int, name: str, frame: DataFrame) -> None:
    """Compute ``frame``'s column ``x`` for every row, summed into a hash."""
    began = time.monotonic()
    frame.select(F.hash("x").cast("long").alias("h")).agg(F.sum("h")).collect()
    print(f"round {n}: {name:32s} {time.monotonic() - began:5.2f} s", flush=True)


if __name__ == "__main__":
    main()
