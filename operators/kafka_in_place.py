"""Kafka sources read in place (``stored='false'``): no source table; the
one step that reads the source reads the topic itself, as ksqlDB's and
RisingWave's queries read a stream's topic.

The reading step's query decodes each record with the stored source's
rules (``splice.operators.kafka_source.decode``) and keeps the good ones; an
observation on the decoded records counts the bad ones and notes the
first and last of them (by partition, then offset), which Spark reports
with each micro-batch's progress. The reading step's checkpoint holds the
topic's offsets, so the rows are exactly once as any step's are.

The bad records' dead letters are written after the micro-batches that
skipped them are committed (:meth:`KafkaInPlaceExecutor.settle`, which the
runner calls once the reading step's query stopped, and ``splice serve``
as its queries go): for each committed micro-batch not settled yet, its
range of each partition (from Spark's offset log: the previous batch's end
to its own) narrowed to the observed first and last bad record is read
again as a batch, decoded again, and its bad records appended to the
source's dead letter with the micro-batch's mark (so a second settling
writes nothing twice). A micro-batch whose observation is not at hand (its
run was killed before settling) is read again whole. What was settled is
noted in the reading step's checkpoint (``in_place/<source>``).

Only a stream topic read by one step that streams it without depending on
its arrival order (an interval join, a stream-table join's stream side, a
projection or a repartition, with no table materialization downstream) may
be read in place (``physical/planner.py`` refuses the rest), and only
under the default ``kafka_lost_records=fail``: skipping records the broker
deleted is written down by the stored source's micro-batches.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from splice.engine import fs
from splice.engine.errors import Cause
from splice.engine.io import KEY, ROWTIME, StepIO, app_id, delta_version, rows_written_since
from splice.engine.offset_log import logged_batches
from splice.engine.query import Outcome, Sink, StepQuery
from splice.engine.settings import ENV, lost_records_policy
from splice.operators.dead_letters import append_dead_letters, dead_letters, raw_record
from splice.operators.kafka_gaps import batch_range, topic_source
from splice.operators.kafka_loss import lost_records
from splice.operators.kafka_source import (
    RECORD_TOPIC,
    RECORD_VALUE,
    KafkaSourceExecutor,
    bootstrap,
    client_options,
    decode,
    prepare_topic,
    topic_stream,
)
from splice.operators.sources import SourceError, dead_letter_table
from splice.physical.sources import SourceNode
from splice.sql.plan import SourceStep, Step

Ranges = dict[int, tuple[int, int]]  # partition -> (first offset, end offset exclusive)


def observation(step: SourceStep) -> str:
    """The name of the observation of ``step``'s bad records."""
    return f"splice_bad_records:{step.id}"


def settled_file(checkpoint: str, step: SourceStep) -> str:
    """Where the reading step's checkpoint notes the last micro-batch whose
    dead letters of ``step`` are written."""
    return f"{checkpoint}/in_place/{step.id}"


