"""Table-table joins against DuckDB as the oracle.

Random changelogs (random keys from a small domain, updates, tombstones, in
random arrival order) go into two tables over several runs; after the last
run, every join type's result table must equal the same query run by DuckDB
over the two tables' final states.
"""

from __future__ import annotations

import random
from collections import Counter

import duckdb
import pytest
from splice.runtime.runner import run_pipeline

from tests.conftest import table_join_plan
from tests.helpers.pipeline import append, make_io

pytestmark = pytest.mark.spark

SOURCES = """
CREATE TABLE l (id INT, fk INT, lv INT) WITH (location='l', key='id');
CREATE TABLE r (id INT, rv INT) WITH (location='r', key='id');
CREATE TABLE m (id BIGINT, mv BIGINT) WITH (location='m', key='id');
"""

# output name -> (Splice statement, DuckDB query over tables l, r and m)
JOINS = {
    "pk_inner": ("SELECT l.lv AS lv, r.rv AS rv FROM l JOIN r ON l.id = r.id",
                 "SELECT l.lv, r.rv FROM l JOIN r ON l.id = r.id"),
    "pk_left": ("SELECT l.lv AS lv, r.rv AS rv FROM l LEFT JOIN r ON l.id = r.id",
                "SELECT l.lv, r.rv FROM l LEFT JOIN r ON l.id = r.id"),
    "pk_right": ("SELECT l.lv AS lv, r.rv AS rv FROM l RIGHT JOIN r ON l.id = r.id",
                 "SELECT l.lv, r.rv FROM l RIGHT JOIN r ON l.id = r.id"),
    "pk_full": ("SELECT l.lv AS lv, r.rv AS rv FROM l FULL JOIN r ON l.id = r.id",
                "SELECT l.lv, r.rv FROM l FULL JOIN r ON l.id = r.id"),
    "fk_inner": ("SELECT l.id AS lid, l.lv AS lv, r.rv AS rv FROM l JOIN r ON l.fk = r.id",
                 "SELECT l.id, l.lv, r.rv FROM l JOIN r ON l.fk = r.id"),
    "fk_left": ("SELECT l.id AS lid, l.lv AS lv, r.rv AS rv FROM l LEFT JOIN r ON l.fk = r.id",
                "SELECT l.id, l.lv, r.rv FROM l LEFT JOIN r ON l.fk = r.id"),
    "m2m_inner": ("SELECT l.id AS lid, r.id AS rid FROM l JOIN r ON l.lv = r.rv",
                  "SELECT l.id, r.id FROM l JOIN r ON l.lv = r.rv"),
    "m2m_full": ("SELECT l.id AS lid, r.id AS rid FROM l FULL JOIN r ON l.lv = r.rv",
                 "SELECT l.id, r.id FROM l FULL JOIN r ON l.lv = r.rv"),
    # The referring side on the right: keyed by the right input's key.
    "fk_right_inner": ("SELECT l.id AS lid, r.rv AS rv FROM r JOIN l ON r.id = l.fk",
                       "SELECT l.id, r.rv FROM r JOIN l ON r.id = l.fk"),
    "fk_right_outer": ("SELECT l.id AS lid, r.rv AS rv FROM r RIGHT JOIN l ON r.id = l.fk",
                       "SELECT l.id, r.rv FROM r RIGHT JOIN l ON r.id = l.fk"),
    # Keys and join values of two types (INT and BIGINT), widened by Spark.
    "mixed_pk_full": ("SELECT l.lv AS lv, m.mv AS mv FROM l FULL JOIN m ON l.id = m.id",
                      "SELECT l.lv, m.mv FROM l FULL JOIN m ON l.id = m.id"),
    "mixed_fk_left": ("SELECT m.id AS mid, l.lv AS lv FROM m LEFT JOIN l ON m.mv = l.id",
                      "SELECT m.id, l.lv FROM m LEFT JOIN l ON m.mv = l.id"),
    # Two equalities, neither a primary key: keyed by both inputs' keys.
    "two_values": ("SELECT l.id AS lid, r.id AS rid FROM l JOIN r ON l.fk = r.rv AND l.lv = r.id",
                   "SELECT l.id, r.id FROM l JOIN r ON l.fk = r.rv AND l.lv = r.id"),
    "crossed": ("SELECT l.id AS lid, r.id AS rid FROM l CROSS JOIN r",
                "SELECT l.id, r.id FROM l CROSS JOIN r"),
}


