"""ASOF joins in the front end (sql/asof.py) and their plan. No Spark."""

from __future__ import annotations

import pytest
from splice.physical.explain import explain_step
from splice.physical.planner import plan_step
from splice.physical.strategy import Strategy, choose_strategy
from splice.sql.plan import AsofInequality, Kind

from tests.sql.helpers import STREAMS, analyze, join_of, only_error

TABLE = "CREATE TABLE c (id INT, v STRING, ts TIMESTAMP) WITH (location='c', key='id');\n"


def asof(on: str, join: str = "ASOF JOIN", right: str = "b", where: str = "") -> str:
    return (STREAMS + TABLE + f"INSERT INTO out SELECT a.x, {right}.ts AS rts FROM a {join} "
            f"{right} ON {on}{where};")


def test_two_streams_give_a_table_keyed_by_the_left_key() -> None:
    join = join_of(analyze(asof("a.id = b.id AND b.ts <= a.ts")))
    assert join.kind == Kind.TABLE
    assert (join.key, join.relation.key_type) == ("l._key", "string")
    assert join.inputs == ("a", "b")  # never re-keyed
    assert join.window is None and join.residual is None
    assert join.rowtime == "l.ROWTIME"
    assert join.asof == AsofInequality(left="l.`ts`", op=">=", right="r.`ts`",
                                       text="b.ts <= a.ts")
    assert choose_strategy(join) == Strategy.ASOF


@pytest.mark.parametrize(("written", "op"), [
    ("a.ts > b.ts", ">"), ("b.ts > a.ts", "<"), ("a.ts <= b.ts", "<="), ("b.ts >= a.ts", "<="),
])
def test_the_inequality_is_normalized_to_left_op_right(written: str, op: str) -> None:
    join = join_of(analyze(asof(f"a.id = b.id AND {written}")))
    assert (join.asof.left, join.asof.op, join.asof.right) == ("l.`ts`", op, "r.`ts`")


def test_a_table_on_either_side_still_gives_a_table() -> None:
    join = join_of(analyze(asof("a.id = c.id AND c.ts <= a.ts", "ASOF LEFT JOIN", "c")))
    assert (join.left_kind, join.right_kind, join.kind) == (Kind.STREAM, Kind.TABLE, Kind.TABLE)
    assert join.key_mode is None


def test_where_over_the_right_input_runs_after_the_join() -> None:
    join = join_of(analyze(asof("a.id = b.id AND b.ts <= a.ts",
                                where=" WHERE b.y = 'x' AND a.x = 'y'")))
    assert (join.left_filter, join.right_filter, join.post_filter) == (
        "(l.`x` = 'y')", None, "(r.`y` = 'x')")


def test_a_condition_on_the_right_input_in_on_narrows_the_candidates() -> None:
    join = join_of(analyze(asof("a.id = b.id AND b.ts <= a.ts AND b.y = 'x'")))
    assert join.right_filter == "(r.`y` = 'x')"


@pytest.mark.parametrize(("sql", "words"), [
    (asof("a.id = b.id AND b.ts <= a.ts", "ASOF RIGHT JOIN"), "INNER or LEFT"),
    (asof("b.ts <= a.ts"), "at least one equality"),
    (asof("a.id = b.id"), "exactly one inequality"),
    (asof("a.id = b.id AND b.ts <= a.ts AND b.ts > a.ts"), "exactly one inequality"),
    (asof("a.id = b.id AND b.ts <= a.ts AND a.x <> b.y"), "only equalities and one"),
    (asof("a.id = b.id AND b.ts + (a.ts - a.ts) <= a.ts"), "reference one input"),
])
def test_rules_of_on(sql: str, words: str) -> None:
    assert words in only_error(sql).rule


def test_a_key_projection_is_rejected() -> None:
    sql = STREAMS + ("INSERT INTO out SELECT b.y AS _key, a.x FROM a ASOF JOIN b "
                     "ON a.id = b.id AND b.ts <= a.ts;")
    assert "keyed by its left row's key" in only_error(sql).rule


def test_explain_names_the_inequality_ties_and_the_recompute() -> None:
    join = join_of(analyze(asof("a.id = b.id AND b.ts <= a.ts", "ASOF LEFT JOIN")))
    text = explain_step(join).render()
    assert plan_step(join).strategy == Strategy.ASOF
    for words in ("AsofJoin", "strategy: asof join", "type: ASOF LEFT",
                  "the largest r.`ts` with l.`ts` >= r.`ts`", "smallest r._key (NULL last)",
                  "latest to arrive", "recomputes the left rows of its equality values",
                  "arrival log"):
        assert words in text, words
