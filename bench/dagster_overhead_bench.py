"""What Dagster adds to a run: the demo pipeline materialized through Dagster
(in process, every asset of the pipeline's job) against the same steps run
by ``splice run``'s runner, on the same warehouse and the same new data.

Spark is started once. Each round writes ``--rows`` new orders and runs the
pipeline one way, then writes as many again and runs it the other way (the
order alternates between rounds); a run with no new data follows each.
Printed: each run's wall time, and the median difference per run.

    .venv/bin/python bench/dagster_overhead_bench.py [--rounds 4] [--rows 1]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from common import scratch, session
from splice.orchestration.factory import splice_definitions
from splice.resources.spark import SparkResource
from splice.resources.warehouse import WarehouseResource
from splice.runtime.compile import compile_path
from splice.runtime.runner import run_pipeline
from splice.runtime.workspace import Workspace

from splice.cli.demo import CUSTOMERS, ORDERS
from splice.testing.cases import append_rows

PIPELINE = Path(__file__).resolve().parent.parent / "pipelines" / "demo"


def timed(run: Callable[[], None]) -> float:
    start = time.monotonic()
    run()
    return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--rows", type=int, default=1)
    args = parser.parse_args()
    spark = session()
    pipeline = compile_path(PIPELINE)
    with scratch() as folder:
        warehouse = WarehouseResource(root=str(folder))
        io = Workspace(pipeline, warehouse=warehouse, spark=spark).io
        append_rows(io, pipeline.sources["customers"], CUSTOMERS)
        append_rows(io, pipeline.sources["orders"], ORDERS)
        defs = splice_definitions(PIPELINE, warehouse=warehouse, spark=SparkResource())
        job = defs.resolve_job_def(f"{pipeline.name}_job")

        def splice_run() -> None:
            run_pipeline(pipeline, io)

        def dagster_run() -> None:
            result = job.execute_in_process()
            assert result.success, "the Dagster run failed"

        print(f"first run (builds every table): {timed(splice_run):.1f} s")
        next_id = 1000
        times: dict[str, list[float]] = {"splice": [], "dagster": []}
        idle: dict[str, list[float]] = {"splice": [], "dagster": []}
        ways = {"splice": splice_run, "dagster": dagster_run}
        for n in range(args.rounds):
            order = ["splice", "dagster"] if n % 2 == 0 else ["dagster", "splice"]
            for way in order:
                rows = [{"id": next_id + i, "customer_id": 1 + i % 3, "item": f"item {i}"}
                        for i in range(args.rows)]
                next_id += args.rows
                append_rows(io, pipeline.sources["orders"], rows)
                times[way].append(timed(ways[way]))
                idle[way].append(timed(ways[way]))
                print(f"round {n + 1} {way:8s} {args.rows} new: {times[way][-1]:.2f} s, "
                      f"no new data: {idle[way][-1]:.2f} s")
        for label, figures in (("new data", times), ("no new data", idle)):
            s, d = statistics.median(figures["splice"]), statistics.median(figures["dagster"])
            print(f"{label}: splice run median {s:.2f} s, Dagster median {d:.2f} s, "
                  f"Dagster adds {d - s:+.2f} s per run (goal: under 1 s)")


if __name__ == "__main__":
    main()
