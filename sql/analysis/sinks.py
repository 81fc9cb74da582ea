"""``CREATE STREAM|TABLE name WITH (kafka_topic='...', ...) AS SELECT``
(ksqlDB; Splice's own ``format='kafka', topic='...'``): the output, as any
``CREATE ... AS``, and a sink step that writes it to the topic."""

from __future__ import annotations

from splice.sql import expressions
from splice.sql.analysis.base import AnalyzerBase, name_of
from splice.sql.analysis.kafka import KAFKA_OPTIONS, is_kafka, kafka_options
from splice.sql.errors import Position, SqlError
from splice.sql.plan import ColumnSpec, Kind, Relation, SinkStep, Step
from sqlglot import exp

# What a sink's WITH (...) may hold besides properties.<name>: where the
# records go and how they are written.
# envelope: a source reads Debezium's change events; an output writes upsert records
SINK_OPTIONS = (KAFKA_OPTIONS - {"scan.startup.mode", "stored", "envelope"}) | {"format"}

# A sink's own rows: the records it sent (a tombstone's value is NULL).
SENT = (ColumnSpec(name="value", type="string"), ColumnSpec(name="batch_id", type="bigint"))


class SinkAnalyzer(AnalyzerBase):
    """Outputs written to a Kafka topic."""

    def _sink(self, node: expressions.CreateAs, kind: Kind, output: Step | None) -> None:
        """The sink step of ``output`` (of ``kind``). With no output (its query
        reads a name whose statement was rejected, and was skipped), the
        options are checked all the same and no step is added: they are this
        statement's own, and their errors are reported with the earlier one."""
        name = name_of(node.this)
        props = node.args.get("options") or []
        options = {p.name.lower(): _value(p) for p in props}

        def pos(key: str) -> Position:
            prop = [p for p in props if p.name.lower() == key][-1]
            return self.stmt.pos(prop.args.get("value") or prop)

        if not is_kafka(options) and "topic" not in options:
            raise SqlError(self.stmt.pos(props[0] if props else node),
                           f"the WITH (...) of output '{name}' names no Kafka topic",
                           f"write CREATE {node.args['kind'].upper()} {name} WITH "
                           f"(kafka_topic='{name}', value_format='JSON') AS SELECT ..., or "
                           "drop the WITH (...) for an output in the warehouse only")
        for key in options:
            if key not in SINK_OPTIONS and not key.startswith("properties."):
                raise SqlError(pos(key), f"option '{key}' is not one of an output topic's",
                               f"use {', '.join(sorted(SINK_OPTIONS))} or properties.<name>")
        normalized = kafka_options(node, {"format": "kafka", **options}, name,
                                   kind == Kind.TABLE, pos, self.stmt.pos)
        written = normalized.get("value_format", "json")
        if written != "json":
            option = "value_format" if "value_format" in options else "format"
            raise SqlError(pos(option), f"value format '{written.upper()}' is not supported "
                           "for an output topic yet: Splice writes its records as JSON",
                           "write VALUE_FORMAT='JSON' (sources read AVRO and JSON_SR)")
        if output is None:
            return
        self._add(SinkStep(
            id=self._fresh_id(f"{name}_topic"), inputs=(output.id,), where=self.stmt.where,
            sql=self.stmt.parsed.text, topic=normalized["topic"], options=normalized,
            relation=Relation(kind=Kind.STREAM, key_type="string", columns=SENT)))


def _value(prop: exp.Property) -> str:
    value = prop.args.get("value")
    return value.name if isinstance(value, exp.Expression) else str(value)
