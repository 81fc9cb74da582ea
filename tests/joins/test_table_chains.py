"""Chains of table-table joins (3 and 4 tables) against DuckDB as the
oracle, and the key each chain's result carries.

Every stage of a chain that joins on the key (the key column of an input,
or a column of an earlier stage that still holds the key) is a key join, so
the result is keyed by the ID, as ksqlDB keys it, not by a struct of the
stages' keys (LANGUAGE.md, "More than two inputs").
"""

from __future__ import annotations

import random
from collections import Counter

import duckdb
import pytest
from splice.runtime.compile import compile_text
from splice.runtime.runner import run_pipeline

from tests.conftest import table_join_plan
from tests.helpers.pipeline import append, make_io

SOURCES = "".join(
    f"CREATE TABLE t{i} (id INT, v{i} INT) WITH (location='t{i}', key='id');\n"
    for i in range(1, 5))

# output -> (the FROM clause of a chain, the tables it reads, keyed by the ID)
CHAINS = {
    "inner3": ("t1 JOIN t2 ON t1.id = t2.id JOIN t3 ON t1.id = t3.id", 3, True),
    "left3": ("t1 LEFT JOIN t2 ON t1.id = t2.id LEFT JOIN t3 ON t1.id = t3.id", 3, True),
    "right3": ("t1 RIGHT JOIN t2 ON t1.id = t2.id RIGHT JOIN t3 ON t2.id = t3.id", 3, True),
    "full3": ("t1 FULL JOIN t2 ON t1.id = t2.id FULL JOIN t3 ON t1.id = t3.id", 3, False),
    # The chain: the inner stage keeps the ID, so the FULL stage joins keys.
    "inner_full3": ("t1 JOIN t2 ON t1.id = t2.id FULL JOIN t3 ON t1.id = t3.id", 3, True),
    "inner4": ("t1 JOIN t2 ON t1.id = t2.id JOIN t3 ON t2.id = t3.id JOIN t4 ON t3.id = t4.id",
               4, True),
    "left4": ("t1 LEFT JOIN t2 ON t1.id = t2.id LEFT JOIN t3 ON t1.id = t3.id "
              "LEFT JOIN t4 ON t1.id = t4.id", 4, True),
    "right4": ("t1 RIGHT JOIN t2 ON t1.id = t2.id RIGHT JOIN t3 ON t2.id = t3.id "
               "RIGHT JOIN t4 ON t3.id = t4.id", 4, True),
    "full4": ("t1 FULL JOIN t2 ON t1.id = t2.id FULL JOIN t3 ON t1.id = t3.id "
              "FULL JOIN t4 ON t1.id = t4.id", 4, False),
    "inner_left_full4": ("t1 JOIN t2 ON t1.id = t2.id LEFT JOIN t3 ON t1.id = t3.id "
                         "FULL JOIN t4 ON t1.id = t4.id", 4, True),
}


def _columns(n: int) -> list[str]:
    return [*(f"t{i}.id AS id{i}" for i in range(1, n + 1)),
            *(f"v{i}" for i in range(1, n + 1))]


# The default suite's share: an inner, a full and the inner-full
# chain of three, and the chain of four mixing inner, left and full; the
# other six run with pytest -m full (each chain's result is checked alone,
# over the same changelogs).
DEFAULT_CHAINS = ("inner3", "full3", "inner_full3", "inner_left_full4")


def _sql(chains: dict[str, tuple[str, int, bool]]) -> str:
    return SOURCES + "".join(
        f"CREATE TABLE {name} AS SELECT {', '.join(_columns(n))} FROM {chain};\n"
        for name, (chain, n, _) in chains.items())


def _changelog(rng: random.Random, table: int, n: int) -> list[dict]:
    rows = []
    for _ in range(n):
        key = rng.randrange(6)
        value = None if rng.random() < 0.25 else rng.randrange(10)  # None: a tombstone
        rows.append({"id": key, f"v{table}": value})
    return rows


def _fold(log: list[dict], table: int) -> list[tuple]:
    state: dict[int, int] = {}
    for row in log:
        if row[f"v{table}"] is None:
            state.pop(row["id"], None)
        else:
            state[row["id"]] = row[f"v{table}"]
    return list(state.items())


