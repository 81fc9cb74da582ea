"""Kafka sources in each dialect's words (no Spark): Splice's format='kafka',
ksqlDB's kafka_topic / value_format / key_format / KEY / PRIMARY KEY,
RisingWave's connector='kafka' ... FORMAT PLAIN|UPSERT|DEBEZIUM ENCODE JSON; what
they compile to, and the positioned errors of what is not supported."""

from __future__ import annotations

import pytest
from splice.physical.explain import explain_step
from splice.runtime.compile import compile_text
from splice.sql.errors import SqlErrors
from splice.sql.plan import MaterializeStep, SourceStep


def source(sql: str, name: str = "s") -> SourceStep:
    plan = compile_text(sql, "k.sql", "k")
    step = plan.step(name)
    assert isinstance(step, SourceStep)
    assert plan.node(name).kind == "source.kafka"
    return step


def test_splice_form() -> None:
    step = source("CREATE STREAM s (id INT, v STRING, ts TIMESTAMP) WITH (format='kafka', "
                  "topic='orders', key='id', timestamp='ts', bootstrap='h:9092', "
                  "properties.security.protocol='PLAINTEXT')")
    assert (step.format, step.location, step.timestamp_column) == ("kafka", "orders", "ts")
    assert step.relation.key_columns == ("id",) and step.relation.key_type == "int"
    assert step.options == {"topic": "orders", "key_format": "kafka", "bootstrap": "h:9092",
                            "kafka.security.protocol": "PLAINTEXT"}


def test_splice_form_topic_defaults_to_the_name() -> None:
    assert source("CREATE STREAM s (id INT) WITH (format='kafka')").options["topic"] == "s"


def test_ksqldb_stream_with_key_column_and_formats() -> None:
    step = source("CREATE STREAM s (id INT KEY, v STRING) WITH (kafka_topic='orders', "
                  "value_format='JSON', key_format='JSON', partitions=3)")
    assert step.relation.key_columns == ("id",)
    assert step.options == {"topic": "orders", "key_format": "json", "partitions": "3"}


def test_ksqldb_table_with_primary_key_is_a_table_topic() -> None:
    plan = compile_text("CREATE TABLE s (id INT PRIMARY KEY, v STRING) WITH ("
                        "kafka_topic='customers', format='JSON')", "k.sql", "k")
    step = plan.step("s")
    assert isinstance(step, SourceStep)
    assert step.options == {"topic": "customers", "key_format": "json", "table": "true"}
    [table] = [s for s in plan.steps if isinstance(s, MaterializeStep)]
    assert table.tombstone_columns == ("v",)


def test_risingwave_source_and_upsert_table() -> None:
    step = source("CREATE SOURCE s (id INT, v STRING) WITH (connector='kafka', "
                  "topic='orders', properties.bootstrap.server='h:9092', "
                  "scan.startup.mode='earliest') FORMAT PLAIN ENCODE JSON")
    assert step.options == {"topic": "orders", "key_format": "kafka", "bootstrap": "h:9092"}
    table = source("CREATE TABLE s (id INT, v STRING, PRIMARY KEY (id)) WITH ("
                   "connector='kafka', topic='c') FORMAT UPSERT ENCODE JSON")
    assert table.relation.key_columns == ("id",)
    assert table.options["table"] == "true"


def test_risingwave_debezium_table() -> None:
    """FORMAT DEBEZIUM ENCODE JSON: a table topic of change events, its key
    JSON (Debezium's {"id": 1}), keyed by the PRIMARY KEY; Splice's
    envelope='debezium' says the same in a WITH (...)."""
    plan = compile_text("CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR, region "
                        "VARCHAR)\nWITH (connector='kafka', topic='dbserver1.inventory."
                        "customers', properties.bootstrap.server='h:9092')\n"
                        "FORMAT DEBEZIUM ENCODE JSON;", "k.sql", "k")
    step = plan.step("customers")
    assert isinstance(step, SourceStep)
    assert step.relation.key_columns == ("id",) and step.relation.key_type == "int"
    assert step.options == {"topic": "dbserver1.inventory.customers", "key_format": "json",
                            "envelope": "debezium", "bootstrap": "h:9092", "table": "true"}
    [table] = [s for s in plan.steps if isinstance(s, MaterializeStep)]
    assert table.tombstone_columns == ("name", "region")
    text = explain_step(step, plan).render()
    assert "changes: Debezium envelopes: op c, r, u upsert the after row, d deletes" in text
    assert "null value: skipped (Debezium's tombstone after its delete)" in text
    composite = source("CREATE TABLE s (a INT, b STRING, v INT, PRIMARY KEY (a, b)) WITH ("
                       "connector='kafka', topic='t') FORMAT DEBEZIUM ENCODE JSON")
    assert composite.relation.key_type == "struct<`a`:int,`b`:string>"
    ksql = source("CREATE TABLE s (id INT PRIMARY KEY, v STRING) WITH (kafka_topic='t', "
                  "value_format='JSON', envelope='Debezium')")
    assert ksql.options == {"topic": "t", "key_format": "json", "envelope": "debezium",
                            "table": "true"}


