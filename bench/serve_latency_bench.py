"""End-to-end latency under ``splice serve``: a record written to a source
until it is in the output table.

The demo pipeline is built, then served (runtime/serve.py, trigger every
``--interval`` seconds). Each of ``--records`` rounds writes one new order
as a JSON file and polls the output table ``orders_enriched`` (its Delta
log, then its rows) until the order is there. A record's latency ends when
the commit that put it in the output was written (the commit's own
timestamp in the table's history), not when this benchmark's polling and
reading saw it: finding and reading it took 0.4 to 0.7 s more, which is the
observer's cost, not the pipeline's. Printed: each latency, the median (p50)
and the slowest, and the CPU the Spark JVM spent per second while every
query idled between records (the price of a short trigger interval).

    .venv/bin/python bench/serve_latency_bench.py [--records 10] [--interval 0.25]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path

from common import jvm_cpu_seconds, scratch, session
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from splice.engine.io import delta_version
from splice.engine.settings import Warehouse
from splice.runtime.compile import compile_path
from splice.runtime.serve import ServeOptions, serve
from splice.runtime.workspace import Workspace

from splice.cli.demo import CUSTOMERS, ORDERS
from splice.testing.cases import append_rows

PIPELINE = Path(__file__).resolve().parent.parent / "pipelines" / "demo"


def committed_at(spark: SparkSession, output: str, before: int | None, item: str) -> float:
    """When the first commit after version ``before`` that holds the row of
    ``item`` was written (epoch seconds, from the table's history)."""
    history = {row["version"]: row["ms"] / 1000 for row in DeltaTable.forPath(
        spark, output).history().selectExpr("version", "unix_millis(timestamp) AS ms").collect()}
    for version in sorted(v for v in history if before is None or v > before):
        rows = spark.read.format("delta").option("versionAsOf", version).load(output)
        if rows.where(f"item = '{item}'").count():
            return history[version]
    raise AssertionError(f"no commit of {output} holds {item!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10)
    parser.add_argument("--interval", type=float, default=ServeOptions().interval_s)
    args = parser.parse_args()
    spark = session()
    pipeline = compile_path(PIPELINE)
    with scratch() as folder:
        io = Workspace(pipeline, warehouse=Warehouse(root=str(folder)), spark=spark).io
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
            cpu, idle_began = jvm_cpu_seconds(spark), time.monotonic()
            time.sleep(10)
            idle_cpu = (jvm_cpu_seconds(spark) - cpu) / (time.monotonic() - idle_began)
            for n in range(args.records):
                item = f"latency probe {n}"
                before = version = delta_version(spark, output)
                begin = time.time()
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
                latencies.append(committed_at(spark, output, before, item) - begin)
                print(f"record {n + 1}: {latencies[-1]:.2f} s", flush=True)
                time.sleep(1)
        finally:
            stop.set()
            worker.join()
        print(f"p50 {statistics.median(latencies):.2f} s, slowest {max(latencies):.2f} s over "
              f"{len(latencies)} records, trigger every {args.interval:g} s (goal: p50 under 3 s); "
              f"idle, the JVM used {idle_cpu:.2f} CPU seconds a second")


if __name__ == "__main__":
    main()
