"""Comparing the rows an output holds with the rows a case expects.

Only the columns an expected row names are compared, by name without regard
to case. Stream outputs compare as multisets; a table's state compares the
same way (one row per key). Every expected row must be matched by its own
actual row and every actual row must be matched: one wrong value, one missing
row or one extra row fails.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any


def canonical(value: Any) -> Any:
    """One spelling for equal values: timestamps as 'YYYY-MM-DD HH:MM:SS[.ffffff]'
    (UTC, no zone), dates as 'YYYY-MM-DD', structs as dicts with lower-case
    field names, integral decimals as ints."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat(sep=" ", timespec="microseconds" if value.microsecond
                               else "seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k).lower(): canonical(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return canonical(value.asDict(recursive=True))
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, str):
        return _canonical_text(value)
    return value


def _canonical_text(text: str) -> str:
    if len(text) >= 10 and text[:4].isdigit() and text[4] == "-":
        try:
            parsed = dt.datetime.fromisoformat(text)
        except ValueError:
            return text
        return canonical(parsed) if (":" in text or "T" in text) else text
    return text


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _show(row: dict[str, Any]) -> str:
    def fmt(v: Any) -> str:
        if v is None:
            return "null"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {fmt(x)}" for k, x in v.items()) + "}"
        return repr(v) if isinstance(v, str) else str(v)

    return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in row.items()) + "}"


@dataclass
class Comparison:
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def compare_rows(expected: list[dict[str, Any]], actual: list[dict[str, Any]],
                 columns: list[str]) -> Comparison:
    """Match expected rows to actual rows one to one (a bipartite matching, so
    rows naming different columns are still paired right)."""
    have = {c.lower() for c in columns}
    problems: list[str] = []
    wanted = [{str(k).lower(): canonical(v) for k, v in row.items()} for row in expected]
    missing_cols = sorted({c for row in wanted for c in row} - have)
    if missing_cols:
        return Comparison([f"the output has no column {', '.join(missing_cols)} "
                           f"(its columns: {', '.join(columns)})"])
    got = [{str(k).lower(): canonical(v) for k, v in row.items()} for row in actual]
    named = list(dict.fromkeys(c for row in wanted for c in row))

    def fits(e: dict[str, Any], a: dict[str, Any]) -> bool:
        return all(_freeze(a.get(c)) == _freeze(v) for c, v in e.items())

    candidates = [[j for j, a in enumerate(got) if fits(e, a)] for e in wanted]
    match_of_actual: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in candidates[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in match_of_actual or augment(match_of_actual[j], seen):
                match_of_actual[j] = i
                return True
        return False

    unmatched_expected = [i for i in range(len(wanted)) if not augment(i, set())]
    unmatched_actual = [j for j in range(len(got)) if j not in match_of_actual]
    for i in unmatched_expected:
        problems.append(f"missing    {_show(wanted[i])}")
    for j in unmatched_actual:
        problems.append(f"unexpected {_show({c: got[j].get(c) for c in named or got[j]})}")
    if problems:
        problems.append(f"expected {len(wanted)} rows, got {len(got)}")
    return Comparison(problems)