def test_explain_shows_the_topic() -> None:
    plan = compile_text("CREATE STREAM s (id INT) WITH (kafka_topic='orders', "
                        "value_format='JSON');", "k.sql", "k")
    text = explain_step(plan.step("s"), plan).render()
    assert "topic: orders" in text and "event time: the record's timestamp" in text


@pytest.mark.parametrize(("sql", "marker", "words"), [
    ("CREATE STREAM s (id INT) WITH (kafka_topic='o', value_format='PROTOBUF')",
     "'PROTOBUF'", "value format 'PROTOBUF' is not supported: Protobuf values are not read "
     "yet"),
    ("CREATE STREAM s (id INT) WITH (kafka_topic='o', value_format='DELIMITED')",
     "'DELIMITED'", "value format 'DELIMITED' is not supported: DELIMITED values"),
    ("CREATE STREAM s (id INT) WITH (kafka_topic='o', value_format='JSON',\n"
     "  value_schema_id=3)", "3)", "VALUE_SCHEMA_ID '3' needs VALUE_FORMAT='AVRO'"),
    ("CREATE STREAM s (id INT) WITH (kafka_topic='o', value_format='AVRO', stored='false')",
     "'false'", "a topic of Avro values is stored"),
    ("CREATE STREAM s (id INT) WITH (kafka_topic='o',\n  key_format='PROTOBUF')",
     "'PROTOBUF'", "key format 'PROTOBUF' is not supported"),
    ("CREATE STREAM s (id INT) WITH (kafka_topic='o', partitions=0)", "0)",
     "partitions must be a whole number"),
    ("CREATE SOURCE s (id INT) WITH (connector='kafka', scan.startup.mode='latest')",
     "'latest'", "scan.startup.mode 'latest' is not supported"),
    ("CREATE SOURCE s (id INT) WITH (connector='pulsar')", "'pulsar'",
     "connector 'pulsar' is not supported"),
    ("CREATE SOURCE s (id INT) WITH (connector='kafka') FORMAT UPSERT ENCODE JSON",
     "UPSERT", "FORMAT UPSERT reads a table"),
    ("CREATE SOURCE s (id INT) WITH (connector='kafka') FORMAT DEBEZIUM ENCODE JSON",
     "DEBEZIUM", "FORMAT DEBEZIUM reads a table"),
    ("CREATE TABLE s (id INT PRIMARY KEY) WITH (connector='kafka')\n"
     "  FORMAT DEBEZIUM ENCODE AVRO (schema.registry = 'http://r:8081')", "AVRO",
     "FORMAT DEBEZIUM ENCODE AVRO is not supported: Debezium envelopes are read as JSON only"),
    ("CREATE TABLE s (id INT PRIMARY KEY) WITH (connector='kafka') FORMAT DEBEZIUM "
     "ENCODE PROTOBUF", "PROTOBUF", "ENCODE PROTOBUF is not supported"),
    ("CREATE TABLE s (id INT) WITH (connector='kafka') FORMAT DEBEZIUM ENCODE JSON", "CREATE",
     "table 's' has no key"),
    ("CREATE TABLE s (id INT) WITH (connector='kafka') FORMAT CANAL ENCODE JSON", "CANAL",
     "FORMAT CANAL is not supported"),
    ("CREATE STREAM s (id INT) WITH (kafka_topic='o', value_format='JSON',\n"
     "  envelope='debezium')", "'debezium'", "a Debezium topic is read as a table"),
    ("CREATE TABLE t (id INT PRIMARY KEY, v INT) WITH (location='t');\n"
     "CREATE TABLE s WITH (kafka_topic='o', envelope='debezium') AS SELECT id, v FROM t",
     "'debezium'", "option 'envelope' is not one of an output topic's"),
    ("CREATE TABLE s (id INT PRIMARY KEY) WITH (kafka_topic='o', envelope='maxwell')",
     "'maxwell'", "envelope 'maxwell' is not supported"),
    ("CREATE TABLE s (id INT PRIMARY KEY) WITH (kafka_topic='o', value_format='JSON_SR', "
     "envelope='debezium')", "'debezium'", "Debezium envelopes are read as JSON, not JSON_SR"),
    ("CREATE SOURCE s (id INT) WITH (connector='kafka') FORMAT PLAIN ENCODE PROTOBUF",
     "PROTOBUF", "ENCODE PROTOBUF is not supported"),
    ("CREATE SOURCE s WITH (connector='kafka') FORMAT PLAIN ENCODE AVRO (nonsense = 'x')",
     "'x'", "ENCODE AVRO option 'nonsense' is not supported"),
    ("CREATE SOURCE s WITH (connector='kafka') FORMAT PLAIN ENCODE JSON", "CREATE",
     "'s' declares no columns"),
    ("CREATE SOURCE s (id INT) WITH (location='s') FORMAT PLAIN ENCODE JSON", "PLAIN",
     "FORMAT ... ENCODE is for a Kafka source"),
    ("CREATE SOURCE s (id INT) WITH (connector='kafka') FORMAT PLAIN", "<end>",
     "expected ENCODE after FORMAT PLAIN"),
    ("CREATE TABLE s (id INT, PRIMARY KEY id) WITH (connector='kafka')", "id)",
     "expected '(' after PRIMARY KEY"),
    ("CREATE TABLE s (id INT PRIMARY KEY, v INT) WITH (kafka_topic='o', key='v')", "'v'",
     "declares its key twice"),
])
def test_unsupported_kafka_declarations_are_positioned_errors(sql: str, marker: str,
                                                              words: str) -> None:
    with pytest.raises(SqlErrors) as raised:
        compile_text(sql, "k.sql", "k")
    [error] = raised.value.errors
    offset = len(sql) if marker == "<end>" else sql.index(marker)
    line = sql.count("\n", 0, offset) + 1
    col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    assert (error.position.line, error.position.col) == (line, col), str(error)
    assert words in error.rule, str(error)
    assert str(error).startswith(f"k.sql:{line}:{col}: ")


