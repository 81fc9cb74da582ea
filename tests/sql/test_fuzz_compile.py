"""Fuzz the whole front end: mutated case SQL through parser *and* analyzer.

Every statement of every case is mutated (tokens dropped, duplicated,
swapped, or replaced by another token of the cases) thousands of times with
a fixed seed, and analyzed after the unmutated statements before it. Most
mutations are single ones, so that many statements still parse and reach the
analyzer. Whatever comes out, the only exception is
:class:`SqlErrors`, and every error is positioned inside the text with a
rule and a fix. EXPLAIN of every plan that is accepted must render too.

Later statements are also built over earlier ones that fail
(:mod:`tests.sql.readers`): the earlier error is reported, the later
statements' own errors with it, and never a traceback.
"""

from __future__ import annotations

import contextlib
import random

from splice.physical.explain import explain_pipeline
from splice.runtime.compile import analyze_sources, compile_sources
from splice.sql.analyzer import Analyzer
from splice.sql.errors import SqlError, SqlErrors
from splice.sql.script import parse_script

from tests.sql.mutations import case_sql, mutate, statement_text, vocabulary
from tests.sql.readers import FAILING, build, declared_names, quoted

SEED = 20240917
MUTATIONS = 3000
WHOLE_PIPELINES = 300
OVER_FAILING = 300


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


def _errors(sources: list[tuple[str, str]]) -> list[str]:
    """The rendered errors of the logical analysis (none: it passes)."""
    try:
        analyze_sources(sources, "fuzz")
    except SqlErrors as errors:
        return [e.render() for e in errors.errors]
    return []


def test_each_failing_declaration_fails_on_its_own() -> None:
    """The declarations the next test builds on fail, so that it builds on
    failures."""
    base = "CREATE STREAM base (id INT, ts TIMESTAMP) WITH (location='base', timestamp='ts');\n"
    for template in FAILING:
        text = base + template.format(name=quoted("broken"), other="base") + ";"
        errors = _errors([("f.sql", text)])
        assert errors and all(e.startswith("f.sql:2:") for e in errors), (template, errors)


def test_statements_over_failing_ones_fail_only_with_positioned_errors() -> None:
    """Pipelines whose later statements read earlier ones, some of which fail
    (a failing declaration, a mutated statement): through ``compile_sources``
    as ``splice validate`` runs it, only positioned errors; every error of
    the statements before the readers is still reported, and no reader is
    told that a failing statement's name is unknown."""
    rng = random.Random(SEED + 2)
    cases = case_sql()
    names = {case.name: declared_names(case) for case in cases}
    outcomes = {"rejected": 0, "accepted": 0}
    for _ in range(OVER_FAILING):
        case = rng.choice(cases)
        built = build(case, names[case.name], rng)
        file = f"{case.name}.sql"
        text = built.text()
        try:
            pipeline = compile_sources([(file, text)], "fuzz")
        except SqlErrors as errors:
            outcomes["rejected"] += 1
            _assert_positioned(errors.errors, {file: text})
        else:
            outcomes["accepted"] += 1
            assert explain_pipeline(pipeline)
            continue
        whole = _errors([(file, text)])
        earlier = _errors([(file, built.text(built.prefix))])
        assert set(earlier) <= set(whole), (text, earlier, whole)
        for name in built.failing:
            assert not any(f"unknown source or step '{name}'" in e for e in whole), (text, whole)
    assert outcomes["rejected"] > OVER_FAILING // 2 and outcomes["accepted"], outcomes
