"""A new stream of a Delta table starts from version 0 only when that gives
the rows its initial snapshot would (engine/stream_start.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from splice.engine.stream_start import (
    MAX_VERSIONS,
    RECORD,
    SETTING,
    delta_stream,
    from_version_zero,
    start_options,
)
from splice.runtime.workspace import Workspace

pytestmark = pytest.mark.spark


def _append(spark: Any, path: str, start: int, feed: bool = False) -> None:
    writer = (spark.range(start, start + 3).selectExpr("id AS k", "id % 2 AS v")
              .write.format("delta").mode("append"))
    if feed:
        writer = writer.option("delta.enableChangeDataFeed", "true")
    writer.save(path)


def _streamed(spark: Any, path: str, tmp_path: Path, change_feed: bool) -> list[tuple]:
    """Every row a new stream reads, with its change type for a feed."""
    rows: list[tuple] = []
    columns = ["k", "v", "_change_type"] if change_feed else ["k", "v"]
    checkpoint = str(tmp_path / f"cp{len(list(tmp_path.iterdir()))}")
    query = (delta_stream(spark, path, change_feed=change_feed, checkpoint=checkpoint)
             .writeStream.trigger(availableNow=True)
             .option("checkpointLocation", checkpoint)
             .foreachBatch(lambda df, _: rows.extend(tuple(r) for r in df.select(columns)
                                                     .collect()))
             .start())
    query.awaitTermination()
    # The start it took is recorded in the checkpoint, and a started query
    # reads no option: the record is what a replayed first batch would use.
    assert json.loads(Path(checkpoint, RECORD).read_text())[path] == \
        from_version_zero(spark, path, change_feed)
    assert start_options(spark, path, change_feed, checkpoint) == {}
    return sorted(rows)


def test_an_appended_table_streams_from_version_zero_with_the_snapshots_rows(
        spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    for start in (0, 10, 20):
        _append(spark, path, start, feed=True)
    assert from_version_zero(spark, path, change_feed=False) == {"startingVersion": "0"}
    assert from_version_zero(spark, path, change_feed=True) == {"startingVersion": "0"}
    spark.conf.set(SETTING, "false")  # the user's way back to Delta's default
    try:
        assert from_version_zero(spark, path, change_feed=False) == {}
    finally:
        spark.conf.unset(SETTING)
    expected = sorted((k, k % 2) for s in (0, 10, 20) for k in range(s, s + 3))
    assert _streamed(spark, path, tmp_path, change_feed=False) == expected
    assert _streamed(spark, path, tmp_path, change_feed=True) == [
        (*row, "insert") for row in expected]


def test_an_updated_table_keeps_the_snapshot(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _append(spark, path, 0, feed=True)
    spark.sql(f"UPDATE delta.`{path}` SET v = 7 WHERE k = 1")
    assert from_version_zero(spark, path, change_feed=True) == {}
    assert from_version_zero(spark, path, change_feed=False) == {}
    # The snapshot: the current rows, each one insert.
    assert _streamed(spark, path, tmp_path, change_feed=True) == [
        (0, 0, "insert"), (1, 7, "insert"), (2, 0, "insert")]


def test_a_feed_enabled_later_a_schema_change_or_a_long_log_keeps_the_snapshot(
        spark: Any, tmp_path: Path) -> None:
    later = str(tmp_path / "later")
    _append(spark, later, 0)
    spark.sql(f"ALTER TABLE delta.`{later}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    assert from_version_zero(spark, later, change_feed=True) == {}

    widened = str(tmp_path / "widened")
    _append(spark, widened, 0)
    (spark.range(5, 6).selectExpr("id AS k", "id AS v", "'x' AS w").write.format("delta")
     .mode("append").option("mergeSchema", "true").save(widened))
    assert from_version_zero(spark, widened, change_feed=False) == {}

    long = str(tmp_path / "long")
    for start in range(MAX_VERSIONS + 1):
        spark.range(start, start + 1).write.format("delta").mode("append").save(long)
    assert from_version_zero(spark, long, change_feed=False) == {}
    assert from_version_zero(spark, str(tmp_path / "absent"), change_feed=False) == {}


PIPELINE = """CREATE TABLE t1 (id INT, amount INT, ts TIMESTAMP)
  WITH (location='t1', key='id', timestamp='ts');
CREATE TABLE big AS SELECT id, amount FROM t1 WHERE amount > 10;
"""


@pytest.mark.faults
def test_a_killed_first_batch_replays_from_its_recorded_start_after_an_update(
        spark: Any, tmp_path: Path) -> None:
    """The table query's first run dies between its output commit and its
    checkpoint commit, its stream started from version 0; then its input
    table is updated (a commit that removes files, after which a new stream
    would start from the snapshot). The rerun replays the first micro-batch
    from the recorded start: the result equals uninterrupted runs'."""
    from splice.engine.faults import KillPoint
    from splice.resources.warehouse import WarehouseResource
    from splice.runtime.compile import compile_path

    from splice.testing.cases import append_rows
    from tests.helpers.crash_harness import Kill, complete, differences, run_killed, table_rows

    sql = tmp_path / "pipeline.sql"
    sql.write_text(PIPELINE)
    pipeline = compile_path(sql)
    first = [{"id": i, "amount": 5 * i, "ts": f"2024-01-01 00:00:0{i}"} for i in range(1, 6)]
    # id 1 now passes the filter, id 3 no longer does, id 4 is deleted.
    second = [{"id": 1, "amount": 50, "ts": "2024-01-01 00:01:00"},
              {"id": 3, "amount": 1, "ts": "2024-01-01 00:01:01"},
              {"id": 4, "amount": None, "ts": "2024-01-01 00:01:02"}]
    reference, crashed = (
        Workspace(pipeline, warehouse=WarehouseResource(root=str(tmp_path / name)), spark=spark).io
        for name in ("reference", "crashed"))
    for rows in (first, second):
        append_rows(reference, pipeline.sources["t1"], rows)
        complete(reference)

    append_rows(crashed, pipeline.sources["t1"], first)
    run_killed(crashed, Kill(KillPoint.OUTPUT_COMMITTED, "big"), pipeline=sql)
    checkpoint = Path(crashed.checkpoint(pipeline.step("big")))
    assert (checkpoint / "offsets" / "0").exists() and not (checkpoint / "commits" / "0").exists()
    assert list(json.loads((checkpoint / RECORD).read_text()).values()) == [
        {"startingVersion": "0"}]
    append_rows(crashed, pipeline.sources["t1"], second)
    complete(crashed)

    expected = table_rows(reference)
    assert sorted((dict(r)["id"], dict(r)["amount"]) for r in expected["big"]) == [
        (1, 50), (5, 25)]
    assert differences(expected, table_rows(crashed)) == {}
