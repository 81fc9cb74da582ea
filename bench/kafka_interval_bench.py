"""The interval join of bench/interval_join_bench.py with both inputs read
from Kafka topics, against the same join hand-written in PySpark reading the
same topics (issue 15).

A broker the project starts (splice/testing/kafka_broker.py) holds two topics of
``--rows`` JSON records each (2 partitions, keyed by the order id), and two
bad orders, which Splice writes to the dead letter (checked) and the
hand-written job's join drops. Splice
runs its whole pipeline: the two Kafka source steps (topic to the source's
Delta table, JSON decoded, bad records to the dead letter) and the join
step. The hand-written job reads both topics with Spark's Kafka source,
decodes the JSON, joins with the same watermarks and condition and appends
to Delta, in one query. Each round is a first run of both (a new pipeline,
a new checkpoint: every record read from the earliest offset); rows per
second of the whole run are compared, best of the rounds. Splice's rounds
print how long its source steps took before the join step started. Each
run also prints the CPU seconds it cost: Spark's JVM (driver and tasks: a
local session) and the broker's (serving the reads), and, for Splice, how
much of it the source steps took. On two cores the wall time follows the
CPU: this is where Splice's extra time goes.

``--floor`` also runs, each round, Splice's pipeline with its check of
each record replaced by the hand-written job's typed ``from_json`` (no
check, no dead letters): not a mode of Splice, but the most that a faster
check could win while each topic is first written to its source's table.

``--in-place`` reads both topics in place (``stored='false'``): no source
steps' tables, the join step's query decodes the records itself and the
dead letters are written after it.

    .venv/bin/python bench/kafka_interval_bench.py [--rows 1000000] [--rounds 2] [--floor]
        [--in-place]
"""

from __future__ import annotations

import datetime as dt
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from common import alternate, argument_parser, cpu_seconds, jvm_cpu_seconds, write_hand_written
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from splice.engine.io import KEY, ROWTIME
from splice.engine.kafka_topics import Record, create_topic, produce
from splice.engine.session import start_session
from splice.engine.settings import SpliceSettings, Warehouse
from splice.operators import kafka_source
from splice.runtime.compile import compile_text
from splice.runtime.runner import run_steps
from splice.runtime.workspace import Workspace
from splice.sql.plan import SourceStep

from splice.testing.kafka_broker import start_broker, stop_broker

KAFKA = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
PARTITIONS = 2  # each topic's
SQL = """
CREATE STREAM orders (id BIGINT, customer BIGINT, amount DOUBLE, ts TIMESTAMP)
  WITH (format='kafka', topic='orders', key='id', timestamp='ts'{stored});
CREATE STREAM payments (order_id BIGINT, paid DOUBLE, ts TIMESTAMP)
  WITH (format='kafka', topic='payments', key='order_id', timestamp='ts'{stored});
INSERT INTO paid_orders_{tag}
SELECT o.id, o.customer, o.amount, p.paid
FROM orders o JOIN payments p WITHIN 1 MINUTE ON o.id = p.order_id;
"""
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def fill_topics(bootstrap: str, rows: int) -> None:
    """``rows`` orders a millisecond apart and one payment each, 0-49 s later."""
    for topic in ("orders", "payments"):
        create_topic(bootstrap, topic, partitions=PARTITIONS)
    base = START.timestamp()

    def iso(ms: int) -> str:
        return dt.datetime.fromtimestamp(base + ms / 1000, dt.UTC).isoformat()

    produce(bootstrap, "orders", (Record(
        {"id": i, "customer": i % 10_000, "amount": i % 997 + 0.5, "ts": iso(i)}, key=str(i))
        for i in range(rows)))
    produce(bootstrap, "payments", (Record(
        {"order_id": i, "paid": i % 997 + 0.5, "ts": iso(i + (i % 50) * 1000)}, key=str(i))
        for i in range(rows)))
    # Two bad orders, which Splice sends to the dead letter (BAD_ORDERS) and
    # the hand-written job's join drops.
    produce(bootstrap, "orders", [Record("not json", key="x"),
                                  Record({"customer": 1, "ts": iso(0)}, key="y")])


