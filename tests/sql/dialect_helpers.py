"""Helpers the dialect and script tests share: parse with Splice, print back,
pick nodes, collect positioned errors."""


from __future__ import annotations

from pathlib import Path

import pytest
from splice.sql.dialect import Splice
from splice.sql.errors import SqlErrors
from splice.sql.script import parse_script
from sqlglot import exp, parse_one

CASES = Path(__file__).resolve().parents[1] / "cases"


def parse(sql: str) -> exp.Expr:
    return parse_one(sql, read=Splice)


def validate_identity(sql: str, write_sql: str | None = None) -> exp.Expr:
    """Parse ``sql`` with Splice and print it back: the canonical text is
    ``write_sql`` (``sql`` itself when not given)."""
    expression = parse(sql)
    assert expression.sql(dialect=Splice) == (write_sql or sql)
    return expression


def select(sql: str) -> exp.Select:
    expression = parse(sql)
    assert isinstance(expression, exp.Select)
    return expression


def only_join(sql: str) -> exp.Join:
    joins = select(sql).args["joins"]
    assert len(joins) == 1
    return joins[0]


def statement(sql: str) -> exp.Expr:
    [parsed] = parse_script(sql, "t.sql")
    return parsed.node


def errors_of(sql: str) -> list[tuple[int, int, str]]:
    with pytest.raises(SqlErrors) as raised:
        parse_script(sql, "t.sql")
    return [(e.position.line, e.position.col, e.rule) for e in raised.value.errors]


