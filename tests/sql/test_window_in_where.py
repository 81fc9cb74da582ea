"""A join's condition, its window included, written in ON, in the WHERE of a
comma join (``FROM l, r WHERE ...``), or split over both (sql/where_parts.py;
docs/decisions/window-condition-anywhere.md): the same plan and the same
messages. No Spark."""

from __future__ import annotations

import pytest
from splice.engine.definitions import definition_hash
from splice.physical.explain import explain_pipeline
from splice.runtime.compile import compile_text
from splice.sql.plan import JoinType

from tests.sql.helpers import STREAMS, analyze, join_of, line_col, only_error

TABLES = """\
CREATE TABLE t (id INT, name STRING) WITH (location='t', key='id');
CREATE TABLE u (id INT, city STRING) WITH (location='u', key='id');
"""
SELECT = "INSERT INTO out SELECT STREAM a.x, b.y FROM "
BOUNDS = [
    "a.ts >= b.ts AND a.ts <= b.ts + INTERVAL '10' SECOND",
    "a.ts BETWEEN b.ts - INTERVAL '1' MINUTE AND b.ts + INTERVAL '2' MINUTE",
    "b.ts <= a.ts + INTERVAL '5' SECOND AND a.ts - INTERVAL '3' SECOND <= b.ts",
    "a.ROWTIME BETWEEN b.ROWTIME - INTERVAL '1' SECOND AND b.ROWTIME",
    "a.ts > b.ts - INTERVAL '1' MINUTE AND a.ts < b.ts",
    "b.ts BETWEEN a.ts + INTERVAL '1' MINUTE AND a.ts + INTERVAL '2' MINUTE",
    "a.ts = b.ts",
]


def same_plan(first: str, second: str) -> None:
    """Two pipelines compile to the same steps (all but their SQL text), the
    same definitions (what a checkpoint is kept for) and the same EXPLAIN."""
    one, two = compile_text(first, "p.sql", "p"), compile_text(second, "p.sql", "p")
    assert [s.model_dump(exclude={"sql"}) for s in one.steps] == \
        [s.model_dump(exclude={"sql"}) for s in two.steps]
    assert [definition_hash(s) for s in one.steps] == [definition_hash(s) for s in two.steps]
    assert explain_pipeline(one) == explain_pipeline(two)


def test_the_issues_comma_join_is_the_on_join() -> None:
    bound = "a.id = b.id AND a.ts >= b.ts AND a.ts <= b.ts + INTERVAL '10' SECOND"
    comma = STREAMS + f"{SELECT}a, b WHERE {bound};"
    same_plan(STREAMS + f"{SELECT}a JOIN b ON {bound};", comma)
    join = join_of(analyze(comma))
    assert join.join_type == JoinType.INNER
    assert (join.window.before_ms, join.window.after_ms, join.window.form) == (
        10_000, 0, "INTERVAL")
    assert [e.text for e in join.equalities] == ["a.id = b.id"]
    assert join.residual is None and join.post_filter is None


@pytest.mark.parametrize("bound", BOUNDS)
def test_every_bound_form_means_the_same_in_where(bound: str) -> None:
    on = STREAMS + f"{SELECT}a JOIN b ON a.id = b.id AND {bound};"
    same_plan(on, STREAMS + f"{SELECT}a, b WHERE a.id = b.id AND {bound};")
    same_plan(on, STREAMS + f"{SELECT}a JOIN b ON a.id = b.id WHERE {bound};")


def test_a_window_split_over_on_and_where() -> None:
    on = STREAMS + (f"{SELECT}a JOIN b ON a.id = b.id AND a.ts >= b.ts "
                    "AND a.ts <= b.ts + INTERVAL '10' SECOND;")
    same_plan(on, STREAMS + (f"{SELECT}a JOIN b ON a.id = b.id AND a.ts >= b.ts "
                             "WHERE a.ts <= b.ts + INTERVAL '10' SECOND;"))
    same_plan(on, STREAMS + (f"{SELECT}a INNER JOIN b ON a.id = b.id AND a.ts <= b.ts + "
                             "INTERVAL '10' SECOND WHERE a.ts >= b.ts;"))