BAD_ORDERS = 2


class CpuMeter:
    """CPU seconds used so far by Spark's JVM and by the broker started in
    ``work`` (its pid file, splice/testing/kafka_broker.py)."""

    def __init__(self, spark: SparkSession, work: Path) -> None:
        self.spark = spark
        self.broker = int((work / "broker" / "broker.pid").read_text())

    def read(self) -> tuple[float, float]:
        return jvm_cpu_seconds(self.spark), cpu_seconds(self.broker)

    def since(self, before: tuple[float, float]) -> str:
        jvm, broker = (now - then for now, then in zip(self.read(), before, strict=True))
        return f"CPU {jvm + broker:.1f} s: Spark {jvm:.1f} s, broker {broker:.1f} s"


def splice_run(spark: SparkSession, bootstrap: str, root: Path, tag: str,
               meter: CpuMeter | None = None, in_place: bool = False
               ) -> tuple[float, float, int, str, int]:
    """(seconds in all, seconds before the join step started, output rows,
    the CPU its source steps used, when ``meter`` reads it, dead letters);
    ``in_place``: both topics read in place by the join step
    (``stored='false'``)."""
    sql = SQL.format(tag=tag, stored=", stored='false'" if in_place else "")
    pipeline = compile_text(sql, file=f"kafka_{tag}.sql", name=f"kafka_{tag}")
    io = Workspace(pipeline, SpliceSettings.from_env(kafka_bootstrap=bootstrap),
                   warehouse=Warehouse(root=str(root)), spark=spark).io
    began = time.monotonic()
    join_began: list[float] = []
    cpu = meter.read() if meter else (0.0, 0.0)
    sources_cpu: list[str] = []

    def on_step(_: int, step: object, report: object) -> None:
        if report is None and not isinstance(step, SourceStep):
            join_began.append(time.monotonic() - began)
            sources_cpu.append(meter.since(cpu) if meter else "")

    reports = run_steps(pipeline, io, on_step=on_step)
    seconds = time.monotonic() - began
    output = io.table_path(pipeline.outputs[f"paid_orders_{tag}"])
    return (seconds, join_began[0], spark.read.format("delta").load(output).count(),
            sources_cpu[0], sum(r.dead_letters for r in reports))


def _unchecked(step: SourceStep, batch: DataFrame) -> DataFrame:
    """``kafka_source.decode``'s columns from the hand-written job's typed
    ``from_json``: every record stored, none checked (the floor)."""
    value = F.col("value").cast("string")
    typed = F.from_json(value, ", ".join(f"`{c.name}` {c.type}" for c in step.declared))
    key = step.relation.key_columns[0]
    return batch.select(
        value.alias(kafka_source.RECORD_VALUE), F.col("topic").alias(kafka_source.RECORD_TOPIC),
        F.col("partition").alias("__partition"), F.col("offset").alias("__offset"),
        typed.alias("__v")).select(
        "*", F.col(f"__v.{key}").alias(KEY), *[F.col(f"__v.{c.name}").alias(c.name)
                                              for c in step.declared],
        F.col(f"__v.{step.timestamp_column}").alias(ROWTIME), F.lit("").alias("__reason"))


@contextmanager
def unchecked() -> Iterator[None]:
    checked = kafka_source.decode
    kafka_source.decode = _unchecked
    try:
        yield
    finally:
        kafka_source.decode = checked


