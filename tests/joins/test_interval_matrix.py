"""Every stream-stream window form against every join type, on Spark.

One data set goes through each form's pipeline (one output per join type).
The expected rows come from LANGUAGE.md's rules, written out below in a few
lines of Python (``expected``): a pair matches inside its window (or window
function bucket), endpoints included; an unmatched record of an outer join's
preserved side is emitted null-padded once the stream time reaches its
close (time + after, or + before, + grace), never earlier. The first run
leaves some windows open; the second moves the stream time far on, so every
window closes.
"""

from __future__ import annotations

import pytest

from tests.helpers.intervals import TYPES, Form, expected, pairs, rec, run
from tests.helpers.pipeline import append, make_io

pytestmark = pytest.mark.spark

PLAIN = """
CREATE STREAM lefts (k STRING, v STRING, ts TIMESTAMP)
  WITH (location='lefts', key='k', timestamp='ts');
CREATE STREAM rights (k STRING, v STRING, ts TIMESTAMP)
  WITH (location='rights', key='k', timestamp='ts');
"""
# The grace of a join of these is the larger of the two watermarks: 4 s.
WATERMARKED = """
CREATE SOURCE lefts (k STRING, v STRING, ts TIMESTAMP,
                     WATERMARK FOR ts AS ts - INTERVAL '4' SECOND) WITH (location='lefts');
CREATE SOURCE rights (k STRING, v STRING, ts TIMESTAMP,
                      WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (location='rights');
"""

# (key, value, seconds)
LEFT_1 = [("k1", "L1", 0), ("k2", "Lx", 5), ("k1", "L2", 20), ("k1", "L3", 40),
          ("k5", "Lw", 55), ("k1", "L4", 60)]
RIGHT_1 = [("k1", "R1", 4), ("k1", "R2", 27), ("k1", "R3", 33), ("k3", "Ry", 50),
           ("k4", "Rw", 58), ("k1", "R4", 60)]
LEFT_2 = [("kz", "Lz", 1000)]
RIGHT_2 = [("kz", "Rz", 1000)]

class Within(Form):
    def join(self, join_type: str) -> str:
        window = {"WITHIN d": "WITHIN 10 SECONDS",
                  "WITHIN (before, after)": "WITHIN (5 SECONDS, 10 SECONDS)",
                  "GRACE PERIOD": "WITHIN 10 SECONDS GRACE PERIOD 3 SECONDS",
                  "source WATERMARK": "WITHIN (5 SECONDS, 10 SECONDS)"}[self.name]
        on = "" if join_type == "CROSS" else " ON l.k = r.k"
        return f"lefts l {join_type} JOIN rights r {window}{on}"


class Over(Form):
    def join(self, join_type: str) -> str:
        on = "" if join_type == "CROSS" else " ON l.k = r.k"
        return (f"lefts OVER (RANGE INTERVAL '10' SECOND PRECEDING) AS l {join_type} JOIN "
                f"rights OVER (RANGE INTERVAL '5' SECOND PRECEDING) AS r{on}")


class Between(Form):
    def join(self, join_type: str) -> str:
        return (f"lefts l {join_type} JOIN rights r ON l.k = r.k AND "
                "r.ts BETWEEN l.ts - INTERVAL '5' SECOND AND l.ts + INTERVAL '10' SECOND")


class EqualTime(Form):
    def join(self, join_type: str) -> str:
        return f"lefts l {join_type} JOIN rights r ON l.k = r.k AND l.ts = r.ts"


class Bucketed(Form):
    def join(self, join_type: str) -> str:
        if self.slide is None:
            fn = "TUMBLE({}, ts, INTERVAL '10' SECOND)"
        else:
            fn = "HOP({}, ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)"
        return (f"{fn.format('lefts')} l {join_type} JOIN {fn.format('rights')} r "
                "ON l.k = r.k AND l.window_start = r.window_start")


FORMS = [
    Within("WITHIN d", PLAIN, before=10, after=10, types=TYPES),
    Within("WITHIN (before, after)", PLAIN, before=5, after=10, types=TYPES),
    Within("GRACE PERIOD", PLAIN, before=10, after=10, grace=3, types=TYPES),
    Within("source WATERMARK", WATERMARKED, before=5, after=10, grace=4),
    # r - 10 s <= l <= r + 5 s: the same window as WITHIN (5 s, 10 s).
    Over("OVER", PLAIN, before=5, after=10, types=TYPES, timed=False),
    Between("BETWEEN", PLAIN, before=5, after=10, timed=False),
    EqualTime("EQUAL TIME", PLAIN, timed=False),
    # Window functions: checked once every window has closed.
    Bucketed("TUMBLE", WATERMARKED, size=10, grace=4, timed=False),
    Bucketed("HOP", WATERMARKED, size=10, slide=5, grace=4, timed=False),
]


def _sql(form: Form) -> str:
    outputs = [f"CREATE STREAM {t.lower()}_join AS SELECT l.v AS lv, r.v AS rv "
               f"FROM {form.join(t)};" for t in form.types]
    return form.sources + "\n".join(outputs)


def _append(io, lefts: list, rights: list) -> None:
    append(io, "lefts", [rec(*r) for r in lefts])
    append(io, "rights", [rec(*r) for r in rights])


@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_every_join_type(form: Form, spark, warehouse) -> None:
    io = make_io(spark, warehouse, _sql(form), name="matrix")
    if form.timed:
        _append(io, LEFT_1, RIGHT_1)
        run(io)
        for t in form.types:
            assert pairs(io, f"{t.lower()}_join") == expected(
                form, t, LEFT_1, RIGHT_1, stream_time=60), f"{t} after the first run"
        _append(io, LEFT_2, RIGHT_2)
    else:  # one run: the rows all arrive in time, in one micro-batch
        _append(io, LEFT_1 + LEFT_2, RIGHT_1 + RIGHT_2)
    run(io)
    for t in form.types:
        assert pairs(io, f"{t.lower()}_join") == expected(
            form, t, LEFT_1 + LEFT_2, RIGHT_1 + RIGHT_2, stream_time=1000), t


def test_the_expectations_say_what_they_should() -> None:
    """The rule above, spelled out for one form, so that it is not only
    Python checking Python."""
    form = FORMS[1]  # WITHIN (5 SECONDS, 10 SECONDS)
    assert expected(form, "FULL", LEFT_1, RIGHT_1, stream_time=60) == sorted([
        ("L1", "R1"), ("L2", "R2"), ("L4", "R4"),
        ("Lx", None), ("L3", None),          # closed at 15 and 50
        (None, "R3"), (None, "Ry"),          # closed at 38 and 55; Lw (65), Rw (63) open
    ], key=repr)
    assert expected(form, "CROSS", LEFT_1, RIGHT_1, stream_time=60) == sorted([
        ("L1", "R1"), ("Lx", "R1"), ("L2", "R2"),
        ("L3", "Ry"), ("Lw", "Ry"),  # 50 - 40 and 50 - 55: the two endpoints
        ("Lw", "Rw"), ("Lw", "R4"), ("L4", "Rw"), ("L4", "R4")], key=repr)
