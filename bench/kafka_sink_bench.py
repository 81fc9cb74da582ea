"""What exactly-once costs a Kafka sink: the same output written to a topic
under ``exactly_once_v2`` (one Kafka transaction a micro-batch, records
produced by confluent-kafka's transactional producer) and under
``at_least_once`` (Spark's Kafka writer), in one run (issue 52 item 6).

A broker the project starts; a Delta stream source of ``--rows`` orders; a
pipeline that copies them to a topic as JSON. Each round is a first run of
both (a new warehouse and a new topic: every row sent), alternating which
goes first, after one warm-up run of each. The sink step's own seconds are
compared (the source step is the same work both ways); the topic's record
count is checked with a read_committed consumer.

    .venv/bin/python bench/kafka_sink_bench.py [--rows 1000000] [--rounds 3]

The last line, ``ratio R``, is at-least-once's sink seconds over
exactly-once's (1.0: exactly once costs nothing; 0.5: it takes twice as
long).
"""

from __future__ import annotations

import tempfile
import time
import uuid
from pathlib import Path

from common import alternate, argument_parser
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from splice.engine.kafka_topics import end_offsets
from splice.engine.session import start_session
from splice.engine.settings import SpliceSettings, Warehouse
from splice.runtime.compile import compile_text
from splice.runtime.runner import run_pipeline
from splice.runtime.workspace import Workspace

from splice.testing.kafka_broker import start_broker, stop_broker

PACKAGES = ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",)
SQL = """CREATE STREAM orders (id BIGINT, item STRING, amount DOUBLE)
  WITH (location='orders', key='id');
CREATE STREAM copied WITH (kafka_topic='{topic}', value_format='JSON') AS
  SELECT id, item, amount FROM orders;"""


def fill(spark: SparkSession, root: Path, rows: int) -> None:
    (spark.range(rows).select(
        F.col("id"), F.concat(F.lit("item-"), (F.col("id") % 50).cast("string")).alias("item"),
        (F.col("id") % 997 + 0.5).alias("amount"))
     .write.format("delta").save(Warehouse(root=str(root)).source_path("orders")))


def sink_run(spark: SparkSession, bootstrap: str, root: Path, guarantee: str,
             rows: int) -> float:
    """A first run of the pipeline under ``guarantee``: its sink step's seconds."""
    topic = f"copied-{uuid.uuid4().hex[:8]}"
    fill(spark, root, rows)
    plan = compile_text(SQL.format(topic=topic), file="sink.sql", name=f"sink{root.name}")
    settings = SpliceSettings.from_env(kafka_bootstrap=bootstrap, processing_guarantee=guarantee)
    ws = Workspace(plan, settings, warehouse=Warehouse(root=str(root)), spark=spark)
    reports = {r.step_id: r for r in run_pipeline(plan, ws.io)}
    sink = reports["copied_topic"]
    assert sink.rows_written == rows, sink
    # Records, plus one commit marker a transaction under exactly once.
    assert sum(end_offsets(bootstrap, topic).values()) >= rows
    return sink.seconds


def main() -> None:
    args = argument_parser(__doc__.splitlines()[0], "orders sent").parse_args()
    work = Path(tempfile.mkdtemp(prefix="splice-sink-bench-"))
    broker = start_broker(work / "broker")
    try:
        spark = start_session(SpliceSettings.from_env(driver_memory="6g", packages=PACKAGES))
        sink_run(spark, broker.bootstrap, work / "warm-eos", "exactly_once_v2", 10_000)
        sink_run(spark, broker.bootstrap, work / "warm-alo", "at_least_once", 10_000)

        def exactly_once(n: int) -> float:
            began = time.monotonic()
            seconds = sink_run(spark, broker.bootstrap, work / f"eos{n}", "exactly_once_v2",
                               args.rows)
            print(f"round {n}: exactly_once_v2 sink {seconds:6.1f} s  "
                  f"{args.rows / seconds:10,.0f} records/s "
                  f"(run {time.monotonic() - began:.1f} s)", flush=True)
            return seconds

        def at_least_once(n: int) -> float:
            began = time.monotonic()
            seconds = sink_run(spark, broker.bootstrap, work / f"alo{n}", "at_least_once",
                               args.rows)
            print(f"round {n}: at_least_once   sink {seconds:6.1f} s  "
                  f"{args.rows / seconds:10,.0f} records/s "
                  f"(run {time.monotonic() - began:.1f} s)", flush=True)
            return seconds

        times = alternate(args.rounds, exactly_once, at_least_once)
        print(f"best: exactly_once_v2 {args.rows / times.best_splice:,.0f} records/s, "
              f"at_least_once {args.rows / times.best_other:,.0f} records/s; median ratio "
              f"{times.median_ratio_of_rates():.3f}")
        print(f"ratio {times.ratio_of_rates():.3f}")
    finally:
        stop_broker(work / "broker")


if __name__ == "__main__":
    main()
