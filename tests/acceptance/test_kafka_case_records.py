"""The causes of the differences between the acceptance cases over Delta
and over Kafka (issue 56 item 5), one test each, asserting rows: how a
case's rows become records (splice/testing/kafka_cases.py) and how the Kafka source
reads a topic a ksqlDB user's producer wrote (operators/kafka_source.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from splice.engine.kafka_topics import Record, create_topic, produce, watermarks
from splice.runtime.compile import compile_text

from splice.testing.kafka_cases import KafkaCaseSources, _key_text, murmur2, partition_of, record_of
from tests.operators.test_kafka_source import kafka_io, output_rows

T0 = 1_704_067_200_000  # 2024-01-01 00:00:00 UTC, in ms


def test_murmur2_is_kafkas() -> None:
    """Kafka's own vectors (clients' UtilsTest.testMurmur2)."""
    assert [murmur2(s.encode()) for s in (
        "21", "foobar", "a-little-bit-long-string", "a-little-bit-longer-string",
        "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", "abc")] == [
        -973932308, -790332482, -985981536, -1486304829, -58897971, 479470107]
    assert partition_of("21", 5) == (-973932308 & 0x7FFFFFFF) % 5
    assert [partition_of(None, 3, n) for n in range(4)] == [0, 1, 2, 0]


def test_a_key_is_spelt_one_way_per_value_of_its_type() -> None:
    """12.5 and 12.50 of a DECIMAL(10,2) key are one key: one text, one
    partition (the case spelt them differently; a typed producer would not)."""
    assert _key_text(12.5, "decimal(10,2)") == _key_text(12.50, "decimal(10,2)") == "12.50"
    assert _key_text(-3, "decimal(10,2)") == "-3.00"
    assert _key_text(2, "double") == "2.0"
    assert _key_text(7.0, "bigint") == "7"
    assert _key_text(True, "boolean") == "true"
    assert _key_text("a b", "string") == "a b"
    plan = compile_text("CREATE TABLE t (k DECIMAL(10,2) PRIMARY KEY, v STRING) "
                        "WITH (location='t');", "c.sql", "c")
    assert record_of(plan.sources["t"], {"k": 12.5, "v": "x"}, table=True).key == "12.50"


@pytest.mark.kafka
def test_a_source_of_n_partitions_gets_a_topic_of_n_and_each_key_one_partition(kafka) -> None:
    """``partitions='3'`` on a case's source: its topic has three partitions,
    every record of a key in the one its key hashes to, keyless ones in turn."""
    sql = ("CREATE STREAM s (id INT KEY, v STRING) WITH (location='s', partitions='3');\n"
           "CREATE STREAM o AS SELECT id, v FROM s;")
    sources = KafkaCaseSources(kafka)
    try:
        plan = sources.prepare(compile_text(sql, "c.sql", "c"), f"parts{uuid.uuid4().hex[:6]}")
        step = plan.sources["s"]
        assert step.options["partitions"] == "3"
        rows = [{"id": i % 5, "v": str(i)} for i in range(20)] + [{"id": None, "v": "x"}] * 3
        sources.append(None, step, rows)
        ends = {p: hi for p, (_, hi) in watermarks(kafka, sources.topics[step.id]).items()}
        expected = {p: 0 for p in range(3)}
        for row in rows[:20]:
            expected[partition_of(str(row["id"]), 3)] += 1
        for n in range(3):
            expected[n] += 1
        assert ends == expected
    finally:
        sources.close()


UPPER_CASE_FIELDS = """
CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR, ts BIGINT)
  WITH (kafka_topic='{t}', value_format='JSON', timestamp='ts');
CREATE STREAM s (id BIGINT KEY, Item VARCHAR, ts BIGINT)
  WITH (kafka_topic='{s}', value_format='JSON', timestamp='ts');
CREATE STREAM result AS SELECT s.id, item, name FROM s LEFT JOIN t ON s.id = t.id;
"""


@pytest.mark.spark
@pytest.mark.kafka
def test_json_fields_fill_their_columns_in_any_case(spark: Any, warehouse: Any, kafka) -> None:
    """ksqlDB writes the value of ``name VARCHAR`` as ``{"NAME": ...}``: the
    source reads it, as the Delta path reads a row's columns in any case.
    Before, every such column read NULL: the table's row was a tombstone,
    the stream's event time missing (dead letter), the join empty."""
    t, s = (f"{p}-{uuid.uuid4().hex[:8]}" for p in ("case-t", "case-s"))
    for name in (t, s):
        create_topic(kafka, name, 1)
    io = kafka_io(spark, warehouse, UPPER_CASE_FIELDS.format(t=t, s=s), "anycase", kafka)
    produce(kafka, t, [Record({"NAME": "zero", "TS": T0}, "0", T0),
                       Record({"name": "one", "NAME": "ONE", "TS": T0}, "1", T0)])
    produce(kafka, s, [Record({"ITEM": "a", "TS": T0 + 1}, "0", T0 + 1),
                       Record({"item": "b", "ts": T0 + 2}, "1", T0 + 2),  # exact: the column's case
                       Record({"Item": "c", "Ts": T0 + 3}, "2", T0 + 3)])
    from splice.runtime.runner import run_pipeline

    run_pipeline(io.pipeline, io)
    # The exact spelling wins ("one" over "ONE"); an unmatched key has no row.
    assert output_rows(io, "result", "id", "item", "name") == [
        (0, "a", "zero"), (1, "b", "one"), (2, "c", None)]
    dead = spark.read.format("delta").load(warehouse.dead_letter_path("anycase", "s"))
    assert dead.count() == 0


@pytest.mark.spark
@pytest.mark.kafka
def test_a_case_whose_records_kafka_refuses_and_delta_reads_fails_in_words(
        spark: Any, tmp_path: Any, kafka) -> None:
    """The Kafka run is as strict as the Delta run: every output's rows as
    expected is not enough when the source refused records that Delta reads
    (here a value whose event time is not a number: Delta would not take the
    row at all, so the case's outputs agree and only the dead letter tells),
    and a row naming a column the source lacks is refused as over Delta."""
    from splice.testing.cases import Case, run_case

    sql = ("CREATE STREAM s (id INT KEY, v STRING, ts BIGINT) WITH (location='s', "
           "timestamp='ts');\nCREATE STREAM o AS SELECT id, v FROM s;")
    case = Case(case="strict", sql=sql, runs=[{"append": {"s": [
        {"id": 1, "v": "a", "ts": 1}, {"id": 2, "v": "b", "ts": "soon"}]}}],
        expect={"o": {"rows": [{"id": 1, "v": "a"}]}})
    result = run_case(case, "", spark, workdir=str(tmp_path / "w"),
                      sources=KafkaCaseSources(kafka))
    assert not result.passed
    assert result.details == [
        "source 's': 1 record(s) in the dead letter over Kafka, 0 over Delta "
        "(1 x column 'ts': 'soon' is not BIGINT)"]
    unknown = Case(case="unknown", sql=sql, runs=[{"append": {"s": [{"id": 1, "w": "x"}]}}])
    result = run_case(unknown, "", spark, workdir=str(tmp_path / "u"),
                      sources=KafkaCaseSources(kafka))
    assert result.details == ["rows for 's' name unknown columns w"]
