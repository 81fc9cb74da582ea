"""Every stream-stream window form normalizes to one sql.plan.Window
(sql/windows.py, sql/intervals.py). No Spark."""

from __future__ import annotations

import pytest
from splice.sql.plan import JoinType, ProjectStep

from tests.sql.helpers import STREAMS, analyze, join_of, line_col, only_error

JOIN = "INSERT INTO out SELECT STREAM a.x, b.y FROM a JOIN b {window} ON a.id = b.id{more};"


def window_of(window: str = "", more: str = "", prefix: str = ""):
    sql = STREAMS + prefix + JOIN.format(window=window, more=more)
    return join_of(analyze(sql)).window


# -- WITHIN and GRACE PERIOD -------------------------------------------------


def test_within_is_symmetric() -> None:
    w = window_of("WITHIN 5 SECONDS")
    assert (w.before_ms, w.after_ms, w.grace_ms, w.form) == (5000, 5000, 0, "WITHIN")


def test_within_before_after() -> None:
    w = window_of("WITHIN (1 MINUTE, 2 MINUTES)")
    assert (w.before_ms, w.after_ms) == (60_000, 120_000)


def test_grace_period_and_the_setting() -> None:
    assert window_of("WITHIN 5s GRACE PERIOD 2s").grace_ms == 2000
    set_grace = "SET join.grace.period = '1 MINUTE';\n"
    assert window_of("WITHIN 5s", prefix=set_grace).grace_ms == 60_000
    assert window_of("WITHIN 5s GRACE PERIOD 2s", prefix=set_grace).grace_ms == 2000


def test_grace_needs_a_window() -> None:
    sql = STREAMS + JOIN.format(window="GRACE PERIOD 2s", more="")
    error = only_error(sql)
    assert "GRACE PERIOD needs a window" in error.rule


def test_missing_window_names_within() -> None:
    sql = STREAMS + JOIN.format(window="", more="")
    error = only_error(sql)
    assert "needs a window" in error.rule and "WITHIN" in error.fix
    assert error.position.line == 3


def test_within_on_a_stream_table_join_is_rejected() -> None:
    sql = STREAMS + (
        "CREATE TABLE t (id INT, v STRING) WITH (location='t', key='id');\n"
        "INSERT INTO out SELECT STREAM a.x FROM a JOIN t WITHIN 5s ON a.id = t.id;")
    error = only_error(sql)
    assert "WITHIN only applies to a join of two streams" in error.rule
    assert (error.position.line, error.position.col) == line_col(sql, "5s")


# -- watermarks as grace -----------------------------------------------------

WATERMARKED = """\
CREATE SOURCE a (id INT, x STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '20' SECOND)
  WITH (location='a');
CREATE SOURCE b (id INT, y STRING, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '30' SECOND)
  WITH (location='b');
"""


def test_the_larger_watermark_is_the_grace_period() -> None:
    sql = WATERMARKED + JOIN.format(window="WITHIN 1 MINUTE", more="")
    assert join_of(analyze(sql)).window.grace_ms == 30_000


def test_grace_period_beats_the_watermark_which_beats_the_setting() -> None:
    sql = WATERMARKED + JOIN.format(window="WITHIN 1 MINUTE GRACE PERIOD 1s", more="")
    assert join_of(analyze(sql)).window.grace_ms == 1000
    sql = WATERMARKED + "SET join.grace.period = '1 HOUR';\n" + JOIN.format(
        window="WITHIN 1 MINUTE", more="")
    assert join_of(analyze(sql)).window.grace_ms == 30_000


def test_the_watermark_survives_projections() -> None:
    sql = WATERMARKED + (
        "WITH a2 AS (SELECT STREAM id, x, ts FROM a);\n"
        "INSERT INTO out SELECT STREAM a2.x FROM a2 JOIN b WITHIN 1s ON a2.id = b.id;")
    pipeline = analyze(sql)
    assert pipeline.step("a2").relation.watermark_ms == 20_000
    assert pipeline.step("a2").relation.time_column == "ts"
    assert join_of(pipeline).window.grace_ms == 30_000
    assert join_of(pipeline).relation.watermark_ms == 30_000


# -- s-Server OVER -----------------------------------------------------------

OVER = ("INSERT INTO out SELECT STREAM l.x, r.y FROM a {lw} AS l JOIN b {rw} AS r "
        "ON l.id = r.id;")


