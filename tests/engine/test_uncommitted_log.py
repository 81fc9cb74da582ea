"""A table whose first commit never landed (a run killed, or out of disk
space, while it created the table) leaves a ``_delta_log`` folder with no
commit in it; Delta takes any such folder for a table, so ``CREATE TABLE IF
NOT EXISTS`` did nothing and every rerun's first MERGE failed. The step's
table is created over such leftovers; a log with a commit is untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType
from splice.engine.io import delta_version, ensure_table

pytestmark = pytest.mark.spark

SCHEMA = StructType([StructField("_key", StringType()), StructField("v", IntegerType())])


@pytest.mark.parametrize("leftover", [
    [".00000000000000000000.json.0b1c.tmp", "..00000000000000000000.json.0b1c.tmp.crc"],
    [],  # an empty log folder
])
def test_a_log_without_a_commit_is_replaced_by_the_created_table(spark, tmp_path: Path,
                                                                leftover: list[str]) -> None:
    table = tmp_path / "t"
    (table / "_delta_log").mkdir(parents=True)
    for name in leftover:
        (table / "_delta_log" / name).write_bytes(b"")
    ensure_table(spark, str(table), SCHEMA)
    assert delta_version(spark, str(table)) == 0
    spark.createDataFrame([("a", 1)], SCHEMA).write.format("delta").mode("append").save(
        str(table))
    assert [tuple(r) for r in spark.read.format("delta").load(str(table)).collect()] == [("a", 1)]


def test_a_log_with_a_commit_is_left_as_it_is(spark, tmp_path: Path) -> None:
    table = str(tmp_path / "t")
    spark.createDataFrame([("a", 1)], SCHEMA).write.format("delta").save(table)
    stray = tmp_path / "t" / "_delta_log" / ".00000000000000000001.json.9f.tmp"
    stray.write_bytes(b"")
    ensure_table(spark, table, SCHEMA)
    assert delta_version(spark, table) == 0 and stray.exists()
    assert spark.read.format("delta").load(table).count() == 1
