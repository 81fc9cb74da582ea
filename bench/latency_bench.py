"""How long new records take through the demo pipeline, Spark already started.

The demo pipeline (pipelines/demo: a Delta source, a JSON-lines source, a
projection, a repartition, a table materialization and two stream-table
joins) is built once; then each round writes ``n`` new orders as one JSON
file and runs the whole pipeline (``splice.runtime.runner.run_steps``), and a run
with no new data follows. Printed per round: the run's wall time and each
step's time, for 1 record and for 10,000 records per run.

    .venv/bin/python bench/latency_bench.py [--rounds 3] [--sizes 1,10000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from common import scratch, session
from splice.engine.io import StepIO
from splice.engine.settings import Warehouse
from splice.runtime.compile import compile_path
from splice.runtime.runner import StepReport, run_steps
from splice.runtime.workspace import Workspace

from splice.cli.demo import CUSTOMERS, ORDERS
from splice.testing.cases import append_rows

PIPELINE = Path(__file__).resolve().parent.parent / "pipelines" / "demo"


def timed_run(io: StepIO) -> tuple[float, list[StepReport]]:
    start = time.monotonic()
    reports = run_steps(io.pipeline, io)
    return time.monotonic() - start, reports


def steps_line(reports: list[StepReport]) -> str:
    return ", ".join(f"{r.step_id} {r.seconds:.2f}s" + (" (skipped)" if r.skipped else "")
                     for r in reports)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1,10000")
    args = parser.parse_args()
    spark = session()
    pipeline = compile_path(PIPELINE)
    with scratch() as folder:
        io = Workspace(pipeline, warehouse=Warehouse(root=str(folder)), spark=spark).io
        append_rows(io, pipeline.sources["customers"], CUSTOMERS)
        append_rows(io, pipeline.sources["orders"], ORDERS)
        seconds, _ = timed_run(io)
        print(f"first run (builds every table): {seconds:.1f} s")
        next_id = 1000
        for size in (int(s) for s in args.sizes.split(",")):
            runs, idle = [], []
            for n in range(1, args.rounds + 1):
                rows = [{"id": next_id + i, "customer_id": 1 + i % 3, "item": f"item {i}"}
                        for i in range(size)]
                next_id += size
                append_rows(io, pipeline.sources["orders"], rows)
                seconds, reports = timed_run(io)
                runs.append(seconds)
                print(f"{size} new records, round {n}: {seconds:.2f} s  [{steps_line(reports)}]")
                seconds, reports = timed_run(io)
                idle.append(seconds)
                print(f"no new data,      round {n}: {seconds:.2f} s  [{steps_line(reports)}]")
            print(f"{size} new records: median {statistics.median(runs):.2f} s, best "
                  f"{min(runs):.2f} s; no new data: median {statistics.median(idle):.2f} s, "
                  f"best {min(idle):.2f} s")


if __name__ == "__main__":
    main()
