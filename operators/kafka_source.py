"""Kafka sources: the records of a topic, ingested into the source's Delta
table, in the runner's one streaming loop like the JSON-lines source.

The first run reads every partition from its earliest offset; each run
reads up to the end offsets at its start (``availableNow``); the step's
checkpoint holds the offsets reached, so the next run goes on from there.
A partition added between runs is read from its start (Spark's Kafka
source finds it). A micro-batch's rows and dead letters are written with
the micro-batch's mark (the checkpoint's app id and the batch id,
engine/marks.py): a run killed after writing, before its checkpoint
commit, reads the same offsets again and writes nothing twice.

Each record's value is decoded as one JSON object to the declared columns
(the JSON-lines source's rules: ``splice.operators.json_source``); ``_key`` is the
record's key, as text (key format KAFKA) or decoded JSON (key format
JSON), converted to the key type; a declared key column the value lacks
takes the key's value (ksqlDB keeps key columns in the key). ``ROWTIME`` is
the record's timestamp unless ``timestamp=`` names a column. A null value
is a tombstone of its key on a table topic and skipped on a stream topic.
A Debezium topic's change events are first made the upsert records they
stand for (operators/debezium.py), then decoded as those.
A record that does not decode goes to the dead-letter table with its
topic, partition, offset and the reason. Records the broker deleted before
they were read stop the run, or, under ``kafka_lost_records=skip``, are
written down by the micro-batch that skips them (operators/kafka_gaps.py).
"""

from __future__ import annotations

import json
import os
import time

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from splice.engine.errors import Cause, root_cause
from splice.engine.io import (
    KEY,
    ROWTIME,
    StepIO,
    delta_version,
    ensure_table,
    is_written,
    rows_written_since,
)
from splice.engine.kafka_topics import create_topic, end_offsets, topic_exists, unanswered_brokers
from splice.engine.net import unanswered
from splice.engine.query import BatchTarget, Outcome, Sink, StepQuery
from splice.engine.session import is_connect
from splice.engine.settings import ENV, lost_records_policy
from splice.engine.stream_start import delta_stream
from splice.operators import avro_values, debezium
from splice.operators.avro_values import Writers, is_avro, writers_of
from splice.operators.dead_letters import write_checked
from splice.operators.json_source import converted_once, object_verdict, text_fields, value_reason
from splice.operators.kafka_fields import any_case_fields
from splice.operators.kafka_gaps import record_lost, refuse_created_again
from splice.operators.kafka_loss import lost_records
from splice.operators.sources import SourceError, SourceExecutor, dead_letter_table, rowtime_of
from splice.physical.base import read_in_order
from splice.physical.sources import SourceNode
from splice.sql.plan import SinkStep, SourceStep

# A Kafka record's own fields, under names no declared column can take: a
# stream may well declare columns named ``value``, ``topic`` or ``offset``.
# The stored table keeps ``__partition`` and ``__offset`` (its schema).
RECORD_KEY = "__kafka_key"
RECORD_VALUE = "__kafka_value"
RECORD_TOPIC = "__kafka_topic"
RECORD_TIMESTAMP = "__kafka_timestamp"
# How long a broker may take to answer a metadata request before the run stops.
ANSWER_SECONDS = 10.0
# Brokers that answered, and when: not asked again for a minute (a run asks
# for its markers and for its query; a request costs about 60 ms here).
_ANSWERED: dict[str, float] = {}
_REMEMBERED = 60.0
# Brokers that did not answer, when and why: the run's second question gets
# the first one's answer at once, not after another ANSWER_SECONDS. Kept
# only as long as a run takes to ask twice, so that a broker started after
# a failed run is asked again by the next run of a long-lived process (a
# Dagster code server, `splice serve` restarting a step).
_SILENT: dict[str, tuple[float, str]] = {}
_SILENT_REMEMBERED = 30.0
ORDER = ["__partition", "__offset"]  # a topic's order: by partition, then offset


