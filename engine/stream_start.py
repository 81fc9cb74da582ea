"""Where a new stream of a Delta table starts.

A Delta stream that has no checkpoint yet starts, by default, from an
initial snapshot of the table: Delta reconstructs the table's state and
plans every file of it in Spark jobs before the first micro-batch. When the
table's whole history is a few commits that only appended files, reading
those commits from version 0 gives the same rows (every row ever written is
still there, once), from the commit files alone. Measured on this machine
(availableNow to a counting micro-batch, 8 warm starts each, median JVM CPU):
0.57 against 0.29 s for a plain stream of a five-commit table, 0.57 against
0.39 s for a change feed (docs/decisions/stream-start-from-log.md).
Every step's first run starts such a stream per input, and most runs of a
test or of a new pipeline are first runs.

Anything else keeps the snapshot: a removed or rewritten file (an update, a
delete, a compaction: an old commit may name a file VACUUM has since
deleted, and a plain stream would stop at the change), a schema or protocol
change after version 0 (a stream from version 0 would stop at it), a
deletion vector, a change feed not enabled at version 0, a log whose early
commits were cleaned up, or a history longer than ``MAX_VERSIONS`` (reading
it commit by commit would cost more than the snapshot saves). The choice is
made once per query, before its first micro-batch, and kept in its
checkpoint (:func:`start_options` says why).

The Spark setting ``splice.stream.startFromLog`` (``true`` by default)
turns it off with ``false``: every new stream then starts from the snapshot,
as Delta's default (bench/stream_start_bench.py compares the two).
"""

from __future__ import annotations

import json
from typing import Any

from splice.engine import fs
from splice.engine.delta_log import commit_actions, commit_versions
from splice.engine.offset_log import logged_batches
from splice.engine.settings import STREAM_START_SETTING as SETTING

# The start options of a query's Delta streams, by table path, in its checkpoint.
RECORD = "splice_stream_starts.json"
# Above this many commits the snapshot is kept: each commit file is read
# here once more, and a long history is not a first run's.
MAX_VERSIONS = 16


def from_version_zero(spark: Any, path: str, change_feed: bool) -> dict[str, str]:
    """The reader options that start a new stream of the Delta table at
    ``path`` from its version 0, when that gives the snapshot's rows; else
    none. ``change_feed``: the stream reads the table's change feed."""
    if str(spark.conf.get(SETTING, "true")).strip().lower() == "false":
        return {}
    versions = commit_versions(spark, path)
    if not versions or versions != list(range(len(versions))) or len(versions) > MAX_VERSIONS:
        return {}
    feed_from_start = False
    for version in versions:
        for action in commit_actions(spark, path, version):
            if "remove" in action or "cdc" in action:
                return {}
            if ("add" in action and action["add"].get("deletionVector")):
                return {}
            if version and ("metaData" in action or "protocol" in action):
                return {}
            if "metaData" in action:
                settings = action["metaData"].get("configuration") or {}
                feed_from_start = settings.get("delta.enableChangeDataFeed") == "true"
    if change_feed and not feed_from_start:
        return {}
    return {"startingVersion": "0"}


def delta_stream(spark: Any, path: str, options: dict[str, str] | None = None,
                 change_feed: bool = False, checkpoint: str | None = None) -> Any:
    """The Delta table at ``path`` as a stream (its change feed when
    ``change_feed``); ``options`` are the reader's own. ``checkpoint``: the
    checkpoint of the query that reads it, where the stream's start is
    decided once (:func:`start_options`); None starts as Delta does."""
    reader = spark.readStream.format("delta")
    start = start_options(spark, path, change_feed, checkpoint) if checkpoint else {}
    for key, value in {**start, **({"readChangeFeed": "true"} if change_feed else {}),
                       **(options or {})}.items():
        reader = reader.option(key, value)
    return reader.load(path)


def start_options(spark: Any, path: str, change_feed: bool, checkpoint: str) -> dict[str, str]:
    """Where the stream of ``path`` read by the query at ``checkpoint``
    starts: decided before the query's first micro-batch and kept in its
    checkpoint until that micro-batch is committed.

    Kept, because a first micro-batch that was planned but not committed
    (the run died) is planned again from the same start options: its end
    offset means one thing from version 0 and another from a snapshot, and
    the table may since have had an update that would change the answer.
    Once a micro-batch is committed, the stream starts from the offsets in
    the checkpoint and Delta reads no start option."""
    if logged_batches(spark, f"{checkpoint}/commits"):
        return {}
    record = f"{checkpoint}/{RECORD}"
    decided = json.loads(fs.read_text(spark, record)) if fs.exists(spark, record) else {}
    if logged_batches(spark, f"{checkpoint}/offsets"):
        return dict(decided.get(path, {}))  # a checkpoint from before the record: {}
    decided[path] = from_version_zero(spark, path, change_feed)
    fs.write_text(spark, record, json.dumps(decided, sort_keys=True))
    return decided[path]
