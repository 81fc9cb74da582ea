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
# The classes Spark's JVM loads at every start, archived once (a demo run in
# a JVM that writes them as it exits, about 2 minutes the first time), so
# that later local sessions map them instead of loading them
# (engine/class_data.py). Skipped when the archive is there.
.venv/bin/python -m splice.class_data
# Headless Chromium (Debian's package) for the test that renders the Dagster
# UI's asset graph. Installed by default where apt-get can run (as root, or
# with sudo that needs no password); SPLICE_WITH_CHROMIUM=0 leaves it out,
# and that one test then skips, saying why. The version is pinned, but
# Debian serves only the newest build of a package (a security update
# replaces it), so when the pinned build is gone the served one is installed
# and setup says so (docs/DECISIONS.md, "The real webserver").
CHROMIUM_VERSION=156.0.8078.108-1~deb12u1
if [ "${SPLICE_WITH_CHROMIUM:-1}" = "1" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ]; then as_root=(); else as_root=(sudo -n); fi
  if command -v apt-get >/dev/null 2>&1 && "${as_root[@]}" true 2>/dev/null; then
    apt_install() {
      "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "$@" >/dev/null
    }
    # a fresh container has no package lists yet: update first
    "${as_root[@]}" apt-get update -q >/dev/null || true
    if ! apt_install "chromium=$CHROMIUM_VERSION" "chromium-common=$CHROMIUM_VERSION" 2>/dev/null; then
      echo "setup: Debian does not serve chromium $CHROMIUM_VERSION; installing the one it serves" >&2
      apt_install chromium || echo "setup: chromium could not be installed;" \
                                   "the Dagster UI screenshot test will skip" >&2
    fi
  else
    echo "setup: chromium not installed (needs apt-get as root or passwordless sudo);" \
         "the Dagster UI screenshot test will skip" >&2
  fi
fi
