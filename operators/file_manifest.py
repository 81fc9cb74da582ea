"""The record of every file a file source ingested, and the files that
changed after it.

A file source reads a file once, whole, as it was when Spark listed it. The
manifest (a Delta table in the source step's checkpoint folder) keeps each
file's size and modification time as read; it is appended in the same
micro-batch as the file's rows, with the same idempotent marks, so a crash
cannot ingest a file without recording it. A file whose size or time now
differs was changed in place after it was read: what it gained was not read,
and every run says so (``ChangedFile``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType
from splice.engine import fs
from splice.engine.io import appended_since, delta_version

MANIFEST_SCHEMA = StructType([
    StructField("path", StringType()),
    StructField("name", StringType()),
    StructField("size", LongType()),
    StructField("modified_ms", LongType()),
    StructField("batch_id", LongType()),
])


@dataclass(frozen=True)
class ChangedFile:
    """A file changed in place after it was ingested."""

    name: str
    ingested_bytes: int
    bytes_now: int
    ingested_modified_ms: int
    modified_ms_now: int

    @property
    def bytes_not_read(self) -> int:
        return max(0, self.bytes_now - self.ingested_bytes)

    def describe(self) -> str:
        return (f"{self.name}: changed after it was ingested ({self.ingested_bytes} bytes "
                f"read, {self.bytes_now} bytes now); {self.bytes_not_read} bytes not read")


def manifest_path(checkpoint: str) -> str:
    return f"{checkpoint.rstrip('/')}/splice_files"


def manifest_rows(lines: DataFrame, batch_id: int) -> DataFrame:
    """One row per file of a micro-batch, from the columns ``__path``,
    ``__name``, ``__size``, ``__mtime`` (Spark's file metadata, as listed)."""
    return lines.select(
        F.col("__path").alias("path"), F.col("__name").alias("name"),
        F.col("__size").alias("size"), F.unix_millis("__mtime").alias("modified_ms"),
        F.lit(batch_id).cast("bigint").alias("batch_id"),
    ).distinct()


def changed_files(spark: SparkSession, folder: str, checkpoint: str) -> list[ChangedFile]:
    """The files of ``folder`` whose size or modification time differs from
    what was ingested (a file deleted since is not reported)."""
    recorded = recorded_files(spark, checkpoint)
    changed = []
    for name, size, modified in fs.list_files(spark, folder):
        if name in recorded and recorded[name][:2] != (size, modified):
            changed.append(ChangedFile(name, recorded[name][0], size, recorded[name][1], modified))
    return changed


# Each file's (size, modification time, micro-batch) as the manifest holds
# them, by name.
Recorded = dict[str, tuple[int, int, int]]


def recorded_files(spark: SparkSession, checkpoint: str) -> Recorded:
    """Every file of the manifest, its last record winning.

    The manifest gains a file per micro-batch and is never compacted, so a
    whole read costs more every run (a long-lived source's thousands of
    small files, read each run). What the last run read is kept beside it
    with the manifest's version (``splice_files_read.json``); a run reads
    only the files the commits since then appended, or the whole manifest
    when that copy is missing, newer, or a commit since did more than append.
    The copy is written whole or not at all, so a crash leaves an older copy,
    which costs a longer read, never a wrong answer."""
    path = manifest_path(checkpoint)
    version = delta_version(spark, path)
    if version is None:
        return {}
    seen_version, recorded = last_read(spark, checkpoint)
    if seen_version == version:
        return recorded
    new_files = (appended_since(spark, path, seen_version, version)
                 if seen_version is not None and seen_version < version else None)
    if new_files is None:
        recorded = {}
        rows = spark.read.format("delta").option("versionAsOf", version).load(path).collect()
    else:  # a few small files: read without a Spark job
        rows = fs.read_parquet(spark, new_files, MANIFEST_SCHEMA.fieldNames())
    for row in rows:
        last = recorded.get(row["name"])
        if last is None or row["batch_id"] >= last[2]:
            recorded[row["name"]] = (row["size"], row["modified_ms"], row["batch_id"])
    fs.write_text(spark, _read_copy_path(checkpoint), json.dumps(
        {"version": version, "files": {n: list(r) for n, r in recorded.items()}}))
    return recorded


def _read_copy_path(checkpoint: str) -> str:
    return f"{checkpoint.rstrip('/')}/splice_files_read.json"


def last_read(spark: SparkSession, checkpoint: str) -> tuple[int | None, Recorded]:
    """The manifest's version and files as the last run read them (None, {}
    if no run kept them, or the copy does not read)."""
    path = _read_copy_path(checkpoint)
    if not fs.exists(spark, path):
        return None, {}
    try:
        kept = json.loads(fs.read_text(spark, path))
        return int(kept["version"]), {n: (int(r[0]), int(r[1]), int(r[2]))
                                      for n, r in kept["files"].items()}
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return None, {}


def _last_report(checkpoint: str) -> str:
    return f"{checkpoint.rstrip('/')}/splice_changed_files.json"


def save_changed(spark: SparkSession, checkpoint: str, changed: list[ChangedFile]) -> None:
    """Keep what the last run found, for the runs that skip the source
    because none of its files changed since (their answer is the same)."""
    fs.write_text(spark, _last_report(checkpoint), json.dumps([asdict(c) for c in changed]))


def last_changed(spark: SparkSession, checkpoint: str) -> list[ChangedFile]:
    """What the last run of the source found (nothing if it never ran)."""
    path = _last_report(checkpoint)
    if not fs.exists(spark, path):
        return []
    try:
        return [ChangedFile(**c) for c in json.loads(fs.read_text(spark, path))]
    except (OSError, ValueError, TypeError):
        return []
