"""ASOF joins against DuckDB as the oracle.

Random rows arrive over several runs: small domains, so that left keys repeat
(a left stream is read as a table: its latest record per key is the row),
right rows tie on the equality and ordered values (the smallest ``_key`` wins,
NULL last, then the latest to arrive; a right table's row without a key is
dead-lettered) and NULLs in the join columns match
nothing. After every run the result table must equal DuckDB's ``ASOF [LEFT]
JOIN`` over the inputs so far, with the ties resolved before it (DuckDB's own
choice among ties is arbitrary). Every right row carries a unique value, so a
result row names the very right row it matched.
"""

from __future__ import annotations

import random
from collections import Counter

import duckdb
import pytest
from splice.runtime.runner import run_pipeline

from tests.helpers.pipeline import append, make_io

pytestmark = pytest.mark.spark

MIRROR = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}
TIES = "rid ASC NULLS LAST, seq DESC"  # the smallest key, NULL last; the latest arrival
# Other rules, to check that the data makes each of the two tie-breaks matter.
OTHER_TIES = ("rid ASC NULLS LAST, seq ASC", "rid DESC NULLS FIRST, seq DESC")

STREAMS = """
CREATE STREAM l (id INT, k INT, t INT, lv INT) WITH (location='l', key='id');
CREATE STREAM r (rid INT, k INT, t INT, rv INT) WITH (location='r', key='rid');
"""
TABLES = """
CREATE TABLE l (id INT, k INT, t INT, lv INT) WITH (location='l', key='id');
CREATE TABLE r (rid INT, k INT, t INT, rv INT) WITH (location='r', key='rid');
"""


OPS = {">=": "ge", ">": "gt", "<=": "le", "<": "lt"}
VARIANTS = [(op, left_join) for op in OPS for left_join in (False, True)]
# The default suite's share of the streams' variants: an inner join with a
# strict and a LEFT join with an inclusive operator; the other six run with
# pytest -m full (the same data: each variant's result is checked alone).
DEFAULT_VARIANTS = [(">", False), ("<=", True)]


def _output(op: str, left_join: bool) -> str:
    return f"asof_{OPS[op]}_{'left' if left_join else 'inner'}"


def _statement(op: str, left_join: bool) -> str:
    """The ASOF join under test; the LEFT one writes its inequality mirrored."""
    join, on = (("ASOF LEFT JOIN", f"r.k = l.k AND r.t {MIRROR[op]} l.t") if left_join
                else ("ASOF JOIN", f"l.k = r.k AND l.t {op} r.t"))
    return (f"CREATE TABLE {_output(op, left_join)} AS SELECT l.id AS id, l.lv AS lv, "
            f"r.rv AS rv FROM l {join} r ON {on};\n")


def _maybe(rng: random.Random, value: int, p: float = 0.1) -> int | None:
    return None if rng.random() < p else value


class Inputs:
    """The rows appended so far, in arrival order, and DuckDB over them."""

    def __init__(self, tables: bool) -> None:
        self.tables = tables
        self.left: list[dict] = []
        self.right: list[dict] = []
        self.rv = 0

    def left_rows(self, rng: random.Random, n: int) -> list[dict]:
        rows = []
        for _ in range(n):
            if self.tables and rng.random() < 0.2:  # a tombstone
                rows.append({"id": rng.randrange(6), "k": None, "t": None, "lv": None})
            else:
                rows.append({"id": rng.randrange(6), "k": _maybe(rng, rng.randrange(3)),
                             "t": _maybe(rng, rng.randrange(6)), "lv": rng.randrange(100)})
        self.left += rows
        return rows

    def right_rows(self, rng: random.Random, n: int) -> list[dict]:
        rows = []
        for _ in range(n):
            rid = rng.choice([0, 1, 2, None]) if not self.tables else rng.choice(
                [0, 1, 2, 3, 4, None])
            if self.tables and rng.random() < 0.2:
                rows.append({"rid": rid, "k": None, "t": None, "rv": None})
                continue
            self.rv += 1
            rows.append({"rid": rid, "k": _maybe(rng, rng.randrange(3)),
                         "t": _maybe(rng, rng.randrange(6)), "rv": self.rv})
        self.right += rows
        return rows

    def oracle(self, op: str, left_join: bool, ties: str = TIES) -> Counter:
        db = duckdb.connect()
        db.execute("CREATE TABLE l (seq INTEGER, id INTEGER, k INTEGER, t INTEGER, "
                   "lv INTEGER)")
        db.execute("CREATE TABLE r (seq INTEGER, rid INTEGER, k INTEGER, t INTEGER, "
                   "rv INTEGER)")
        db.executemany("INSERT INTO l VALUES (?, ?, ?, ?, ?)",
                       [(i, x["id"], x["k"], x["t"], x["lv"]) for i, x in enumerate(self.left)])
        db.executemany("INSERT INTO r VALUES (?, ?, ?, ?, ?)",
                       [(i, x["rid"], x["k"], x["t"], x["rv"])
                        for i, x in enumerate(self.right)])
        # A left stream is read as a table (latest record per key); a table
        # is its changelog folded, tombstones deleting their key.
        db.execute("CREATE TABLE lf AS SELECT * FROM l QUALIFY row_number() OVER "
                   "(PARTITION BY id ORDER BY seq DESC) = 1")
        if self.tables:
            # A table source's row without a key goes to the dead letter.
            db.execute("DELETE FROM r WHERE rid IS NULL")
            db.execute("DELETE FROM lf WHERE lv IS NULL")
            db.execute("CREATE TABLE rf AS SELECT * FROM r QUALIFY row_number() OVER "
                       "(PARTITION BY rid ORDER BY seq DESC) = 1")
            db.execute("DELETE FROM rf WHERE rv IS NULL")
        else:
            db.execute("CREATE TABLE rf AS SELECT * FROM r")
        # Ties on (k, t): the smallest key, NULL last, then the latest arrival.
        db.execute("CREATE TABLE rb AS SELECT * FROM rf QUALIFY row_number() OVER "
                   f"(PARTITION BY k, t ORDER BY {ties}) = 1")
        join = "ASOF LEFT JOIN" if left_join else "ASOF JOIN"
        rows = db.execute(f"SELECT lf.id, lf.lv, rb.rv FROM lf {join} rb "
                          f"ON lf.k = rb.k AND lf.t {op} rb.t").fetchall()
        return Counter(tuple(row) for row in rows)


