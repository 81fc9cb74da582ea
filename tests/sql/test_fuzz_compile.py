"""Fuzz the whole front end: mutated case SQL through parser *and* analyzer.

Every statement of every case is mutated (tokens dropped, duplicated,
swapped, or replaced by another token of the cases) thousands of times with
a fixed seed, and analyzed after the unmutated statements before it. Most
mutations are single ones, so that many statements still parse and reach the
analyzer. Whatever comes out, the only exception is
:class:`SqlErrors`, and every error is positioned inside the text with a
rule and a fix. EXPLAIN of every plan that is accepted must render too.
"""

from __future__ import annotations

import contextlib
import random

from splice.runtime.compile import compile_sources
from splice.runtime.explain import explain_pipeline
from splice.sql.analyzer import Analyzer
from splice.sql.errors import SqlError, SqlErrors
from splice.sql.script import parse_script

from tests.sql.mutations import case_sql, mutate, statement_text, vocabulary

SEED = 20240917
MUTATIONS = 3000
WHOLE_PIPELINES = 300


def _assert_positioned(errors: list[SqlError], texts: dict[str, str]) -> None:
    assert errors
    for error in errors:
        assert error.position.file in texts, error.render()
        text = texts[error.position.file]
        lines = text.split("\n")
        assert 1 <= error.position.line <= len(lines), error.render()
        assert 1 <= error.position.col <= len(lines[error.position.line - 1]) + 1, \
            error.render()
        assert error.rule and error.fix, error.render()


def _prefixes() -> list[tuple[str, int, Analyzer, tuple[str, ...]]]:
    """For every statement of every case: the analyzer that has seen the
    case's statements before it, and the statement's tokens."""
    out = []
    for case in case_sql():
        analyzer = Analyzer(case.name.replace("-", "_"))
        for index, tokens in enumerate(case.statements):
            out.append((case.name, index, analyzer.fork(), tokens))
            text = statement_text(tokens) + ";"
            with contextlib.suppress(SqlErrors):
                analyzer.add(parse_script(text, f"{case.name}-{index}.sql"), text,
                             f"{case.name}-{index}.sql")
    return out


def test_mutated_statements_fail_only_with_positioned_errors() -> None:
    rng = random.Random(SEED)
    prefixes = _prefixes()
    words = vocabulary(case_sql())
    outcomes = {"syntax": 0, "rule": 0, "accepted": 0}
    for _ in range(MUTATIONS):
        name, index, analyzer, tokens = rng.choice(prefixes)
        text = statement_text(mutate(list(tokens), rng, words, most=rng.choice((1, 1, 3)))) + ";"
        file = f"fuzz-{name}-{index}.sql"
        analyzer = analyzer.fork()
        analyzer.errors = []
        try:
            statements = parse_script(text, file)
        except SqlErrors as errors:
            outcomes["syntax"] += 1
            _assert_positioned(errors.errors, {file: text})
            continue
        try:
            analyzer.add(statements, text, file)
            pipeline = analyzer.finish()
        except SqlErrors as errors:
            outcomes["rule"] += 1
            _assert_positioned(errors.errors, {file: text})
        else:
            outcomes["accepted"] += 1
            assert explain_pipeline(pipeline)
    # The analyzer is reached, both ways, not only the parser.
    assert outcomes["rule"] > MUTATIONS // 20 and outcomes["accepted"] > MUTATIONS // 20, outcomes


def test_mutated_pipelines_fail_only_with_positioned_errors() -> None:
    """Whole case pipelines with one mutated statement each, through
    ``compile_sources`` as ``splice validate`` runs it (the physical-join
    and aggregation checks included)."""
    rng = random.Random(SEED + 1)
    cases = case_sql()
    for _ in range(WHOLE_PIPELINES):
        case = rng.choice(cases)
        at = rng.randrange(len(case.statements))
        statements = [statement_text(s) for s in case.statements]
        statements[at] = statement_text(mutate(list(case.statements[at]), rng, most=1))
        text = ";\n".join(statements) + ";"
        file = f"{case.name}.sql"
        try:
            pipeline = compile_sources([(file, text)], "fuzz")
        except SqlErrors as errors:
            _assert_positioned(errors.errors, {file: text})
        else:
            assert explain_pipeline(pipeline)
