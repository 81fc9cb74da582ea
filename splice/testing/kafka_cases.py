"""The acceptance cases over Kafka (``splice test --sources kafka``).

A case declares its sources on Delta tables (``location=...``). Over Kafka,
each source is declared on a topic of its own instead, exactly as the
analyzer reads ``WITH (format='kafka', topic='...')`` (a table source as a
table topic; a key of several columns in the JSON key format, as it has no
KAFKA text form), and the case's rows are produced to those topics as
records:

- the value is the row as a JSON object, with the case's own spelling of
  every value (a row that does not fit the schema goes to the dead letter
  as it would from Delta);
- the key is the row's key column as text (KAFKA), or its key columns as a
  JSON object; a row without a key value has a null key;
- on a table topic, a row whose value columns are all null is a tombstone:
  a record with a null value, keyed by its key;
- the record's timestamp is the row's event time when the source declares
  one (so a tombstone keeps its place in time), else the producer's clock;
- a topic has one partition, so that it keeps the case's order, unless the
  source says ``partitions=N`` (ksqlDB's PARTITIONS; Delta ignores it):
  then a record goes to the partition its key hashes to, as Kafka's Java
  producer (ksqlDB's) puts it (murmur2 of the key's bytes), and a record
  without a key to the partitions in turn.

The pipeline is otherwise the one compiled from the case's SQL: the same
steps, joins and outputs, read by the same assertions.

``--sources kafka-in-place`` declares every stream source that its one
reading step can read in place so (``stored='false'``: no source table,
operators/kafka_in_place.py); the others stay stored, as the planner would
refuse them (physical/planner.py, ``refused_in_place``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from splice.engine.io import delta_exists
from splice.engine.kafka_topics import Record, create_topic, delete_topic, produce
from splice.physical.base import PhysicalPlan
from splice.physical.planner import plan, refused_in_place
from splice.sql.plan import MaterializeStep, Pipeline, SourceStep
from splice.testing.cases import check_columns


def topic_options(step: SourceStep, topic: str, table: bool) -> dict[str, str]:
    """The normalized options of ``step`` declared on ``topic``
    (``sql/analysis/kafka.py``'s, for ``format='kafka', topic=...``)."""
    keys = step.relation.key_columns
    options = {"topic": topic, "key_format": "json" if len(keys) > 1 else "kafka"}
    if "partitions" in step.options:
        options["partitions"] = step.options["partitions"]
    if table:
        options["table"] = "true"
    return options


def partitions_of(step: SourceStep) -> int:
    """How many partitions the source's topic has: its ``partitions=``, else 1."""
    return int(step.options.get("partitions", "1"))


def _table_sources(pipeline: Pipeline) -> set[str]:
    """The ids of sources declared as tables (their materialization reads
    them and nothing else)."""
    return {s.inputs[0] for s in pipeline.steps
            if isinstance(s, MaterializeStep) and len(s.inputs) == 1
            and isinstance(pipeline.step(s.inputs[0]), SourceStep)}


def _topic_name(case: str, source: str) -> str:
    """A fresh topic name (Kafka allows letters, digits, '.', '_', '-')."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", f"splice-case-{case}-{source}")[:200]
    return f"{safe}-{uuid.uuid4().hex[:8]}"


@dataclass
class KafkaCaseSources:
    """Sources on topics of ``bootstrap``, for the case runner
    (``splice.testing.cases.run_case``): :meth:`prepare` declares them, :meth:`append`
    produces a run's rows, :meth:`close` deletes the topics."""

    bootstrap: str
    # Every stream source a step can read in place is read so (stored='false').
    in_place: bool = False
    topics: dict[str, str] = field(default_factory=dict)  # source step id -> topic
    tables: set[str] = field(default_factory=set)
    partitions: dict[str, int] = field(default_factory=dict)  # source step id -> count
    # Records without a key produced so far, per source: they go round.
    keyless: dict[str, int] = field(default_factory=dict)
    # Per source: the rows the Delta source refuses (no event time), which
    # its dead letter holds; the Kafka source's must hold as many.
    refused: dict[str, int] = field(default_factory=dict)
    sources: dict[str, SourceStep] = field(default_factory=dict)

    @property
    def kafka_bootstrap(self) -> str:
        return self.bootstrap

    @property
    def schema_registry_url(self) -> str | None:
        """The registry the run's settings name: none for JSON values."""
        return None

    def source_options(self, step: SourceStep, topic: str, table: bool) -> dict[str, str]:
        """The options of ``step`` declared on ``topic`` (a subclass adds
        its value format's)."""
        return topic_options(step, topic, table)

    def value_of(self, step: SourceStep, row: dict[str, Any], record: Record) -> Record:
        """The record as this runner writes it (JSON: as :func:`record_of`
        made it)."""
        return record

    def prepare(self, pipeline: PhysicalPlan, case: str) -> PhysicalPlan:
        """``pipeline`` with every source on a new topic (created here)."""
        self.tables = _table_sources(pipeline)
        steps = []
        for step in pipeline.steps:
            if isinstance(step, SourceStep):
                topic = _topic_name(case, step.name)
                self.partitions[step.id] = partitions_of(step)
                create_topic(self.bootstrap, topic, self.partitions[step.id])
                self.topics[step.id] = topic
                step = step.model_copy(update={
                    "format": "kafka", "location": topic,
                    "options": self.source_options(step, topic, step.id in self.tables)})
            steps.append(step)
        logical = Pipeline(name=pipeline.name, steps=tuple(steps), explain=pipeline.explain,
                           origin=pipeline.origin)
        return plan(self._read_in_place(logical) if self.in_place else logical)

    def _read_in_place(self, logical: Pipeline) -> Pipeline:
        """``logical`` with ``stored='false'`` on each stream source the
        planner lets its reader read in place."""
        def in_place(step: Any) -> Any:
            if not isinstance(step, SourceStep) or step.id in self.tables:
                return step
            return step.model_copy(update={"options": {**step.options, "stored": "false"}})

        trial = plan(logical.model_copy(update={"steps": tuple(map(in_place, logical.steps))}),
                     explainable=True)
        allowed = {i for i, node in trial.nodes.items()
                   if node.step.in_place and refused_in_place(trial, node) is None}
        return logical.model_copy(update={"steps": tuple(
            in_place(s) if s.id in allowed else s for s in logical.steps)})

    def append(self, io: Any, step: SourceStep, rows: list[dict[str, Any]]) -> None:
        check_columns(step, rows)  # as strict as the Delta source's rows
        self.sources[step.id] = step
        self.refused[step.id] = self.refused.get(step.id, 0) + sum(
            _refused(step, row, step.id in self.tables) for row in rows)
        count = self.partitions.get(step.id, 1)
        records = []
        for row in rows:
            record = self.value_of(step, row, record_of(step, row, step.id in self.tables))
            if count > 1:
                n = self.keyless.get(step.id, 0)
                if record.key is None:
                    self.keyless[step.id] = n + 1
                record = replace(record, partition=partition_of(record.key, count, n))
            records.append(record)
        produce(self.bootstrap, self.topics[step.id], records)

    def check(self, io: Any) -> list[str]:
        """Each source's dead letter holds as many records as the Delta
        source's would (its rows without an event time): a record the Kafka
        source refused and Delta reads is a difference, named with the
        reasons, even when no expected row shows it."""
        from pyspark.sql import functions as F

        problems = []
        for step_id, step in self.sources.items():
            path = io.warehouse.dead_letter_path(io.pipeline.name, step.name)
            if not delta_exists(io.spark, path):  # never made: none refused
                continue
            dead = io.spark.read.format("delta").load(path)
            reasons = [r[0] for r in dead.groupBy("reason").count()
                       .orderBy(F.desc("count")).select(
                           F.concat(F.col("count"), F.lit(" x "), F.col("reason"))).collect()]
            count, want = dead.count(), self.refused.get(step_id, 0)
            if count != want:
                problems.append(
                    f"source '{step.name}': {count} record(s) in the dead letter over Kafka, "
                    f"{want} over Delta ({'; '.join(reasons) or 'none'})")
        return problems

    def close(self) -> None:
        for topic in self.topics.values():
            delete_topic(self.bootstrap, topic)


def _refused(step: SourceStep, row: dict[str, Any], table: bool) -> bool:
    """Whether ``row`` belongs in the source's dead letter: a Delta source
    refuses a row without its event time; a Kafka table topic also a record
    without a key (ksqlDB drops it; docs/decisions/kafka-source.md)."""
    by_lower = {str(k).lower(): v for k, v in row.items()}
    if step.timestamp_column and by_lower.get(step.timestamp_column.lower()) is None:
        return True
    keys = step.relation.key_columns
    return table and bool(keys) and all(by_lower.get(k.lower()) is None for k in keys)


def record_of(step: SourceStep, row: dict[str, Any], table: bool) -> Record:
    """One case row as the record a producer of that source would write."""
    by_lower = {str(k).lower(): v for k, v in row.items()}
    keys = step.relation.key_columns
    values = [by_lower.get(k.lower()) for k in keys]
    if not keys or all(v is None for v in values):
        key: Any = None
    elif len(keys) == 1:
        key = _key_text(values[0], step.relation.key_type)
    else:
        key = json.dumps(dict(zip(keys, values, strict=True)), default=str)
    time = by_lower.get(step.timestamp_column.lower()) if step.timestamp_column else None
    tombstone_columns = [c.name for c in step.declared
                         if c.name not in keys and c.name != step.timestamp_column]
    tombstone = table and bool(tombstone_columns) and all(
        by_lower.get(c.lower()) is None for c in tombstone_columns)
    # Written as the JSON-lines source writes a row (default=str: dates,
    # decimals), so both sources read the same text.
    value = None if tombstone else json.dumps(row, default=str)
    return Record(value=value, key=key, timestamp_ms=_epoch_ms(time))


def _key_text(value: Any, key_type: str = "string") -> str:
    """A key's KAFKA text: what the value column holds, as text, spelt one
    way per value of the key's type (``12.5`` and ``12.50`` of a
    DECIMAL(10,2) are one key, ``12.50``), as a producer serializing the
    typed key writes it: one key, one byte string, one partition."""
    if isinstance(value, bool):
        return "true" if value else "false"
    try:
        if key_type in ("tinyint", "smallint", "int", "bigint") and not isinstance(value, str):
            return str(int(value))
        if key_type in ("double", "float") and not isinstance(value, str):
            return repr(float(value))
        scale = re.fullmatch(r"decimal\(\d+,\s*(\d+)\)", key_type)
        if scale and not isinstance(value, str):
            return str(Decimal(str(value)).quantize(Decimal(1).scaleb(-int(scale.group(1)))))
    except (ValueError, ArithmeticError):  # not of the type: as the case spells it
        pass
    return str(value)


def _epoch_ms(value: Any) -> int | None:
    """A row's event time as Kafka's record timestamp (epoch milliseconds,
    UTC like the session), or None to let the producer stamp it."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    else:
        try:
            moment = dt.datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    stamp = int(moment.timestamp() * 1000)
    return stamp if stamp >= 0 else None


def partition_of(key: str | None, partitions: int, keyless: int = 0) -> int:
    """The partition Kafka's Java producer gives a record of ``key`` among
    ``partitions``: murmur2 of the key's UTF-8 bytes, made positive, modulo
    the count (``BuiltInPartitioner.partitionForKey``); a record without a
    key, the ``keyless``-th, goes to the partitions in turn."""
    if key is None:
        return keyless % partitions
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: 32-bit MurmurHash2, seed 0x9747b28c, as a
    signed int."""
    mask, m = 0xFFFFFFFF, 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail = data[length - length % 4:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h
