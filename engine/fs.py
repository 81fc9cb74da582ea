"""Every file operation Splice does outside Spark and Delta (markers, claims,
definitions, manifests, log listings, folder removal), in one module.

Local paths (a plain path, or ``file:``) go straight to the OS, with
durable atomic replacement; any other URI goes through fsspec, a maintained
library with one interface over object stores and HDFS. Nothing here goes
through Spark's JVM, so the same code runs under Spark Connect, where the
client has no JVM at all. Hadoop's ``s3a://`` scheme is read as S3 (s3fs);
a scheme with no fsspec implementation installed is a
:class:`FileSystemUnavailable` that names the package to install.

An ``s3a://`` URI gets the endpoint and credentials Spark's S3A gets, from
the same settings (engine/storage.py): those of the session the process
started (:func:`configure_files`), else those of the environment and the
settings file, read anew each time (a Dagster sensor starts no session).

Each function still takes the Spark session first, as the callers pass it;
it is not used.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from datetime import datetime
from typing import Any

import fsspec
from fsspec import AbstractFileSystem
from splice.engine.locations import local_file
from splice.engine.settings import SpliceSettings
from splice.engine.storage import fsspec_options

# Hadoop's names for file systems that fsspec knows by another name.
_SCHEMES = {"s3a": "s3", "s3n": "s3"}
# The package that provides a scheme's fsspec implementation.
_PACKAGES = {"s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "abfs": "adlfs", "abfss": "adlfs",
             "az": "adlfs", "hdfs": "pyarrow (with libhdfs)"}


# s3fs's options of the settings the process's session was started with.
_s3_options: dict[str, Any] | None = None


class FileSystemUnavailable(RuntimeError):
    """No file system for a URI's scheme is installed."""


def configure_files(settings: SpliceSettings | None) -> None:
    """Use ``settings``' storage settings for every later S3 URI (None: read
    them from the environment and the settings file each time)."""
    global _s3_options
    _s3_options = None if settings is None else fsspec_options(settings.storage_conf())


def _options(scheme: str) -> dict[str, Any]:
    if scheme != "s3":
        return {}
    if _s3_options is not None:
        return dict(_s3_options)
    return fsspec_options(SpliceSettings.from_env().storage_conf())


def local_path(path: str) -> str | None:
    """The local file of a path: itself when it has no scheme, the path of a
    ``file:`` URI; None for any other URI."""
    return local_file(path)


def resolve(uri: str) -> tuple[AbstractFileSystem, str]:
    """The fsspec file system of ``uri`` and the path within it."""
    given, sep, rest = uri.partition("://")
    scheme = _SCHEMES.get(given, given) if sep else "file"
    try:
        return fsspec.core.url_to_fs(f"{scheme}://{rest}" if sep else uri, **_options(scheme))
    except (ImportError, ValueError) as err:
        package = _PACKAGES.get(scheme, f"the fsspec implementation of '{scheme}://'")
        raise FileSystemUnavailable(
            f"no file system for {given}:// URIs ({err}); install "
            f"{package} next to Splice to use a warehouse there") from None


def list_names(spark: Any, path: str) -> list[str]:
    """The names in a folder (empty if there is no such folder)."""
    local = local_path(path)
    if local is not None:
        return sorted(os.listdir(local)) if os.path.isdir(local) else []
    fs, where = resolve(path)
    try:
        entries = fs.ls(where, detail=False)
    except FileNotFoundError:
        return []
    return sorted(_name(str(e)) for e in entries if _name(str(e)))


def _name(entry: str) -> str:
    return entry.rstrip("/").rsplit("/", 1)[-1]


def read_text(spark: Any, path: str) -> str:
    local = local_path(path)
    if local is not None:
        with open(local, encoding="utf-8") as fh:
            return fh.read()
    fs, where = resolve(path)
    return fs.cat_file(where).decode("utf-8")


def write_text(spark: Any, path: str, text: str) -> None:
    """Replace ``path``'s content with ``text``, all or nothing."""
    local = local_path(path)
    if local is not None:
        _replace_atomically(local, text)
        return
    # An object store's put is all or nothing: the object appears whole.
    fs, where = resolve(path)
    fs.makedirs(_parent(where), exist_ok=True)
    fs.pipe_file(where, text.encode("utf-8"))


