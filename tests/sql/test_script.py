"""The script parser (sql.script) over every acceptance case: statements,
positions, offsets, errors and fuzzed input. No Spark here."""


from __future__ import annotations

import random

import pytest
import yaml
from splice.sql import expressions
from splice.sql.dialect import Splice
from splice.sql.errors import Position, SqlErrors
from splice.sql.script import ParsedStatement, node_position, parse_partial, parse_script
from sqlglot import exp

from tests.sql.dialect_helpers import (
    CASES,
    errors_of,
)
from tests.sql.mutations import case_sql, mutate

# ---------------------------------------------------------------------------
# (c) every acceptance case parses


def test_every_case_parses() -> None:
    files = sorted(CASES.glob("*.yaml"))
    assert files, f"no acceptance cases in {CASES}"
    for path in files:
        sql = yaml.safe_load(path.read_text())["sql"]
        statements = parse_script(sql, path.name)
        assert statements, path.name
        for parsed in statements:
            assert isinstance(parsed.node, expressions.STATEMENT_TYPES), path.name
            assert parsed.text and not parsed.text.endswith(";"), path.name
            assert sql[_offset(sql, parsed.position) :].startswith(parsed.text), path.name


def test_every_case_statement_prints_back_to_the_same_tree() -> None:
    for path in sorted(CASES.glob("*.yaml")):
        for parsed in parse_script(yaml.safe_load(path.read_text())["sql"], path.name):
            for pretty in (False, True):
                text = parsed.node.sql(dialect=Splice, pretty=pretty)
                [again] = parse_script(text, "printed.sql")
                assert again.node == parsed.node, text


def _offset(text: str, position: Position) -> int:
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[: position.line - 1]) + position.col - 1


# ---------------------------------------------------------------------------
# parse_script: statements, positions, offsets


SCRIPT = """-- a pipeline
CREATE STREAM orders (id INT, ts TIMESTAMP) WITH (location='orders');
;
/* the output */
INSERT INTO out
SELECT STREAM o.id
  FROM orders o
  LEFT JOIN customers c WITHIN 5s ON c.id = o.id
  JOIN items i ON i.id = o.id;;
"""


def test_parse_script_statements_and_positions() -> None:
    statements = parse_script(SCRIPT, "p.sql")
    assert [type(s.node) for s in statements] == [expressions.CreateSource, expressions.InsertInto]
    create, insert = statements
    assert isinstance(create, ParsedStatement)
    assert create.position == Position("p.sql", 2, 1)
    assert create.text == "CREATE STREAM orders (id INT, ts TIMESTAMP) WITH (location='orders')"
    assert insert.position == Position("p.sql", 5, 1)
    assert insert.text.startswith("INSERT INTO out\nSELECT STREAM") and insert.text.endswith("o.id")
    assert create.node.meta["offset"] == SCRIPT.index("CREATE")
    assert insert.node.meta["offset"] == SCRIPT.index("INSERT")

    left, inner = insert.node.expression.args["joins"]
    assert left.meta["offset"] == SCRIPT.index("LEFT JOIN")
    assert inner.meta["offset"] == SCRIPT.index("JOIN items")
    fallback = Position("p.sql", 1, 1)
    assert node_position(left, SCRIPT, "p.sql", fallback) == Position("p.sql", 8, 3)
    column = insert.node.expression.expressions[0]
    assert node_position(column, SCRIPT, "p.sql", fallback) == Position("p.sql", 6, 15)
    assert node_position(exp.column("x"), SCRIPT, "p.sql", fallback) == fallback


def test_comma_join_offset_is_its_table() -> None:
    text = "INSERT INTO o SELECT * FROM a, b WHERE a.x = b.x"
    [parsed] = parse_script(text, "c.sql")
    [join] = parsed.node.expression.args["joins"]
    assert join.meta["offset"] == text.index("b WHERE")


def test_explain_statement_offsets() -> None:
    text = "EXPLAIN\n  INSERT INTO o SELECT * FROM a"
    [parsed] = parse_script(text, "e.sql")
    assert parsed.node.meta["offset"] == 0
    assert parsed.node.this.meta["offset"] == text.index("INSERT")


def test_empty_scripts() -> None:
    assert parse_script("", "e.sql") == []
    assert parse_script(" ;; -- nothing\n/* at all */ ;", "e.sql") == []


# ---------------------------------------------------------------------------
# (d) errors: positions and wording


