"""GROUP BY into sql.plan.AggregateStep (sql/aggregate.py). No Spark."""

from __future__ import annotations

import pytest
import yaml
from splice.physical.explain import explain_pipeline
from splice.runtime.compile import compile_sources
from splice.sql.plan import AggregateStep, JoinStep, Kind

from tests.conftest import CASES
from tests.sql.helpers import STREAMS, analyze, line_col, only_error

TABLE = "CREATE TABLE t (id INT, v STRING) WITH (location='t', key='id');\n"


def aggregate(sql: str, step_id: str = "o") -> AggregateStep:
    found = analyze(STREAMS + TABLE + sql).step(step_id)
    assert isinstance(found, AggregateStep), found
    return found


def test_group_by_one_column_is_a_table_keyed_by_it() -> None:
    step = aggregate("INSERT INTO o SELECT STREAM x, COUNT(*) AS total FROM a GROUP BY x;")
    assert step.kind == Kind.TABLE  # SELECT STREAM, as Lenses writes it
    assert (step.key, step.relation.key_type) == ("`x`", "string")
    assert step.group_by == ("`x`",)
    assert [(p.name, p.expr) for p in step.select] == [("x", "`x`"), ("total", "COUNT(*)")]
    assert step.relation.key_columns == ("x",)
    assert step.inputs == ("a",)
    assert step.rowtime == "max(ROWTIME)"


def test_several_grouping_expressions_make_a_struct_key() -> None:
    step = aggregate("INSERT INTO o SELECT TABLE x, id + 1 AS i, COUNT(*) AS n FROM a GROUP BY x, "
                     "id + 1;")
    assert step.key == "named_struct('x', `x`, 'k1', `id` + 1)"
    assert step.relation.key_type == "struct<`x`:string,`k1`:int>"


def test_aggregate_types_and_nullability() -> None:
    step = aggregate("CREATE TABLE o AS SELECT x, COUNT(id) AS n, SUM(id) AS s, AVG(id) AS av, "
                     "MIN(x) AS mn, MAX(ts) AS mx, SUM(id) * 2 AS s2 FROM a GROUP BY x;")
    columns = {c.name: (c.type, c.nullable) for c in step.relation.columns}
    assert columns == {
        "x": ("string", True), "n": ("bigint", False), "s": ("bigint", True),
        "av": ("double", True), "mn": ("string", True), "mx": ("timestamp", True),
        "s2": ("bigint", True),
    }


def test_group_by_position_and_alias() -> None:
    by_position = aggregate("INSERT INTO o SELECT STREAM x AS name, COUNT(*) AS n FROM a "
                            "GROUP BY 1;")
    by_alias = aggregate("INSERT INTO o SELECT STREAM x AS name, COUNT(*) AS n FROM a "
                         "GROUP BY name;")
    assert by_position.key == by_alias.key == "`x`"
    assert by_position.relation.key_columns == ("name",)


def test_where_and_having() -> None:
    step = aggregate("INSERT INTO o SELECT STREAM x, COUNT(*) AS n FROM a WHERE id > 0 "
                     "GROUP BY x HAVING n > 1 AND MAX(id) < 10;")
    assert step.filter == "`id` > 0"
    assert step.having == "COUNT(*) > 1 AND MAX(`id`) < 10"


def test_a_key_projection_must_keep_the_groups() -> None:
    step = aggregate("INSERT INTO o SELECT STREAM x AS _key, COUNT(*) AS n FROM a GROUP BY x;")
    assert step.key == "`x`"
    sql = STREAMS + TABLE + ("INSERT INTO o SELECT STREAM x AS _key, COUNT(*) AS n FROM a "
                             "GROUP BY x, id;")
    assert "leaves out the grouping expression" in only_error(sql).rule


def test_a_column_neither_grouped_nor_aggregated_is_named() -> None:
    sql = STREAMS + TABLE + "INSERT INTO o SELECT STREAM x, id, COUNT(*) FROM a GROUP BY x;"
    error = only_error(sql)
    assert "'id' is neither grouped nor aggregated" in error.rule
    assert "add id to GROUP BY" in error.fix
    assert (error.position.line, error.position.col) == line_col(sql, "id, COUNT")