def test_lenses_topic_with_a_primitive_key() -> None:
    step = source("CREATE TABLE s (_key STRING, v INT) FORMAT (string, json) "
                  "PROPERTIES (partitions=3, replication=1, compacted=false)")
    assert step.relation.kind.value == "stream" and step.relation.key_columns == ()
    assert [c.name for c in step.declared] == ["v"] and step.relation.key_type == "string"
    assert step.options == {"topic": "s", "key_format": "kafka", "partitions": "3",
                            "null_values": "tombstone", "replication": "1",
                            "compacted": "false"}


def test_lenses_topic_with_key_fields_is_keyed_by_a_json_struct() -> None:
    plan = compile_text("CREATE TABLE s (_key.id INT, _key.region STRING, v INT) "
                        "FORMAT (JSON, JSON);\nINSERT INTO o SELECT STREAM _key.id AS id, "
                        "_value.v AS v FROM s;", "k.sql", "k")
    step = plan.step("s")
    assert step.relation.key_type == "struct<`id`:int,`region`:string>"
    assert step.options["key_format"] == "json"
    assert [c.name for c in plan.step("o").relation.columns] == ["id", "v"]
    text = explain_step(step, plan).render()
    assert "null value: kept as a row without a value" in text


@pytest.mark.parametrize(("sql", "marker", "words"), [
    ("CREATE TABLE s (_key STRING, v INT) FORMAT (STRING, PROTOBUF)", "PROTOBUF",
     "value format 'PROTOBUF' is not supported"),
    ("CREATE TABLE s (_key INT, v INT) FORMAT (INT, JSON)", "INT, JSON",
     "key format 'INT' is not supported"),
    ("CREATE TABLE s (_key.id INT, v INT) FORMAT (STRING, JSON)", "STRING, JSON",
     "need a JSON key, not STRING"),
    ("CREATE TABLE s (_key STRING, _key.id INT, v INT) FORMAT (JSON, JSON)", "_key.id",
     "both whole (_key) and by field"),
    ("CREATE TABLE s (_key STRING, v INT) FORMAT (STRING, JSON) PROPERTIES (size=3)",
     "3)", "property 'size'"),
    ("CREATE TABLE s (_key STRING, v INT) FORMAT (STRING, JSON) PROPERTIES (partitions=0)",
     "0)", "partitions must be a whole number"),
    ("CREATE TABLE s (_key STRING, v INT) FORMAT (STRING, JSON) PROPERTIES (compacted=2)",
     "2)", "compacted must be true or false"),
    ("CREATE TABLE s (_key STRING) FORMAT (STRING, JSON)", "CREATE",
     "declares no value column"),
    ("CREATE STREAM s (_key STRING, v INT) FORMAT (STRING, JSON)", "CREATE",
     "declares a Lenses topic"),
    ("CREATE TABLE s (v INT) WITH (key='v') FORMAT (STRING, JSON)", "'v'",
     "takes its options in PROPERTIES"),
    ("CREATE TABLE s (v INT) FORMAT (STRING JSON)", "JSON)", "expected ','"),
])
def test_unsupported_lenses_topics_are_positioned_errors(sql: str, marker: str,
                                                         words: str) -> None:
    test_unsupported_kafka_declarations_are_positioned_errors(sql, marker, words)
