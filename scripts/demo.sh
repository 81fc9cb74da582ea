#!/usr/bin/env bash
# Sets up, then runs the demo pipeline (pipelines/demo) end to end on local
# Spark and prints every output table. The warehouse is SPLICE_WAREHOUSE (or
# splice.yaml's warehouse), else ./warehouse; extra arguments go to
# `splice demo`, e.g. --warehouse s3a://bucket/wh (with SPLICE_S3_ENDPOINT).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/splice demo --pipeline pipelines/demo "$@"
