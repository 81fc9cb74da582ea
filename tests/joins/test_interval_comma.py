"""An interval join written as a comma join, its window in WHERE (issue 55),
on Spark: the rows it gives are the rows of the same join written with ON,
and those LANGUAGE.md says. (That the two compile to one plan is checked
without Spark in tests/sql/test_window_in_where.py.)"""

from __future__ import annotations

import pytest

from tests.helpers.intervals import SOURCES, Form, expected, pairs, rec, run
from tests.helpers.pipeline import append, make_io

pytestmark = pytest.mark.spark

BOUND = "l.k = r.k AND l.ts >= r.ts AND l.ts <= r.ts + INTERVAL '10' SECOND"
SQL = SOURCES + f"""
CREATE STREAM on_form AS SELECT l.v AS lv, r.v AS rv FROM lefts l JOIN rights r ON {BOUND};
CREATE STREAM comma_form AS SELECT l.v AS lv, r.v AS rv FROM lefts l, rights r WHERE {BOUND};
"""
# -10 s <= r.ts - l.ts <= 0: a right record matches the left ones of its next 10 s.
FORM = Form("comma WHERE", SOURCES, before=10, after=0)

# (key, value, seconds): endpoints (0 and 10 s), a pair 1 s too far each way,
# another key, and a right record matched by two left ones.
LEFTS = [("k1", "L1", 10), ("k1", "L2", 21), ("k1", "L3", 29), ("k2", "L4", 5),
         ("k1", "L5", 40), ("k1", "L6", 45)]
RIGHTS = [("k1", "R1", 0), ("k1", "R2", 10), ("k1", "R3", 30), ("k2", "R4", 5),
          ("k3", "R5", 40), ("k1", "R6", 38)]


def test_a_comma_join_gives_the_rows_of_the_on_join(spark, warehouse) -> None:
    io = make_io(spark, warehouse, SQL, name="comma")
    assert io.pipeline.step("comma_form").window == io.pipeline.step("on_form").window
    append(io, "lefts", [rec(*r) for r in LEFTS])
    append(io, "rights", [rec(*r) for r in RIGHTS])
    run(io)
    rows = pairs(io, "comma_form", with_time=True)
    assert rows == pairs(io, "on_form", with_time=True)
    matched = sorted((lv, rv) for lv, rv, _ in rows)
    assert matched == sorted(expected(FORM, "INNER", LEFTS, RIGHTS, stream_time=45))
    assert matched == [("L1", "R1"), ("L1", "R2"), ("L4", "R4"), ("L5", "R3"), ("L5", "R6"),
                       ("L6", "R6")]
    # The output's ROWTIME is the later of the pair's times, in both forms.
    assert {(lv, rv): t for lv, rv, t in rows}[("L5", "R3")] == 40