def _check(io, spark, chains: dict[str, tuple[str, int, bool]], logs: dict[int, list[dict]],
           after: str, last: bool) -> None:
    """Every chain's result table equals DuckDB's query over the folded
    changelogs, keyed by the ID where the chain joins keys throughout. After
    the ``last`` run every table and result holds rows (an earlier run's may
    be empty, as a join's result may be)."""
    db = duckdb.connect()
    for table, log in logs.items():
        db.execute(f"CREATE TABLE t{table} (id INTEGER, v{table} INTEGER)")
        rows = _fold(log, table)
        assert rows or not last, f"the random changelog left t{table} empty; pick another seed"
        if rows:
            db.executemany(f"INSERT INTO t{table} VALUES (?, ?)", rows)

    for name, (chain, n, keyed_by_id) in chains.items():
        query = f"SELECT {', '.join(_columns(n))} FROM {chain}"
        expected = Counter(db.execute(query).fetchall())
        assert expected or not last, f"{name}: the oracle's result is empty; pick another seed"
        step = io.pipeline.outputs[name]
        rows = spark.read.format("delta").load(io.table_path(step)).collect()
        names = [p.name for p in step.select]
        assert Counter(tuple(r[c] for c in names) for r in rows) == expected, (name, after)
        keys = [r["_key"] for r in rows]
        assert len(keys) == len(set(map(repr, keys))), f"{name}: duplicate result keys"
        if keyed_by_id:
            # The key is the ID itself: the first ID present in the row.
            assert step.relation.key_type == "int", name
            assert all(r["_key"] == next(r[f"id{i}"] for i in range(1, n + 1)
                                         if r[f"id{i}"] is not None) for r in rows), name


@pytest.mark.spark
@pytest.mark.parametrize("names", [
    pytest.param(DEFAULT_CHAINS, id="four"),
    pytest.param(tuple(c for c in CHAINS if c not in DEFAULT_CHAINS), id="rest",
                 marks=pytest.mark.full)])
def test_chains_equal_duckdb_and_keep_the_id_as_key(spark, warehouse, names) -> None:
    """Three runs, each of the two plans taking over the other's result: the
    incremental plan builds the chains, the recompute updates and deletes
    their rows (a chain's inner stages are read by the next stage: they
    MERGE only the rows that differ, the last stage overwrites), and the
    incremental plan goes on from what the recompute wrote. Each run's
    results are checked."""
    rng = random.Random(5)
    chains = {name: CHAINS[name] for name in names}
    io = make_io(spark, warehouse, _sql(chains), name="chains")
    logs: dict[int, list[dict]] = {i: [] for i in range(1, 5)}
    plans = ("incremental", "recompute", "incremental")
    for number, plan in enumerate(plans, start=1):
        for table, log in logs.items():
            batch = _changelog(rng, table, 6)
            append(io, f"t{table}", batch)
            log += batch
        with table_join_plan(spark, plan):
            reports = run_pipeline(io.pipeline, io)
        joins = [r for r in reports if r.plan]
        assert joins and {r.plan["name"] for r in joins} == {plan}
        _check(io, spark, chains, logs, f"run {number} ({plan})", last=number == len(plans))


def test_a_stage_joining_a_kept_key_is_a_key_join() -> None:
    """What the analyzer tracks: which output column of each stage still
    holds the key, through inner, outer and coalesced keys."""
    pipeline = compile_text(SOURCES + """
CREATE TABLE a AS SELECT t1.id AS i1, v1, v2, v3 FROM t1 JOIN t2 ON t1.id = t2.id
  FULL JOIN t3 ON t1.id = t3.id;
CREATE TABLE b AS SELECT t1.id AS i1, v1, v2, v3 FROM t1 FULL JOIN t2 ON t1.id = t2.id
  FULL JOIN t3 ON t1.id = t3.id;
CREATE TABLE c AS SELECT COALESCE(t1.id, t2.id) AS id, v1, v2 FROM t1 FULL JOIN t2
  ON t1.id = t2.id;
CREATE TABLE d AS SELECT t2.id AS i2, v1, v2 FROM t1 LEFT JOIN t2 ON t1.id = t2.id;
""", file="k.sql", name="k")
    steps = {s.id: s for s in pipeline.steps}
    assert steps["a"].key_mode == "primary" and steps["a"].relation.key_type == "int"
    # A FULL stage's t1.id is NULL in the rows only t2 had: not the key.
    assert steps["b"].key_mode == "pair"
    assert steps["c"].relation.key_columns == ("id",)
    # A LEFT join's right side may be missing: its ID is not the key.
    assert steps["d"].relation.key_columns == ()
