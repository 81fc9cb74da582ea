"""Nullability of output fields: what an outer join may leave empty is
nullable; the preserved side keeps its input's nullability. No Spark."""

from __future__ import annotations

import pytest

from tests.sql.helpers import STREAMS, analyze

TABLE = "CREATE TABLE t (id INT NOT NULL, v STRING NOT NULL) WITH (location='t', key='id');\n"


def nullable(sql: str, step_id: str = "o") -> dict[str, bool]:
    return {c.name: c.nullable for c in analyze(sql).step(step_id).relation.columns}


def test_sources_are_nullable_unless_declared_not_null() -> None:
    assert nullable(STREAMS, "a") == {"id": False, "x": True, "ts": True}


def test_projections_keep_what_they_can_prove() -> None:
    sql = STREAMS + ("INSERT INTO o SELECT STREAM id, id + 1 AS inc, x, COALESCE(x, 'none') AS "
                     "cx, 'k' AS k, CONCAT(x, 'y') AS cat FROM a;")
    assert nullable(sql) == {"id": False, "inc": False, "x": True, "cx": False, "k": False,
                             "cat": True}


@pytest.mark.parametrize(("join", "left_nullable", "right_nullable"), [
    ("JOIN", False, False),
    ("LEFT JOIN", False, True),
    ("RIGHT JOIN", True, False),
    ("FULL JOIN", True, True),
])
def test_outer_joins_make_the_missing_side_nullable(join: str, left_nullable: bool,
                                                    right_nullable: bool) -> None:
    sql = STREAMS.replace("id INT, y", "id INT NOT NULL, y") + (
        f"INSERT INTO o SELECT STREAM a.id AS aid, b.id AS bid, a.x, "
        f"COALESCE(a.id, b.id) AS either FROM a {join} b WITHIN 1s ON a.id = b.id;")
    assert nullable(sql) == {"aid": left_nullable, "bid": right_nullable, "x": True,
                             "either": left_nullable and right_nullable}


def test_stream_table_left_join_star() -> None:
    sql = STREAMS + TABLE + "INSERT INTO o SELECT STREAM * FROM a LEFT JOIN t ON a.id = t.id;"
    assert nullable(sql) == {"a_id": False, "x": True, "ts": True, "t_id": True, "v": True}
    sql = sql.replace("LEFT JOIN", "JOIN")
    assert nullable(sql) == {"a_id": False, "x": True, "ts": True, "t_id": False, "v": False}


def test_a_chained_stage_passes_its_nullability_on() -> None:
    sql = STREAMS + TABLE + (
        "INSERT INTO o SELECT STREAM a.id AS aid, t.v FROM a LEFT JOIN b WITHIN 1s "
        "ON a.id = b.id JOIN t ON b.id = t.id;")
    assert nullable(sql) == {"aid": False, "v": False}
    assert nullable(sql, "o_stage1")["b_id"] is True
