"""The physical nodes of every step that is not a join: sources (one node
per format), projections, repartitions, table materializations,
aggregations. Pure (no Spark); their executors are the other modules of
``operators/``.
"""

from __future__ import annotations

from typing import ClassVar

from splice.engine.nodes import ExplainNode, PhysicalNode, Reads
from splice.sql.errors import Position, SqlError
from splice.sql.plan import (
    AggregateStep,
    Kind,
    MaterializeStep,
    ProjectStep,
    RepartitionStep,
    SinkStep,
    SourceStep,
)


class SourceNode(PhysicalNode):
    """A declared source: read into the stored layout, its bad records to
    the dead-letter table. It reads no step."""

    step: SourceStep

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


class JsonSource(SourceNode):
    """A folder of JSON-lines files, ingested into a Delta table
    (``operators/json_source.py``)."""

    kind: ClassVar[str] = "source.json"


class KafkaSource(SourceNode):
    """A Kafka topic, ingested into a Delta table (``operators/kafka_source.py``)."""

    kind: ClassVar[str] = "source.kafka"
    # Spark's Kafka connector, matching pyspark (engine/session.py loads it
    # with Delta's when a pipeline has a Kafka source).
    packages: ClassVar[tuple[str, ...]] = (
        "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",)

    def explain(self) -> ExplainNode:
        node = super().explain()
        options = self.step.options
        props = {k: v for k, v in node.props.items() if k != "location"}
        props.update({
            "topic": options.get("topic", ""), "key format": options.get("key_format", ""),
            "offsets": "earliest, then the checkpoint's",
            "null value": "tombstone of its key" if options.get("table") else
            "kept as a row without a value (a tombstone when read as a table)"
            if options.get("null_values") == "tombstone" else "skipped"})
        if self.step.timestamp_column is None:
            props["event time"] = "the record's timestamp"
        return node.model_copy(update={"props": props})


class KafkaInPlace(KafkaSource):
    """A Kafka stream topic read in place by the one step that reads it
    (``stored='false'``; ``operators/kafka_in_place.py``)."""

    kind: ClassVar[str] = "source.kafka.in_place"

    def explain(self) -> ExplainNode:
        node = super().explain()
        return node.model_copy(update={"props": {
            **node.props, "offsets": "earliest, then the reading step's checkpoint's",
            "stored": "no: read in place by the step that reads it",
            "bad records": "dead-letter table, written after the reading step's micro-batches"}})


class KafkaSink(PhysicalNode):
    """An output written to a Kafka topic (``operators/kafka_sink.py``)."""

    kind: ClassVar[str] = "sink.kafka"
    packages: ClassVar[tuple[str, ...]] = KafkaSource.packages
    step: SinkStep

    def explain(self) -> ExplainNode:
        step = self.step
        table = step.options.get("table") == "true"
        return ExplainNode(name="KafkaSink", props={
            **self.header(), "input": step.inputs[0] + (" (change feed)" if table else ""),
            "topic": step.topic + (" (compacted)" if table else ""),
            "record key": f"_key ({step.options.get('key_format', 'kafka').upper()})",
            "record value": "the value columns as a JSON object",
            "deleted key": "a tombstone (null value)" if table else "",
            "delivery": "at least once (Spark's Kafka sink)",
            "own rows": "the records sent"})


class UnsupportedSource(SourceNode):
    """A format the language accepts that no reader runs yet: EXPLAIN shows
    it; compiling it is a positioned error (:func:`plan_source`)."""

    kind: ClassVar[str] = "source.unsupported"


# One line per source format: the node that reads it.
SOURCE_FORMATS: dict[str, type[SourceNode]] = {
    "delta": DeltaSource,
    "json": JsonSource,
    "kafka": KafkaSource,
}


def plan_source(step: SourceStep, explainable: bool = False) -> SourceNode:
    """The node of a source's format; for a format the language accepts and
    no reader runs yet, a positioned error (``explainable``: a node EXPLAIN
    shows)."""
    node = SOURCE_FORMATS.get(step.format)
    if node is KafkaSource and step.in_place:
        node = KafkaInPlace
    if node is None and explainable:
        return UnsupportedSource(step=step)
    if node is None:
        where = Position(step.where.file, step.where.line, step.where.col)
        raise SqlError(where, f"the {step.format} source format is not supported yet",
                       f"use one of: {', '.join(SOURCE_FORMATS)}")
    return node(step=step)