class KafkaInPlaceExecutor(KafkaSourceExecutor):
    """A Kafka source read in place: its own step only makes sure of the
    topic and the dead-letter table; the reading step streams the topic
    (:meth:`read_stream`) and writes the dead letters (:meth:`settle`)."""

    def query(self, node: SourceNode, io: StepIO) -> StepQuery:
        step = node.step
        prepare_topic(step, bootstrap(step, io))
        dead_letter_table(io, step)
        return StepQuery(stream=None, sink=Sink.CUSTOM, outcome=lambda: Outcome(rows=0),
                         name=f"source:{step.id}")

    def failure(self, node: SourceNode, io: StepIO, cause: Cause) -> str | None:
        """Records the broker deleted before the reading step read them, in
        words: skipping them needs the stored source, so the way on is to
        read the topic afresh with the reading step."""
        step = node.step
        try:
            servers = bootstrap(step, io)
        except SourceError:
            return None
        reader = next(s.id for s in io.pipeline.steps if step.id in s.inputs)
        return lost_records(step.name, step.options["topic"], servers, cause, remedy=(
            f"rebuild the step that reads the topic in place (splice run PIPELINE --rebuild "
            f"{reader}), which reads what the topic holds now, from its first offset"))

    def read_stream(self, node: SourceNode, io: StepIO, options: dict[str, str]) -> DataFrame:
        step = node.step
        assert not options, f"{step.id} is read in place: no reader options ({options})"
        if lost_records_policy(io.kafka_lost_records) == "skip":
            raise SourceError(
                f"source '{step.name}' (declared at {step.where}) is read in place "
                f"(stored='false'), and {ENV['kafka_lost_records']}=skip needs the source's "
                "own step to write down what it skips: remove stored='false', or set "
                f"{ENV['kafka_lost_records']}=fail")
        decoded = decode(step, topic_stream(node, io, bootstrap(step, io), {}))
        bad = F.col("__reason") != ""
        place = F.struct(F.col("__partition").alias("partition"),
                         F.col("__offset").alias("offset"))
        observed = decoded.observe(observation(step), F.count_if(bad).alias("n"),
                                   F.min(F.when(bad, place)).alias("first"),
                                   F.max(F.when(bad, place)).alias("last"))
        columns = [F.col(f"`{c.name}`").alias(c.name) for c in step.declared]
        return observed.where(F.col("__reason") == "").select(KEY, *columns, ROWTIME)

    def settle(self, node: SourceNode, io: StepIO, reader: Step,
               observed: dict[int, dict[str, Any]]) -> int:
        """Write the dead letters of every micro-batch of ``reader``'s query
        committed and not settled yet (``observed``: the observations at
        hand, by micro-batch); the dead letters written."""
        step, spark = node.step, io.spark
        checkpoint = io.checkpoint(reader)
        marker = settled_file(checkpoint, step)
        settled = int(fs.read_text(spark, marker)) if fs.exists(spark, marker) else -1
        pending = [b for b in logged_batches(spark, f"{checkpoint}/commits") if b > settled]
        if not pending:
            return 0
        dead_path = dead_letter_table(io, step)
        before = delta_version(spark, dead_path)
        txn = app_id(spark, checkpoint)
        topic = step.options["topic"]
        for batch_id in pending:
            source = topic_source(spark, checkpoint, batch_id, topic)
            if source is not None:
                start, end = batch_range(spark, checkpoint, topic, batch_id, source)
                seen = observed.get(batch_id, {}).get(observation(step))
                ranges = bad_ranges(start, end, seen)
                if ranges:
                    rows = _dead_letters_of(node, io, ranges, batch_id)
                    append_dead_letters(rows, dead_path, txn, batch_id)
            fs.write_text(spark, marker, str(batch_id))
        return rows_written_since(spark, dead_path, before)


def bad_ranges(start: dict[int, int], end: dict[int, int], seen: Any) -> Ranges:
    """The offsets of each partition that hold a micro-batch's bad records:
    its range (``start`` to ``end``; a partition new to the query from its
    earliest offset, -2 in Spark's words) narrowed to the first and last bad
    record ``seen`` (its observation: ``n``, ``first``, ``last``, each a
    partition and offset); the whole range without an observation."""
    if seen is not None and not seen["n"]:
        return {}
    ranges: Ranges = {}
    for p, hi in sorted(end.items()):
        lo = start.get(p, -2)
        if seen is not None:
            first, last = seen["first"], seen["last"]
            if not first["partition"] <= p <= last["partition"]:
                continue
            if p == first["partition"]:
                lo = max(lo, first["offset"])
            if p == last["partition"]:
                hi = min(hi, last["offset"] + 1)
        if hi > lo:
            ranges[p] = (lo, hi)
    return ranges


def _dead_letters_of(node: SourceNode, io: StepIO, ranges: Ranges, batch_id: int) -> DataFrame:
    """The dead-letter rows of the bad records in ``ranges`` of the topic,
    read again as a batch and decoded as the query decoded them."""
    step = node.step
    topic = step.options["topic"]
    raw = (io.spark.read.format("kafka")
           .option("kafka.bootstrap.servers", bootstrap(step, io))
           .option("assign", json.dumps({topic: sorted(ranges)}))
           .option("startingOffsets", json.dumps(
               {topic: {str(p): lo for p, (lo, _) in ranges.items()}}))
           .option("endingOffsets", json.dumps(
               {topic: {str(p): hi for p, (_, hi) in ranges.items()}}))
           .options(**client_options(step)).load())
    decoded = decode(step, raw)
    reason = F.col("__reason")
    # One file, without a shuffle: each Spark partition is one topic
    # partition's range, in offset order.
    bad = decoded.where(reason != "").coalesce(1)
    record, encoding = raw_record(F.col(RECORD_VALUE))
    return dead_letters(step, bad, reason, batch_id, record=record, encoding=encoding,
                        extra={"topic": F.col(RECORD_TOPIC), "partition": F.col("__partition"),
                               "offset": F.col("__offset")})