def bootstrap(step: SourceStep | SinkStep, io: StepIO) -> str:
    """The brokers: the statement's own, else the setting's, else
    SPLICE_KAFKA_BOOTSTRAP; refused in one message when none is set, none
    of them accepts a connection, or none answers Kafka's metadata request
    (Spark's Kafka client would wait minutes and end on "Timed out waiting
    for a node assignment"). Under
    Spark Connect the server reaches the brokers, not this process, which
    therefore does not try."""
    what = (f"source '{step.name}' (declared at {step.where}) reads"
            if isinstance(step, SourceStep) else
            f"output '{step.inputs[0]}' (at {step.where}) writes")
    topic = step.options.get("topic")
    own = step.options.get("bootstrap")
    found = own or io.kafka_bootstrap or os.environ.get(ENV["kafka_bootstrap"], "").strip()
    if not found:
        raise SourceError(
            f"{what} Kafka topic '{topic}' but no broker is set; set "
            f"{ENV['kafka_bootstrap']}=host:port (bash scripts/kafka.sh start prints one), or "
            "give the statement properties.bootstrap.server='host:port'")
    if is_connect(io.spark):
        return found
    setting = ("the statement's properties.bootstrap.server" if own else
               f"{ENV['kafka_bootstrap']} (Dagster: SparkResource's kafka_bootstrap)")
    reasons = unanswered(found.split(","))
    if reasons:
        raise SourceError(
            f"{what} Kafka topic '{topic}' at {found}, but no broker there accepts a "
            f"connection ({'; '.join(reasons)}): start it (bash scripts/kafka.sh start "
            f"prints its address) or fix {setting}")
    answered = _ANSWERED.get(found)
    if answered is not None and time.monotonic() - answered < _REMEMBERED:
        return found
    remembered = _SILENT.get(found)
    if remembered is not None and time.monotonic() - remembered[0] < _SILENT_REMEMBERED:
        silent: str | None = remembered[1]
    else:
        silent = unanswered_brokers(found, ANSWER_SECONDS)
        if silent:
            _SILENT[found] = (time.monotonic(), silent)
    if silent:
        raise SourceError(
            f"{what} Kafka topic '{topic}' at {found}, which accepts a connection but does "
            f"not answer as a Kafka broker within {ANSWER_SECONDS:g} s ({silent}): name a "
            f"broker's listener (its advertised.listeners), not another server's port, in "
            f"{setting}")
    _SILENT.pop(found, None)
    _ANSWERED[found] = time.monotonic()
    return found


def stored_schema(step: SourceStep) -> StructType:
    """The source's Delta table: ``_key``, the declared columns, ``ROWTIME``,
    and where each record was in the topic."""
    columns = ", ".join(f"`{c.name}` {c.type}" for c in step.declared)
    return StructType.fromDDL(f"`{KEY}` {step.relation.key_type}, {columns}, "
                              f"`{ROWTIME}` timestamp, __partition int, __offset bigint")


