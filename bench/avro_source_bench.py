"""Avro values through Splice's Kafka source step against the hand-written
PySpark job that decodes the same topic with spark-avro's ``from_avro``
(issue 52 item 3).

A broker and a schema registry the project starts hold one topic of
``--rows`` Avro records (2 partitions) written by confluent-kafka's own
``AvroSerializer`` (the registry's wire format: magic byte, schema id,
Avro bytes). Splice runs its source step: the topic into the source's Delta
table, each record's header checked, its schema id resolved against the
subject's versions, its Avro decoded by ``from_avro`` and its columns
typed, bad records to the dead letter. The hand-written job does what one
writes by hand: Spark's Kafka source, the 5-byte header cut off, one
``from_avro`` with the writer's schema, the fields selected, appended to
Delta (``availableNow``, its own checkpoint), no checks. Both run once
first to warm the JVM up; then each round is a first run of both (a new
checkpoint: every record read); rows per second compared, best of the
rounds and their medians.

    .venv/bin/python bench/avro_source_bench.py [--rows 1000000] [--rounds 3]
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from common import alternate, argument_parser, write_hand_written
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro
from splice.engine.kafka_topics import Record, create_topic, produce
from splice.engine.registry_schemas import RegistrySchemas
from splice.engine.schema_registry import registry_client
from splice.engine.session import start_session
from splice.engine.settings import SpliceSettings, Warehouse
from splice.runtime.compile import compile_text
from splice.runtime.runner import run_steps
from splice.runtime.workspace import Workspace

from splice.testing.kafka_broker import start_broker, stop_broker
from splice.testing.schema_registry import start_registry, stop_registry

PACKAGES = ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
            "org.apache.spark:spark-avro_2.13:4.2.0")
TOPIC = "orders"
SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"}, {"name": "customer", "type": "long"},
    {"name": "amount", "type": "double"}, {"name": "item", "type": "string"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}
SQL = (f"CREATE STREAM orders (id BIGINT KEY) WITH (KAFKA_TOPIC='{TOPIC}', "
       "VALUE_FORMAT='AVRO', TIMESTAMP='ts');")
T0 = 1_704_067_200_000


def fill(bootstrap: str, registry: str, rows: int) -> None:
    create_topic(bootstrap, TOPIC, partitions=2)
    client = registry_client(SpliceSettings.from_env({"SPLICE_SCHEMA_REGISTRY_URL": registry}))
    encode = AvroSerializer(client, json.dumps(SCHEMA))
    context = SerializationContext(TOPIC, MessageField.VALUE)
    produce(bootstrap, TOPIC, (Record(value=encode(
        {"id": i, "customer": i % 10_000, "amount": i % 997 + 0.5, "item": f"item-{i % 50}",
         "ts": T0 + i}, context), key=str(i)) for i in range(rows)))


def splice_run(spark: SparkSession, bootstrap: str, registry: str, root: Path,
               n: int) -> tuple[float, int]:
    settings = SpliceSettings.from_env(kafka_bootstrap=bootstrap, schema_registry_url=registry)
    plan = compile_text(SQL, file=f"avro{n}.sql", name=f"avro{n}",
                        schemas=RegistrySchemas(settings))
    ws = Workspace(plan, settings, warehouse=Warehouse(root=str(root)), spark=spark)
    began = time.monotonic()
    [report] = run_steps(plan, ws.io)
    seconds = time.monotonic() - began
    assert report.dead_letters == 0, report
    print(f"  (splice's step {report.seconds:.1f} s of its run's {seconds:.1f} s)", flush=True)
    return seconds, ws.table("orders").count()


def hand_run(spark: SparkSession, bootstrap: str, root: Path) -> tuple[float, int]:
    began = time.monotonic()
    raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", TOPIC).option("startingOffsets", "earliest").load())
    value = from_avro(F.expr("substring(value, 6)"), json.dumps(SCHEMA)).alias("v")
    out = raw.select(F.col("key").cast("string").alias("_key"), value,
                     "partition", "offset").select("_key", "v.*", "partition", "offset")
    return write_hand_written(out, root, began)


def main() -> None:
    args = argument_parser(__doc__.splitlines()[0], "Avro records in the topic").parse_args()
    work = Path(tempfile.mkdtemp(prefix="splice-avro-bench-"))
    broker = start_broker(work / "broker")
    registry = start_registry(work / "registry")
    try:
        spark = start_session(SpliceSettings.from_env(driver_memory="6g", packages=PACKAGES))
        began = time.monotonic()
        fill(broker.bootstrap, registry.url, args.rows)
        print(f"produced {args.rows:,} Avro records in {time.monotonic() - began:.1f} s",
              flush=True)
        # Both warmed up first (classes loaded, code generated), as a long-lived
        # Dagster code server or `splice serve` is: the rounds compare steady runs.
        splice_run(spark, broker.bootstrap, registry.url, work / "warm-splice", 0)
        hand_run(spark, broker.bootstrap, work / "warm-hand")
        counts: dict[str, int] = {}

        def splice(n: int) -> float:
            seconds, counts["splice"] = splice_run(spark, broker.bootstrap, registry.url,
                                                   work / f"splice{n}", n)
            print(f"round {n}: splice  {seconds:6.1f} s  {counts['splice'] / seconds:10,.0f} "
                  "records/s", flush=True)
            return seconds

        def hand(n: int) -> float:
            seconds, counts["hand"] = hand_run(spark, broker.bootstrap, work / f"hand{n}")
            print(f"round {n}: pyspark {seconds:6.1f} s  {counts['hand'] / seconds:10,.0f} "
                  "records/s", flush=True)
            return seconds

        times = alternate(args.rounds, splice, hand)
        assert set(counts.values()) == {args.rows}, f"records differ: {counts}"
        print(f"best: splice {args.rows / times.best_splice:,.0f} records/s, hand-written "
              f"{args.rows / times.best_other:,.0f} records/s; median ratio "
              f"{times.median_ratio_of_rates():.3f} (goal: at least 0.9)")
        print(f"ratio {times.ratio_of_rates():.3f}")
    finally:
        stop_registry(work / "registry")
        stop_broker(work / "broker")


if __name__ == "__main__":
    main()
