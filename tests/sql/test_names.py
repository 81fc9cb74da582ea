"""Names that would leave the warehouse, enter Splice's internal folder or
break a file system are rejected with a position (sql/names.py). No Spark."""

from __future__ import annotations

import pytest
from splice.runtime.compile import analyze_sources
from splice.sql.errors import SqlErrors
from splice.sql.names import MAX_NAME_BYTES

from tests.sql.helpers import STREAMS, analyze, line_col, only_error

LONG = "x" * (MAX_NAME_BYTES + 1)
# 67 three-byte characters: 201 bytes of UTF-8, only 67 characters.
LONG_UNICODE = "\u20ac" * 67


@pytest.mark.parametrize(("statement", "at", "words"), [
    ('INSERT INTO "../../../tmp/x" SELECT * FROM a;', '"../', "path separator"),
    ('INSERT INTO "a\\b" SELECT * FROM a;', '"a\\b"', "path separator"),
    ('INSERT INTO ".." SELECT * FROM a;', '".."', "only dots"),
    ('INSERT INTO "." SELECT * FROM a;', '"."', "only dots"),
    ('INSERT INTO "_splice" SELECT * FROM a;', '"_splice"', "internal folder"),
    ('INSERT INTO "_SPLICE" SELECT * FROM a;', '"_SPLICE"', "internal folder"),
    ('INSERT INTO _splice_outputs SELECT * FROM a;', "_splice_outputs", "internal folder"),
    ('CREATE STREAM "x:y" AS SELECT * FROM a;', '"x:y"', "holds ':'"),
    ('CREATE TABLE "t*" AS SELECT id, COUNT(*) AS n FROM a GROUP BY id;', '"t*"', "holds '*'"),
    ('WITH "s\x01" AS (SELECT * FROM a);', '"s', "control character U+0001"),
    ('WITH "s\x00" AS (SELECT * FROM a);', '"s', "control character U+0000"),
    (f'INSERT INTO "{LONG}" SELECT * FROM a;', f'"{LONG}', f"{MAX_NAME_BYTES + 1} bytes"),
    (f'INSERT INTO "{LONG_UNICODE}" SELECT * FROM a;', f'"{LONG_UNICODE}', "201 bytes"),
    ('CREATE STREAM "../c" (id INT);', '"../c"', "path separator"),
    ('CREATE TABLE "_splice" (id INT) WITH (key=\'id\');', '"_splice"', "internal folder"),
    ('WITH "" AS (SELECT * FROM a);', '""', "is empty"),
])
def test_rejected_names(statement: str, at: str, words: str) -> None:
    sql = STREAMS + statement
    error = only_error(sql)
    assert words in error.rule, error.render()
    assert (error.position.line, error.position.col) == line_col(sql, at)


@pytest.mark.parametrize(("location", "words"), [
    ("../../tmp/x", "climbs out of the warehouse"),
    ("data/../../x", "climbs out of the warehouse"),
    ("..\\\\outside", "climbs out of the warehouse"),  # SQL text ..\\outside
    ("_splice/demo/steps/out", "internal folder"),
    ("./_Splice/demo", "internal folder"),
    ("data/..", "the warehouse itself"),
    ("", "the warehouse itself"),
    ("a/" + "y" * 256, "over 255 bytes"),
    ("s3a://bucket/a\nb", "control character U+000A"),
])
def test_rejected_locations(location: str, words: str) -> None:
    sql = STREAMS + f"CREATE STREAM c (id INT) WITH (format='json', location='{location}');"
    error = only_error(sql)
    assert words in error.rule, error.render()
    assert (error.position.line, error.position.col) == line_col(sql, f"'{location}'")
    assert "absolute path or URI" in error.fix


def test_error_reads_as_one_line_with_the_fix() -> None:
    sql = STREAMS + 'INSERT INTO "../../../tmp/x" SELECT * FROM a;'
    assert only_error(sql).render() == (
        "t.sql:3:13: the output name '../../../tmp/x' holds a path separator ('/' or '\\'): "
        "a name is one folder of the warehouse, never a path; drop the separators "
        "(write a_b, not a/b)")


