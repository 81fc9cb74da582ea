"""Stream-stream emission, to the millisecond: window endpoints match, a
record's window closes exactly at its time + after (left) or + before
(right) + grace, its null-padded row comes then and never a millisecond
earlier, and a record that arrives once its window has closed is dropped and
counted."""

from __future__ import annotations

import pytest

from tests.helpers.intervals import SOURCES, pairs, rec, run
from tests.helpers.pipeline import append, make_io

pytestmark = pytest.mark.spark

# before 5 s, after 10 s, grace 2 s: a left record closes at its time + 12 s,
# a right one at its time + 7 s.
SQL = SOURCES + """
CREATE STREAM full_join AS SELECT l.v AS lv, r.v AS rv
  FROM lefts l FULL JOIN rights r WITHIN (5 SECONDS, 10 SECONDS) GRACE PERIOD 2 SECONDS
  ON l.k = r.k;
"""


def test_windows_close_exactly_when_the_language_says(spark, warehouse) -> None:
    io = make_io(spark, warehouse, SQL, name="emission")

    append(io, "lefts", [rec("k1", "A", 100), rec("k2", "E", 100)])
    append(io, "rights", [
        rec("k1", "b", 110),      # r - l = +10 s: the 'after' endpoint, matches A
        rec("k1", "c", 95),       # r - l = -5 s: the 'before' endpoint, matches A
        rec("k1", "d", 94.999),   # 1 ms outside the window
        rec("k3", "f", 100),
    ])
    run(io)
    # Stream time 110: d (closes 101.999) and f (107) are due; E (112) is not.
    assert pairs(io, "full_join", with_time=True) == [
        ("A", "b", 110.0), ("A", "c", 100.0), (None, "d", 94.999), (None, "f", 100.0)]

    append(io, "lefts", [rec("k9", "G", 111.999)])
    run(io)
    # Stream time 111.999: E closes at 112, one millisecond later.
    assert (("E", None) not in pairs(io, "full_join"))

    append(io, "rights", [rec("k8", "H", 112)])
    run(io)
    # Stream time 112: E's window closes; its null-padded row has E's time.
    assert ("E", None, 100.0) in pairs(io, "full_join", with_time=True)

    append(io, "lefts", [rec("k1", "late1", 100),      # closes at 112 <= 112: late
                         rec("k1", "ok1", 100.001)])   # closes at 112.001: in time
    append(io, "rights", [rec("k1", "late2", 105),     # closes at 112: late
                          rec("k1", "ok2", 105.001)])  # closes at 112.001: in time
    reports = run(io)
    assert reports["full_join"].late_dropped == 2
    assert reports["full_join"].metadata()["late_records_dropped"] == 2
    # ok1 still meets b (open until 117) and ok2; A closed at 112, so ok2
    # (which would be inside A's window) does not meet it.
    run(io)
    assert pairs(io, "full_join") == sorted([
        ("A", "b"), ("A", "c"), (None, "d"), (None, "f"), ("E", None),
        ("ok1", "b"), ("ok1", "ok2")], key=repr)
