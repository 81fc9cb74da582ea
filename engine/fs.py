"""Small file-system reads for the warehouse: local paths directly, anything
else (HDFS, object stores) through Hadoop's FileSystem API in Spark's JVM."""

from __future__ import annotations

import os
import shutil
import uuid
from typing import Any


def _local(path: str) -> str | None:
    if path.startswith("file:"):
        return path.removeprefix("file://").removeprefix("file:")
    return None if "://" in path else path


def _hadoop(spark: Any, path: str) -> tuple[Any, Any]:
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hpath


def list_names(spark: Any, path: str) -> list[str]:
    """The names in a folder (empty if there is no such folder)."""
    local = _local(path)
    if local is not None:
        return sorted(os.listdir(local)) if os.path.isdir(local) else []
    fs, hpath = _hadoop(spark, path)
    if not fs.exists(hpath):
        return []
    return sorted(status.getPath().getName() for status in fs.listStatus(hpath))


def read_text(spark: Any, path: str) -> str:
    local = _local(path)
    if local is not None:
        with open(local) as fh:
            return fh.read()
    fs, hpath = _hadoop(spark, path)
    stream = fs.open(hpath)
    try:
        jvm = spark.sparkContext._jvm
        return jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
    finally:
        stream.close()


def write_text(spark: Any, path: str, text: str) -> None:
    local = _local(path)
    if local is not None:
        _replace_atomically(local, text)
        return
    # An object store's create is all or nothing: the object appears on close.
    fs, hpath = _hadoop(spark, path)
    out = fs.create(hpath, True)
    try:
        out.write(bytearray(text.encode()))
    finally:
        out.close()


def _replace_atomically(path: str, text: str) -> None:
    """Write a temporary file beside ``path``, flush it to disk, then rename it
    over ``path``: a crash at any point leaves the old content or the new,
    never an empty or half-written file (a reader of the runner's markers
    would otherwise fail on every later run)."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    temp = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temp, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.remove(temp)
        raise
    directory = os.open(folder, os.O_RDONLY)
    try:  # the rename itself is durable once the folder is synced
        os.fsync(directory)
    finally:
        os.close(directory)


def exists(spark: Any, path: str) -> bool:
    local = _local(path)
    if local is not None:
        return os.path.exists(local)
    fs, hpath = _hadoop(spark, path)
    return bool(fs.exists(hpath))


def remove_tree(spark: Any, path: str) -> None:
    """Delete a folder and everything under it (nothing if it is not there)."""
    local = _local(path)
    if local is not None:
        shutil.rmtree(local, ignore_errors=True)
        return
    fs, hpath = _hadoop(spark, path)
    if fs.exists(hpath):
        fs.delete(hpath, True)


def list_files(spark: Any, path: str) -> list[tuple[str, int, int]]:
    """The regular files in a folder as (name, size in bytes, modification
    time in epoch milliseconds, as Hadoop reports it); empty if no folder."""
    local = _local(path)
    if local is not None:
        if not os.path.isdir(local):
            return []
        found = []
        for entry in os.scandir(local):
            if entry.is_file():
                stat = entry.stat()
                found.append((entry.name, stat.st_size, stat.st_mtime_ns // 1_000_000))
        return sorted(found)
    fs, hpath = _hadoop(spark, path)
    if not fs.exists(hpath):
        return []
    return sorted((s.getPath().getName(), int(s.getLen()), int(s.getModificationTime()))
                  for s in fs.listStatus(hpath) if s.isFile())


def make_dirs(spark: Any, path: str) -> None:
    """Create a folder (and its parents) unless it is there."""
    local = _local(path)
    if local is not None:
        os.makedirs(local, exist_ok=True)
        return
    fs, hpath = _hadoop(spark, path)
    if not fs.exists(hpath):
        fs.mkdirs(hpath)
