"""The jars of Delta's and the extra packages, resolved once per machine.

A session with ``spark.jars.packages`` has Ivy resolve every package at each
JVM start, though nothing changed since the last: about 2 s of the 7 s a
local session takes to start here (measured: 7.0 s with the packages
against 5.0 s with the same jars named as files). Every ``splice run``,
Dagster run worker and crash-test child starts a JVM, so the first local
session that resolves a set of packages records the jar files Ivy gave it,
and later local sessions of the same set (same PySpark, same delta-spark)
put those files on the driver JVM's classpath instead, as long as every one
of them is still there. Anything else resolves as before: a cluster or
Connect master, a session whose settings name jars or Ivy settings
themselves, or ``PYSPARK_SUBMIT_ARGS`` (they decide the classpath).

On the classpath, not in ``spark.jars``: a local master's executor fetches
every jar of ``spark.jars`` into the session's temporary folder, and so
does a session that resolved packages (they become Python files, copied the
same way). With hadoop-aws that is AWS's 686 MB SDK bundle copied at every
start (744 MB under ``/tmp/spark-*`` measured, left behind by a JVM that is
killed), which filled a CI machine's disk. In local mode the driver is the
executor, so the classpath serves both, and nothing is copied. The jars go
after Spark's own (``SPARK_DIST_CLASSPATH``, which Spark's launcher appends
last) with Delta's first, so that the class-data archive, written by a
session of Delta's jars alone, is a prefix of every local session's
classpath, as the JVM requires of an archive (engine/class_data.py).

The record is a text file, one jar URI a line, under the virtual
environment's ``var/splice`` (one per checkout, created by the setup).
"""

from __future__ import annotations

import hashlib
import os
from importlib import metadata
from urllib.parse import urlparse

from splice.engine.env_files import env_file

# How recorded jars reach a session (the class-data archive is keyed by it).
LAYOUT = "jars-after-spark-classpath"
# Settings that decide the classpath: with any of them set, Spark resolves.
_OWN_RESOLUTION = ("spark.jars", "spark.jars.packages", "spark.jars.ivy",
                   "spark.jars.repositories", "spark.jars.ivySettings",
                   "spark.jars.excludes")


def usable(master: str, conf: dict[str, str]) -> bool:
    """Whether a session of ``master`` with ``conf`` may take recorded jars."""
    return (master.startswith("local") and not os.environ.get("PYSPARK_SUBMIT_ARGS")
            and not any(key in conf for key in _OWN_RESOLUTION))


def record_path(packages: list[str]) -> str:
    """Where the jars of Delta plus ``packages`` are recorded."""
    versions = [metadata.version("pyspark"), metadata.version("delta-spark")]
    key = hashlib.sha256("\n".join([*versions, *sorted(set(packages))]).encode()).hexdigest()
    return env_file(f"jars-{key[:16]}.txt")


def recorded(packages: list[str]) -> list[str] | None:
    """The recorded jar URIs of Delta plus ``packages``; None when none are
    recorded or one of the files is gone."""
    path = record_path(packages)
    try:
        with open(path, encoding="utf-8") as fh:
            jars = [line.strip() for line in fh if line.strip()]
    except OSError:
        return None
    if not jars or not all(os.path.isfile(urlparse(j).path) for j in jars):
        return None
    return jars


def class_path(packages: list[str]) -> str | None:
    """The recorded jars of Delta plus ``packages`` as a classpath, Delta's
    own first (they are the class-data archive's); None when not recorded."""
    known = recorded(packages)
    if known is None:
        return None
    first = [j for j in (recorded([]) or []) if j in known]
    ordered = [*first, *(j for j in known if j not in first)]
    return os.pathsep.join(urlparse(j).path for j in ordered)


def remember(packages: list[str], resolved: str) -> None:
    """Record ``resolved`` (the session's ``spark.jars`` after Ivy: local
    file URIs), written whole or not at all; a failure only costs the next
    start its resolution."""
    jars = [j for j in resolved.split(",") if j.strip()]
    if not jars or not all(urlparse(j).scheme == "file" for j in jars):
        return
    path = record_path(packages)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temp = f"{path}.{os.getpid()}.tmp"
        with open(temp, "w", encoding="utf-8") as fh:
            fh.write("\n".join(jars) + "\n")
        os.replace(temp, path)
    except OSError:
        pass