@pytest.mark.parametrize(
    ("sql", "marker", "words"),
    [
        ("CREATE STREAM x (a INT", "<end>", "expected ',' or ')'"),
        ("CREATE STREAM x (a INT b INT)", "b INT)", "column list of CREATE STREAM x"),
        ("CREATE STREAM x\n  (a INT,\n   b)", ")", "column b of CREATE STREAM x has no type"),
        ("CREATE STREAM x (a INT) WITH (location 'x')", "'x'", "expected '='"),
        ("CREATE VIEW v AS SELECT 1", "VIEW", "expected STREAM, TABLE, SOURCE"),
        ("INSERT INTO out\nSELECT a FROM t JOIN u WITHIN 5 ON a = b", "5", "has no unit"),
        ("INSERT INTO out SELECT a FROM t WITHIN 5s", "WITHIN", "WITHIN belongs to a JOIN"),
        ("INSERT INTO out VALUES (1)", "VALUES", "expected SELECT after INSERT INTO out"),
        ("INSERT INTO out SELECT a FROM (t", "<end>", "expected ')'"),
        ("INSERT INTO out SELECT a FROM t JOIN u WITHIN 5 WEEKS ON a = b", "WEEKS", "time unit"),
        ("INSERT INTO out SELECT a FROM t OVER (RANGE 5 SECONDS) AS x", ") AS",
         "expected PRECEDING"),
        ("INSERT INTO out SELECT a FROM t OVER (RANGE 5) AS x", "5", "has no unit"),
        ("INSERT INTO out SELECT a FROM t JOIN u FOR SYSTEM_TIME AS OF x ON a = b", "FOR",
         "PROCTIME()"),
        ("INSERT INTO out SELECT a FROM t JOIN u WITHIN (5s 6s) ON a = b", "6s", "','"),
        ("SET x", "<end>", "expected '=' after SET x"),
        ("WITH a AS (SELECT 1), b AS (SELECT 2)", ", b", "exactly one step"),
        ("EXPLAIN SELECT 1", "SELECT", "EXPLAIN explains one pipeline statement"),
        ("SELECT 'abc", "'abc", "string is never closed"),
        ('SELECT a FROM "b', '"b', "quoted name is never closed"),
        ("SELECT a FROM b /* open", "/*", "comment is never closed"),
    ],
)
def test_syntax_error_positions(sql: str, marker: str, words: str) -> None:
    offset = len(sql) if marker == "<end>" else sql.index(marker)
    line = sql.count("\n", 0, offset) + 1
    col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    [(got_line, got_col, rule)] = errors_of(sql)
    assert (got_line, got_col) == (line, col), rule
    assert words in rule


def test_errors_name_file_rule_and_fix() -> None:
    with pytest.raises(SqlErrors) as raised:
        parse_script("INSERT INTO out SELECT a FROM t JOIN u WITHIN ON a = b", "q.sql")
    [error] = raised.value.errors
    assert error.position.file == "q.sql"
    assert "duration" in error.rule
    assert "5s" in error.fix
    assert str(error).startswith("q.sql:1:47: ")


@pytest.mark.parametrize("sql", ["SELECT * FROM t", "DROP TABLE t", "UPDATE t SET a = 1",
                                 "WITH a AS (SELECT 1) SELECT * FROM a"])
def test_non_pipeline_statements_are_rejected(sql: str) -> None:
    [(line, col, rule)] = errors_of(f"CREATE STREAM a (id INT);\n  {sql};")
    assert (line, col) == (2, 3)
    assert "cannot be part of a pipeline" in rule and "INSERT INTO" in rule


def test_every_bad_statement_is_reported() -> None:
    errors = errors_of(
        "SELECT 1;\nCREATE STREAM a (id INT);\nINSERT INTO b SELEC * FROM a;\nDROP a;"
    )
    assert [(line, col) for line, col, _ in errors] == [(1, 1), (3, 15), (4, 1)]


@pytest.mark.parametrize(("bad", "names", "unnamed"), [
    ("CREATE STREAM p (id INT,, x STRING)", {"p"}, False),
    ('CREATE OR REPLACE TABLE "Q r" (id INT,) WITH (key=\'id\')', {"q r"}, False),
    ("INSERT INTO o SELEC * FROM a", {"o"}, False),
    ("EXPLAIN CREATE STREAM s AS SELEC * FROM a", {"s"}, False),
    ("WITH w AS (SELECT * FROM a", {"w"}, False),
    ("CREATE STREAM (id INT)", set(), True),  # no name: any may be meant
    ("CRETE STREAM s (id INT)", set(), True),  # a misspelt keyword: the same
    ("SET 'x' =", set(), False),
    ("SELECT 1", set(), False),
    ("DROP TABLE t", set(), False),
])
def test_the_statements_that_parse_and_the_names_of_those_that_do_not(
        bad: str, names: set[str], unnamed: bool) -> None:
    script = parse_partial(f"CREATE STREAM a (id INT);\n{bad};\nCREATE STREAM c (id INT);", "t.sql")
    assert [s.position.line for s in script.statements] == [1, 3]
    assert [e.position.line for e in script.errors] == [2]
    assert (set(script.unparsed_names), script.unnamed) == (names, unnamed)


def test_a_file_that_does_not_tokenize_has_no_statements_and_any_name() -> None:
    script = parse_partial("CREATE STREAM a (id INT);\nCREATE STREAM 'b (id INT);", "t.sql")
    assert (script.statements, len(script.errors), script.unnamed) == ([], 1, True)


# ---------------------------------------------------------------------------
# (e) fuzz: mutated case SQL parses or fails with positioned SqlErrors


def test_fuzzed_statements_fail_only_with_positioned_sql_errors() -> None:
    rng = random.Random(20240601)
    statements = [list(s) for case in case_sql() for s in case.statements if s]
    assert statements
    outcomes = {"parsed": 0, "rejected": 0}
    for _ in range(3000):
        # Two statements per text, so positions past the first line are exercised too.
        text = ";\n".join(" ".join(mutate(rng.choice(statements), rng)) for _ in range(2)) + ";"
        try:
            parse_script(text, "fuzz.sql")
        except SqlErrors as errors:
            outcomes["rejected"] += 1
            assert errors.errors
            for error in errors.errors:
                assert error.position.file == "fuzz.sql"
                assert 1 <= error.position.line <= text.count("\n") + 1
                line_text = text.split("\n")[error.position.line - 1]
                assert 1 <= error.position.col <= len(line_text) + 1
                assert error.rule and error.fix
        else:
            outcomes["parsed"] += 1
    assert outcomes["parsed"] and outcomes["rejected"]
