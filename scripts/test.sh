#!/usr/bin/env bash
# Sets up, then runs the whole test suite (real Spark, real Delta, real
# Dagster materializations) and the linter. .ci/run runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/chromium.sh
.venv/bin/ruff check .
# The space the suite's temporary files have (a run once failed for lack of
# it): printed, so that a failure of that kind shows what there was.
echo "free space under ${TMPDIR:-/tmp}: $(df -h --output=avail "${TMPDIR:-/tmp}" | tail -1 | tr -d ' ')"
exec .venv/bin/python -m pytest "$@"