def test_a_broken_name_does_not_cascade() -> None:
    """A statement rejected for its name is one error; a later reader of the
    name is not reported again."""
    sql = STREAMS + 'WITH "_splice" AS (SELECT * FROM a);\nINSERT INTO o SELECT * FROM "_splice";'
    error = only_error(sql)
    assert "internal folder" in error.rule


def test_a_statement_that_does_not_parse_hides_no_other_error() -> None:
    """Its name, in this file or another, is not reported again where it is
    read; every other statement is analyzed and its errors reported, in the
    order of the files and lines. A statement whose name its tokens do not
    show (a misspelt CREATE) makes every unknown name one it may have
    declared."""
    second = "INSERT INTO o SELECT STREAM p.x FROM p;\nINSERT INTO o2 SELECT STREAM a.nope FROM a;"
    with pytest.raises(SqlErrors) as raised:
        analyze_sources([("1.sql", STREAMS + "CREATE STREAM p (x INT,,);"),
                         ("2.sql", second)], "t")
    assert [(str(e.position), e.rule.split(" '")[0]) for e in raised.value.errors] == [
        ("1.sql:3:24", "syntax error: expected a column name and type in the column list of "
                       "CREATE STREAM p"), ("2.sql:2:30", "unknown column")]
    with pytest.raises(SqlErrors) as raised:
        analyze_sources([("1.sql", STREAMS + "CRETE STREAM p (x INT);\n" + second)], "t")
    assert [e.position.line for e in raised.value.errors] == [3, 5]


def test_derived_step_name_over_the_segment_limit() -> None:
    """A repartition step is named ``<input>_by_<column>``: a long input name
    and a long column name make a step id no file system can hold."""
    column = "c" * 120
    name = "s" * 150
    sql = (f"CREATE STREAM {name} (id INT, {column} INT, ts TIMESTAMP) "
           "WITH (timestamp='ts');\n"
           "CREATE TABLE t (id INT, v INT) WITH (key='id');\n"
           f"INSERT INTO o SELECT * FROM {name} s JOIN t ON s.{column} = t.id;")
    error = only_error(sql)
    assert "derived step name" in error.rule and "over the limit of 255" in error.rule
    assert (error.position.line, error.position.col) == (3, 1)


@pytest.mark.parametrize("location", [
    "/data/elsewhere/orders",
    "s3a://bucket/raw/orders",
    "file:/tmp/orders",
    "raw/2024/orders",
    "raw/../orders",
    "./orders",
    "data/_splice_lookalike",
])
def test_accepted_locations(location: str) -> None:
    sql = STREAMS + (f"CREATE STREAM c (id INT) WITH (format='json', location='{location}');\n"
                     "INSERT INTO o SELECT * FROM c;")
    pipeline = analyze(sql)
    assert pipeline.sources["c"].location == location


@pytest.mark.parametrize("name", [
    "orders_enriched",
    "input-topic",
    "stocks.order_quantity",
    "caf\u00e9_\u65e5\u672c",
    "x" * MAX_NAME_BYTES,
    "\u20ac" * (MAX_NAME_BYTES // 3),
    "splice_out",
    "my_splice",
])
def test_accepted_names(name: str) -> None:
    step = analyze(STREAMS + f'WITH "{name}" AS (SELECT * FROM a);\n'
                   f'INSERT INTO o SELECT * FROM "{name}";')
    assert step.step(name).id == name
    output = analyze(STREAMS + f'CREATE STREAM "{name}" AS SELECT * FROM a;')
    assert list(output.outputs) == [name]
    source = analyze(f'CREATE STREAM "{name}" (id INT);\nINSERT INTO o SELECT * FROM "{name}";')
    assert source.sources[name].location == name


def test_default_location_is_the_checked_name() -> None:
    """A source without location= reads the folder named after it, so the
    name check covers it."""
    pipeline = analyze(STREAMS)
    assert pipeline.sources["a"].location == "a"
