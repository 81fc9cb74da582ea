"""End-to-end latency under ``splice serve``: a record written to a source
until it is in the output table.

The demo pipeline is built, then served (runtime/serve.py, trigger every
``--interval`` seconds). Each of ``--records`` rounds writes one new order
as a JSON file and polls the output table ``orders_enriched`` (its Delta
log, then its rows) until the order is there. Printed: each latency, the
median (p50) and the slowest.

    .venv/bin/python bench/serve_latency_bench.py [--records 10] [--interval 0.5]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path

from common import scratch, session

from engine.io import StepIO, delta_version
from engine.settings import Warehouse
from runtime.compile import compile_path
from runtime.serve import ServeOptions, serve
from splice.cases import append_rows
from splice.demo import CUSTOMERS, ORDERS

PIPELINE = Path(__file__).resolve().parent.parent / "pipelines" / "demo"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10)
    parser.add_argument("--interval", type=float, default=0.5)
    args = parser.parse_args()
    spark = session()
    pipeline = compile_path(PIPELINE)
    with scratch() as folder:
        io = StepIO(spark=spark, warehouse=Warehouse(root=str(folder)), pipeline=pipeline)
        append_rows(io, pipeline.sources["customers"], CUSTOMERS)
        append_rows(io, pipeline.sources["orders"], ORDERS)
        output = io.table_path(pipeline.outputs["orders_enriched"])
        stop, started = threading.Event(), threading.Event()
        worker = threading.Thread(target=serve, args=(pipeline, io, stop), kwargs={
            "on_started": started.set, "options": ServeOptions(interval_s=args.interval)})
        worker.start()
        latencies = []
        try:
            started.wait()
            time.sleep(5)  # let every query settle into its idle triggers
            for n in range(args.records):
                item = f"latency probe {n}"
                version = delta_version(spark, output)
                begin = time.monotonic()
                append_rows(io, pipeline.sources["orders"],
                            [{"id": 10_000 + n, "customer_id": 1, "item": item}])
                while True:
                    if delta_version(spark, output) != version:
                        version = delta_version(spark, output)
                        rows = spark.read.format("delta").load(output).where(
                            f"item = '{item}'").count()
                        if rows:
                            break
                    time.sleep(0.05)
                latencies.append(time.monotonic() - begin)
                print(f"record {n + 1}: {latencies[-1]:.2f} s", flush=True)
                time.sleep(1)
        finally:
            stop.set()
            worker.join()
        print(f"p50 {statistics.median(latencies):.2f} s, slowest {max(latencies):.2f} s over "
              f"{len(latencies)} records, trigger every {args.interval:g} s (goal: p50 under 3 s)")


if __name__ == "__main__":
    main()
