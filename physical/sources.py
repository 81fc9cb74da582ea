"""The physical nodes of the sources, one per format (and one for a Kafka
stream read in place). Pure (no Spark); their executors are in
``splice.operators`` (sources.py, json_source.py, kafka_source.py,
kafka_in_place.py).
"""

from __future__ import annotations

from typing import ClassVar

from splice.physical.base import ExplainNode, PhysicalNode, Reads
from splice.sql.plan import SourceStep, Step


class SourceNode(PhysicalNode):
    """A declared source: read into the stored layout, its bad records to
    the dead-letter table. It reads no step. A source node takes the
    sources of its ``format``."""

    plans: ClassVar[type[Step]] = SourceStep
    format: ClassVar[str] = ""
    step: SourceStep

    @classmethod
    def takes(cls, step: Step) -> bool:
        return isinstance(step, SourceStep) and step.format == cls.format

    def reads(self) -> Reads:
        return Reads()

    def explain(self) -> ExplainNode:
        step = self.step
        return ExplainNode(name="Source", props={
            **self.header(), "format": step.format, "location": step.location,
            "event time": step.timestamp_column or "ingestion time",
            "watermark": f"{step.watermark_ms} ms" if step.watermark_ms is not None else "",
            "bad records": "dead-letter table"})


class DeltaSource(SourceNode):
    """A Delta table, read in place (``operators/sources.py``)."""

    kind: ClassVar[str] = "source.delta"
    format: ClassVar[str] = "delta"


class JsonSource(SourceNode):
    """A folder of JSON-lines files, ingested into a Delta table
    (``operators/json_source.py``)."""

    kind: ClassVar[str] = "source.json"
    format: ClassVar[str] = "json"


class KafkaSource(SourceNode):
    """A Kafka topic, ingested into a Delta table (``operators/kafka_source.py``)."""

    kind: ClassVar[str] = "source.kafka"
    format: ClassVar[str] = "kafka"
    # Spark's Kafka connector, matching pyspark (engine/session.py loads it
    # with Delta's when a pipeline has a Kafka source).
    packages: ClassVar[tuple[str, ...]] = (
        "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",)
    # spark-avro's from_avro decodes Avro values (operators/avro_values.py).
    avro_packages: ClassVar[tuple[str, ...]] = ("org.apache.spark:spark-avro_2.13:4.2.0",)

    def needs(self) -> tuple[str, ...]:
        if self.step.options.get("value_format") == "avro":
            return (*self.packages, *self.avro_packages)
        return self.packages

    def explain(self) -> ExplainNode:
        node = super().explain()
        options = self.step.options
        props = {k: v for k, v in node.props.items() if k != "location"}
        value_format = options.get("value_format", "json")
        props.update({
            "topic": options.get("topic", ""), "key format": options.get("key_format", ""),
            "offsets": "earliest, then the checkpoint's",
            "null value": "tombstone of its key" if options.get("table") else
            "kept as a row without a value (a tombstone when read as a table)"
            if options.get("null_values") == "tombstone" else "skipped"})
        if options.get("envelope") == "debezium":
            props["null value"] = "skipped (Debezium's tombstone after its delete)"
            props["changes"] = ("Debezium envelopes: op c, r, u upsert the after row, d deletes "
                                "the key")
        if value_format != "json":
            props["value format"] = value_format.upper()
        if value_format == "avro":
            given = options.get("value_schema_id")
            props["value schema"] = (
                f"subject '{options.get('value_subject', '')}', schema id "
                f"{given or options.get('value_schema_resolved', '?')}"
                + (" (VALUE_SCHEMA_ID)" if given else " (its latest version when compiled)"))
            props["writer schemas"] = "every version of the subject, resolved to the reader's"
        elif value_format == "json_sr":
            props["value schema"] = "JSON after the registry's 5-byte header"
        if self.step.timestamp_column is None:
            props["event time"] = "the record's timestamp"
        return node.model_copy(update={"props": props})


class KafkaInPlace(KafkaSource):
    """A Kafka stream topic read in place by the one step that reads it
    (``stored='false'``; ``operators/kafka_in_place.py``)."""

    kind: ClassVar[str] = "source.kafka.in_place"

    @classmethod
    def takes(cls, step: Step) -> bool:
        return super().takes(step) and step.in_place

    def explain(self) -> ExplainNode:
        node = super().explain()
        return node.model_copy(update={"props": {
            **node.props, "offsets": "earliest, then the reading step's checkpoint's",
            "stored": "no: read in place by the step that reads it",
            "bad records": "dead-letter table, written after the reading step's micro-batches"}})


class UnsupportedSource(SourceNode):
    """A format the language accepts that no reader runs yet: EXPLAIN shows
    it; compiling it is a positioned error (``splice.physical.planner``)."""

    kind: ClassVar[str] = "source.unsupported"
    format: ClassVar[str] = "unsupported"  # no source's: the planner makes it

    @classmethod
    def takes(cls, step: Step) -> bool:
        return False