def over_window(lw: str, rw: str):
    return join_of(analyze(STREAMS + OVER.format(lw=lw, rw=rw))).window


def test_over_on_both_sides() -> None:
    w = over_window("OVER (RANGE INTERVAL '1' MINUTE PRECEDING)",
                    "OVER (RANGE INTERVAL '2' SECOND PRECEDING)")
    # r - Wl <= l <= r + Wr: a left record closes at its time + Wl.
    assert (w.before_ms, w.after_ms, w.form) == (2000, 60_000, "OVER")


def test_over_on_one_side_and_current_row_are_width_zero() -> None:
    w = over_window("", "OVER (RANGE INTERVAL '3' MINUTE PRECEDING)")
    assert (w.before_ms, w.after_ms) == (180_000, 0)
    w = over_window("OVER (RANGE CURRENT ROW)", "OVER (RANGE INTERVAL '3' MINUTE PRECEDING)")
    assert (w.before_ms, w.after_ms) == (180_000, 0)


def test_over_rows_is_rejected_with_the_reason() -> None:
    sql = STREAMS + OVER.format(lw="OVER (ROWS 10 PRECEDING)", rw="")
    error = only_error(sql)
    assert "count-based" in error.rule and "event time" in error.rule
    assert "RANGE INTERVAL" in error.fix
    assert (error.position.line, error.position.col) == line_col(sql, "OVER")


def test_over_and_within_are_two_windows() -> None:
    sql = STREAMS + ("INSERT INTO out SELECT STREAM l.x FROM a OVER (RANGE INTERVAL '1' "
                     "MINUTE PRECEDING) AS l JOIN b AS r WITHIN 5s ON l.id = r.id;")
    assert "two windows" in only_error(sql).rule


def test_over_on_a_single_input_or_a_stream_table_join_is_rejected() -> None:
    sql = STREAMS + ("INSERT INTO out SELECT STREAM x FROM a OVER (RANGE INTERVAL '1' MINUTE "
                     "PRECEDING);")
    assert "OVER window only means something in a stream-stream join" in only_error(sql).rule
    sql = STREAMS + (
        "CREATE TABLE t (id INT, v STRING) WITH (location='t', key='id');\n"
        "INSERT INTO out SELECT STREAM l.x FROM a OVER (RANGE INTERVAL '1' MINUTE PRECEDING)"
        " AS l JOIN t ON l.id = t.id;")
    assert "OVER window only means something" in only_error(sql).rule


def test_cross_join_of_two_over_windows() -> None:
    sql = STREAMS + ("INSERT INTO out SELECT STREAM l.x, r.y FROM a OVER (RANGE INTERVAL '1' "
                     "MINUTE PRECEDING) AS l CROSS JOIN b OVER (RANGE INTERVAL '1' MINUTE "
                     "PRECEDING) AS r;")
    join = join_of(analyze(sql))
    assert join.join_type == JoinType.CROSS and not join.equalities
    assert (join.window.before_ms, join.window.after_ms) == (60_000, 60_000)


def test_cross_join_of_two_streams_needs_a_window() -> None:
    sql = STREAMS + "INSERT INTO out SELECT STREAM a.x, b.y FROM a CROSS JOIN b;"
    assert "needs a window" in only_error(sql).rule


def test_a_stream_stream_join_needs_an_equality_unless_cross() -> None:
    sql = STREAMS + ("INSERT INTO out SELECT STREAM a.x FROM a JOIN b WITHIN 5s "
                     "ON a.x > b.y;")
    error = only_error(sql)
    assert "at least one equality" in error.rule and "CROSS JOIN" in error.fix


# -- interval predicates in ON -----------------------------------------------


@pytest.mark.parametrize(("bound", "before", "after", "form"), [
    ("a.ts BETWEEN b.ts - INTERVAL '1' MINUTE AND b.ts + INTERVAL '2' MINUTE",
     120_000, 60_000, "BETWEEN"),
    ("a.ts BETWEEN b.ts AND b.ts + INTERVAL '1 minute'", 60_000, 0, "BETWEEN"),
    ("b.ts BETWEEN a.ts - INTERVAL '10' SECOND AND a.ts", 10_000, 0, "BETWEEN"),
    ("a.ts >= b.ts - INTERVAL '1' MINUTE AND a.ts <= b.ts + INTERVAL '1' MINUTE",
     60_000, 60_000, "INTERVAL"),
    ("b.ts <= a.ts + INTERVAL '5' SECOND AND a.ts - INTERVAL '3' SECOND <= b.ts",
     3000, 5000, "INTERVAL"),
    ("a.ROWTIME BETWEEN b.ROWTIME - INTERVAL '1' SECOND AND b.ROWTIME", 0, 1000, "BETWEEN"),
    ("a.ts = b.ts", 0, 0, "EQUAL TIME"),
])
def test_time_bounds_in_on_make_the_window(bound: str, before: int, after: int,
                                           form: str) -> None:
    join = join_of(analyze(STREAMS + JOIN.format(window="", more=f" AND {bound}")))
    assert (join.window.before_ms, join.window.after_ms, join.window.form) == (
        before, after, form)
    assert join.residual is None  # the bounds are the window, not a residual too
    assert [e.text for e in join.equalities] == ["a.id = b.id"]


