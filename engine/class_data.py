"""The class-data archive a session's driver JVM starts from.

Every driver JVM a session starts (each ``splice run``, Dagster run worker,
crash-test child) loads and verifies the same tens of thousands of classes
of Spark, Delta and Hadoop before its first job. Java's class-data sharing
maps them from an archive written by an earlier JVM instead (measured
CPU: docs/decisions/test-sessions.md).

The archive is written once per checkout (``python -m splice.class_data``,
which ``scripts/setup.sh`` runs): a JVM started with
``-XX:ArchiveClassesAtExit`` runs the demo and writes the classes it loaded
as it exits. A session's driver then starts with
``-XX:SharedArchiveFile`` when the archive is there. The JVM itself checks that an archive fits its
version and classpath and starts without one otherwise, silently
(``-Xlog:cds=off``): a stale or broken archive costs its gain, never a run.

Every classic session's driver takes it, whatever its master: PySpark
starts the driver's JVM here, from the same jars, for a cluster too (its
executors start elsewhere, and keep their own options); a Spark Connect
client starts no JVM. Not when the session's own Java options already decide
class-data sharing.
"""

from __future__ import annotations

import hashlib
import os
from importlib import metadata

from splice.engine import jars, local_fs
from splice.engine.env_files import env_file

ENV = "SPLICE_CLASS_ARCHIVE"  # the archive's path, or "off"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
# Java options with which the session's own settings decide sharing.
_OWN_SHARING = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def archive_path() -> str | None:
    """Where the archive of this checkout's PySpark and Delta is (or would
    be); None when ``SPLICE_CLASS_ARCHIVE=off``."""
    chosen = os.environ.get(ENV, "").strip()
    if chosen.lower() == "off":
        return None
    if chosen:
        return chosen
    # The driver's classpath too: the local file system's jar is on it when
    # built (engine/local_fs.py), and an archive fits one classpath; Delta's
    # jars are on it after Spark's (engine/jars.py, the layout named here,
    # so that an archive of the earlier layout is not taken for this one).
    jar = local_fs.built_jar()
    versions = [metadata.version("pyspark"), metadata.version("delta-spark"),
                *([os.path.basename(jar)] if jar else []), jars.LAYOUT]
    key = hashlib.sha256("\n".join(versions).encode()).hexdigest()[:16]
    return env_file(f"classes-{key}.jsa")


def usable(conf: dict[str, str]) -> bool:
    """Whether a classic session with ``conf`` may share classes from an
    archive: its own Java options do not decide sharing."""
    options = conf.get(JAVA_OPTIONS, "")
    return not any(o in options for o in _OWN_SHARING)


def sharing_options(conf: dict[str, str]) -> str | None:
    """The driver's Java options with the archive added, when the session
    may use it and it is there; None otherwise."""
    path = archive_path()
    if path is None or not usable(conf) or not os.path.isfile(path):
        return None
    return f"{conf.get(JAVA_OPTIONS, '')} -XX:SharedArchiveFile={path} {_QUIET}".strip()


def writing_options(conf: dict[str, str], path: str) -> str:
    """The driver's Java options of a JVM that writes an archive to
    ``path`` when it exits."""
    return f"{conf.get(JAVA_OPTIONS, '')} -XX:ArchiveClassesAtExit={path} {_QUIET}".strip()
