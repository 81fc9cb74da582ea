"""Records a Kafka source's broker deleted before a run read them, skipped
on the user's word (``kafka_lost_records=skip``) and written down.

By default such a run stops (operators/kafka_loss.py says why): nothing is
skipped silently. A user whose broker's retention has already deleted the
records has no way to get them back, and without this setting no way on
but a new warehouse. With ``skip`` the source's query reads with Spark's
``failOnDataLoss=false``, which skips offsets the broker no longer has,
and each micro-batch writes down what was skipped before its rows: the
batch's range per partition is in Spark's offset log (from the end of the
previous micro-batch to its own end), and a range that starts before the
partition's first offset on the broker, and before the first record the
batch read, lost the records between. Each such range becomes one row of
the source's dead letter (``record`` NULL, ``offset`` the first lost
offset, the reason naming the range), counted among the run's dead letters
(so the CLI prints it and Dagster's ``no_dead_letters`` check warns). Done
in the micro-batch, it also sees records deleted while a run (or ``splice
serve``'s long-running query) reads.

The row is MERGEd by (topic, partition, first offset): a micro-batch killed
after writing it is run again under its id, over the same range, and
rewrites the row (with the longer range if the broker deleted more
meanwhile: those records are not in the table either); never a second
row. One killed after its rows too is not written down again (the caller
checks the rows' mark): the records it read may be gone from the broker
since, but they are in the table. A topic deleted and created again (a
partition ending before where the checkpoint reads on) is refused before
the query starts: Spark would skip its new records too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from splice.engine import fs
from splice.engine.delta_sql import merge, quote, table_ref
from splice.engine.faults import KillPoint, reached
from splice.engine.kafka_topics import first_offsets, watermarks
from splice.engine.offset_log import logged_batches, source_offsets
from splice.engine.settings import ENV
from splice.operators.kafka_loss import created_again
from splice.operators.sources import SourceError
from splice.sql.plan import SourceStep

# Where a Kafka record was: its dead letter's columns beyond the common ones.
PLACE = {"topic": "string", "partition": "int", "offset": "bigint"}


@dataclass(frozen=True)
class Gap:
    """Offsets ``start`` (the first lost) up to ``end`` (exclusive) of one
    partition."""

    partition: int
    start: int
    end: int

    def reason(self) -> str:
        count = self.end - self.start
        span = (f"offset {self.start}" if count == 1 else
                f"offsets {self.start} to {self.end - 1}")
        return (f"lost: {count} record(s) at {span} were deleted by the broker (the topic's "
                f"retention) before Splice read them; skipped, as "
                f"{ENV['kafka_lost_records']}=skip asks")


def _offsets(text: str, topic: str) -> dict[int, int]:
    """``{partition: offset}`` of ``topic`` in a Kafka source's offsets JSON."""
    return {int(p): int(o) for p, o in json.loads(text).get(topic, {}).items()}


def resume_offsets(spark: SparkSession, checkpoint: str, topic: str) -> dict[int, int] | None:
    """Where the query of ``checkpoint`` reads each partition of ``topic``
    from next: the end offsets of its last committed micro-batch (line 3 of
    Spark's ``offsets/<batch>``: the query's one source), or before any
    commit the offsets it started from (``sources/0/0``, after a version
    line); None before its first micro-batch was planned (it starts from
    the earliest offsets the broker has: nothing to lose)."""
    committed = logged_batches(spark, f"{checkpoint}/commits")
    if committed:
        return _log_offsets(spark, checkpoint, committed[-1], topic)
    if not fs.exists(spark, f"{checkpoint}/sources/0/0"):
        return None
    return _start_offsets(spark, checkpoint, topic)


def _start_offsets(spark: SparkSession, checkpoint: str, topic: str, source: int = 0
                   ) -> dict[int, int]:
    """The offsets the query started from (``sources/<source>/0``, after a
    NUL and a version line)."""
    text = fs.read_text(spark, f"{checkpoint}/sources/{source}/0")
    return _offsets(text.split("\n", 1)[1], topic)


def _log_offsets(spark: SparkSession, checkpoint: str, batch_id: int, topic: str,
                 source: int = 0) -> dict[int, int]:
    """The end offsets of micro-batch ``batch_id`` in Spark's offset log
    (the query's source number ``source``, by default its one source)."""
    return _offsets(source_offsets(spark, checkpoint, batch_id)[source], topic)


