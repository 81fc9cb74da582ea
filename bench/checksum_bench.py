"""Small table-table runs with and without Delta's checksum file, in one run.

Two warehouses get the same pipeline (two tables materialized from their
change logs and their key join) and the same few changed rows each round;
the rounds alternate between the warehouse whose commits write checksum
files (Delta's default, Splice's setting) and the one whose commits do not
(``spark.databricks.delta.writeChecksumFile.enabled`` is a session setting,
so one Spark session serves both). Printed: each run's wall time and the
median of the rounds after the first few (the JIT's warm-up), and whether
both joins hold the expected rows.

    .venv/bin/python bench/checksum_bench.py [--rounds 12] [--changes 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from common import scratch, session
from splice.engine.settings import Warehouse
from splice.runtime.compile import compile_text
from splice.runtime.runner import run_steps
from splice.runtime.workspace import Workspace

from splice.testing.cases import append_rows

CHECKSUM = "spark.databricks.delta.writeChecksumFile.enabled"
SQL = """
CREATE TABLE t1 (id INT, v1 INT) WITH (location='t1', key='id');
CREATE TABLE t2 (id INT, v2 INT) WITH (location='t2', key='id');
CREATE TABLE j AS SELECT t1.id AS id, v1, v2 FROM t1 JOIN t2 ON t1.id = t2.id;
"""
WARM_UP = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--changes", type=int, default=3, help="changed rows a table a round")
    args = parser.parse_args()
    spark = session()
    pipeline = compile_text(SQL, file="checksum.sql", name="checksum")
    rng = random.Random(7)
    with scratch() as folder:
        ios = {on: Workspace(pipeline, warehouse=Warehouse(root=str(folder / f"checksum-{on}")),
                             spark=spark).io
               for on in (True, False)}
        state: dict[str, dict[int, int]] = {"t1": {}, "t2": {}}
        times: dict[bool, list[float]] = {True: [], False: []}
        for n in range(args.rounds):
            rows = {t: [{"id": rng.randrange(50), f"v{t[1]}": rng.randrange(9)}
                        for _ in range(args.changes)] for t in state}
            for t, changed in rows.items():
                state[t].update((r["id"], r[f"v{t[1]}"]) for r in changed)
            for on in ((True, False) if n % 2 == 0 else (False, True)):
                spark.conf.set(CHECKSUM, str(on).lower())
                for t, changed in rows.items():
                    append_rows(ios[on], pipeline.sources[t], changed)
                start = time.monotonic()
                run_steps(pipeline, ios[on])
                times[on].append(time.monotonic() - start)
            print(f"round {n + 1}: with checksum {times[True][-1]:.2f} s, "
                  f"without {times[False][-1]:.2f} s", flush=True)
        spark.conf.unset(CHECKSUM)
        want = sorted((k, v, state["t2"][k]) for k, v in state["t1"].items() if k in state["t2"])
        for on, io in ios.items():
            got = sorted((r["id"], r["v1"], r["v2"]) for r in spark.read.format("delta").load(
                io.table_path(pipeline.outputs["j"])).collect())
            assert got == want, f"checksum={on}: the join's rows differ"
        with_, without = (statistics.median(times[on][WARM_UP:]) for on in (True, False))
        print(f"median of rounds {WARM_UP + 1}-{args.rounds}: with checksum {with_:.2f} s, "
              f"without {without:.2f} s (ratio {without / with_:.2f}); both joins correct")


if __name__ == "__main__":
    main()
