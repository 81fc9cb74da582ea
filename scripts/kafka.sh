#!/usr/bin/env bash
# Starts or stops a single-node Apache Kafka broker (KRaft) on 127.0.0.1,
# from the jars pinned in scripts/kafka/pom.xml (fetched from Maven Central
# into .kafka/libs the first time). No Docker needed.
#
#   bash scripts/kafka.sh start [FOLDER]   # prints the bootstrap address
#   bash scripts/kafka.sh stop [FOLDER]
#
# FOLDER holds the broker's data and log (default .kafka/broker). Point
# Splice at it with: export SPLICE_KAFKA_BOOTSTRAP=$(cat .kafka/broker/bootstrap)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3
exec "$python" -m splice.testing.kafka_broker "$@"
