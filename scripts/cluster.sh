#!/usr/bin/env bash
# Starts or stops a Spark standalone cluster (a master and one worker) on
# 127.0.0.1 from pyspark's own jars. No Docker needed.
#
#   bash scripts/cluster.sh start [FOLDER]   # prints the master URL, spark://127.0.0.1:<port>
#   bash scripts/cluster.sh stop [FOLDER]
#
# FOLDER holds the logs, pids and the worker's work dir (default
# .splice/cluster). Point Splice at it with:
#   export SPLICE_SPARK_MASTER=$(cat .splice/cluster/master)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3
exec "$python" -m splice.testing.cluster "$@"