def test_expressions_of_grouped_columns_are_grouped() -> None:
    step = aggregate("INSERT INTO o SELECT STREAM UPPER(a.x) AS up, COUNT(*) + 1 AS n FROM a "
                     "GROUP BY x;")
    assert [p.expr for p in step.select] == ["UPPER(`x`)", "COUNT(*) + 1"]


@pytest.mark.parametrize(("statement", "words"), [
    ("INSERT INTO o SELECT STREAM x FROM a WHERE COUNT(*) > 1 GROUP BY x;",
     "cannot stand in WHERE"),
    ("INSERT INTO o SELECT STREAM x, COUNT(*) FROM a;", "needs GROUP BY"),
    ("INSERT INTO o SELECT STREAM x, SUM(x) FROM a GROUP BY x;", "SUM needs a number"),
    ("INSERT INTO o SELECT STREAM x, COUNT(DISTINCT id) FROM a GROUP BY x;",
     "COUNT(DISTINCT ...) is not supported"),
    ("INSERT INTO o SELECT STREAM x, SUM(COUNT(id)) FROM a GROUP BY x;", "cannot be nested"),
    ("INSERT INTO o SELECT STREAM x, STDDEV(id) FROM a GROUP BY x;",
     "not an aggregate Splice computes"),
    ("INSERT INTO o SELECT STREAM * FROM a GROUP BY x;", "'*' cannot be projected"),
    ("INSERT INTO o SELECT STREAM x FROM a GROUP BY COUNT(*);", "cannot stand in GROUP BY"),
    ("INSERT INTO o SELECT STREAM COUNT(*) FROM a GROUP BY 'x';", "groups by a constant"),
    ("INSERT INTO o SELECT STREAM COUNT(*) FROM a GROUP BY 3;", "names no projection"),
    ("CREATE STREAM o AS SELECT x, COUNT(*) FROM a GROUP BY x;", "not a stream"),
    ("INSERT INTO o SELECT STREAM v, COUNT(*) FROM t GROUP BY v;",
     "aggregating the table 't' is not supported yet"),
])
def test_rejected_aggregations(statement: str, words: str) -> None:
    error = only_error(STREAMS + TABLE + statement)
    assert words in error.rule
    assert error.position.line == 4


def test_join_then_group_in_one_statement() -> None:
    pipeline = analyze(STREAMS + TABLE + (
        "INSERT INTO o SELECT TABLE t.v, COUNT(*) AS n, SUM(a.id) AS s FROM a JOIN t "
        "ON a.id = t.id WHERE a.x <> 'skip' GROUP BY t.v;"))
    join, agg = pipeline.step("o_join"), pipeline.step("o")
    assert isinstance(join, JoinStep) and isinstance(agg, AggregateStep)
    assert agg.inputs == ("o_join",)
    assert join.output is None and agg.output == "o"
    assert join.left_filter is not None  # WHERE runs before the join and the grouping
    assert agg.group_by == ("`v`",)
    assert [p.expr for p in agg.select] == ["`v`", "COUNT(*)", "SUM(`a_id`)"]


def test_the_case_lenses_join_then_group() -> None:
    case = yaml.safe_load((CASES / "lenses-join-then-group.yaml").read_text())
    pipeline = analyze(case["sql"])
    outputs = pipeline.outputs
    assert isinstance(outputs["joinedRes"], AggregateStep)
    assert outputs["joinedRes"].key == "`name`"
    assert isinstance(outputs["oneStatement"], AggregateStep)
    assert [c.name for c in outputs["oneStatement"].relation.columns] == ["name", "total"]
    assert "Aggregate {" in explain_pipeline(pipeline)


def test_compile_accepts_aggregations_the_engine_runs() -> None:
    sql = STREAMS + "INSERT INTO o SELECT STREAM x, COUNT(*) AS n FROM a GROUP BY x;"
    pipeline = compile_sources([("t.sql", sql)], "t")
    assert isinstance(pipeline.outputs["o"], AggregateStep)
