"""VALUE_FORMAT='AVRO' at compile time, against the session's real schema
registry: columns inferred from the topic's subject or checked against it,
and every way that fails (no registry, an unreachable one, no subject, an
unknown id, a column the schema lacks, a type that does not match or map)
a positioned error naming the subject and the fix. No Spark."""

from __future__ import annotations

import json
import socket
import time
import uuid

import pytest
from confluent_kafka.schema_registry import Schema
from splice.engine.definitions import definition_hash
from splice.engine.registry_schemas import RegistrySchemas
from splice.engine.schema_registry import registry_client
from splice.engine.settings import SpliceSettings
from splice.physical.explain import explain_pipeline
from splice.runtime.compile import compile_text
from splice.sql.errors import SqlErrors

from splice.cli import main

pytestmark = pytest.mark.registry

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "item", "type": ["null", "string"], "default": None},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                               "scale": 2}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "ship", "type": {"type": "record", "name": "Ship", "fields": [
        {"name": "city", "type": "string"}]}},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
]}


def registered(url: str, schema: dict) -> tuple[str, int]:
    """A fresh topic whose value subject holds ``schema``; its id."""
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    client = registry_client(SpliceSettings.from_env({"SPLICE_SCHEMA_REGISTRY_URL": url}))
    return topic, client.register_schema(f"{topic}-value", Schema(json.dumps(schema), "AVRO"))


def lookup(url: str) -> RegistrySchemas:
    return RegistrySchemas(SpliceSettings.from_env({"SPLICE_SCHEMA_REGISTRY_URL": url}))


def error_of(sql: str, schemas: RegistrySchemas) -> str:
    with pytest.raises(SqlErrors) as raised:
        compile_text(sql, "k.sql", "k", schemas)
    [error] = raised.value.errors
    return str(error)


def test_columns_are_inferred_after_the_declared_key(schema_registry) -> None:
    topic, schema_id = registered(schema_registry, ORDER)
    plan = compile_text(f"CREATE TABLE orders (id BIGINT PRIMARY KEY) WITH (KAFKA_TOPIC="
                        f"'{topic}', VALUE_FORMAT='AVRO');", "k.sql", "k",
                        lookup(schema_registry))
    source = plan.sources["orders"]
    assert [(c.name, c.type, c.nullable) for c in source.declared] == [
        ("id", "bigint", True), ("item", "string", True), ("at", "timestamp", False),
        ("price", "decimal(9,2)", False), ("tags", "array<string>", False),
        ("ship", "struct<`city`:string>", False), ("kind", "string", False)]
    assert source.options["value_subject"] == f"{topic}-value"
    assert source.options["value_schema_resolved"] == str(schema_id)
    assert (f"value schema: subject '{topic}-value', schema id {schema_id} (its latest "
            "version when compiled)") in explain_pipeline(plan)


def test_a_new_version_with_the_same_columns_is_the_same_definition(schema_registry) -> None:
    topic, first = registered(schema_registry, ORDER)
    sql = (f"CREATE STREAM orders (id BIGINT, item STRING) WITH (KAFKA_TOPIC='{topic}', "
           "VALUE_FORMAT='AVRO');")
    before = compile_text(sql, "k.sql", "k", lookup(schema_registry)).sources["orders"]
    client = registry_client(SpliceSettings.from_env(
        {"SPLICE_SCHEMA_REGISTRY_URL": schema_registry}))
    second = client.register_schema(f"{topic}-value", Schema(json.dumps({
        **ORDER, "fields": [*ORDER["fields"], {"name": "note", "type": "string",
                                               "default": ""}]}), "AVRO"))
    after = compile_text(sql, "k.sql", "k", lookup(schema_registry)).sources["orders"]
    assert (before.options["value_schema_resolved"], after.options["value_schema_resolved"]) \
        == (str(first), str(second))
    assert definition_hash(before) == definition_hash(after)


@pytest.mark.parametrize(("columns", "words"), [
    ("(id BIGINT, qty INT)", "column 'qty' is not a field of subject '{subject}' (schema id "
     "{id}); its fields are id, item, at, price, tags, ship, kind"),
    ("(id INT, item STRING)", "column 'id' is INT, but field 'id' of subject '{subject}' "
     "(schema id {id}) is BIGINT"),
])
def test_declared_columns_are_checked_against_the_schema(schema_registry, columns: str,
                                                          words: str) -> None:
    topic, schema_id = registered(schema_registry, ORDER)
    sql = f"CREATE STREAM orders {columns} WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='AVRO');"
    message = error_of(sql, lookup(schema_registry))
    assert message.startswith("k.sql:1:1: "), message
    assert words.format(subject=f"{topic}-value", id=schema_id) in message