def test_strict_bounds_are_kept_as_a_residual() -> None:
    join = join_of(analyze(STREAMS + JOIN.format(
        window="", more=" AND a.ts > b.ts - INTERVAL '1' MINUTE AND a.ts < b.ts")))
    assert (join.window.before_ms, join.window.after_ms) == (0, 60_000)
    assert join.residual is not None and "<" in join.residual and ">" in join.residual


def test_a_range_without_zero_is_widened_and_kept_exact() -> None:
    join = join_of(analyze(STREAMS + JOIN.format(
        window="", more=" AND b.ts BETWEEN a.ts + INTERVAL '1' MINUTE AND a.ts + "
                        "INTERVAL '2' MINUTE")))
    assert (join.window.before_ms, join.window.after_ms) == (0, 120_000)
    assert join.residual is not None and "BETWEEN" in join.residual


def test_a_one_sided_bound_names_the_missing_one() -> None:
    sql = STREAMS + JOIN.format(window="", more=" AND a.ts >= b.ts")
    error = only_error(sql)
    assert "one side only" in error.rule
    assert "how much later a.ts may be than b.ts" in error.rule
    assert "a.ts <= b.ts + INTERVAL" in error.fix
    assert (error.position.line, error.position.col) == line_col(sql, "a.ts >=")


def test_an_empty_range_is_rejected() -> None:
    sql = STREAMS + JOIN.format(window="", more=" AND a.ts BETWEEN b.ts + INTERVAL '2' "
                                "MINUTE AND b.ts + INTERVAL '1' MINUTE")
    assert "no pair that can match" in only_error(sql).rule


def test_a_bound_on_another_column_is_a_residual_and_not_a_window() -> None:
    sql = STREAMS.replace("y STRING", "y STRING, other TIMESTAMP") + JOIN.format(
        window="", more=" AND a.ts BETWEEN b.other - INTERVAL '1' MINUTE AND b.other")
    assert "needs a window" in only_error(sql).rule
    join = join_of(analyze(
        STREAMS.replace("y STRING", "y STRING, other TIMESTAMP")
        + JOIN.format(window="WITHIN 1 HOUR",
                      more=" AND a.ts BETWEEN b.other - INTERVAL '1' MINUTE AND b.other")))
    assert join.window.form == "WITHIN" and "BETWEEN" in join.residual


def test_with_another_window_time_comparisons_are_residual() -> None:
    join = join_of(analyze(STREAMS + JOIN.format(window="WITHIN 1 HOUR",
                                                 more=" AND a.ts < b.ts")))
    assert join.window.form == "WITHIN" and join.residual is not None


def test_chained_joins_measure_from_the_result_rowtime() -> None:
    sql = STREAMS + (
        "CREATE STREAM c (id INT, z STRING, ts TIMESTAMP) WITH (location='c', timestamp='ts');\n"
        "INSERT INTO out SELECT STREAM a.x, c.z FROM a JOIN b WITHIN 1s ON a.id = b.id "
        "JOIN c ON c.id = a.id AND c.ts BETWEEN a.ts AND a.ts + INTERVAL '1' SECOND;")
    # a.ts is a column of the first stage's result, no longer the event time.
    assert "needs a window" in only_error(sql).rule
    sql = sql.replace("c.ts BETWEEN a.ts AND a.ts", "c.ts BETWEEN a.ROWTIME AND a.ROWTIME")
    pipeline = analyze(sql)
    assert pipeline.step("out_stage1").relation.time_column is None
    assert (join_of(pipeline).window.before_ms, join_of(pipeline).window.after_ms) == (0, 1000)