class KafkaSourceExecutor(SourceExecutor):
    """A Kafka source's own step (its records into its Delta table), and its
    table read by the steps downstream."""

    def markers(self, node: SourceNode, io: StepIO) -> dict[str, str]:
        """The topic's end offsets: a run is skipped when no record (and no
        partition) arrived since the last. Unreachable brokers give no
        marker to compare, and the run then says what failed."""
        step = node.step
        topic = step.options["topic"]
        try:
            servers = bootstrap(step, io)
            offsets = json.dumps(end_offsets(servers, topic))
        except Exception as err:  # SourceError, KafkaException: the run reports it
            offsets = f"unknown: {err}"
            servers = step.options.get("bootstrap", "")
        return {f"kafka://{servers}/{topic}": offsets}

    def failure(self, node: SourceNode, io: StepIO, cause: Cause) -> str | None:
        step = node.step
        try:
            servers = bootstrap(step, io)
        except SourceError:
            return None
        return lost_records(step.name, step.options["topic"], servers, cause)

    def read_stream(self, node: SourceNode, io: StepIO, options: dict[str, str]) -> DataFrame:
        step = node.step
        path = io.table_path(step)
        ensure_table(io.spark, path, stored_schema(step))
        columns = [F.col(f"`{c.name}`").alias(c.name) for c in step.declared]
        stream = delta_stream(io.spark, path, options, checkpoint=io.stream_checkpoint)
        return stream.select(KEY, *columns, ROWTIME)

    def query(self, node: SourceNode, io: StepIO) -> StepQuery:
        step, spark = node.step, io.spark
        servers = bootstrap(step, io)
        topic = step.options["topic"]
        prepare_topic(step, servers)
        path = io.table_path(step)
        ensure_table(spark, path, stored_schema(step))
        dead_path = dead_letter_table(io, step)
        before, dead_before = delta_version(spark, path), delta_version(spark, dead_path)
        checkpoint = io.checkpoint(step)
        skip = lost_records_policy(io.kafka_lost_records) == "skip"
        if skip:
            refuse_created_again(spark, step, checkpoint, servers, topic)
        stream = topic_stream(node, io, servers, {"failOnDataLoss": "false"} if skip else {})
        stored = [f"`{f.name}`" for f in stored_schema(step).fields]
        # A file per topic partition, side by side, unless a step downstream
        # takes the table one file per micro-batch for its arrival order (a
        # table materialization): then one file, sorted by partition and offset.
        one_file = read_in_order(io.pipeline, step.id)

        def ingest(batch: DataFrame, target: BatchTarget) -> None:
            txn, batch_id = target.txn_app, target.batch_id
            # Not cached: written in one pass, its dead letters read again
            # from their range alone (operators.dead_letters.write_checked).
            writers = writers_of(step, io) if is_avro(step) else None
            decoded = decode(step, batch, writers).select(
                *stored, "__reason", RECORD_TOPIC,
                F.when(F.col("__reason") != "", F.col(RECORD_VALUE)).alias(RECORD_VALUE))
            # What failOnDataLoss=false skipped, before the rows. A replay
            # of a micro-batch whose rows are written (a run killed after
            # them) wrote its range before them: the broker may have
            # deleted the records it read since, which are in the table.
            if skip and not is_written(target.spark, path, txn, batch_id):
                record_lost(target.spark, step, topic, servers, checkpoint, decoded,
                            dead_path, batch_id)
            write_checked(step, decoded, ORDER, stored, F.col(RECORD_VALUE), path, dead_path,
                          txn, batch_id, extra={"topic": F.col(RECORD_TOPIC),
                                                "partition": F.col("__partition"),
                                                "offset": F.col("__offset")},
                          one_file=one_file)

        def outcome() -> Outcome:
            return Outcome(rows=rows_written_since(spark, path, before),
                           dead_letters=rows_written_since(spark, dead_path, dead_before))

        return StepQuery(stream=stream, sink=Sink.CUSTOM, writer=ingest, outcome=outcome,
                         name=f"source:{step.id}")


def prepare_topic(step: SourceStep, servers: str) -> None:
    """Create the topic when the statement says how (ksqlDB's
    ``partitions=``) and the broker has none of that name."""
    topic = step.options["topic"]
    if "partitions" in step.options and not topic_exists(servers, topic):
        create_topic(servers, topic, int(step.options["partitions"]),
                     compacted=step.options.get("compacted") == "true",
                     replication=int(step.options.get("replication", "1")))


def client_options(step: SourceStep | SinkStep) -> dict[str, str]:
    """The statement's ``properties.*`` for Kafka's client, over
    ``read_committed``: a topic written in transactions (a Splice or ksqlDB
    output under exactly-once) is read without its aborted records, as
    ksqlDB's consumers read it."""
    own = {k: v for k, v in step.options.items() if k.startswith("kafka.")}
    return {"kafka.isolation.level": "read_committed", **own}


def topic_stream(node: SourceNode, io: StepIO, servers: str,
                 options: dict[str, str]) -> DataFrame:
    """The topic's records as Spark's Kafka source streams them, from the
    earliest offsets (the first run), with the statement's client options
    and ``options``; a session without Spark's Kafka connector is refused
    in words."""
    step = node.step
    reader = (io.spark.readStream.format("kafka").option("kafka.bootstrap.servers", servers)
              .option("subscribe", step.options["topic"]).option("startingOffsets", "earliest")
              .options(**client_options(step), **options))
    try:
        return reader.load()
    except Exception as err:  # the connector is not on the session's classpath
        cause = root_cause(err)
        raise SourceError(
            f"source '{step.name}' cannot read Kafka: {cause.summary.rstrip('.')}; Spark's "
            f"Kafka connector ({node.packages[0]}) must be loaded when the session starts "
            "(splice run does it for a pipeline with a Kafka source; elsewhere add it to "
            f"{ENV['packages']})", cause.detail) from None


