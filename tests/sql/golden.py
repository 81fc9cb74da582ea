"""Planner golden files: SQL in, EXPLAIN text or error text out.

``tests/golden/<name>.txt`` holds one case: its SQL, then the plan
(``splice.physical.explain.explain_pipeline`` of the analyzed pipeline; a join whose
physical operator is not available yet is shown with its strategy and a
note) or the errors it is rejected with, each as ``file:line:col: rule; fix``.

The SQL of an acceptance case comes from ``tests/cases/<name>.yaml``; the
SQL of any other golden file is its own ``==== sql`` section (add a case by
writing a file with a header line and that section, then update).

    python -m tests.sql.golden update   # rewrite every golden file
    python -m tests.sql.golden check    # list the files that differ
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from splice.physical.explain import explain_pipeline
from splice.runtime.compile import analyze_sources
from splice.sql.errors import SqlErrors

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
CASES = ROOT / "tests" / "cases"

SQL, PLAN, ERRORS = "==== sql", "==== plan", "==== errors"
HEADER = "-- golden: {name}; SQL from {source}. Regenerate: python -m tests.sql.golden update"


def acceptance_sql() -> dict[str, str]:
    return {p.stem: yaml.safe_load(p.read_text())["sql"] for p in sorted(CASES.glob("*.yaml"))}


def own_sql() -> dict[str, str]:
    """The golden files that are not acceptance cases, and their SQL."""
    cases = acceptance_sql()
    return {p.stem: sql_section(p.read_text()) for p in sorted(GOLDEN.glob("*.txt"))
            if p.stem not in cases}


def all_sql() -> dict[str, str]:
    return {**acceptance_sql(), **own_sql()}


def sql_section(text: str) -> str:
    lines = text.split("\n")
    start = lines.index(SQL) + 1
    end = next((i for i in range(start, len(lines)) if lines[i] in (PLAN, ERRORS)),
               len(lines))
    return "\n".join(lines[start:end]).strip("\n") + "\n"


def render(name: str, sql: str) -> str:
    """The whole golden file of one case."""
    source = f"tests/cases/{name}.yaml" if (CASES / f"{name}.yaml").exists() else "this file"
    try:
        pipeline = analyze_sources([(f"{name}.sql", sql)], name.replace("-", "_"))
    except SqlErrors as errors:
        outcome, body = ERRORS, "\n".join(e.render() for e in errors.errors)
    else:
        outcome, body = PLAN, explain_pipeline(pipeline)
    return "\n".join([HEADER.format(name=name, source=source), SQL, sql.strip("\n"), outcome,
                      body.rstrip("\n"), ""])


def path_of(name: str) -> Path:
    return GOLDEN / f"{name}.txt"


def update() -> list[str]:
    GOLDEN.mkdir(exist_ok=True)
    changed = []
    for name, sql in all_sql().items():
        text = render(name, sql)
        path = path_of(name)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(name)
    return changed


def differing() -> list[str]:
    return [name for name, sql in all_sql().items()
            if not path_of(name).exists() or path_of(name).read_text() != render(name, sql)]


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "check"
    if command in ("update", "--update"):
        for name in update():
            print(f"updated tests/golden/{name}.txt")
        return 0
    if command == "check":
        names = differing()
        for name in names:
            print(f"differs: tests/golden/{name}.txt")
        return 1 if names else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
