"""Kafka sinks: an output written to a topic, in the runner's one streaming
loop.

A stream output's rows, or a table output's changes (its change feed: the
current rows first, then every insert, update and delete; a deleted key is
a tombstone, a record with a null value), become records: the key is
``_key`` (its text in the KAFKA key format, JSON in the JSON format; a key
of several columns is JSON unless AVRO), the value the value columns as one
JSON object, nulls written, or in the registry's wire format for AVRO and
JSON_SR (operators/kafka_records.py: the schema is registered when the
query is built, before any record is sent). A micro-batch is written in
order (one task), so a key's records keep the order of its changes on its
partition. A table's topic is created compacted when Splice creates it.

Delivery is exactly once by default (``processing_guarantee``
``exactly_once_v2``, as ksqlDB's): each micro-batch is one Kafka
transaction marked with the micro-batch (operators/kafka_transactions.py),
so a ``read_committed`` consumer sees every record once whatever point a
run is killed at. ``at_least_once`` writes with Spark's Kafka writer
instead. Either way, after the broker has the micro-batch the sink appends
the records it sent to its own Delta table marked with the micro-batch (the
checkpoint's app id and the batch id, engine/marks.py), which the run's
report and Dagster count. A run killed after that append and before the
checkpoint's commit sends nothing again: the rerun finds the batch in the
table and skips it. At least once, a run killed between the broker's
acknowledgement and that append (``KillPoint.SINK_SENT``) sends the batch
again: each of its records then arrives twice, and none is missing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from splice.engine.faults import KillPoint, reached
from splice.engine.io import (
    KEY,
    ROWTIME,
    StepIO,
    append,
    delta_version,
    ensure_table,
    is_written,
    rows_written_since,
)
from splice.engine.kafka_topics import create_topic, topic_exists
from splice.engine.query import BatchTarget, Executor, Outcome, Sink, StepQuery
from splice.engine.settings import guarantee
from splice.operators.kafka_records import records as sink_records
from splice.operators.kafka_source import bootstrap
from splice.operators.kafka_transactions import TransactionalSender
from splice.physical.operators import KafkaSink
from splice.sql.plan import Kind

# The change feed's own columns; a table's deleted key is a tombstone.
CHANGE = "_change_type"
VERSION = "_commit_version"


def sent_schema(key_type: str = "string", value_type: str = "string") -> str:
    """The sink's own table: the records it sent (an AVRO key and a
    registry format's value as their bytes)."""
    return f"`{KEY}` {key_type}, value {value_type}, batch_id bigint, `{ROWTIME}` timestamp"


class KafkaSinkExecutor(Executor[KafkaSink]):
    """An output's rows (or changes) to its topic."""

    def query(self, node: KafkaSink, io: StepIO) -> StepQuery:
        step, spark = node.step, io.spark
        servers = bootstrap(step, io)
        topic, options = step.topic, step.options
        table = options.get("table") == "true"
        if not topic_exists(servers, topic):
            create_topic(servers, topic, int(options.get("partitions", "1")), compacted=table)
        upstream = io.pipeline.step(step.inputs[0])
        path = io.table_path(step)
        if upstream.kind == Kind.TABLE:
            stream = io.read_changes(upstream.id).where(F.col(CHANGE) != "update_preimage")
            order: list[str] = [VERSION]
            deleted = F.col(CHANGE) == "delete"
        else:
            stream = io.read_stream(upstream.id)
            order, deleted = [], F.lit(False)
        # The formats' columns; AVRO and JSON_SR register their schemas here.
        encoded = sink_records(step, upstream, stream.schema, io)
        ensure_table(spark, path, StructType.fromDDL(sent_schema(encoded.key_type,
                                                                 encoded.value_type)))
        before = delta_version(spark, path)
        key = encoded.key
        value = F.when(deleted, F.lit(None).cast(encoded.value_type)).otherwise(encoded.value)
        extra = {k.removeprefix("kafka."): v for k, v in options.items()
                 if k.startswith("kafka.")}
        exactly_once = guarantee(io.processing_guarantee) == "exactly_once_v2"
        senders: dict[str, TransactionalSender] = {}  # one a checkpoint (app id)

        def send(batch: DataFrame, target: BatchTarget) -> None:
            if is_written(target.spark, path, target.txn_app, target.batch_id):
                return  # sent and recorded before the checkpoint's commit: not again
            rows = batch.repartition(1)
            if order:
                rows = rows.sortWithinPartitions(*order)
            records = rows.select(key.alias("key"), value.alias("value"),
                                  F.col(f"`{ROWTIME}`").alias(ROWTIME)).persist()
            try:
                if exactly_once:
                    sender = senders.setdefault(target.txn_app, TransactionalSender(
                        servers, topic, target.txn_app, step.id, extra))
                    # Arrow: a third of toLocalIterator's time; the batch is
                    # held in this process while it is sent (one transaction).
                    sent = records.select("key", "value").toArrow()
                    sender.send(target.batch_id, zip(sent.column("key").to_pylist(),
                                                     sent.column("value").to_pylist(),
                                                     strict=True))
                else:
                    writer = (records.select("key", "value").write.format("kafka")
                              .option("kafka.bootstrap.servers", servers).option("topic", topic))
                    for name, setting in extra.items():
                        writer = writer.option(f"kafka.{name}", setting)
                    writer.save()
                reached(KillPoint.SINK_SENT, step.id)
                batch_id = F.lit(target.batch_id).cast("bigint").alias("batch_id")
                append(records.select(F.col("key").alias(KEY), "value", batch_id, ROWTIME),
                       path, target.txn_app, target.batch_id)
            finally:
                records.unpersist()

        def outcome() -> Outcome:
            return Outcome(rows=rows_written_since(spark, path, before))

        return StepQuery(stream=stream, sink=Sink.CUSTOM, writer=send, outcome=outcome,
                         name=f"sink:{step.id}")