def test_a_field_of_no_column_type_is_refused_only_when_inferred(schema_registry) -> None:
    odd = {**ORDER, "fields": [*ORDER["fields"],
                               {"name": "either", "type": ["int", "string"]}]}
    topic, schema_id = registered(schema_registry, odd)
    message = error_of(f"CREATE STREAM orders WITH (KAFKA_TOPIC='{topic}', "
                       "VALUE_FORMAT='AVRO');", lookup(schema_registry))
    assert (f"field either: a union of [\"int\", \"string\"] has no column type (a union of "
            f"null and one type has) in subject '{topic}-value' (schema id {schema_id})"
            ) in message
    assert "declare the columns to read" in message
    plan = compile_text(f"CREATE STREAM orders (id BIGINT, item STRING) WITH (KAFKA_TOPIC="
                        f"'{topic}', VALUE_FORMAT='AVRO');", "k.sql", "k",
                        lookup(schema_registry))
    assert [c.name for c in plan.sources["orders"].declared] == ["id", "item"]


def test_a_subject_or_id_the_registry_lacks_is_positioned(schema_registry) -> None:
    message = error_of("CREATE STREAM orders WITH (KAFKA_TOPIC='no-such-topic', "
                       "VALUE_FORMAT='AVRO');", lookup(schema_registry))
    assert message.startswith("k.sql:1:1: VALUE_FORMAT='AVRO' reads subject "
                              "'no-such-topic-value' from the schema registry: subject "
                              "'no-such-topic-value' is not in the schema registry at "), message
    topic, _ = registered(schema_registry, ORDER)
    sql = (f"CREATE STREAM orders WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='AVRO', "
           "VALUE_SCHEMA_ID=987654);")
    message = error_of(sql, lookup(schema_registry))
    assert message.startswith(f"k.sql:1:{sql.index('987654') + 1}: "), message
    assert "schema id 987654 is not in the schema registry" in message


def test_no_registry_and_an_unreachable_one_are_positioned_errors(tmp_path) -> None:
    sql = "CREATE STREAM orders WITH (KAFKA_TOPIC='o', VALUE_FORMAT='AVRO');"
    unset = RegistrySchemas(SpliceSettings.from_env({}, project_dir=tmp_path))
    message = error_of(sql, unset)
    assert message.startswith("k.sql:1:1: VALUE_FORMAT='AVRO' reads subject 'o-value' from "
                              "the schema registry: no schema registry is set"), message
    assert "bash scripts/registry.sh start" in message
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    closed = RegistrySchemas(SpliceSettings.from_env(
        {"SPLICE_SCHEMA_REGISTRY_URL": f"http://127.0.0.1:{port}"}, project_dir=tmp_path))
    started = time.monotonic()
    message = error_of(sql, closed)
    assert time.monotonic() - started < 15
    assert f"the schema registry at http://127.0.0.1:{port} cannot be reached" in message
    assert "check SPLICE_SCHEMA_REGISTRY_URL" in message


def test_validate_prints_the_resolved_columns_and_schema_id(schema_registry, tmp_path,
                                                           capsys) -> None:
    topic, schema_id = registered(schema_registry, ORDER)
    path = tmp_path / "p.sql"
    path.write_text(f"CREATE STREAM orders (id BIGINT, item STRING) WITH (KAFKA_TOPIC="
                    f"'{topic}', VALUE_FORMAT='AVRO');\n")
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (f"  source 'orders': id BIGINT, item STRING, from subject "
                      f"'{topic}-value' (schema id {schema_id})"), out


def test_risingwaves_encode_avro_names_its_registry_and_infers_every_column(
        schema_registry, tmp_path) -> None:
    topic, schema_id = registered(schema_registry, ORDER)
    # no registry in the settings: the statement's own is asked
    unset = RegistrySchemas(SpliceSettings.from_env({}, project_dir=tmp_path))
    plan = compile_text(f"CREATE TABLE orders (PRIMARY KEY (id)) WITH (connector='kafka', "
                        f"topic='{topic}') FORMAT UPSERT ENCODE AVRO (schema.registry = "
                        f"'{schema_registry}');", "k.sql", "k", unset)
    source = plan.sources["orders"]
    assert [c.name for c in source.declared] == [
        "id", "item", "at", "price", "tags", "ship", "kind"]
    assert source.relation.key_columns == ("id",)
    assert source.options["schema_registry_url"] == schema_registry
    assert source.options["value_schema_resolved"] == str(schema_id)
    plan = compile_text(f"CREATE SOURCE orders WITH (connector='kafka', topic='{topic}') "
                        f"FORMAT PLAIN ENCODE AVRO (schema.registry = '{schema_registry}', "
                        "message = 'shop.Order');", "k.sql", "k", unset)
    assert len(plan.sources["orders"].declared) == 7


def test_a_lenses_topic_of_avro_values_takes_the_registrys_columns(schema_registry) -> None:
    topic, _ = registered(schema_registry, ORDER)
    plan = compile_text(f"CREATE TABLE `{topic}` (_key STRING) FORMAT (STRING, AVRO);",
                        "k.sql", "k", lookup(schema_registry))
    [source] = plan.sources.values()
    assert [c.name for c in source.declared][:2] == ["id", "item"]
    assert source.options["value_format"] == "avro"