def create_text(spark: Any, path: str, text: str) -> bool:
    """Write ``text`` to ``path`` only if no file is there; whether it did.

    Locally a temporary file is hard-linked into place (a link fails when the
    name exists, so of two racing creators one wins); on a URI the file is
    opened in fsspec's exclusive mode (``xb``: a conditional put where the
    store has one, S3 through s3fs; else a check, then a put)."""
    local = local_path(path)
    if local is None:
        fs, where = resolve(path)
        fs.makedirs(_parent(where), exist_ok=True)
        try:
            with fs.open(where, "xb") as fh:
                fh.write(text.encode("utf-8"))
        except FileExistsError:
            return False
        return True
    folder = os.path.dirname(local) or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".create-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, local)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: rename, not exclusive
            if os.path.exists(local):
                return False
            os.replace(tmp, local)
        return True
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0]


def _replace_atomically(path: str, text: str) -> None:
    """Write a temporary file beside ``path``, flush it to disk, then rename it
    over ``path``: a crash at any point leaves the old content or the new,
    never an empty or half-written file (a reader of the runner's markers
    would otherwise fail on every later run)."""
    folder = os.path.dirname(path) or "."
    os.makedirs(folder, exist_ok=True)
    temp = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    try:
        with open(temp, "w", encoding="utf-8") as fh:
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
    local = local_path(path)
    if local is not None:
        return os.path.exists(local)
    fs, where = resolve(path)
    return bool(fs.exists(where))


def remove(spark: Any, path: str) -> None:
    """Delete one file (nothing if it is not there)."""
    local = local_path(path)
    if local is not None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(local)
        return
    fs, where = resolve(path)
    with contextlib.suppress(FileNotFoundError):
        fs.rm_file(where)


def remove_tree(spark: Any, path: str) -> None:
    """Delete a folder and everything under it (nothing if it is not there)."""
    local = local_path(path)
    if local is not None:
        shutil.rmtree(local, ignore_errors=True)
        return
    fs, where = resolve(path)
    with contextlib.suppress(FileNotFoundError):
        fs.rm(where, recursive=True)


def list_files(spark: Any, path: str) -> list[tuple[str, int, int]]:
    """The regular files in a folder as (name, size in bytes, modification
    time in epoch milliseconds); empty if there is no such folder."""
    local = local_path(path)
    if local is not None:
        if not os.path.isdir(local):
            return []
        found = []
        for entry in os.scandir(local):
            if entry.is_file():
                stat = entry.stat()
                found.append((entry.name, stat.st_size, stat.st_mtime_ns // 1_000_000))
        return sorted(found)
    fs, where = resolve(path)
    try:
        entries = fs.ls(where, detail=True)
    except FileNotFoundError:
        return []
    return sorted((_name(e["name"]), int(e.get("size") or 0), _modified_ms(fs, e))
                  for e in entries if e.get("type") == "file")


def _modified_ms(fs: AbstractFileSystem, entry: dict[str, Any]) -> int:
    """An fsspec listing entry's modification time in epoch milliseconds
    (each implementation names it its own way)."""
    for key in ("mtime", "LastModified", "last_modified", "modified", "created"):
        value = entry.get(key)
        if isinstance(value, datetime):
            return int(value.timestamp() * 1000)
        if isinstance(value, int | float):
            return int(value * 1000)
    return int(fs.modified(entry["name"]).timestamp() * 1000)


def make_dirs(spark: Any, path: str) -> None:
    """Create a folder (and its parents) unless it is there."""
    local = local_path(path)
    if local is not None:
        os.makedirs(local, exist_ok=True)
        return
    fs, where = resolve(path)
    fs.makedirs(where, exist_ok=True)


def read_parquet(spark: Any, paths: list[str], columns: list[str]) -> list[dict[str, Any]]:
    """The rows of parquet files (``columns`` of them), read here with
    pyarrow, not by a Spark job: for the few small files a step's own
    bookkeeping table gains per run (a file source's manifest)."""
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for path in paths:
        local = local_path(path)
        if local is not None:
            rows += pq.read_table(local, columns=columns).to_pylist()
            continue
        fs, where = resolve(path)
        with fs.open(where, "rb") as fh:
            rows += pq.read_table(fh, columns=columns).to_pylist()
    return rows
