#!/usr/bin/env bash
# Sets up everything Splice needs, from a fresh clone: a virtual environment
# with the pinned dependencies (requirements.lock) and Splice itself. Delta's
# jars are fetched from Maven Central by Spark at its first start and cached
# in ~/.ivy2.5.2. Safe to run again: it only reinstalls when the pins change.
set -euo pipefail
cd "$(dirname "$0")/.."

pick_python() {
  for candidate in "${PYTHON:-}" python3.11 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  echo "Splice needs Python 3.11 (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

if [ ! -x .venv/bin/python ]; then
  "$(pick_python)" -m venv .venv
fi
stamp=.venv/.splice-installed
if [ ! -f "$stamp" ] || [ requirements.lock -nt "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
  touch "$stamp"
fi
command -v java >/dev/null 2>&1 || { echo "Spark needs Java 17 (java not found)" >&2; exit 1; }
# Hadoop's local file system without a chmod or readlink process per file
# (engine/local_fs.py), compiled once with javac; before the archive below,
# which records the classpath the jar is on.
.venv/bin/python -m splice.local_fs
# The classes Spark's JVM loads at every start, archived once (a demo run in
# a JVM that writes them as it exits, about 2 minutes the first time), so
# that later local sessions map them instead of loading them
# (engine/class_data.py). Skipped when the archive is there.
.venv/bin/python -m splice.class_data
