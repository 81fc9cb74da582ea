"""Deep expressions compile, or are refused with a positioned error, never a
traceback (sql/depth.py, issue 56): long chains of one operator (+, ||,
AND, OR) in SELECT, WHERE and ON compile whatever their length; nesting
(parentheses, function calls, CASE, NOT, unary minus) compiles up to
MAX_NESTING levels and is refused past it, through ``splice validate``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from splice.sql.depth import MAX_NESTING

from splice.cli import main
from tests.sql.helpers import line_col

SOURCES = """\
CREATE STREAM a (id INT NOT NULL, x INT, ts TIMESTAMP) WITH (location='a', timestamp='ts',
  key='id');
CREATE STREAM b (id INT, y INT, ts TIMESTAMP) WITH (location='b', timestamp='ts', key='id');
"""
SELECT = "CREATE STREAM out AS SELECT {} AS v FROM a EMIT CHANGES;\n"
WHERE = "CREATE STREAM out AS SELECT a.x FROM a WHERE {} EMIT CHANGES;\n"
ON = ("CREATE STREAM out AS SELECT a.x, b.y FROM a JOIN b WITHIN 1 HOUR ON a.id = b.id AND {} "
      "EMIT CHANGES;\n")
GROUP = "CREATE TABLE out AS SELECT a.id, SUM({}) AS v FROM a GROUP BY a.id EMIT CHANGES;\n"


def nested(shape: str, depth: int) -> str:
    """An expression of ``shape`` nested ``depth`` levels deep (a CASE's
    condition and NOT's operand, ``a.x > 1``, are a level of their own)."""
    return {
        "parentheses": "(" * depth + "a.x" + ")" * depth,
        "functions": "ABS(" * depth + "a.x" + ")" * depth,
        "case": "CASE WHEN a.x > 0 THEN " * (depth - 1) + "1" + " ELSE 0 END" * (depth - 1),
        "not": "NOT " * (depth - 1) + "a.x > 1",
        "minus": "- " * depth + "a.x",
        "plus": " + ".join(["a.x"] * (depth + 1)),
        "concat": " || ".join(["CAST(a.x AS STRING)"] * depth),
    }[shape]


def chain(operator: str, terms: int, term: str) -> str:
    return f" {operator} ".join([term] * terms)


def validate(tmp_path: Path, sql: str, capsys) -> tuple[int, str, str]:
    """``splice validate`` on a pipeline of ``sql``: its exit code, output
    and error output."""
    (tmp_path / "p.sql").write_text(sql)
    capsys.readouterr()
    code = main(["validate", str(tmp_path)])
    out, err = capsys.readouterr()
    return code, out, err


def ok(tmp_path: Path) -> str:
    return f"{tmp_path}: ok, pipeline '{tmp_path.name}' with 3 steps\n"


@pytest.mark.parametrize(("clause", "expression"), [
    (ON, chain("AND", 500, "a.x > b.y")),  # each conjunct of ON is compiled on its own
    (WHERE, chain("AND", 2000, "a.x > 1")),
    (WHERE, chain("OR", 2000, "a.x = 1")),
    (WHERE, "(" + chain("OR", 500, "a.x = 1") + ") AND (" + chain("AND", 500, "a.x > 1")
     + ")"),
], ids=["on-and", "where-and", "where-or", "where-or-and"])
def test_a_chain_of_and_or_or_compiles_whatever_its_length(tmp_path: Path, capsys,
                                                            clause: str,
                                                            expression: str) -> None:
    assert validate(tmp_path, SOURCES + clause.format(expression), capsys) == (
        0, ok(tmp_path), "")


SHAPES = ["parentheses", "functions", "case", "not", "minus", "plus", "concat"]


@pytest.mark.parametrize("clause", [SELECT, GROUP], ids=["select", "sum"])
@pytest.mark.parametrize("shape", SHAPES)
def test_nesting_compiles_up_to_the_limit(tmp_path: Path, capsys, shape: str,
                                          clause: str) -> None:
    if clause is GROUP and shape in ("not", "concat"):
        pytest.skip("SUM takes a number")
    depth = MAX_NESTING - (clause is GROUP)  # SUM( is a level
    sql = SOURCES + clause.format(nested(shape, depth))
    assert validate(tmp_path, sql, capsys) == (0, ok(tmp_path), "")


def _refusal(tmp_path: Path, line: int, col: int, depth: int) -> str:
    return (f"{tmp_path / 'p.sql'}:{line}:{col}: expression nested {depth} deep; at most "
            f"{MAX_NESTING} levels of operators, function calls, parentheses and CASE are "
            "allowed (Spark's parser overflows its stack on deeper ones; AND and OR do not "
            "count); compute part of it in an earlier step (WITH name AS (SELECT ...)), or "
            "nest it less\n")


# Where the level past the limit starts, when the tokens tell it before the
# statement is parsed: the token that opens it.
PAST = {"parentheses": "(", "functions": "(", "case": "CASE", "not": "NOT", "minus": "-"}


@pytest.mark.parametrize("clause", [SELECT, WHERE, ON], ids=["select", "where", "on"])
@pytest.mark.parametrize("shape", list(PAST))
def test_deep_nesting_is_refused_where_it_passes_the_limit(tmp_path: Path, capsys, shape: str,
                                                           clause: str) -> None:
    expression = nested(shape, 600)
    sql = SOURCES + clause.format(expression)
    at = sql.index(expression)
    for _ in range(MAX_NESTING + 1):  # the opening token of level MAX_NESTING + 1
        at = sql.index(PAST[shape], at) + 1
    line, col = line_col(sql[: at - 1] + "\0", "\0")
    depth = 599 if shape in ("case", "not") else 600
    assert validate(tmp_path, sql, capsys) == (1, _refusal(tmp_path, line, col, depth), "")


@pytest.mark.parametrize(("clause", "shape", "shift"), [
    (SELECT, "plus", 0), (SELECT, "concat", len("CAST(")), (ON, "plus", 0),
    (WHERE, "case", len("CASE WHEN ")), (GROUP, "plus", -len("SUM(")), (SELECT, "mixed", 0),
])
def test_a_deep_tree_is_refused_at_its_start(tmp_path: Path, capsys, clause: str,
                                             shape: str, shift: int) -> None:
    """What the tokens do not show (a chain of + is flat text), the parsed
    tree does: refused where the expression starts (its first token sqlglot
    positions: not CAST nor CASE), with its depth."""
    if shape == "mixed":  # 150 calls around a chain of 101 terms
        expression, depth = "ABS(" * 150 + nested("plus", 100) + ")" * 150, 250
    elif shape == "case":
        expression, depth = nested("case", MAX_NESTING + 1), MAX_NESTING + 1
    else:
        expression, depth = nested(shape, 600), 600
    if clause is ON:
        expression, depth = expression + " > b.y", depth + 1
    depth += clause is GROUP  # SUM( is a level
    sql = SOURCES + clause.format(expression)
    line, col = line_col(sql, expression)
    assert validate(tmp_path, sql, capsys) == (
        1, _refusal(tmp_path, line, col + shift, depth), "")


def test_every_error_of_a_pipeline_with_a_deep_statement_is_printed(
        tmp_path: Path, capsys) -> None:
    """An earlier statement failed already; the deep ones are reported beside
    it, and a long chain of AND after them still compiles."""
    plus = nested("plus", 600)
    sql = (SOURCES + "CREATE STREAM bad AS SELECT a.nope FROM a EMIT CHANGES;\n"
           + SELECT.format(nested("parentheses", 5000))
           + "CREATE STREAM fine AS SELECT a.x FROM a WHERE " + chain("AND", 1000, "a.x > 1")
           + " EMIT CHANGES;\n"
           + WHERE.replace("out", "again").format(nested("not", 300))
           + SELECT.replace("out", "sum").format(plus))
    code, out, err = validate(tmp_path, sql, capsys)
    first = line_col(sql, "a.nope")
    deep = line_col(sql, "(" * (MAX_NESTING + 1) + "(")
    again = line_col(sql, "NOT " * (MAX_NESTING + 1))
    lines = out.splitlines()
    assert (code, err, len(lines)) == (1, "", 4)
    assert lines[0].startswith(f"{tmp_path / 'p.sql'}:{first[0]}:{first[1]}: unknown column "
                               "'a.nope'")
    assert lines[1] + "\n" == _refusal(tmp_path, deep[0], deep[1] + MAX_NESTING, 5000)
    assert lines[2] + "\n" == _refusal(tmp_path, again[0], again[1] + 4 * MAX_NESTING, 299)
    assert lines[3] + "\n" == _refusal(tmp_path, *line_col(sql, plus), 600)


def test_the_command_itself_prints_no_traceback(tmp_path: Path) -> None:
    """The real process, with Python's own recursion limit at its start."""
    (tmp_path / "p.sql").write_text(
        SOURCES + SELECT.format(nested("functions", 2000))
        + ON.replace("out", "j").format(nested("plus", 5000) + " > b.y"))
    done = subprocess.run([sys.executable, "-m", "splice.cli", "validate", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (1, "")
    assert "Traceback" not in done.stdout
    assert [line.split(": ")[1].split(";")[0] for line in done.stdout.splitlines()] == [
        "expression nested 2000 deep", "expression nested 5001 deep"]


@pytest.mark.spark
def test_spark_runs_every_shape_at_the_limit(spark, tmp_path: Path) -> None:
    """What Spark takes, end to end: each shape nested MAX_NESTING deep (the
    limit is not above Spark's), and a chain of 3,000 AND."""
    import json

    from splice.testing.cases import load_case, run_case

    shapes = ["parentheses", "functions", "case", "minus", "plus"]
    values = {"parentheses": 1, "functions": 1, "case": 1, "minus": 1,
              "plus": MAX_NESTING + 1}
    sql = SOURCES + "".join(
        f"CREATE STREAM s_{shape} AS SELECT a.id, {nested(shape, MAX_NESTING)} AS v FROM a "
        "EMIT CHANGES;\n" for shape in shapes)
    sql += (f"CREATE STREAM nots AS SELECT a.id FROM a WHERE {nested('not', MAX_NESTING)} "
            f"AND {chain('AND', 3000, 'a.x > 0')} EMIT CHANGES;\n")
    expect = {f"s_{shape}": {"rows": [{"id": 1, "v": values[shape]}]} for shape in shapes}
    expect["nots"] = {"rows": [{"id": 1}]}
    case = {"case": "deep", "from": "issue 56", "sql": sql, "expect": expect,
            "runs": [{"append": {"a": [{"id": 1, "x": 1, "ts": "2024-01-01 00:00:00"}]}}]}
    path = tmp_path / "deep.yaml"
    path.write_text(json.dumps(case))
    result = run_case(load_case(path), str(path), spark, workdir=str(tmp_path / "warehouse"))
    assert result.passed, result.render()
