"""The acceptance cases (tests/cases/*.yaml), through the same machinery as
``splice test``: SQL in, Spark streaming runs, Delta tables out.

A case that waits for a later capability is expected to fail, strictly: if it
starts passing, this suite fails until the mark is removed.
"""

from __future__ import annotations

import pytest

from splice.testing.cases import load_case, run_case
from tests.conftest import CASES

# Every case passes; a case that waits for a later capability goes here,
# with the reason, and is expected to fail, strictly.
EXPECTED_TO_FAIL: dict[str, str] = {}

CASE_FILES = sorted(CASES.glob("*.yaml"))


def _param(path):
    name = path.stem
    marks = [pytest.mark.spark]
    if name in EXPECTED_TO_FAIL:
        marks.append(pytest.mark.xfail(strict=True, reason=EXPECTED_TO_FAIL[name]))
    return pytest.param(path, id=name, marks=marks)


def test_every_case_file_is_listed() -> None:
    names = {p.stem for p in CASE_FILES}
    assert len(names) == 39
    assert set(EXPECTED_TO_FAIL) <= names


@pytest.mark.parametrize("path", [_param(p) for p in CASE_FILES])
def test_case(path, spark, tmp_path) -> None:
    case = load_case(path)
    result = run_case(case, str(path), spark, workdir=str(tmp_path / "warehouse"))
    assert result.passed, result.render()