VALUE_COLUMNS = {"l": ["fk", "lv"], "r": ["rv"], "m": ["mv"]}


def _changelog(rng: random.Random, side: str, n: int) -> list[dict]:
    rows = []
    for _ in range(n):
        key = rng.randrange(6)
        if rng.random() < 0.25:  # a tombstone: every non-key column NULL
            rows.append({"id": key, **{c: None for c in VALUE_COLUMNS[side]}})
        elif side == "l":
            rows.append({"id": key, "fk": rng.randrange(6), "lv": rng.randrange(4)})
        elif side == "r":
            rows.append({"id": key, "rv": rng.randrange(4)})
        else:
            rows.append({"id": key, "mv": rng.randrange(6)})
    return rows


def _fold(changelog: list[dict], value_columns: list[str]) -> dict[int, dict]:
    """The table a changelog leaves: the latest record per key, tombstones delete."""
    state: dict[int, dict] = {}
    for row in changelog:
        if all(row[c] is None for c in value_columns):
            state.pop(row["id"], None)
        else:
            state[row["id"]] = row
    return state


# Under the recompute plan no output here is read downstream: each run
# overwrites every result with the whole join.
# The recompute plan's run of it is a second proof (the plan's own tests
# are tests/joins/test_table_plan*.py and the chains): pytest -m full.
@pytest.mark.parametrize(("seed", "plan"), [
    (7, "incremental"), pytest.param(7, "recompute", marks=pytest.mark.full)])
def test_table_table_joins_equal_duckdb(spark, warehouse, seed: int, plan: str) -> None:
    rng = random.Random(seed)
    sql = SOURCES + "".join(f"CREATE TABLE {name} AS {query};\n"
                            for name, (query, _) in JOINS.items())
    io = make_io(spark, warehouse, sql, name="differential")
    logs: dict[str, list[dict]] = {side: [] for side in VALUE_COLUMNS}
    sizes = {"l": 7, "r": 5, "m": 5}
    for _ in range(2):  # the second run updates and deletes rows of the first
        for side, log in logs.items():
            batch = _changelog(rng, side, sizes[side])
            append(io, side, batch)
            log += batch
        with table_join_plan(spark, plan):
            reports = run_pipeline(io.pipeline, io)
        assert {r.plan["name"] for r in reports if r.plan} == {plan}

    db = duckdb.connect()
    db.execute("CREATE TABLE l (id INTEGER, fk INTEGER, lv INTEGER)")
    db.execute("CREATE TABLE r (id INTEGER, rv INTEGER)")
    db.execute("CREATE TABLE m (id BIGINT, mv BIGINT)")
    for side, log in logs.items():
        final = _fold(log, VALUE_COLUMNS[side])
        assert final, f"the random changelog left {side} empty; pick another seed"
        columns = ["id", *VALUE_COLUMNS[side]]
        db.executemany(f"INSERT INTO {side} VALUES ({', '.join('?' for _ in columns)})",
                       [tuple(v[c] for c in columns) for v in final.values()])

    for name, (query, oracle) in JOINS.items():
        expected = Counter(tuple(row) for row in db.execute(oracle).fetchall())
        step = io.pipeline.outputs[name]
        rows = spark.read.format("delta").load(io.table_path(step)).collect()
        columns = [p.name for p in step.select]
        actual = Counter(tuple(row[c] for c in columns) for row in rows)
        assert actual == expected, f"{name}: {query}"
        keys = [row["_key"] for row in rows]
        assert len(keys) == len(set(map(repr, keys))), f"{name}: duplicate result keys"