def _run(spark, warehouse, sources: str, variants: list[tuple[str, bool]],
         runs: list[tuple[int, int]], seed: int) -> tuple[Inputs, dict[tuple, list[Counter]]]:
    """Appends random rows run by run to one pipeline holding every variant's
    join; after every run (not only the last) each result equals DuckDB's.
    Returns the inputs and DuckDB's result of each run, by variant."""
    rng = random.Random(seed)
    sql = sources + "".join(_statement(op, left_join) for op, left_join in variants)
    io = make_io(spark, warehouse, sql, name="asof")
    inputs = Inputs(tables=sources is TABLES)
    results: dict[tuple, list[Counter]] = {v: [] for v in variants}
    for n_left, n_right in runs:
        append(io, "l", inputs.left_rows(rng, n_left))
        append(io, "r", inputs.right_rows(rng, n_right))
        run_pipeline(io.pipeline, io)
        for op, left_join in variants:
            output = io.pipeline.outputs[_output(op, left_join)]
            rows = spark.read.format("delta").load(io.table_path(output)).collect()
            expected = inputs.oracle(op, left_join)
            assert Counter((row["id"], row["lv"], row["rv"]) for row in rows) == expected, (
                f"ASOF {'LEFT ' if left_join else ''}JOIN with {op}")
            assert all(row["_key"] == row["id"] for row in rows), "keyed by the left row's key"
            results[(op, left_join)].append(expected)
    return inputs, results


@pytest.mark.parametrize("variants", [
    pytest.param(DEFAULT_VARIANTS, id="two"),
    pytest.param([v for v in VARIANTS if v not in DEFAULT_VARIANTS], id="rest",
                 marks=pytest.mark.full)])
def test_asof_of_two_streams_equals_duckdb(spark, warehouse, variants) -> None:
    """Every inequality operator, INNER and LEFT, over one data set."""
    inputs, results = _run(spark, warehouse, STREAMS, variants, [(8, 9), (7, 9)], seed=227)
    ids = [x["id"] for x in inputs.left]
    assert len(ids) > len(set(ids)), "no left key repeats; pick another seed"
    for (op, left_join), (first, last) in results.items():
        assert sum(rv is not None for _, _, rv in last) >= 3, f"too few matches for {op}"
        assert set(first) - set(last), f"the second run changed no row of the first ({op})"
        for other in OTHER_TIES:  # the seed makes both tie-breaks decide some row
            assert inputs.oracle(op, left_join, other) != last, (
                f"ordering ties by {other} changes nothing for {op}; pick another seed")


def test_asof_of_two_tables_equals_duckdb(spark, warehouse) -> None:
    """Updates and tombstones on both sides: a left row deleted, a match lost."""
    inputs, results = _run(spark, warehouse, TABLES, [(">", True)], [(7, 6), (5, 6)],
                           seed=117)
    first, last = results[(">", True)]
    assert {r[0] for r in first} - {r[0] for r in last}, "no left row deleted"
    assert {r[0] for r in first if r[2] is not None} & {r[0] for r in last if r[2] is None}, (
        "no match lost")
    assert inputs.oracle(">", True, "rid DESC NULLS FIRST") != last, "no tie on the key"
