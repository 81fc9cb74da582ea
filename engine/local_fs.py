"""Splice's own jar (``engine/java``): Hadoop's local file system without a
child process per file, and the check of a JSON record in one parse
(``splice.json.RecordCheck``, used by operators/json_source.py in sessions
whose tasks load the jar: :func:`splice.engine.session.loads_splice_jar`).

PySpark ships no Hadoop native library, so Hadoop's local file system runs
``chmod`` as a child process for every file and directory it creates, and
``readlink`` for both paths of every rename: each Delta commit and each
streaming checkpoint entry starts several. On this machine one such process
cost the JVM 1.7 ms and the process itself 2.8 ms of CPU, and a run of the
table-chain test pipeline (30 steps, two runs) started about 1,600 of them a
run (docs/decisions/test-sessions.md).

``engine/java/splice/hadoop`` holds the same file systems with those two
calls made in-process (Java's own file attributes); everything else is
Hadoop's. ``python -m splice.local_fs`` (run by ``scripts/setup.sh``)
compiles them against PySpark's Hadoop into a jar under the virtual
environment. A classic session's driver then starts with the jar on its
classpath, and a local session (driver and executors in one JVM) takes
them as ``fs.file.impl`` and ``fs.AbstractFileSystem.file.impl``. A cluster
session's executors do not have the jar: it keeps Hadoop's own. Without
the jar (no ``javac``) every session keeps Hadoop's own, as do sessions
whose settings name either file system themselves and every session under
``SPLICE_LOCAL_FS=off``. Off leaves a built jar on the driver's classpath:
the class-data archive (engine/class_data.py) records the classpath it was
written with, and a JVM whose classpath differs starts without it, silently.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from splice.engine.env_files import env_file

ENV = "SPLICE_LOCAL_FS"  # "off": Hadoop's own local file system
SOURCES = Path(__file__).resolve().parent / "java"
CLASS_PATH = "spark.driver.extraClassPath"
IMPLEMENTATIONS = {
    "spark.hadoop.fs.file.impl": "splice.hadoop.ForklessLocalFileSystem",
    "spark.hadoop.fs.AbstractFileSystem.file.impl": "splice.hadoop.ForklessLocalFs",
}


# PySpark's jars the sources use: Hadoop's file systems; for the record
# check, Jackson, Spark's variant builder and Spark's Java UDF interface.
COMPILED_AGAINST = ("hadoop-client-api-*.jar", "jackson-core-*.jar", "spark-variant_*.jar",
                    "spark-sql-api_*.jar")


def _sources() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def wanted() -> bool:
    """Whether local sessions take the forkless file systems (unless
    ``SPLICE_LOCAL_FS=off``)."""
    return os.environ.get(ENV, "").strip().lower() != "off"


@functools.cache
def jar_path() -> str:
    """Where this checkout's jar is (or would be): keyed by PySpark's
    version (its Hadoop) and the sources. Worked out once a process: every
    session start and every micro-batch of a JSON or Kafka source asks
    (engine.session.loads_splice_jar), and neither changes while it runs."""
    digest = hashlib.sha256(metadata.version("pyspark").encode())
    for source in _sources():
        digest.update(source.read_bytes())
    return env_file(f"local-fs-{digest.hexdigest()[:16]}.jar")


def built_jar() -> str | None:
    """The jar, when it is built."""
    path = jar_path()
    return path if os.path.isfile(path) else None


def session_options(master: str, conf: dict[str, str]) -> dict[str, str]:
    """The settings a classic session of ``master`` whose own settings are
    ``conf`` takes from the jar (none without it): the driver's classpath,
    and for a local master the two file systems, unless they are not
    wanted (the classpath stays, so that the class-data archive fits)."""
    jar = built_jar()
    if jar is None:
        return {}
    own = conf.get(CLASS_PATH, "")
    options = {CLASS_PATH: f"{jar}{os.pathsep}{own}" if own else jar}
    if (wanted() and master.startswith("local")
            and not any(key in conf for key in IMPLEMENTATIONS)):
        options.update(IMPLEMENTATIONS)
    return options


class BuildError(Exception):
    """The jar could not be built (no ``javac``, a compiler error)."""


def build(force: bool = False) -> str:
    """Compile the sources against PySpark's Hadoop into the jar (unless it
    is there); its path. Written to a temporary name and moved into place,
    so a session never starts with half a jar."""
    path = jar_path()
    if os.path.isfile(path) and not force:
        return path
    javac = shutil.which("javac")
    if javac is None:
        raise BuildError("javac (a Java 17 JDK) is not on the PATH")
    import pyspark

    found = {name: glob.glob(os.path.join(os.path.dirname(pyspark.__file__), "jars", name))
             for name in COMPILED_AGAINST}
    missing = [name for name, paths in found.items() if not paths]
    if missing:
        raise BuildError(f"PySpark's jars hold none of {', '.join(missing)}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tempfile.TemporaryDirectory() as classes:
        class_path = os.pathsep.join(paths[0] for paths in found.values())
        done = subprocess.run([javac, "--release", "17", "-nowarn", "-cp", class_path, "-d",
                               classes, *map(str, _sources())], capture_output=True, text=True)
        if done.returncode != 0:
            raise BuildError(f"javac failed: {done.stderr.strip()}")
        temp = f"{path}.{os.getpid()}.tmp"
        with zipfile.ZipFile(temp, "w") as jar:
            for root, _, files in os.walk(classes):
                for name in files:
                    full = os.path.join(root, name)
                    jar.write(full, os.path.relpath(full, classes))
        os.replace(temp, path)
    return path
