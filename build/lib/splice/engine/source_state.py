"""What a source's data looks like now, read without starting Spark: the
newest Delta commit of a Delta source, the files of a folder source.

The Dagster sensor compares these markers between ticks to see new data,
and observable source assets use them as data versions. They go through
engine/fs.py (the OS for a local path, fsspec for a URI such as
``s3a://``), so they read the same storage the engine writes. A source
that is not there yet has an empty marker; storage that cannot be read is
:class:`SourceStateUnreadable`, never a marker that silently stops changing.
"""

from __future__ import annotations

import json

from splice.engine import fs
from splice.engine.delta_log import latest_version
from splice.engine.kafka_topics import end_offsets
from splice.engine.settings import ENV, SettingsError, SpliceSettings, Warehouse
from splice.sql.plan import SourceStep


class SourceStateUnreadable(RuntimeError):
    """A source's storage could not be listed; the message says which and why."""


def source_marker(warehouse: Warehouse, source: SourceStep) -> str:
    """A string that changes whenever ``source`` gets new data: for a Kafka
    topic, its end offsets (the brokers of the statement, else
    ``SPLICE_KAFKA_BOOTSTRAP`` or the settings file)."""
    if source.format == "kafka":
        return _topic_marker(source)
    path = warehouse.source_path(source.location)
    try:
        if source.format == "delta":
            commits = [f for f in fs.list_names(None, f"{path.rstrip('/')}/_delta_log")
                       if f.endswith(".json")]
            return commits[-1] if commits else ""
        files = fs.list_names(None, path)
    except Exception as err:  # any storage failure: the caller must hear of it
        raise SourceStateUnreadable(
            f"cannot read the state of source '{source.name}' at {path}: "
            f"{type(err).__name__}: {err}") from err
    return f"{len(files)}:{files[-1] if files else ''}"


def _topic_marker(source: SourceStep) -> str:
    servers = source.options.get("bootstrap") or SpliceSettings.from_env().kafka_bootstrap
    if not servers:
        raise SettingsError(f"source '{source.name}' reads Kafka topic "
                            f"'{source.options.get('topic')}' but no broker is set: set "
                            f"{ENV['kafka_bootstrap']}=host:port for the sensor")
    return json.dumps(end_offsets(servers, source.options["topic"]), sort_keys=True)


def table_version(path: str) -> int | None:
    """The latest version of the Delta table at ``path`` (None when there is
    none), from its log's file names: no Spark."""
    return latest_version(None, path)
