"""Records a Kafka source's broker deleted before a run read them, skipped
on the user's word (``kafka_lost_records=skip``) and written down.

By default such a run stops (operators/kafka_loss.py says why): nothing is
skipped silently. A user whose broker's retention has already deleted the
records has no way to get them back, and without this setting no way on
but a new warehouse. With ``skip``, before its query starts, the source
compares where its checkpoint goes on reading each partition (the end
offsets of the last committed micro-batch, in Spark's offset log) with the
first offset the broker still has; each partition whose first offset is
past that point lost the records between, and that range becomes one row
of the source's dead letter (``record`` NULL, ``offset`` the first lost
offset, the reason naming the range), counted among the run's dead letters
(so the CLI prints it and Dagster's ``no_dead_letters`` check warns). The
query then reads with Spark's ``failOnDataLoss=false``, which skips
exactly those offsets.

The row is MERGEd by (topic, partition, first offset): a run killed after
writing it and before its micro-batch commits finds the same range again
(the checkpoint has not moved) and rewrites the row, with the larger range
if the broker deleted more meanwhile; never a second row. What it cannot
see: records the broker deletes while the run reads them (after the
comparison); Spark skips those too, with a warning in Spark's log only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import SparkSession

from engine import fs
from engine.delta_sql import merge, quote, table_ref
from engine.faults import KillPoint, reached
from engine.kafka_topics import watermarks
from engine.settings import ENV
from operators.kafka_loss import created_again
from operators.sources import SourceError
from sql.plan import SourceStep

# Where a Kafka record was: its dead letter's columns beyond the common ones.
PLACE = {"topic": "string", "partition": "int", "offset": "bigint"}


@dataclass(frozen=True)
class Gap:
    """Offsets ``start`` (the first lost) up to ``end`` (the first the
    broker still has, exclusive) of one partition."""

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


def _batches(spark: SparkSession, folder: str) -> list[int]:
    """The micro-batch ids of an offset or commit log folder (its files are
    named by them; Spark's ``.crc`` and temporary files are not)."""
    return sorted(int(name) for name in fs.list_names(spark, folder) if name.isdigit())


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
    committed = _batches(spark, f"{checkpoint}/commits")
    if committed:
        lines = fs.read_text(spark, f"{checkpoint}/offsets/{committed[-1]}").splitlines()
        return _offsets(lines[2], topic)
    initial = f"{checkpoint}/sources/0/0"
    if not fs.exists(spark, initial):
        return None
    return _offsets(fs.read_text(spark, initial).split("\n", 1)[1], topic)


def gaps(resume: dict[int, int], firsts: dict[int, int]) -> list[Gap]:
    """The ranges lost per partition: from where reading goes on (a
    partition the checkpoint has not seen: from 0, as Spark reads a new
    partition) up to the broker's first offset."""
    return [Gap(p, resume.get(p, 0), first) for p, first in sorted(firsts.items())
            if first > resume.get(p, 0)]


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


def next_batch(spark: SparkSession, checkpoint: str) -> int:
    """The id of the micro-batch the query runs next (a planned one not yet
    committed is run again under its id)."""
    planned = _batches(spark, f"{checkpoint}/offsets")
    committed = _batches(spark, f"{checkpoint}/commits")
    if planned and (not committed or planned[-1] > committed[-1]):
        return planned[-1]
    return committed[-1] + 1 if committed else 0


def skip_lost(spark: SparkSession, step: SourceStep, checkpoint: str, servers: str,
              topic: str, dead_path: str) -> list[Gap]:
    """Write down the ranges of ``topic`` the broker deleted before the
    query of ``checkpoint`` read them (its caller then reads with
    ``failOnDataLoss=false``); the ranges."""
    resume = resume_offsets(spark, checkpoint, topic)
    if resume is None:
        return []
    ranges = watermarks(servers, topic)
    behind = sorted((p, end, resume[p]) for p, (_, end) in ranges.items()
                    if p in resume and end < resume[p])
    if behind:
        # Spark would skip the range backwards and then every record up to
        # the new end: the topic's new records, silently.
        raise SourceError(created_again(step.name, topic, *behind[0]))
    found = gaps(resume, {p: first for p, (first, _) in ranges.items()})
    if found:
        record_gaps(spark, step, topic, found, dead_path, next_batch(spark, checkpoint))
    return found
