#!/usr/bin/env bash
# Sets up, then runs the demo pipeline (pipelines/demo) end to end on local
# Spark with the warehouse folder ./warehouse, and prints every output table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/splice demo --warehouse warehouse --pipeline pipelines/demo
