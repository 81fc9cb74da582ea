#!/usr/bin/env bash
# Sets up, then runs the whole test suite (real Spark, real Delta, real
# Dagster materializations) and the linter. .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/chromium.sh
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
