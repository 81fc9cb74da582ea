#!/usr/bin/env bash
# Installs what only the test suite needs outside Python: scripts/test.sh
# (and so .ci/run) runs it after scripts/setup.sh; the demo does not.
set -euo pipefail
# Headless Chromium (Debian's package) for the test that renders the Dagster
# UI's asset graph. Installed by default where apt-get can run (as root, or
# with sudo that needs no password); SPLICE_WITH_CHROMIUM=0 leaves it out,
# and that one test then skips, saying why. The version is pinned, but
# Debian serves only the newest build of a package (a security update
# replaces it), so when the pinned build is gone the served one is installed
# and this says so (docs/decisions/dagster-webserver-test.md).
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
      echo "chromium.sh: Debian does not serve chromium $CHROMIUM_VERSION; installing the one it serves" >&2
      apt_install chromium || echo "chromium.sh: chromium could not be installed;" \
                                   "the Dagster UI screenshot test will skip" >&2
    fi
  else
    echo "chromium.sh: chromium not installed (needs apt-get as root or passwordless sudo);" \
         "the Dagster UI screenshot test will skip" >&2
  fi
fi