def test_asof_inequality_is_its_match_rule_not_a_window_bound() -> None:
    from splice.runtime.compile import analyze_sources

    sql = STREAMS + ("INSERT INTO out SELECT TABLE a.x FROM a ASOF JOIN b ON a.id = b.id "
                     "AND b.ts <= a.ts;")
    join = next(s for s in analyze_sources([("t.sql", sql)], "t").steps if s.op == "join")
    assert join.window is None
    assert join.asof is not None


# -- RisingWave TUMBLE / HOP -------------------------------------------------

TUMBLES = ("INSERT INTO out SELECT STREAM a.x, b.y FROM {l} JOIN {r} "
           "ON a.id = b.id AND a.window_start = b.window_start;")


def test_tumble_window_join() -> None:
    pipeline = analyze(STREAMS + TUMBLES.format(l="TUMBLE(a, ts, INTERVAL '1' MINUTE)",
                                                r="TUMBLE(b, ts, INTERVAL '1' MINUTE)"))
    windowed = pipeline.step("a_tumble")
    assert isinstance(windowed, ProjectStep)
    exprs = {p.name: p.expr for p in windowed.select}
    assert exprs["window_start"] == "window(ROWTIME, '60000 milliseconds').start"
    assert exprs["window_end"] == "window(ROWTIME, '60000 milliseconds').end"
    assert windowed.relation.time_column == "ts"
    w = join_of(pipeline).window
    assert (w.before_ms, w.after_ms, w.form, w.size_ms) == (60_000, 60_000, "TUMBLE", 60_000)
    assert len(join_of(pipeline).equalities) == 2


def test_hop_window_join() -> None:
    hop = "HOP({s}, ts, INTERVAL '1' MINUTE, INTERVAL '5' MINUTE)"
    pipeline = analyze(STREAMS + TUMBLES.format(l=hop.format(s="a"), r=hop.format(s="b")))
    exprs = {p.name: p.expr for p in pipeline.step("a_hop").select}
    assert exprs["window_start"] == ("window(ROWTIME, '300000 milliseconds', "
                                     "'60000 milliseconds').start")
    w = join_of(pipeline).window
    assert (w.form, w.before_ms, w.size_ms, w.slide_ms) == ("HOP", 300_000, 300_000, 60_000)


def test_window_functions_must_match() -> None:
    sql = STREAMS + TUMBLES.format(l="TUMBLE(a, ts, INTERVAL '1' MINUTE)",
                                   r="TUMBLE(b, ts, INTERVAL '2' MINUTE)")
    error = only_error(sql)
    assert "same window" in error.rule
    assert (error.position.line, error.position.col) == line_col(sql, "TUMBLE(b")
    sql = STREAMS + TUMBLES.format(l="TUMBLE(a, ts, INTERVAL '1' MINUTE)", r="b").replace(
        "b.window_start", "b.ts")
    assert "only 'a' is read through TUMBLE" in only_error(sql).rule


def test_window_join_needs_the_window_equality() -> None:
    sql = STREAMS + ("INSERT INTO out SELECT STREAM a.x FROM TUMBLE(a, ts, INTERVAL '1' MINUTE)"
                     " JOIN TUMBLE(b, ts, INTERVAL '1' MINUTE) ON a.id = b.id;")
    error = only_error(sql)
    assert "does not equate the two inputs' windows" in error.rule
    assert "a.window_start = b.window_start" in error.fix


def test_tumble_time_column_must_be_the_event_time() -> None:
    sql = STREAMS.replace("x STRING", "x STRING, other TIMESTAMP") + TUMBLES.format(
        l="TUMBLE(a, other, INTERVAL '1' MINUTE)", r="TUMBLE(b, ts, INTERVAL '1' MINUTE)")
    error = only_error(sql)
    assert "not its event time" in error.rule
    assert (error.position.line, error.position.col) == line_col(sql, "other,")


def test_tumble_aliases_and_reuse() -> None:
    sql = STREAMS + ("INSERT INTO out SELECT STREAM t1.x, t2.x AS x2 "
                     "FROM TUMBLE(a, ROWTIME, INTERVAL '1' MINUTE) AS t1 "
                     "JOIN TUMBLE(a, ts, INTERVAL '1' MINUTE) AS t2 "
                     "ON t1.id = t2.id AND t1.window_start = t2.window_start;")
    pipeline = analyze(sql)
    assert [s.id for s in pipeline.steps if isinstance(s, ProjectStep)] == ["a_tumble"]
