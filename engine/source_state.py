"""What a source's data looks like now, read without starting Spark: the
newest Delta commit of a Delta source, the files of a folder source.

The Dagster sensor compares these markers between ticks to see new data,
and observable source assets use them as data versions. They go through
engine/fs.py, so they read the same storage the engine writes.
"""

from __future__ import annotations

import json
import os

from engine import fs
from engine.kafka_topics import end_offsets
from engine.settings import ENV, SettingsError, Warehouse
from sql.plan import SourceStep


def source_marker(warehouse: Warehouse, source: SourceStep) -> str:
    """A string that changes whenever ``source`` gets new data: for a Kafka
    topic, its end offsets (the brokers of the statement, else
    ``SPLICE_KAFKA_BOOTSTRAP``)."""
    if source.format == "kafka":
        return _topic_marker(source)
    path = warehouse.source_path(source.location).removeprefix("file:")
    if source.format == "delta":
        log = os.path.join(path, "_delta_log")
        commits = sorted(f for f in os.listdir(log) if f.endswith(".json")) \
            if os.path.isdir(log) else []
        return commits[-1] if commits else ""
    files = sorted(os.listdir(path)) if os.path.isdir(path) else []
    return f"{len(files)}:{files[-1] if files else ''}"


def _topic_marker(source: SourceStep) -> str:
    servers = (source.options.get("bootstrap")
               or os.environ.get(ENV["kafka_bootstrap"], "").strip())
    if not servers:
        raise SettingsError(f"source '{source.name}' reads Kafka topic "
                            f"'{source.options.get('topic')}' but no broker is set: set "
                            f"{ENV['kafka_bootstrap']}=host:port for the sensor")
    return json.dumps(end_offsets(servers, source.options["topic"]), sort_keys=True)


def table_version(path: str) -> int | None:
    """The latest version of the Delta table at ``path`` (None when there is
    none), from its log's file names: no Spark."""
    names = fs.list_names(None, path.rstrip("/") + "/_delta_log")
    versions = [int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit()]
    return max(versions) if versions else None
