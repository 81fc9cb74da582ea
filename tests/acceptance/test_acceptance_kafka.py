"""The acceptance cases over Kafka (``splice test --sources kafka``): every
source of a case on a topic of the session's broker, the case's rows
produced as records, the same expected rows as over Delta."""

from __future__ import annotations

import json

import pytest
from splice.engine.kafka_topics import Record
from splice.runtime.compile import compile_text

from splice.testing.cases import load_case, run_case
from splice.testing.kafka_cases import KafkaCaseSources, record_of, topic_options
from tests.conftest import CASES

CASE_FILES = sorted(CASES.glob("*.yaml"))

TABLE_ON_DELTA = ("CREATE TABLE t (k STRING, j INT, v STRING, ts TIMESTAMP) "
                  "WITH (location='t', key='{key}', timestamp='ts');")
TABLE_ON_TOPIC = ("CREATE TABLE t (k STRING, j INT, v STRING, ts TIMESTAMP) "
                  "WITH (format='kafka', topic='tt', key='{key}', timestamp='ts'{extra});")


@pytest.mark.parametrize(("key", "extra"), [("k", ""), ("k,j", ", key_format='JSON'")])
def test_a_source_moved_to_a_topic_is_the_one_the_analyzer_reads_there(key, extra) -> None:
    """The case runner swaps each source's declaration in the plan: the step
    it makes equals the step of the same source written on a topic."""
    tail = "\nCREATE TABLE o AS SELECT v FROM t;"
    on_delta = compile_text(TABLE_ON_DELTA.format(key=key) + tail, "c.sql", "c")
    on_topic = compile_text(TABLE_ON_TOPIC.format(key=key, extra=extra) + tail, "c.sql", "c")
    moved = on_delta.sources["t"].model_copy(update={
        "format": "kafka", "location": "tt", "options": topic_options(
            on_delta.sources["t"], "tt", table=True)})
    written = on_topic.sources["t"]
    assert moved.model_dump(exclude={"sql", "where"}) == written.model_dump(
        exclude={"sql", "where"})


def test_a_case_row_as_a_record() -> None:
    plan = compile_text(TABLE_ON_DELTA.format(key="k,j"), "c.sql", "c")
    step = plan.sources["t"]
    row = {"k": "a", "j": 1, "v": "x", "ts": "2024-01-01 00:00:01"}
    assert record_of(step, row, table=True) == Record(
        value=json.dumps(row), key='{"k": "a", "j": 1}', timestamp_ms=1_704_067_201_000)
    # On a table topic, a row whose value columns are all null is a tombstone.
    gone = {"k": "a", "j": 1, "v": None, "ts": "2024-01-01 00:00:02"}
    assert record_of(step, gone, table=True) == Record(
        value=None, key='{"k": "a", "j": 1}', timestamp_ms=1_704_067_202_000)
    assert record_of(step, gone, table=False).value == json.dumps(gone)
    single = compile_text(TABLE_ON_DELTA.format(key="j"), "c.sql", "c").sources["t"]
    assert record_of(single, {"j": 7, "v": "x"}, table=True).key == "7"
    assert record_of(single, {"j": None, "v": "x"}, table=True).key is None


# The default suite's share: the chain of three tables in a WITH (a
# stream-table, a stream-stream and a table-table case over Kafka run below
# as the Kafka cases' default share, and tombstones over Kafka in
# tests/operators/test_kafka_source.py). The other 38 run with
# `pytest -m kafka_full tests/acceptance/test_acceptance_kafka.py` (with the
# 37 read in place below); `-m kafka` runs all of them.
DEFAULT = {"lenses-three-tables-with"}


def _param(path):
    marks = [pytest.mark.spark, pytest.mark.kafka]
    if path.stem not in DEFAULT:
        marks.append(pytest.mark.kafka_full)
    return pytest.param(path, id=path.stem, marks=marks)


def test_the_default_share_is_one_of_the_39_cases() -> None:
    assert len(CASE_FILES) == 39
    assert {p.stem for p in CASE_FILES} >= DEFAULT


# The cases translated for the Kafka path (tests/cases_kafka/README.md):
# each over Kafka and over Delta, with the same expected rows; three of
# each in the default suite (topics of two and three partitions, ksqlDB's
# upper-case fields, a tombstone within a run), the rest under kafka_full.
KAFKA_CASE_FILES = sorted((CASES.parent / "cases_kafka").glob("*.yaml"))
KAFKA_CASES_DEFAULT = {"ksqldb-st-three-partitions", "ksqldb-ss-out-of-order-grace",
                       "ksqldb-tt-where-tombstone-one-run"}
# Cases whose expected rows one path does not give yet, and why: expected
# to fail there, strictly (a pass fails the suite until the mark goes).
# None now: a null join key matching the other side's (the stream-stream
# join) and a Delta table row without a key (the Delta source) were fixed.
NOT_YET: dict[tuple[str, str], str] = {}
# Over Delta in the default suite too: the two causes fixed in the engine
# (null join keys in a stream-stream join, a Delta table row without a key).
DELTA_DEFAULT = {"ksqldb-ss-outer-null-keys", "ksqldb-tt-null-key-row"}


