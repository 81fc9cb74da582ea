"""Single-input queries over a table (``CREATE TABLE t2 AS SELECT ... FROM t1
WHERE ...``), maintained from the table's changes: checked against the same
query over the input's current rows (DuckDB) after every run, and the error
texts of what a table query cannot do."""

from __future__ import annotations

import random
from collections import Counter

import duckdb
import pytest
from splice.runtime.compile import compile_text
from splice.runtime.runner import run_pipeline
from splice.sql.errors import SqlErrors

from tests.helpers.pipeline import append, forget_last_batch, make_io

SOURCES = "CREATE TABLE t1 (id INT, name STRING, amount INT) WITH (location='t1', key='id');\n"
QUERIES = {
    # output -> (Splice query, DuckDB query over t1, the output's columns)
    "big": ("SELECT id, name, amount FROM t1 WHERE amount > 10",
            "SELECT id, name, amount FROM t1 WHERE amount > 10", ("id", "name", "amount")),
    "renamed": ("SELECT id AS customer, upper(name) AS loud FROM t1",
                "SELECT id, upper(name) FROM t1", ("customer", "loud")),
    "copy": ("SELECT * FROM t1", "SELECT id, name, amount FROM t1", ("id", "name", "amount")),
    "null_filter": ("SELECT name FROM t1 WHERE name <> 'b'",
                    "SELECT name FROM t1 WHERE name <> 'b'", ("name",)),
}


def _sql() -> str:
    return SOURCES + "".join(f"CREATE TABLE {name} AS {query};\n"
                             for name, (query, _, _) in QUERIES.items())


def _fold(log: list[dict]) -> dict[int, dict]:
    state: dict[int, dict] = {}
    for row in log:
        if row["name"] is None and row["amount"] is None:
            state.pop(row["id"], None)  # a tombstone
        else:
            state[row["id"]] = row
    return state


def _expected(log: list[dict], oracle: str) -> Counter:
    db = duckdb.connect()
    db.execute("CREATE TABLE t1 (id INTEGER, name VARCHAR, amount INTEGER)")
    rows = [(r["id"], r["name"], r["amount"]) for r in _fold(log).values()]
    if rows:
        db.executemany("INSERT INTO t1 VALUES (?, ?, ?)", rows)
    return Counter(db.execute(oracle).fetchall())


def _actual(io, name: str, columns: tuple[str, ...]) -> Counter:
    step = io.pipeline.outputs[name]
    df = io.spark.read.format("delta").load(io.table_path(step))
    return Counter(tuple(r[c] for c in columns) for r in df.collect())


@pytest.mark.spark
def test_table_queries_follow_their_table(spark, warehouse) -> None:
    """Inserts, updates into and out of the filter, deletes and a key
    re-inserted after its delete, over three runs of random changes: after
    each run every output equals its query over t1's current rows."""
    rng = random.Random(11)
    io = make_io(spark, warehouse, _sql(), name="tq")
    log: list[dict] = []
    for run in range(3):
        batch = []
        for _ in range(8):
            key = rng.randrange(6)
            if run and rng.random() < 0.3:
                batch.append({"id": key, "name": None, "amount": None})
            else:
                batch.append({"id": key, "name": rng.choice(["a", "b", None]),
                              "amount": rng.randrange(20)})
        append(io, "t1", batch)
        log += batch
        run_pipeline(io.pipeline, io)
        for name, (_, oracle, columns) in QUERIES.items():
            assert _actual(io, name, columns) == _expected(log, oracle), f"run {run}: {name}"
    assert _expected(log, QUERIES["big"][1]), "the random changes left 'big' empty"


@pytest.mark.spark
def test_a_replayed_batch_changes_nothing(spark, warehouse) -> None:
    """A crash between the MERGE and the checkpoint's commit: the batch runs
    again, and Delta's idempotent-DML marks keep the result as it was."""
    io = make_io(spark, warehouse, _sql(), name="tqreplay")
    rows = [{"id": 1, "name": "a", "amount": 30}, {"id": 2, "name": "b", "amount": 5}]
    append(io, "t1", rows)
    run_pipeline(io.pipeline, io)
    append(io, "t1", [{"id": 1, "name": "a", "amount": 3}, {"id": 3, "name": "c", "amount": 50}])
    run_pipeline(io.pipeline, io)
    forget_last_batch(io.checkpoint(io.pipeline.outputs["big"]))
    run_pipeline(io.pipeline, io)
    assert _actual(io, "big", ("id", "name", "amount")) == Counter({(3, "c", 50): 1})


def _error(sql: str) -> str:
    with pytest.raises(SqlErrors) as caught:
        compile_text(SOURCES + sql, file="q.sql", name="q")
    return str(caught.value)


def test_a_table_query_gives_a_table() -> None:
    text = _error("CREATE STREAM s AS SELECT id FROM t1;")
    assert "q.sql:2:" in text
    assert "a query over the table 't1' gives a table, not a stream" in text
    assert "write CREATE TABLE ... AS SELECT" in text


def test_a_table_query_keeps_the_key() -> None:
    text = _error("CREATE TABLE s AS SELECT name AS _key, amount FROM t1;")
    assert "q.sql:2:" in text and "keeps the table's key" in text


def test_explain_shows_the_table_projection() -> None:
    from splice.physical.explain import explain_step

    pipeline = compile_text(SOURCES + "CREATE TABLE big AS SELECT id FROM t1 WHERE amount > 1;",
                            file="q.sql", name="q")
    text = explain_step(pipeline.outputs["big"], pipeline).render()
    assert "TableProject" in text and "input: t1_table (change feed)" in text
    assert "no longer passing the filter" in text