def _decoded_key(step: SourceStep, text: Column) -> Column:
    """The record key as the key type: its text (KAFKA), or its JSON."""
    key_type = step.relation.key_type
    if step.options.get("key_format") == "json":
        return F.try_variant_get(F.try_parse_json(text), "$", key_type)
    if key_type == "string":
        return text
    if key_type.startswith("struct"):  # a struct key has no KAFKA text form
        return F.lit(None).cast(key_type)
    return text.try_cast(key_type)


def decode(step: SourceStep, batch: DataFrame, writers: Writers | None = None) -> DataFrame:
    """Every record with its stored columns and ``__reason``: empty for a
    row to store, NULL for a record skipped (a null value on a stream), else
    why it goes to the dead letter. ``writers``: the schemas of an Avro
    source's records (operators/avro_values.py)."""
    table = step.options.get("table") == "true"
    value_format = step.options.get("value_format", "json")
    raw = F.col("value")
    framed, _, after_header = avro_values.header(raw)
    if value_format == "avro":
        shown = F.base64(raw)  # the dead letter keeps the bytes
    elif value_format == "json_sr":
        shown = F.when(framed, after_header).otherwise(raw).cast("string")
    else:
        shown = raw.cast("string")
    records = batch.select(
        F.col("key").cast("string").alias(RECORD_KEY), shown.alias(RECORD_VALUE),
        raw.alias("__raw"),
        F.col("topic").alias(RECORD_TOPIC), F.col("partition").alias("__partition"),
        F.col("offset").alias("__offset"), F.col("timestamp").alias(RECORD_TIMESTAMP))
    changes = debezium.is_debezium(step)
    if changes:  # a change event as the upsert record it stands for
        records = debezium.changes(step, records, RECORD_VALUE, RECORD_KEY)
    key = F.col("__k")
    keys = step.relation.key_columns
    value = F.col(RECORD_VALUE)
    tombstone = F.col("__raw").isNull()
    typed: dict[str, Column] = {}
    for i, c in enumerate(step.declared):
        converted = F.col(f"__t{i}")
        if c.name in keys:  # a key column the value lacks comes from the key
            from_key = key if len(keys) == 1 else key.getField(c.name)
            converted = F.coalesce(converted, from_key)
        typed[c.name] = converted
    if not keys:
        record_key = key
    elif len(keys) == 1:
        record_key = typed[keys[0]]
    else:
        record_key = F.struct(*[typed[k].alias(k) for k in keys])
    key_format = step.options.get("key_format", "kafka")
    # text keys of no declared type always fit
    checked_key = bool(keys) or key_format == "json" or step.relation.key_type != "string"
    key_reason = F.when(F.lit(checked_key) & F.col(RECORD_KEY).isNotNull() & key.isNull(),
                        F.concat(F.lit("key '"), F.col(RECORD_KEY), F.lit(
                            f"' is not {step.relation.key_type.upper()} (key format "
                            f"{key_format.upper()})")))
    keep = [RECORD_VALUE, "__raw", RECORD_TOPIC, RECORD_KEY, *ORDER, RECORD_TIMESTAMP]
    if changes:
        keep += [debezium.ENVELOPE, debezium.CHANGE_REASON]
    record_key_of = F.col(debezium.KEY) if changes else _decoded_key(step, F.col(RECORD_KEY))
    # A tombstone's columns are NULL but its key's, which the key fills.
    columns = [F.when(tombstone, typed[c.name] if c.name in keys else F.lit(None))
               .otherwise(typed[c.name]).cast(c.type).alias(c.name) for c in step.declared]
    if value_format == "avro":
        if writers is None:
            raise ValueError(f"source '{step.name}' reads Avro values: decode needs its writers")
        rows = _avro_rows(step, records, keep, writers, [
            record_key.alias(KEY), *columns,
            F.when(~tombstone, F.nullif(F.col("__vr"), F.lit(""))).alias("__value_reason"),
            key_reason.alias("__key_reason")])
    else:
        parsed = records.select(*keep, text_fields(step, value).alias("__j"),
                                object_verdict(value, batch.sparkSession).alias("__verdict"),
                                record_key_of.alias("__k"))
        # A field spelt in another case than its column still fills it (ksqlDB
        # writes NAME for a column name): operators/kafka_fields.py.
        parsed = parsed.select(*keep, any_case_fields(step, F.col("__j"), value, F.col(
            "__verdict")).alias("__j"), "__verdict", "__k")
        reason = value_reason(step, value, "__j", batch.sparkSession)
        if value_format == "json_sr":
            unframed = ~avro_values.header(F.col("__raw"))[0]
            reason = F.when(unframed, F.lit(avro_values.NOT_FRAMED)).otherwise(reason)
        rows = converted_once(step, parsed, "__j").select(
            *keep, record_key.alias(KEY), *columns,
            F.when(~tombstone, F.nullif(reason, F.lit(""))).alias("__value_reason"),
            key_reason.alias("__key_reason"))
    if step.timestamp_column is None:
        rowtime = F.col(RECORD_TIMESTAMP)
    else:
        rowtime = F.when(tombstone, F.col(RECORD_TIMESTAMP)).otherwise(rowtime_of(step))
    missing_key = F.when(F.lit(table) & F.col(f"`{KEY}`").isNull(), F.lit(
        "missing key: the record has no key and its value no key column"))
    # A null value on a stream is skipped (ksqlDB), unless the source keeps
    # it as a row without a value (a Lenses topic: SELECT TABLE deletes its key).
    skip_null = not table and step.options.get("null_values") != "tombstone"
    reason = (F.when(tombstone & F.lit(skip_null), F.lit(None).cast("string"))
              .otherwise(F.concat_ws("; ", F.col("__value_reason"), F.col("__key_reason"),
                                     missing_key)))
    dropped = ("__value_reason", "__key_reason", "__raw")
    if changes:  # Debezium's tombstone after a delete is skipped; the record as written
        reason = (F.when(F.col(debezium.ENVELOPE).isNull(), F.lit(None).cast("string"))
                  .when(F.col(debezium.CHANGE_REASON).isNotNull(),
                        F.col(debezium.CHANGE_REASON)).otherwise(reason))
        rows = rows.withColumn(RECORD_VALUE, F.col(debezium.ENVELOPE))
        dropped += (debezium.ENVELOPE, debezium.CHANGE_REASON)
    out = [c for c in rows.columns if c not in dropped]
    return rows.select(*out, rowtime.alias(ROWTIME), reason.alias("__reason"))