def _new_case(path, sources: str):
    marks = [pytest.mark.spark]
    if sources == "kafka":
        marks.append(pytest.mark.kafka)
    if path.stem not in KAFKA_CASES_DEFAULT and not (
            sources == "delta" and path.stem in DELTA_DEFAULT):
        marks.append(pytest.mark.kafka_full)
    if (path.stem, sources) in NOT_YET:
        marks.append(pytest.mark.xfail(strict=True, reason=NOT_YET[path.stem, sources]))
    return pytest.param(path, id=f"{path.stem}-{sources}", marks=marks)


def test_the_kafka_cases_are_20_and_their_default_share_three() -> None:
    names = {p.stem for p in KAFKA_CASE_FILES}
    assert len(names) == 20
    assert names >= KAFKA_CASES_DEFAULT
    assert not KAFKA_CASES_DEFAULT & {name for name, _ in NOT_YET}


@pytest.mark.parametrize("path", [_new_case(p, "kafka") for p in KAFKA_CASE_FILES])
def test_kafka_case_over_kafka(path, spark, kafka, tmp_path) -> None:
    case = load_case(path)
    result = run_case(case, str(path), spark, workdir=str(tmp_path / "warehouse"),
                      sources=KafkaCaseSources(kafka))
    assert result.passed, result.render()


@pytest.mark.parametrize("path", [_new_case(p, "delta") for p in KAFKA_CASE_FILES])
def test_kafka_case_over_delta(path, spark, tmp_path) -> None:
    case = load_case(path)
    result = run_case(case, str(path), spark, workdir=str(tmp_path / "warehouse"))
    assert result.passed, result.render()


@pytest.mark.parametrize("path", [_param(p) for p in CASE_FILES])
def test_case_over_kafka(path, spark, kafka, tmp_path) -> None:
    case = load_case(path)
    result = run_case(case, str(path), spark, workdir=str(tmp_path / "warehouse"),
                      sources=KafkaCaseSources(kafka))
    assert result.passed, result.render()


# Read in place (stored='false' on every stream a step can read so): the
# default suite runs a repartition into an interval join and a chain of two
# interval joins; `-m kafka_full` the rest.
IN_PLACE_DEFAULT = {"lenses-stream-stream-within", "ksqldb-n-way-stream-join"}


def _in_place_param(path):
    marks = [pytest.mark.spark, pytest.mark.kafka]
    if path.stem not in IN_PLACE_DEFAULT:
        marks.append(pytest.mark.kafka_full)
    return pytest.param(path, id=f"{path.stem}-in-place", marks=marks)


@pytest.mark.parametrize("path", [_in_place_param(p) for p in CASE_FILES])
def test_case_over_kafka_read_in_place(path, spark, kafka, tmp_path) -> None:
    case = load_case(path)
    result = run_case(case, str(path), spark, workdir=str(tmp_path / "warehouse"),
                      sources=KafkaCaseSources(kafka, in_place=True))
    assert result.passed, result.render()


@pytest.mark.kafka
def test_the_streams_of_17_cases_are_read_in_place(kafka) -> None:
    """Which sources the in-place runner reads in place: every stream whose
    one reader may (the planner refuses the rest), in 17 of the 29 cases
    that compile."""
    with_in_place = {}
    for path in CASE_FILES:
        case = load_case(path)
        if case.error is not None:
            continue
        sources = KafkaCaseSources(kafka, in_place=True)
        try:
            plan = sources.prepare(compile_text(case.sql, "c.sql", "c"), path.stem)
        finally:
            sources.close()
        read = sorted(i for i, node in plan.nodes.items() if node.kind == "source.kafka.in_place")
        if read:
            with_in_place[path.stem] = read
    assert len(with_in_place) == 17
    assert with_in_place["ksqldb-n-way-stream-join"] == ["orders", "payments", "shipments"]
    assert with_in_place["lenses-stream-stream-within"] == ["customers", "orders"]
    assert "ksqldb-stream-table-semantics" not in with_in_place  # two joins read its stream


@pytest.mark.spark
@pytest.mark.kafka
def test_splice_test_runs_cases_over_kafka(spark, kafka, capsys) -> None:
    """The command, on the session's broker (SPLICE_KAFKA_BOOTSTRAP)."""
    from splice.cli import main

    case = CASES / "lenses-stream-table-inner.yaml"
    for sources in ("kafka", "kafka-in-place"):  # its orders read in place, the second time
        assert main(["test", str(case), "--sources", sources]) == 0
        out = capsys.readouterr().out
        assert "PASS lenses-stream-table-inner" in out
        assert out.rstrip().endswith("1 passed, 0 failed")
