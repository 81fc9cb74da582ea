"""Analyze SQL text in tests: the plan, or the positioned errors."""

from __future__ import annotations

import pytest
from splice.runtime.compile import analyze_sources
from splice.sql.errors import SqlError, SqlErrors
from splice.sql.plan import JoinStep, Pipeline, Step

FILE = "t.sql"

STREAMS = """\
CREATE STREAM a (id INT NOT NULL, x STRING, ts TIMESTAMP) WITH (location='a', timestamp='ts');
CREATE STREAM b (id INT, y STRING, ts TIMESTAMP) WITH (location='b', timestamp='ts');
"""


def analyze(sql: str) -> Pipeline:
    """The logical plan of ``sql`` (no physical check, no Spark)."""
    return analyze_sources([(FILE, sql)], "t")


def reject(sql: str) -> list[SqlError]:
    """The errors ``sql`` is rejected with; fails when it is accepted."""
    with pytest.raises(SqlErrors) as raised:
        analyze(sql)
    for error in raised.value.errors:
        assert error.position.file == FILE
        assert error.rule and error.fix
    return raised.value.errors


def only_error(sql: str) -> SqlError:
    errors = reject(sql)
    assert len(errors) == 1, [e.render() for e in errors]
    return errors[0]


def step(pipeline: Pipeline, step_id: str) -> Step:
    return pipeline.step(step_id)


def join_of(pipeline: Pipeline, step_id: str = "out") -> JoinStep:
    found = pipeline.step(step_id)
    assert isinstance(found, JoinStep), found
    return found


def line_col(text: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """The 1-based line and column where ``needle`` occurs in ``text``."""
    at = -1
    for _ in range(occurrence):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1