def hand_run(spark: SparkSession, bootstrap: str, root: Path) -> tuple[float, int]:
    """The same join as one writes it with PySpark over the two topics."""
    began = time.monotonic()

    def topic(name: str, schema: str, alias: str):
        raw = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", name).option("startingOffsets", "earliest").load())
        decoded = raw.select(F.from_json(F.col("value").cast("string"), schema).alias("v"))
        return decoded.select("v.*").withWatermark("ts", "0 seconds").alias(alias)

    orders = topic("orders", "id BIGINT, customer BIGINT, amount DOUBLE, ts TIMESTAMP", "o")
    payments = topic("payments", "order_id BIGINT, paid DOUBLE, ts TIMESTAMP", "p")
    joined = orders.join(payments, F.expr(
        "o.id = p.order_id AND p.ts BETWEEN o.ts - INTERVAL 1 MINUTE AND o.ts + INTERVAL 1 MINUTE"))
    out = joined.select(F.col("o.id").alias("_key"), "o.id", "o.customer", "o.amount", "p.paid",
                        F.greatest("o.ts", "p.ts").alias("ROWTIME"))
    return write_hand_written(out, root, began)


@contextmanager
def filled_topics(prefix: str, rows: int) -> Iterator[tuple[Path, str, SparkSession]]:
    """(a new work folder, the bootstrap address of a broker started in it,
    a session with Kafka's connector), both topics holding ``rows`` records;
    the broker stopped after. The Kafka benchmarks' common start."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    broker = start_broker(work / "broker")
    try:
        spark = start_session(SpliceSettings.from_env(driver_memory="6g", packages=(KAFKA,)))
        began = time.monotonic()
        fill_topics(broker.bootstrap, rows)
        print(f"produced {rows:,} records to each of 2 topics in "
              f"{time.monotonic() - began:.1f} s", flush=True)
        yield work, broker.bootstrap, spark
    finally:
        stop_broker(work / "broker")


def main() -> None:
    parser = argument_parser(__doc__.splitlines()[0], "records per topic")
    parser.add_argument("--floor", action="store_true",
                        help="also time Splice with no check of each record (see above)")
    parser.add_argument("--in-place", action="store_true",
                        help="Splice reads both topics in place (stored='false'): no source "
                             "tables, the join step decodes the records itself")
    args = parser.parse_args()
    with filled_topics("splice-kafka-bench-", args.rows) as (work, bootstrap, spark):
        counts: dict[str, int] = {}
        floors: list[float] = []
        meter = CpuMeter(spark, work)

        def run(n: int, floor: bool) -> float:
            kind = "floor" if floor else "splice"
            cpu = meter.read()
            with unchecked() if floor else nullcontext():
                seconds, sources, counts[kind], sources_cpu, dead = splice_run(
                    spark, bootstrap, work / f"{kind}{n}", f"{kind}{n}", meter,
                    in_place=args.in_place)
            assert dead == (0 if floor else BAD_ORDERS), f"{kind}: {dead} dead letters"
            print(f"round {n}: {kind:6s} {seconds:6.1f} s  {counts[kind] / seconds:10,.0f} "
                  f"rows/s ({counts[kind]:,} rows; {meter.since(cpu)}; sources {sources:.1f} s, "
                  f"{sources_cpu}, then the join)", flush=True)
            return seconds

        def splice(n: int) -> float:
            seconds = run(n, floor=False)
            if args.floor:
                floors.append(run(n, floor=True))
            return seconds

        def hand(n: int) -> float:
            cpu = meter.read()
            seconds, counts["hand"] = hand_run(spark, bootstrap, work / f"hand{n}")
            print(f"round {n}: pyspark {seconds:6.1f} s  {counts['hand'] / seconds:10,.0f} "
                  f"rows/s ({meter.since(cpu)})", flush=True)
            return seconds

        times = alternate(args.rounds, splice, hand)
        assert set(counts.values()) == {args.rows}, f"rows differ: {counts}"
        print(f"best: splice {args.rows / times.best_splice:,.0f} rows/s, hand-written "
              f"{args.rows / times.best_other:,.0f} rows/s, ratio {times.ratio_of_rates():.3f}; "
              f"median ratio {times.median_ratio_of_rates():.3f} (goal: at least 0.95)")
        if floors:
            print(f"floor (no check of each record): best {min(floors):.1f} s, ratio "
                  f"{times.best_other / min(floors):.3f}")


if __name__ == "__main__":
    main()