def _avro_rows(step: SourceStep, records: DataFrame, keep: list[str], writers: Writers,
               outputs: list[Column]) -> DataFrame:
    """``records`` decoded as Avro, each part computed once a record (a
    column, read by the next select): the header (``__framed``, ``__sid``),
    the record (``__rec``), its columns (``__t<i>``) and its reason
    (``__vr``), then ``outputs`` over them."""
    framed, schema_id, payload = avro_values.header(F.col("__raw"))
    parts = records.select(*keep, framed.alias("__framed"), schema_id.alias("__sid"),
                           payload.alias("__payload"),
                           _decoded_key(step, F.col(RECORD_KEY)).alias("__k"))
    sid = F.col("__sid")
    decoded = parts.select(*keep, "__framed", "__sid", "__k", avro_values.decoded_record(
        sid, F.col("__payload"), writers).alias("__rec"))
    rec = F.col("__rec")
    typed = decoded.select("*", *[col.alias(f"__t{i}") for i, col in
                                  enumerate(avro_values.typed_columns(step, rec, writers))],
                           avro_values.header_reason(F.col("__framed"), sid, rec, writers)
                           .alias("__hr"))
    with_reason = typed.select("*", F.when(F.col("__hr") != "", F.col("__hr")).otherwise(
        avro_values.column_reasons(step, rec, writers)).alias("__vr"))
    return with_reason.select(*keep, *outputs)
