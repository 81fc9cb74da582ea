"""The physical nodes of the steps that are neither a source nor a join:
projections, repartitions, table materializations, aggregations and the
Kafka sink. Pure (no Spark); their executors are in ``splice.operators``.
"""

from __future__ import annotations

from typing import ClassVar

from splice.physical.base import ExplainNode, PhysicalNode, Reads
from splice.physical.sources import KafkaSource
from splice.sql.plan import (
    AggregateStep,
    Kind,
    MaterializeStep,
    ProjectStep,
    RepartitionStep,
    SinkStep,
    Step,
)


class KafkaSink(PhysicalNode):
    """An output written to a Kafka topic (``operators/kafka_sink.py``)."""

    plans: ClassVar[type[Step]] = SinkStep
    kind: ClassVar[str] = "sink.kafka"
    packages: ClassVar[tuple[str, ...]] = KafkaSource.packages
    step: SinkStep

    def needs(self) -> tuple[str, ...]:
        """Spark's Kafka connector; spark-avro too when a key or the value
        is Avro (``to_avro``)."""
        options = self.step.options
        if "avro" in (options.get("value_format"), options.get("key_format")):
            return (*self.packages, *KafkaSource.avro_packages)
        return self.packages

    def explain(self) -> ExplainNode:
        step = self.step
        options = step.options
        table = options.get("table") == "true"
        key_format = options.get("key_format", "kafka")
        value_format = options.get("value_format", "json")
        value = {"json": "the value columns as a JSON object",
                 "avro": "the value columns as an Avro record (to_avro) after the registry's "
                         "5-byte header",
                 "json_sr": "the value columns as a JSON object after the registry's 5-byte "
                            "header"}[value_format]
        return ExplainNode(name="KafkaSink", props={
            **self.header(), "input": step.inputs[0] + (" (change feed)" if table else ""),
            "topic": step.topic + (" (compacted)" if table else ""),
            "record key": f"_key ({key_format.upper()})" + (
                f", subject '{options['key_subject']}'" if key_format == "avro" else ""),
            "value format": value_format.upper(),
            "value subject": "" if value_format == "json" else (
                f"'{options['value_subject']}' (TopicNameStrategy): the schema of the "
                "columns, registered when the step starts (a new version if compatible)"),
            "record value": value,
            "deleted key": "a tombstone (null value)" if table else "",
            "delivery": ("exactly once (exactly_once_v2: one Kafka transaction a micro-batch; "
                         "at_least_once: Spark's Kafka writer)"),
            "own rows": "the records sent"})


class RowByRowNode(PhysicalNode):
    """A node that streams its one input row by row, keeping its order: an
    input it may read in place (the planner refuses that when a step
    downstream depends on arrival order)."""

    passes_order: ClassVar[bool] = True

    def streams_in_place(self, input_id: str) -> bool:
        return input_id in self.step.inputs[:1]


class ProjectNode(RowByRowNode):
    """A filter and projection over one input (``operators/transform.py``)."""

    plans: ClassVar[type[Step]] = ProjectStep
    kind: ClassVar[str] = "project"
    step: ProjectStep

    def explain(self) -> ExplainNode:
        step = self.step
        return ExplainNode(name="Project", props={
            **self.header(), "input": step.inputs[0], "filter": step.filter or "",
            "new key": step.key or "",
            "output": "[" + ", ".join(p.name for p in step.select) + "]"})


class TableProjectNode(PhysicalNode):
    """A filter and projection over a table, maintained from its change
    feed (``operators/table_project.py``)."""

    plans: ClassVar[type[Step]] = ProjectStep
    kind: ClassVar[str] = "project.table"
    step: ProjectStep

    @classmethod
    def takes(cls, step: Step) -> bool:
        return step.kind == Kind.TABLE

    def explain(self) -> ExplainNode:
        step = self.step
        return ExplainNode(name="TableProject", props={
            **self.header(), "input": f"{step.inputs[0]} (change feed)",
            "filter": step.filter or "",
            "output": "[" + ", ".join(p.name for p in step.select) + "]",
            "maintained by": "MERGE on _key",
            "deletes": "a key deleted upstream" + (" or no longer passing the filter"
                                                  if step.filter else "")})


class RepartitionNode(RowByRowNode):
    """A stream re-keyed by a join expression (``operators/transform.py``)."""

    plans: ClassVar[type[Step]] = RepartitionStep
    kind: ClassVar[str] = "repartition"
    step: RepartitionStep

    def explain(self) -> ExplainNode:
        return ExplainNode(name="Repartition", props={
            **self.header(), "input": self.step.inputs[0], "new key": self.step.key})


class MaterializeNode(PhysicalNode):
    """A stream read as a table, latest record per key
    (``operators/materialize.py``)."""

    plans: ClassVar[type[Step]] = MaterializeStep
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

    plans: ClassVar[type[Step]] = AggregateStep
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