def batch_range(spark: SparkSession, checkpoint: str, topic: str, batch_id: int,
                source: int = 0) -> tuple[dict[int, int], dict[int, int]]:
    """(where micro-batch ``batch_id`` of the query of ``checkpoint`` reads
    each partition of ``topic`` from, where it stops): the previous
    micro-batch's end offsets (the first's: the query's start,
    ``sources/<source>/0`` after a version line), and its own. ``source``:
    the topic's place among the query's sources (by default its one)."""
    start = (_log_offsets(spark, checkpoint, batch_id - 1, topic, source) if batch_id > 0
             else _start_offsets(spark, checkpoint, topic, source))
    return start, _log_offsets(spark, checkpoint, batch_id, topic, source)


def topic_source(spark: SparkSession, checkpoint: str, batch_id: int, topic: str) -> int | None:
    """The place of the Kafka source that reads ``topic`` among the
    sources of the query of ``checkpoint`` (its line of micro-batch
    ``batch_id``'s offsets: ``{topic: {partition: offset}}``); None when no
    source of the query reads it."""
    for n, text in enumerate(source_offsets(spark, checkpoint, batch_id)):
        try:
            offsets = json.loads(text)
        except ValueError:  # "-": a source without offsets yet
            continue
        if isinstance(offsets, dict) and isinstance(offsets.get(topic), dict):
            return n
    return None


def lost_in_batch(start: dict[int, int], end: dict[int, int], firsts: dict[int, int],
                  first_read: dict[int, int]) -> list[Gap]:
    """The ranges a micro-batch from ``start`` to ``end`` lost per
    partition: from its start (a partition new to the query: 0, as Spark
    reads one) up to the first offset the broker has now (``firsts``), the
    first record the batch read (``first_read``) and its end, whichever
    comes first. An offset below the broker's first that the batch did not
    read was deleted unread."""
    found = []
    for p, stop in sorted(end.items()):
        lo = start.get(p, 0)
        hi = min(stop, firsts.get(p, stop), first_read.get(p, stop))
        if hi > lo:
            found.append(Gap(p, lo, hi))
    return found


def record_lost(spark: SparkSession, step: SourceStep, topic: str, servers: str,
                checkpoint: str, batch: DataFrame, dead_path: str, batch_id: int) -> list[Gap]:
    """Write down what micro-batch ``batch_id`` (its records, with
    ``__partition`` and ``__offset``; read twice, so cached by the caller)
    lost; the ranges."""
    start, end = batch_range(spark, checkpoint, topic, batch_id)
    first_read = {r[0]: r[1] for r in batch.groupBy("__partition")
                  .agg(F.min("__offset")).collect()}
    found = lost_in_batch(start, end, first_offsets(servers, topic), first_read)
    if found:
        record_gaps(spark, step, topic, found, dead_path, batch_id)
    return found


def record_gaps(spark: SparkSession, step: SourceStep, topic: str, found: list[Gap],
                dead_path: str, batch_id: int) -> None:
    """One dead-letter row per gap, MERGEd by where it starts, into the
    source's dead letter (created by the source; the columns of a record's
    place are added when no bad record has added them yet)."""
    have = set(spark.read.format("delta").load(dead_path).columns)
    missing = [f"{quote(name)} {typ}" for name, typ in PLACE.items() if name not in have]
    if missing:
        spark.sql(f"ALTER TABLE {table_ref(dead_path)} ADD COLUMNS ({', '.join(missing)})")
    rows = spark.createDataFrame(
        [(step.name, None, gap.reason(), str(batch_id), None, topic, gap.partition, gap.start)
         for gap in found],
        "source string, record string, reason string, batch_id string, "
        "record_encoding string, topic string, partition int, offset bigint")
    merge(spark, dead_path, rows.selectExpr(
        "*", "date_format(current_timestamp(), \"yyyy-MM-dd'T'HH:mm:ss'Z'\") AS rejected_at"),
        "t.source = s.source AND t.topic = s.topic AND t.`partition` = s.`partition` "
        "AND t.`offset` = s.`offset` AND t.record IS NULL",
        ["WHEN MATCHED THEN UPDATE SET reason = s.reason, batch_id = s.batch_id, "
         "rejected_at = s.rejected_at",
         "WHEN NOT MATCHED THEN INSERT *"])
    reached(KillPoint.LOST_RECORDED, step.id)


def refuse_created_again(spark: SparkSession, step: SourceStep, checkpoint: str,
                         servers: str, topic: str) -> None:
    """Stop before the query starts when a partition of ``topic`` ends
    before where the query of ``checkpoint`` reads on: the topic was
    created again, and Spark would skip the range backwards, then every new
    record up to the new end, silently."""
    resume = resume_offsets(spark, checkpoint, topic)
    if resume is None:
        return
    behind = sorted((p, end, resume[p]) for p, (_, end) in watermarks(servers, topic).items()
                    if p in resume and end < resume[p])
    if behind:
        raise SourceError(created_again(step.name, topic, *behind[0]))
