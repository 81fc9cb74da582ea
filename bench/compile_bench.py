"""How fast the front end compiles: parse + analyze every case file's SQL.

Each round compiles every acceptance case (tests/cases/*.yaml) from text,
as ``splice validate`` does up to the physical-join check, and times each
case; a case's time is divided by its number of statements. Printed: the
median and 95th percentile milliseconds per statement, and statements per
second over the whole run. No Spark is started.

    .venv/bin/python bench/compile_bench.py [--rounds N]

The target is under 50 ms per statement.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from splice.runtime.compile import analyze_sources  # noqa: E402
from splice.sql.errors import SqlErrors  # noqa: E402
from splice.sql.script import parse_script  # noqa: E402

TARGET_MS = 50.0


def load_cases() -> list[tuple[str, str, int]]:
    """(name, SQL, number of statements) of every case file."""
    cases = []
    for path in sorted((ROOT / "tests" / "cases").glob("*.yaml")):
        sql = yaml.safe_load(path.read_text())["sql"]
        cases.append((path.stem, sql, len(parse_script(sql, f"{path.stem}.sql"))))
    return cases


def compile_once(name: str, sql: str) -> None:
    # A rejected case is compiled as far as it goes, as validate does.
    with contextlib.suppress(SqlErrors):
        analyze_sources([(f"{name}.sql", sql)], name.replace("-", "_"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    cases = load_cases()
    for name, sql, _ in cases:  # warm up: imports, sqlglot's caches
        compile_once(name, sql)
    per_statement: list[float] = []
    statements = 0
    started = time.perf_counter()
    for _ in range(args.rounds):
        for name, sql, count in cases:
            t0 = time.perf_counter()
            compile_once(name, sql)
            per_statement.append((time.perf_counter() - t0) * 1000 / count)
            statements += count
    elapsed = time.perf_counter() - started
    median = statistics.median(per_statement)
    p95 = statistics.quantiles(per_statement, n=20)[-1]
    print(f"{len(cases)} case files, {statements // args.rounds} statements, "
          f"{args.rounds} rounds")
    print(f"ms per statement: median {median:.2f}, p95 {p95:.2f} (target < {TARGET_MS:.0f})")
    print(f"statements per second: {statements / elapsed:.0f}")
    return 0 if p95 < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
