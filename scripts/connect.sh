#!/usr/bin/env bash
# Starts or stops a Spark Connect server on 127.0.0.1 from pyspark's own jars,
# with Delta and Splice's Spark settings. No Docker needed.
#
#   bash scripts/connect.sh start [FOLDER]   # prints the URL, sc://127.0.0.1:<port>
#   bash scripts/connect.sh stop [FOLDER]
#
# FOLDER holds the server's log, pid and URL (default .splice/connect). Point
# Splice at it with: export SPLICE_SPARK_CONNECT=$(cat .splice/connect/url)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3
exec "$python" -m splice.testing.connect_server "$@"
