"""SELECT clauses a streaming step cannot mean are rejected with a position
(sql/select_rules.py). No Spark."""

from __future__ import annotations

import pytest

from tests.sql.helpers import STREAMS, line_col, only_error


@pytest.mark.parametrize(("statement", "at", "words"), [
    ("INSERT INTO o SELECT STREAM id FROM a ORDER BY id;", "id;", "ORDER BY"),
    ("INSERT INTO o SELECT STREAM id FROM a LIMIT 5;", "5", "LIMIT"),
    ("INSERT INTO o SELECT DISTINCT id FROM a;", "INSERT", "DISTINCT"),
    ("INSERT INTO o SELECT STREAM id FROM a WHERE id IN (SELECT id FROM b);", "id FROM b",
     "subquery"),
    ("INSERT INTO o SELECT STREAM id, COUNT(*) OVER (PARTITION BY id) FROM a;", "COUNT",
     "window functions"),
    ("INSERT INTO o SELECT STREAM id FROM a WHERE COUNT(*) > 1;", "COUNT", "cannot stand in "
     "WHERE"),
    ("INSERT INTO o SELECT 1;", "1;", "has no FROM"),
])
def test_rejected_clauses(statement: str, at: str, words: str) -> None:
    sql = STREAMS + statement
    error = only_error(sql)
    assert words in error.rule
    assert (error.position.line, error.position.col) == line_col(sql, at)
