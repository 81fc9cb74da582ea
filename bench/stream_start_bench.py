"""A new stream of a Delta table: Delta's initial snapshot against the
table's log read from version 0 (engine/stream_start.py), side by side in
one session, alternated.

``starts``: fresh streams (availableNow, a micro-batch that counts its rows)
of a table appended to five times and of a change feed with four MERGEs of
inserts only; the median wall time and JVM CPU of ``--reps`` starts each.
``chains``: the first run of the suite's chain pipeline (tests/joins/
test_table_chains.py: 4 keyed tables, 10 chains, 25 table-table steps, every
stream new) on a fresh warehouse, with ``splice.stream.startFromLog`` off
and on, ``--reps`` runs each::

    .venv/bin/python bench/stream_start_bench.py starts --reps 8
    .venv/bin/python bench/stream_start_bench.py chains --reps 3

Both run in Splice's default session (local[2], generated code, both JIT
tiers); ``--test-session`` takes the test suite's settings instead
(interpreted expressions, C1 alone), where the suite spends its time.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import jvm_cpu_seconds
from splice.engine.stream_start import SETTING, from_version_zero


def _session(test_session: bool) -> Any:
    from splice.engine.session import start_session
    from splice.engine.settings import SpliceSettings

    if not test_session:
        return start_session(SpliceSettings.from_env())
    from tests.conftest import suite_settings

    return start_session(suite_settings())


def _stream_once(spark: Any, path: str, options: dict[str, str], checkpoint: str) -> int:
    rows: list[int] = []
    reader = spark.readStream.format("delta")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load(path).writeStream.trigger(availableNow=True)
             .option("checkpointLocation", checkpoint)
             .foreachBatch(lambda df, _: rows.append(df.count())).start())
    query.awaitTermination()
    return sum(rows)


def starts(reps: int, test_session: bool) -> None:
    spark = _session(test_session)
    root = tempfile.mkdtemp(prefix="splice-bench-")
    plain, feed = f"{root}/plain", f"{root}/feed"
    for v in range(5):
        (spark.range(v * 10, v * 10 + 10).selectExpr("id AS k", "id % 3 AS v")
         .write.format("delta").mode("append").save(plain))
    (spark.range(0, 10).selectExpr("id AS k", "id % 3 AS v").write.format("delta")
     .option("delta.enableChangeDataFeed", "true").save(feed))
    for v in range(4):
        spark.sql(f"MERGE INTO delta.`{feed}` t USING (SELECT id AS k, id % 5 AS v "
                  f"FROM range({10 + v * 5}, {15 + v * 5})) s ON t.k = s.k "
                  "WHEN NOT MATCHED THEN INSERT *")
    assert from_version_zero(spark, plain, False) and from_version_zero(spark, feed, True)
    contenders = {
        "plain, snapshot": (plain, {}),
        "plain, from version 0": (plain, {"startingVersion": "0"}),
        "change feed, snapshot": (feed, {"readChangeFeed": "true"}),
        "change feed, from version 0": (feed, {"readChangeFeed": "true",
                                               "startingVersion": "0"}),
    }
    counter = iter(range(10**6))
    for name, (path, options) in contenders.items():  # warm, and the rows agree
        print(f"{name}: {_stream_once(spark, path, options, f'{root}/cp{next(counter)}')} rows")
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    for _ in range(reps):
        for name, (path, options) in contenders.items():
            wall, used = time.monotonic(), jvm_cpu_seconds(spark)
            _stream_once(spark, path, options, f"{root}/cp{next(counter)}")
            times[name].append((time.monotonic() - wall, jvm_cpu_seconds(spark) - used))
    for name, pairs in times.items():
        print(f"{name:30} median wall {statistics.median(p[0] for p in pairs):.3f} s, "
              f"JVM CPU {statistics.median(p[1] for p in pairs):.3f} s ({reps} starts)")
    spark.stop()


def chains(reps: int, test_session: bool) -> None:
    from splice.resources.warehouse import WarehouseResource
    from splice.runtime.runner import run_pipeline

    from tests.helpers.pipeline import append, make_io
    from tests.joins.test_table_chains import _changelog, _sql

    os.environ.setdefault("SPLICE_MAINTAIN_EVERY", "0")
    spark = _session(test_session)
    results: dict[str, list[tuple[float, float]]] = {"snapshot": [], "from version 0": []}
    for rep in range(reps + 1):  # the first round warms the JIT, not counted
        order = (("snapshot", "false"), ("from version 0", "true"))
        for name, on in order if rep % 2 else order[::-1]:  # each goes first in turn
            spark.conf.set(SETTING, on)
            rng = random.Random(5)
            io = make_io(spark, WarehouseResource(root=tempfile.mkdtemp() + "/wh"), _sql(),
                         name="chains")
            for table in range(1, 5):
                append(io, f"t{table}", _changelog(rng, table, 6))
            wall, used = time.monotonic(), jvm_cpu_seconds(spark)
            run_pipeline(io.pipeline, io)
            if rep:
                results[name].append((time.monotonic() - wall, jvm_cpu_seconds(spark) - used))
                print(f"round {rep} {name}: {results[name][-1][0]:.1f} s, "
                      f"JVM CPU {results[name][-1][1]:.1f} s", flush=True)
    for name, pairs in results.items():
        print(f"{name:16} median wall {statistics.median(p[0] for p in pairs):.1f} s, "
              f"JVM CPU {statistics.median(p[1] for p in pairs):.1f} s ({reps} first runs)")
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workload", choices=("starts", "chains"))
    parser.add_argument("--reps", type=int, default=8)
    parser.add_argument("--test-session", action="store_true",
                        help="the test suite's session settings")
    args = parser.parse_args()
    (starts if args.workload == "starts" else chains)(args.reps, args.test_session)


if __name__ == "__main__":
    main()
