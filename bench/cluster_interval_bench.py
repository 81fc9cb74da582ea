"""The interval-join benchmark (bench/interval_join_bench.py) with the
driver here and the executors on a Spark standalone cluster: a master and
one worker (2 cores) started from pyspark's jars on 127.0.0.1
(splice/testing/cluster.py), stopped at the end. Splice's compiled join against the
same hand-written PySpark job, both on that cluster, alternating, in one
run; the goal is a printed ratio of at least 0.95.

    .venv/bin/python bench/cluster_interval_bench.py [--rows 1000000] [--rounds 2]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from interval_join_bench import main as interval_join_main

from splice.testing.cluster import start_cluster, stop_cluster


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="splice-cluster-"))
    cluster = start_cluster(folder, cores=2, memory="6g")
    try:
        os.environ["SPLICE_SPARK_MASTER"] = cluster.master
        os.environ["SPLICE_SPARK_CONF"] = json.dumps({"spark.executor.memory": "5g"})
        print(f"== on the standalone cluster {cluster.master} (one worker, 2 cores)",
              flush=True)
        interval_join_main()
    finally:
        stop_cluster(folder)


if __name__ == "__main__":
    main()
