"""The formats of an output topic (no Spark): ksqlDB's VALUE_FORMAT /
KEY_FORMAT / FORMAT on ``CREATE STREAM|TABLE ... WITH (...) AS SELECT``,
what they compile to (the subjects, the sink's packages, EXPLAIN), and the
positioned errors of what Splice does not write."""

from __future__ import annotations

import pytest
from splice.physical.explain import explain_step
from splice.runtime.compile import compile_text
from splice.sql.errors import SqlErrors
from splice.sql.plan import SinkStep

SOURCE = "CREATE STREAM orders (id INT, item STRING) WITH (location='orders', key='id');\n"
AVRO_PACKAGE = "org.apache.spark:spark-avro_2.13:4.2.0"


def sink(with_: str) -> tuple[SinkStep, str, tuple[str, ...]]:
    plan = compile_text(SOURCE + f"CREATE STREAM big WITH ({with_}) AS SELECT id, item "
                        "FROM orders;", "p.sql", "p")
    step = plan.step("big_topic")
    assert isinstance(step, SinkStep)
    return step, explain_step(step, plan).render(), plan.node("big_topic").needs()


def errors(with_: str) -> list[str]:
    with pytest.raises(SqlErrors) as info:
        compile_text(SOURCE + f"CREATE STREAM big WITH ({with_}) AS SELECT id, item "
                     "FROM orders;", "p.sql", "p")
    return [e.render() for e in info.value.errors]


def test_avro_values_name_the_topics_subject_and_need_spark_avro() -> None:
    step, explained, needs = sink("kafka_topic='b', value_format='AVRO'")
    assert step.options == {"topic": "b", "value_format": "avro", "key_format": "kafka",
                            "value_subject": "b-value"}
    assert [(c.name, c.type) for c in step.relation.columns] == [
        ("value", "binary"), ("batch_id", "bigint")]
    assert "value format: AVRO" in explained
    assert "value subject: 'b-value' (TopicNameStrategy)" in explained
    assert AVRO_PACKAGE in needs


def test_format_sets_an_avro_key_and_value() -> None:
    step, explained, needs = sink("kafka_topic='b', format='AVRO', "
                                  "value_avro_schema_full_name='shop.Order'")
    assert step.options["key_format"] == "avro" and step.options["key_subject"] == "b-key"
    assert step.options["value_avro_schema_full_name"] == "shop.Order"
    assert step.relation.key_type == "binary"
    assert "record key: _key (AVRO), subject 'b-key'" in explained
    assert AVRO_PACKAGE in needs


def test_json_sr_values_need_no_spark_avro_and_json_stays_as_it_was() -> None:
    step, explained, needs = sink("kafka_topic='b', value_format='JSON_SR'")
    assert step.options["value_subject"] == "b-value"
    assert "value format: JSON_SR" in explained and AVRO_PACKAGE not in needs
    step, explained, needs = sink("kafka_topic='b', value_format='JSON'")
    assert step.options == {"topic": "b", "key_format": "kafka"}
    assert step.relation.columns[0].type == "string" and AVRO_PACKAGE not in needs
    assert "value subject" not in explained


def test_formats_splice_does_not_write_are_refused_where_written() -> None:
    assert errors("kafka_topic='b', value_format='PROTOBUF'") == [
        "p.sql:2:55: value format 'PROTOBUF' is not supported for an output topic: Protobuf "
        "values are not written: Spark's spark-protobuf, which would encode them inside "
        "Spark, is not served here (docs/decisions/avro-sinks.md); write "
        "VALUE_FORMAT='AVRO', 'JSON_SR' (through the schema registry) or 'JSON'"]
    (error,) = errors("kafka_topic='b', format='PROTOBUF'")
    assert error.startswith("p.sql:2:49: value format 'PROTOBUF' is not supported")
    (error,) = errors("kafka_topic='b', value_format='AVRO', key_format='PROTOBUF'")
    assert error == ("p.sql:2:74: key format 'PROTOBUF' is not supported for an output "
                     "topic: Splice writes keys as KAFKA text, JSON or AVRO; write "
                     "KEY_FORMAT='KAFKA', 'JSON' or 'AVRO'")
    (error,) = errors("kafka_topic='b', format='JSON_SR'")
    assert error.startswith("p.sql:2:49: key format 'JSON_SR' is not supported for an "
                            "output topic")
    assert error.endswith("with VALUE_FORMAT='JSON_SR' instead of FORMAT")
    (error,) = errors("kafka_topic='b', value_format='AVRO', value_schema_id=7")
    assert error.startswith("p.sql:2:79: VALUE_SCHEMA_ID is not taken by an output topic")
    (error,) = errors("kafka_topic='b', value_format='DELIMITED'")
    assert "DELIMITED values are not written" in error
