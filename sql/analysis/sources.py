"""``CREATE STREAM|TABLE|SOURCE name (columns) WITH (...)``: a source step
(and, for a table, the step that materializes it), with its options, key,
event time and watermark checked."""

from __future__ import annotations

from splice.sql import expressions
from splice.sql.analysis.base import AnalyzerBase, name_of
from splice.sql.analysis.kafka import (
    KAFKA_OPTIONS,
    REGISTRY_URL,
    TOPIC,
    is_kafka,
    kafka_options,
    value_format_of,
)
from splice.sql.analysis.lenses_topics import TopicDeclaration, topic_declaration
from splice.sql.errors import Position, SqlError
from splice.sql.intervals import interval_ms
from splice.sql.names import check_location
from splice.sql.plan import ColumnSpec, Kind, MaterializeStep, Relation, SourceStep
from splice.sql.types import spark_type, struct_type
from splice.sql.value_schemas import RESOLVED, Registered, avro_columns, value_subject
from sqlglot import exp

SOURCE_OPTIONS = {"location", "format", "key", "timestamp", "changelog"}
SOURCE_FORMATS = {"delta", "json", "csv", "parquet", "kafka"}


class SourceAnalyzer(AnalyzerBase):
    """Source declarations."""

    def _source(self, node: expressions.CreateSource) -> None:
        name = name_of(node.this)
        kind_word = node.args["kind"].upper()
        pos = self.stmt.pos(node)
        options = {**self._options(node), **self._encode_options(node)}
        topic = None
        if node.args.get("topic_format") is not None:  # Lenses: a topic, read as a stream
            topic = topic_declaration(node, name, self.stmt.pos)
            options, kind_word = {"format": "kafka", **topic.options}, "STREAM"
        kafka = is_kafka(options)
        if "location" in options:
            check_location(options["location"], self._option_pos(node, "location"))
        columns = [
            ColumnSpec(name=c.name, type=spark_type(c.args["kind"]) if c.args.get("kind")
                       else "string", nullable=not _declared_not_null(c))
            for c in (topic.values if topic else node.expressions)
        ]
        registered = None
        if kafka and value_format_of(options) == "avro":
            columns, registered = self._avro_columns(node, options, name, columns, topic)
        if not columns:
            raise SqlError(pos, f"'{name}' declares no columns",
                           "declare its columns, or read Avro values whose schema the registry "
                           "gives (VALUE_FORMAT='AVRO', FORMAT PLAIN ENCODE AVRO (...))")
        by_lower = {c.name.lower(): c for c in columns}
        if len(by_lower) != len(columns):
            raise SqlError(pos, f"'{name}' declares a column twice",
                           "give every column its own name")
        keys = [k.strip() for k in options.get("key", "").split(",") if k.strip()]
        declared_keys = _declared_keys(node)
        if keys and declared_keys and [k.lower() for k in keys] != [
                k.lower() for k in declared_keys]:
            raise SqlError(self._option_pos(node, "key"), f"'{name}' declares its key twice: "
                           f"key='{options['key']}' and PRIMARY KEY/KEY "
                           f"{', '.join(declared_keys)}", "declare the key once")
        keys = keys or declared_keys
        for k in keys:
            if k.lower() not in by_lower:
                raise SqlError(pos, f"key column '{k}' of '{name}' is not one of its columns",
                               f"declare it, or key by one of: {', '.join(by_lower)}")
        keys = [by_lower[k.lower()].name for k in keys]
        watermark = node.args.get("watermark")
        ts = options.get("timestamp")
        watermark_ms = None
        if watermark is not None:
            ts = ts or watermark.this.name
            watermark_ms = self._watermark_ms(watermark)
        if ts is not None:
            col = by_lower.get(ts.lower())
            if col is None:
                raise SqlError(pos, f"timestamp column '{ts}' of '{name}' is not one of its "
                               "columns", f"declare it, or use one of: {', '.join(by_lower)}")
            if col.type not in {"timestamp", "timestamp_ntz", "date", "bigint"}:
                raise SqlError(pos, f"timestamp column '{ts}' is {col.type.upper()}",
                               "the event time must be a TIMESTAMP, a DATE, or a BIGINT of "
                               "epoch milliseconds")
            ts = col.name
        fmt = "kafka" if kafka else options.get("format", "delta").lower()
        if fmt not in SOURCE_FORMATS:
            raise SqlError(pos, f"format '{fmt}' is not supported",
                           f"use one of: {', '.join(sorted(SOURCE_FORMATS))}")
        changelog = options.get("changelog", "true").lower() not in {"false", "0", "no"}
        if kind_word != "TABLE" and "changelog" in options:
            raise SqlError(pos, "only a CREATE TABLE source can say changelog",
                           "drop the changelog option")
        if not changelog:
            raise SqlError(pos, "a keyed table source with changelog=false is not supported yet",
                           "declare the table's changelog (append-only) as the source instead")
        if len(keys) == 1:
            key_type = by_lower[keys[0].lower()].type
        elif keys:
            key_type = struct_type([(k, by_lower[k.lower()].type) for k in keys])
        else:
            key_type = topic.key_type if topic else "string"
        extra = {k: v for k, v in options.items() if k not in SOURCE_OPTIONS}
        location = options.get("location", name)
        if topic:
            location = topic.options["topic"]
        elif kafka:
            extra = kafka_options(node, options, name, kind_word == "TABLE",
                                  lambda key: self._option_pos(node, key), self.stmt.pos)
            extra.update({k: v for k, v in options.items()
                          if k not in SOURCE_OPTIONS | KAFKA_OPTIONS
                          and not k.startswith("properties.")})
            location = extra["topic"]
        elif node.args.get("row_format") is not None:
            raise SqlError(self.stmt.pos(node.args["row_format"]),
                           "FORMAT ... ENCODE is for a Kafka source",
                           "add connector='kafka' to the WITH (...), or drop the FORMAT clause")
        if registered is not None:
            extra["value_subject"] = value_subject(location)
            # the version the columns were checked against (or inferred
            # from): the reader's schema; not part of the step's definition
            extra[RESOLVED] = str(registered.schema_id)
        step_id = self._claim(name, node.this)
        relation = Relation(kind=Kind.STREAM, key_type=key_type, columns=tuple(columns),
                            key_columns=tuple(keys), time_column=ts, watermark_ms=watermark_ms)
        source = SourceStep(
            id=step_id, relation=relation, where=self.stmt.where, sql=self.stmt.parsed.text,
            name=name, location=location, format=fmt,
            declared=tuple(columns), timestamp_column=ts, watermark_ms=watermark_ms,
            changelog=changelog,
            options=extra,
        )
        if kind_word != "TABLE":
            self._add(source, name)
            return
        if not keys:
            raise SqlError(pos, f"table '{name}' has no key",
                           "a table is read by key: add WITH (key='column')")
        self._add(source)
        table_id = self._fresh_id(f"{name}_table")
        tombstone = tuple(c.name for c in columns if c.name not in keys and c.name != ts)
        self._add(MaterializeStep(
            id=table_id, inputs=(source.id,), where=self.stmt.where, sql=self.stmt.parsed.text,
            relation=relation.model_copy(update={"kind": Kind.TABLE}),
            tombstone_columns=tombstone,
        ), name)

    def _avro_columns(self, node: expressions.CreateSource, options: dict[str, str],
                      name: str, columns: list[ColumnSpec],
                      lenses: TopicDeclaration | None) -> tuple[list[ColumnSpec], Registered]:
        """The columns of a source of Avro values, checked against (or
        inferred from) the registry's schema of its topic (at the registry
        the statement names, RisingWave's ``schema.registry``, else the
        settings')."""
        if lenses is None:  # the options' own mistakes first: they need no registry
            kafka_options(node, options, name, node.args["kind"].upper() == "TABLE",
                          lambda key: self._option_pos(node, key), self.stmt.pos)
        keys = ([k.strip() for k in options.get("key", "").split(",") if k.strip()]
                or _declared_keys(node))
        topic = next((options[k] for k in TOPIC if k in options), name)
        id_at = (self._option_pos(node, "value_schema_id") if "value_schema_id" in options
                 else None)
        schemas = self.schemas
        url = options.get(REGISTRY_URL)
        if url is not None and schemas is not None:
            schemas = schemas.at(url)
        return avro_columns(schemas, topic, options.get("value_schema_id"), columns, keys,
                            self.stmt.pos(node), id_at)

    def _encode_options(self, node: expressions.CreateSource) -> dict[str, str]:
        """RisingWave's ``ENCODE AVRO (schema.registry = '...', ...)`` as the
        source's options: ``value_format`` and the registry's URL."""
        encode = node.args.get("row_encode")
        if encode is None or encode.name != "AVRO":
            return {}
        out = {"value_format": "avro"}
        for prop in node.args.get("encode_options") or []:
            key = prop.name.lower()
            value = prop.args["value"].name
            if key == "schema.registry":
                out[REGISTRY_URL] = value.split(",")[0].strip()
            elif key != "message":  # the record's full name: the subject's schema has it
                raise SqlError(self.stmt.pos(prop), f"ENCODE AVRO option '{prop.name}' is "
                               "not supported", "write ENCODE AVRO (schema.registry = "
                               "'http://...'); the registry's credentials are settings "
                               "(ksql.schema.registry.basic.auth.user.info)")
        return out

    def _options(self, node: expressions.CreateSource) -> dict[str, str]:
        out: dict[str, str] = {}
        for prop in node.args.get("options") or []:
            key = prop.name.lower()
            value = prop.args.get("value")
            out[key] = value.name if isinstance(value, exp.Expression) else str(value)
        return out

    def _option_pos(self, node: expressions.CreateSource, key: str) -> Position:
        prop = [p for p in node.args.get("options") or [] if p.name.lower() == key][-1]
        return self.stmt.pos(prop.args.get("value") or prop)

    def _watermark_ms(self, watermark: expressions.Watermark) -> int:
        expr = watermark.expression
        column = watermark.this.name.lower()
        if isinstance(expr, exp.Column) and expr.name.lower() == column:
            return 0
        if (isinstance(expr, exp.Sub) and isinstance(expr.this, exp.Column)
                and expr.this.name.lower() == column):
            ms = interval_ms(expr.expression)
            if ms is not None:
                return ms
        raise SqlError(self.stmt.pos(watermark), "a watermark must be 'ts - INTERVAL ...'",
                       f"write WATERMARK FOR {column} AS {column} - INTERVAL '20' SECOND")


def _declared_keys(node: expressions.CreateSource) -> list[str]:
    """The key columns the column list declares: ``id INT PRIMARY KEY``,
    ksqlDB's ``id INT KEY``, RisingWave's ``PRIMARY KEY (a, b)``."""
    keys = [c.name for c in node.expressions
            if any(isinstance(k, exp.ColumnConstraint)
                   and isinstance(k.args.get("kind"), exp.PrimaryKeyColumnConstraint)
                   for k in c.args.get("constraints") or [])]
    primary = node.args.get("primary_key")
    return keys + ([k.name for k in primary.expressions] if primary is not None else [])


def _declared_not_null(column: exp.Expression) -> bool:
    return any(isinstance(c, exp.ColumnConstraint)
               and isinstance(c.args.get("kind"), exp.NotNullColumnConstraint)
               and not c.args["kind"].args.get("allow_null")
               for c in column.args.get("constraints") or [])
