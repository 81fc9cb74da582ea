#!/usr/bin/env bash
# Starts or stops a schema registry with Confluent's REST API on 127.0.0.1:
# Apicurio Registry 2.4.2.Final (in-memory storage), built from Maven
# Central with scripts/registry/pom.xml into .registry/build the first time
# (about two minutes; later starts reuse it). No Docker needed.
#
#   bash scripts/registry.sh start [FOLDER]   # prints the registry's URL
#   bash scripts/registry.sh stop [FOLDER]
#   bash scripts/registry.sh build            # only build it
#
# FOLDER holds the registry's log and pid (default .registry/server). The
# URL includes the API's path (/apis/ccompat/v7): point Splice at it with
#   export SPLICE_SCHEMA_REGISTRY_URL=$(cat .registry/server/url)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3
exec "$python" -m splice.testing.schema_registry "$@"