def test_one_input_filters_and_residuals_in_where_are_placed_as_in_on() -> None:
    more = "a.id = b.id AND a.ts BETWEEN b.ts AND b.ts + INTERVAL '1' MINUTE AND a.x > b.y"
    same_plan(STREAMS + f"{SELECT}a JOIN b ON {more} AND a.x = 'k';",
              STREAMS + f"{SELECT}a, b WHERE {more} AND a.x = 'k';")
    join = join_of(analyze(STREAMS + f"{SELECT}a, b WHERE {more} AND a.x = 'k';"))
    assert join.left_filter is not None and "'k'" in join.left_filter
    assert join.residual is not None and ">" in join.residual


@pytest.mark.parametrize(("bound", "later", "earlier", "waiting"), [
    ("a.ts >= b.ts", "a.ts", "b.ts", "b"),
    ("a.ts <= b.ts + INTERVAL '10' SECOND", "b.ts", "a.ts", "a"),
    ("b.ROWTIME > a.ROWTIME", "b.ts", "a.ts", "a"),  # named by the event-time columns
])
def test_a_one_sided_bound_names_the_missing_side_wherever_written(
        bound: str, later: str, earlier: str, waiting: str) -> None:
    written = [f"a JOIN b ON a.id = b.id AND {bound}", f"a, b WHERE a.id = b.id AND {bound}",
               f"a JOIN b ON a.id = b.id WHERE {bound}"]
    errors = []
    for form in written:
        sql = STREAMS + f"{SELECT}{form};"
        error = only_error(sql)
        assert (error.position.line, error.position.col) == line_col(sql, bound)
        errors.append((error.rule, error.fix, error.position.line))
    assert errors[0] == errors[1] == errors[2]
    rule, fix, _ = errors[0]
    assert "one side only" in rule
    assert f"the bound of how much later {later} may be than {earlier} is missing" in rule
    assert f"every '{waiting}' record would wait forever" in rule
    assert f"add the missing bound, for example AND {later} <= {earlier} + INTERVAL" in fix


def test_an_empty_range_in_where_is_rejected_as_in_on() -> None:
    bound = "a.ts BETWEEN b.ts + INTERVAL '2' MINUTE AND b.ts + INTERVAL '1' MINUTE"
    on = only_error(STREAMS + f"{SELECT}a JOIN b ON a.id = b.id AND {bound};")
    where = only_error(STREAMS + f"{SELECT}a, b WHERE a.id = b.id AND {bound};")
    assert "no pair that can match" in on.rule
    assert (on.rule, on.fix) == (where.rule, where.fix)


def test_a_bound_on_another_column_in_where_is_named() -> None:
    streams = STREAMS.replace("y STRING", "y STRING, other TIMESTAMP")
    bound = "a.ts BETWEEN b.other - INTERVAL '1' MINUTE AND b.other"
    for form in (f"a JOIN b ON a.id = b.id AND {bound}", f"a, b WHERE a.id = b.id AND {bound}",
                 f"a JOIN b ON a.id = b.id WHERE {bound}"):
        error = only_error(streams + f"{SELECT}{form};")
        assert "needs a window" in error.rule
        assert "b.other is not the event time of 'b' (b.ts)" in error.rule, error.rule
        assert "a time bound in ON or WHERE" in error.fix


def test_an_outer_joins_where_is_not_its_window() -> None:
    bound = "a.ts BETWEEN b.ts AND b.ts + INTERVAL '1' MINUTE"
    error = only_error(STREAMS + f"{SELECT}a LEFT JOIN b ON a.id = b.id WHERE {bound};")
    assert "needs a window" in error.rule
    assert f"'{bound}' is in WHERE, which filters the rows of a LEFT join" in error.rule
    assert "write it in ON" in error.rule and "a time bound in ON such as" in error.fix
    join = join_of(analyze(STREAMS + f"{SELECT}a LEFT JOIN b ON a.id = b.id AND {bound};"))
    assert join.join_type == JoinType.LEFT and join.window is not None


