"""A Kafka source's run killed (SIGKILL, JVM included) after its Delta
write and before its checkpoint's commit: the rerun reads the same offsets
again and writes nothing twice; nothing is lost."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from splice.engine.faults import KillPoint
from splice.engine.kafka_topics import Record, create_topic, produce
from splice.engine.settings import SpliceSettings
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_path
from splice.runtime.runner import run_pipeline
from splice.runtime.workspace import Workspace

from tests.helpers.crash_harness import Kill, run_killed
from tests.helpers.pipeline import output_rows

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.faults]


# The source's ingest commit over Kafka is a second proof of the kill
# matrix's (a JSON source's): pytest -m faults_full.
@pytest.mark.parametrize("point", [
    KillPoint.OUTPUT_COMMITTED,
    pytest.param(KillPoint.SOURCE_INGESTED, marks=pytest.mark.faults_full)])
def test_a_run_killed_before_the_checkpoint_commit_duplicates_nothing(
        spark, tmp_path: Path, kafka: str, point: KillPoint) -> None:
    topic = f"crash-{uuid.uuid4().hex[:8]}"
    create_topic(kafka, topic, 2)
    sql = tmp_path / "crash.sql"
    sql.write_text(
        f"CREATE STREAM orders (id INT, item STRING) WITH (format='kafka', topic='{topic}', "
        "key='id');\nINSERT INTO result SELECT STREAM id, item FROM orders;\n")
    warehouse = WarehouseResource(root=str(tmp_path / "warehouse"))
    produce(kafka, topic, [Record({"id": i, "item": f"i{i}"}, str(i)) for i in range(6)]
            + [Record("not json", "9")])
    pipeline = compile_path(sql)
    io = Workspace(pipeline, SpliceSettings.from_env(kafka_bootstrap=kafka), warehouse=warehouse,
                   spark=spark).io
    run_killed(io, Kill(point, "orders"), sql, env={"SPLICE_KAFKA_BOOTSTRAP": kafka})
    source = spark.read.format("delta").load(io.table_path(pipeline.step("orders")))
    assert source.count() == 6  # the killed run wrote the micro-batch's rows
    run_pipeline(pipeline, io)
    produce(kafka, topic, [Record({"id": 6, "item": "i6"}, "6")])
    run_pipeline(pipeline, io)
    assert output_rows(io, "result", "id", "item") == [(i, f"i{i}") for i in range(7)]
    source = spark.read.format("delta").load(io.table_path(pipeline.step("orders")))
    assert source.count() == 7
    dead = spark.read.format("delta").load(warehouse.dead_letter_path("crash", "orders"))
    assert [(r["record"], r["reason"]) for r in dead.collect()] == [
        ("not json", "not a JSON object")]
