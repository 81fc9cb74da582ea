"""A Delta table's transaction log read as files, without Spark: its commit
versions from the log's file names, and the actions of one commit.

Every reader of the log goes through here (the latest version, the commits
since a version, the micro-batch marks, where a new stream starts, the
sensor's source markers), through ``splice.engine.fs``: the OS locally, fsspec on
object storage."""

from __future__ import annotations

import json
from typing import Any

from splice.engine import fs


def log_folder(path: str) -> str:
    return path.rstrip("/") + "/_delta_log"


def commit_file(path: str, version: int) -> str:
    return f"{log_folder(path)}/{version:020d}.json"


def versions_in(names: list[str]) -> list[int]:
    """The commit versions among a log folder's file names, ascending."""
    return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())


def commit_versions(spark: Any, path: str) -> list[int]:
    """The versions whose commit files the log holds, ascending (none when
    there is no table)."""
    return versions_in(fs.list_names(spark, log_folder(path)))


def latest_version(spark: Any, path: str) -> int | None:
    """The table's latest version, from its log's file names."""
    versions = commit_versions(spark, path)
    return versions[-1] if versions else None


def commit_actions(spark: Any, path: str, version: int) -> list[dict]:
    """The actions of one commit, one per line of its file."""
    return [json.loads(line) for line in fs.read_text(spark, commit_file(path, version))
            .splitlines() if line.strip()]