def test_with_another_window_where_stays_a_filter() -> None:
    """Time comparisons in WHERE make the window only when the join has no
    other: with WITHIN they filter the joined rows, as before."""
    join = join_of(analyze(STREAMS + f"{SELECT}a JOIN b WITHIN 1 HOUR ON a.id = b.id "
                           "WHERE a.ts < b.ts;"))
    assert join.window.form == "WITHIN" and join.residual is None
    assert join.post_filter is not None and "<" in join.post_filter


def test_a_comma_join_with_no_equality_is_a_cross_join() -> None:
    bound = "a.ts BETWEEN b.ts AND b.ts + INTERVAL '1' MINUTE"
    join = join_of(analyze(STREAMS + f"{SELECT}a, b WHERE {bound};"))
    assert join.join_type == JoinType.CROSS and not join.equalities
    assert (join.window.before_ms, join.window.after_ms) == (60_000, 0)
    # An equality of the two times is a window, not a join equality.
    join = join_of(analyze(STREAMS + f"{SELECT}a, b WHERE a.ts = b.ts;"))
    assert join.join_type == JoinType.CROSS and join.window.form == "EQUAL TIME"
    same_plan(STREAMS + f"{SELECT}a CROSS JOIN b WITHIN 5 SECONDS;",
              STREAMS + f"{SELECT}a, b WITHIN 5 SECONDS;")
    error = only_error(STREAMS + f"{SELECT}a, b WHERE a.id = b.id;")
    assert "needs a window" in error.rule


def test_an_or_across_the_inputs_in_where_filters_the_joined_rows() -> None:
    join = join_of(analyze(STREAMS + f"{SELECT}a, b WHERE a.id = b.id AND a.ts BETWEEN b.ts "
                           "AND b.ts + INTERVAL '1' MINUTE AND (a.x = b.y OR a.id > 3);"))
    assert join.join_type == JoinType.INNER and join.residual is None
    assert join.post_filter is not None and "OR" in join.post_filter


def test_comma_joins_of_tables_and_of_a_stream_and_a_table() -> None:
    same_plan(TABLES + "CREATE TABLE out AS SELECT t.name, u.city FROM t JOIN u ON t.id = u.id;",
              TABLES + "CREATE TABLE out AS SELECT t.name, u.city FROM t, u WHERE t.id = u.id;")
    sql = STREAMS + TABLES
    same_plan(sql + "INSERT INTO out SELECT STREAM a.x, t.name FROM a JOIN t ON a.id = t.id;",
              sql + "INSERT INTO out SELECT STREAM a.x, t.name FROM a, t WHERE a.id = t.id;")
    error = only_error(sql + "INSERT INTO out SELECT STREAM a.x FROM a, t WHERE a.x > t.name;")
    assert "this comma join is a CROSS JOIN, as its WHERE has no equality" in error.rule
    assert error.fix.startswith("add one to WHERE")


def test_a_chain_of_comma_joins_takes_each_stages_conditions() -> None:
    three = STREAMS + ("CREATE STREAM c (id INT, z STRING, ts TIMESTAMP) "
                       "WITH (location='c', timestamp='ts');\n")
    on = three + ("INSERT INTO out SELECT STREAM a.x, b.y, c.z FROM a JOIN b ON a.id = b.id "
                  "AND a.ts BETWEEN b.ts AND b.ts + INTERVAL '1' MINUTE JOIN c ON c.id = a.id "
                  "AND c.ROWTIME BETWEEN a.ROWTIME AND a.ROWTIME + INTERVAL '1' MINUTE;")
    comma = three + ("INSERT INTO out SELECT STREAM a.x, b.y, c.z FROM a, b, c WHERE "
                     "c.id = a.id AND a.id = b.id "
                     "AND c.ROWTIME BETWEEN a.ROWTIME AND a.ROWTIME + INTERVAL '1' MINUTE "
                     "AND a.ts BETWEEN b.ts AND b.ts + INTERVAL '1' MINUTE;")
    same_plan(on, comma)
    stage = join_of(analyze(comma), "out_stage1")
    assert [e.text for e in stage.equalities] == ["a.id = b.id"]
