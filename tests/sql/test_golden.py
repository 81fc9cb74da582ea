"""The planner's golden files (tests/golden/*.txt): SQL in, plan or error
text out, one file per case. No Spark.

When a change to the plan or an error message is intended, regenerate them
with ``python -m tests.sql.golden update`` and review the diff.
"""

from __future__ import annotations

import difflib

import pytest

from tests.sql.golden import ERRORS, GOLDEN, PLAN, acceptance_sql, all_sql, path_of, render

CASES = all_sql()


def test_every_acceptance_case_has_a_golden_file() -> None:
    missing = [name for name in acceptance_sql() if not path_of(name).exists()]
    assert not missing, f"run python -m tests.sql.golden update; missing: {missing}"


def test_every_golden_file_is_a_case() -> None:
    assert {p.stem for p in GOLDEN.glob("*.txt")} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden(name: str) -> None:
    expected = path_of(name).read_text() if path_of(name).exists() else ""
    actual = render(name, CASES[name])
    if actual != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True),
            f"tests/golden/{name}.txt", "now"))
        pytest.fail(f"the plan of {name} changed; if intended, run "
                    f"python -m tests.sql.golden update\n{diff}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_errors_are_positioned(name: str) -> None:
    text = render(name, CASES[name])
    assert (PLAN in text) != (ERRORS in text)
    if ERRORS in text:
        for line in text.split(ERRORS + "\n", 1)[1].splitlines():
            file, line_no, col, _ = line.split(":", 3)
            assert file == f"{name}.sql" and int(line_no) >= 1 and int(col) >= 1, line
