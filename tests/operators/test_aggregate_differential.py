"""Streaming aggregations against DuckDB as the oracle.

Random records (a small domain of groups, NULL groups and values, negative
values) arrive over several runs; after the last run every aggregation's
result table must equal the same GROUP BY run by DuckDB over all the records,
one row per group, keyed by the grouping expressions.
"""

from __future__ import annotations

import random
from collections import Counter

import duckdb
import pytest
from splice.runtime.runner import run_pipeline

from tests.helpers.pipeline import append, make_io

pytestmark = pytest.mark.spark

SOURCE = ("CREATE STREAM s (id INT, g1 STRING, g2 INT, v INT) "
          "WITH (location='s', key='id');\n")
AGGREGATES = ("COUNT(*) AS n, COUNT(v) AS nv, SUM(v) AS total, MIN(v) AS lo, MAX(v) AS hi, "
              "AVG(v) AS mean")
COLUMNS = ["n", "nv", "total", "lo", "hi", "mean"]

# output -> (Splice statement, DuckDB query over table s, grouping columns)
AGGREGATIONS = {
    "by_one": (f"INSERT INTO by_one SELECT STREAM g1, {AGGREGATES} FROM s GROUP BY g1;",
               f"SELECT g1, {AGGREGATES} FROM s GROUP BY g1", ["g1"]),
    # Two grouping columns, WHERE before grouping and a HAVING that a later
    # negative value can turn false: the group's row must then go away.
    "by_two": (f"CREATE TABLE by_two AS SELECT g1, g2, {AGGREGATES} FROM s WHERE id <> 3 "
               "GROUP BY g1, g2 HAVING SUM(v) > 0;",
               f"SELECT g1, g2, {AGGREGATES} FROM s WHERE id <> 3 GROUP BY g1, g2 "
               "HAVING SUM(v) > 0", ["g1", "g2"]),
}


def _records(rng: random.Random, n: int) -> list[dict]:
    return [{"id": rng.randrange(8),
             "g1": rng.choice(["a", "b", "c", None]),
             "g2": rng.randrange(2),
             "v": None if rng.random() < 0.15 else rng.randrange(-6, 10)}
            for _ in range(n)]


def _normal(row: tuple) -> tuple:
    """AVG is a double: compare it rounded."""
    return tuple(round(x, 9) if isinstance(x, float) else x for x in row)


def _check(spark, io, db: duckdb.DuckDBPyConnection, name: str) -> set[tuple]:
    """The aggregation's table equals DuckDB's GROUP BY; its groups."""
    statement, oracle, groups = AGGREGATIONS[name]
    expected = Counter(_normal(tuple(row)) for row in db.execute(oracle).fetchall())
    df = spark.read.format("delta").load(io.table_path(io.pipeline.outputs[name]))
    rows = df.collect()
    actual = Counter(_normal(tuple(row[c] for c in [*groups, *COLUMNS])) for row in rows)
    assert actual == expected, statement
    for row in rows:  # keyed by the grouping expressions
        key = row["_key"]
        if len(groups) == 1:
            assert key == row["g1"]
        else:
            assert (key["g1"], key["g2"]) == (row["g1"], row["g2"])
    return {row[: len(groups)] for row in expected}


@pytest.mark.parametrize("name", list(AGGREGATIONS))
def test_aggregation_equals_duckdb(spark, warehouse, name: str) -> None:
    rng = random.Random(13)
    io = make_io(spark, warehouse, SOURCE + AGGREGATIONS[name][0], name=name)
    db = duckdb.connect()
    db.execute("CREATE TABLE s (id INTEGER, g1 VARCHAR, g2 INTEGER, v INTEGER)")
    seen: set[tuple] = set()
    vanished = False
    for size in (9, 7, 8):
        batch = _records(rng, size)
        append(io, "s", batch)
        db.executemany("INSERT INTO s VALUES (?, ?, ?, ?)",
                       [(r["id"], r["g1"], r["g2"], r["v"]) for r in batch])
        run_pipeline(io.pipeline, io)
        now = _check(spark, io, db, name)  # after every run, not only the last
        vanished |= bool(seen - now)
        seen |= now
    assert len(seen) > 2, "too few groups to mean much; pick another seed"
    if name == "by_two":
        assert vanished, "no group left HAVING; pick a seed that tests it"