class ProjectNode(PhysicalNode):
    """A filter and projection over one input (``operators/transform.py``)."""

    kind: ClassVar[str] = "project"
    passes_order: ClassVar[bool] = True
    step: ProjectStep

    def streams_in_place(self, input_id: str) -> bool:
        """Its one input, row by row (the planner refuses it when a step
        downstream depends on arrival order)."""
        return input_id in self.step.inputs[:1]

    def explain(self) -> ExplainNode:
        step = self.step
        return ExplainNode(name="Project", props={
            **self.header(), "input": step.inputs[0], "filter": step.filter or "",
            "new key": step.key or "",
            "output": "[" + ", ".join(p.name for p in step.select) + "]"})


class TableProjectNode(PhysicalNode):
    """A filter and projection over a table, maintained from its change
    feed (``operators/table_project.py``)."""

    kind: ClassVar[str] = "project.table"
    step: ProjectStep

    def explain(self) -> ExplainNode:
        step = self.step
        return ExplainNode(name="TableProject", props={
            **self.header(), "input": f"{step.inputs[0]} (change feed)",
            "filter": step.filter or "",
            "output": "[" + ", ".join(p.name for p in step.select) + "]",
            "maintained by": "MERGE on _key",
            "deletes": "a key deleted upstream" + (" or no longer passing the filter"
                                                  if step.filter else "")})


def plan_project(step: ProjectStep) -> PhysicalNode:
    """A projection of a stream, or of a table (kept from its changes)."""
    return TableProjectNode(step=step) if step.kind == Kind.TABLE else ProjectNode(step=step)


class RepartitionNode(PhysicalNode):
    """A stream re-keyed by a join expression (``operators/transform.py``)."""

    kind: ClassVar[str] = "repartition"
    passes_order: ClassVar[bool] = True
    step: RepartitionStep

    def streams_in_place(self, input_id: str) -> bool:
        """Its one input, row by row (the planner refuses it when a step
        downstream depends on arrival order)."""
        return input_id in self.step.inputs[:1]

    def explain(self) -> ExplainNode:
        return ExplainNode(name="Repartition", props={
            **self.header(), "input": self.step.inputs[0], "new key": self.step.key})


class MaterializeNode(PhysicalNode):
    """A stream read as a table, latest record per key
    (``operators/materialize.py``)."""

    kind: ClassVar[str] = "materialize"
    step: MaterializeStep

    def reads(self) -> Reads:
        """Its input in arrival order: the latest record of a key wins."""
        return Reads(streamed=self.step.inputs[:1], in_order=self.step.inputs[:1])

    def explain(self) -> ExplainNode:
        step = self.step
        return ExplainNode(name="TableMaterialize", props={
            **self.header(), "input": step.inputs[0], "maintained by": "MERGE on _key",
            "latest wins": "by arrival",
            "tombstone": "all of " + ", ".join(step.tombstone_columns) + " NULL"
            if step.tombstone_columns else "never"})


class AggregateNode(PhysicalNode):
    """GROUP BY over one input (``operators/aggregate.py``)."""

    kind: ClassVar[str] = "aggregate"
    step: AggregateStep

    def explain(self) -> ExplainNode:
        step = self.step
        return ExplainNode(name="Aggregate", props={
            **self.header(), "input": step.inputs[0], "filter": step.filter or "",
            "group by": ", ".join(step.group_by), "new key": step.key,
            "having": step.having or "",
            "output": "[" + ", ".join(f"{p.name} = {p.expr}" for p in step.select) + "]",
            "rowtime": step.rowtime,
            "state": "Spark's streaming aggregation, one row per group in the checkpoint",
            "emits": "the groups each micro-batch changed (update mode)",
            "maintained by": "MERGE on _key" + (
                "; a group whose HAVING turns false is deleted" if step.having else ""),
            "skips": "records whose value columns are all NULL"})
