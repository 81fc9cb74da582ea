"""The acceptance cases over Kafka topics of registry formats (``splice test
--sources kafka --value-format avro|json_sr``): every source's rows
produced by confluent-kafka's own ``AvroSerializer`` (or ``JSONSerializer``)
under a schema registered at the session's registry, the same expected rows
as over Delta and over JSON values."""

from __future__ import annotations

import datetime as dt
import io
import json
import struct

import avro.io
import avro.schema
import pytest
from splice.runtime.compile import compile_text

from splice.testing.cases import CaseDataError, load_case, run_case
from splice.testing.registry_cases import RegistryCaseSources, avro_schema, json_schema, typed
from tests.conftest import CASES

CASE_FILES = sorted(CASES.glob("*.yaml"))
# The default suite's share, one a format: a chain of three tables (Avro)
# and an interval join through a repartition (JSON_SR). The rest of the 39
# in each format run with `pytest -m registry_full`.
DEFAULT = {("lenses-three-tables-with", "avro"), ("lenses-stream-stream-within", "json_sr")}

SOURCE = ("CREATE STREAM s (id INT, name STRING, at TIMESTAMP, day DATE, ok BOOLEAN, "
          "n BIGINT, x DOUBLE) WITH (location='s', timestamp='at');")


def _param(path, value_format: str):
    marks = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.registry]
    if (path.stem, value_format) not in DEFAULT:
        marks.append(pytest.mark.registry_full)
    return pytest.param(path, value_format, id=f"{path.stem}-{value_format}", marks=marks)


def test_the_default_share_is_two_of_the_39_cases() -> None:
    assert len(CASE_FILES) == 39
    assert {p.stem for p in CASE_FILES} >= {name for name, _ in DEFAULT}


def test_a_sources_columns_as_the_avro_schema_a_producer_registers() -> None:
    step = compile_text(SOURCE, "c.sql", "c").sources["s"]
    schema = avro_schema(step)
    avro.schema.parse(json.dumps(schema))  # a schema Avro's own parser takes
    assert [(f["name"], f["type"][1]) for f in schema["fields"]] == [
        ("id", "int"), ("name", "string"),
        ("at", {"type": "long", "logicalType": "timestamp-micros"}),
        ("day", {"type": "int", "logicalType": "date"}), ("ok", "boolean"), ("n", "long"),
        ("x", "double")]
    assert all(f["type"][0] == "null" and f["default"] is None for f in schema["fields"])
    assert json_schema(step)["properties"]["at"] == {"type": ["string", "null"]}


def test_a_case_row_as_typed_values() -> None:
    step = compile_text(SOURCE, "c.sql", "c").sources["s"]
    row = {"ID": "7", "name": 5, "at": "2024-01-01 00:00:01.5", "day": "2024-01-02",
           "ok": "true"}
    assert typed(step, row, for_json=False) == {
        "id": 7, "name": "5", "at": dt.datetime(2024, 1, 1, 0, 0, 1, 500000, tzinfo=dt.UTC),
        "day": dt.date(2024, 1, 2), "ok": True, "n": None, "x": None}
    assert typed(step, row, for_json=True)["at"] == "2024-01-01 00:00:01.500000"
    with pytest.raises(CaseDataError, match="column 'id' holds 'abc', which is not INT"):
        typed(step, {"id": "abc"}, for_json=False)


@pytest.mark.spark
@pytest.mark.kafka
@pytest.mark.registry
def test_the_records_are_the_wire_format_of_the_registered_schema(kafka, schema_registry) -> None:
    """What the runner produces decodes with Avro's own reader under the
    schema registered for the topic's subject."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from splice.engine.kafka_topics import Record

    step = compile_text(SOURCE, "c.sql", "c").sources["s"]
    sources = RegistryCaseSources(kafka, registry=schema_registry)
    try:
        topic = "splice-wire-format-test"
        sources.source_options(step, topic, table=False)
        record = sources.value_of(step, {"id": 1, "at": "2024-01-01 00:00:01", "x": 1.5},
                                  Record(value="{}", key=None))
    finally:
        sources.close()
    assert record.value[0] == 0
    schema_id = struct.unpack(">I", record.value[1:5])[0]
    registered = SchemaRegistryClient({"url": schema_registry}).get_latest_version(
        f"{topic}-value")
    assert registered.schema_id == schema_id
    reader = avro.io.DatumReader(avro.schema.parse(registered.schema.schema_str))
    decoded = reader.read(avro.io.BinaryDecoder(io.BytesIO(record.value[5:])))
    assert decoded["id"] == 1 and decoded["x"] == 1.5 and decoded["name"] is None
    assert decoded["at"] == dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(("path", "value_format"),
                         [_param(p, f) for f in ("avro", "json_sr") for p in CASE_FILES])
def test_case_over_registry_values(path, value_format, spark, kafka, schema_registry,
                                   tmp_path) -> None:
    case = load_case(path)
    result = run_case(case, str(path), spark, workdir=str(tmp_path / "warehouse"),
                      sources=RegistryCaseSources(kafka, registry=schema_registry,
                                                  value_format=value_format))
    assert result.passed, result.render()


@pytest.mark.spark
@pytest.mark.kafka
@pytest.mark.registry
def test_splice_test_runs_cases_over_avro_and_json_sr(spark, kafka, schema_registry,
                                                      capsys) -> None:
    """The command, on the session's broker and registry."""
    from splice.cli import main

    case = CASES / "lenses-stream-table-inner.yaml"
    for value_format in ("avro", "json_sr"):
        assert main(["test", str(case), "--sources", "kafka",
                     "--value-format", value_format]) == 0
        out = capsys.readouterr().out
        assert "PASS lenses-stream-table-inner" in out
        assert out.rstrip().endswith("1 passed, 0 failed")
    assert main(["test", str(case), "--sources", "kafka", "--value-format", "protobuf"]) == 2
    assert "does not read Protobuf values" in capsys.readouterr().err
