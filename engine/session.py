"""The Spark session, with Delta configured, built from :class:`SpliceSettings`.

One session serves a whole process: a run of the CLI, a Dagster run worker, a
test session. Starting Spark costs seconds, so it is started once and shared.

With ``connect_url`` set the session is a Spark Connect client
(``SparkSession.builder.remote(url)``). Against a server (``sc://...``) the
settings that only mean something when a JVM is launched here (driver and
executor settings, jars and packages, the UI, static SQL settings such as
Delta's session extension) are not sent: the server was started with its
own. A ``local[...]`` Connect URL starts a Connect server in a JVM of this
process, which does get every setting. ``setLogLevel`` (a SparkContext call
that Connect does not have) is skipped under Connect; the server logs as it
is configured to.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from splice.engine import class_data, jars, local_fs
from splice.engine.fs import configure_files
from splice.engine.net import unanswered
from splice.engine.settings import ENV, SESSION_SETTINGS, SettingsError, SpliceSettings
from splice.engine.storage import check_storage, storage_packages

_lock = threading.Lock()
DIST_CLASS_PATH = "SPARK_DIST_CLASSPATH"

# Settings a Connect client cannot change on a running server: read when the
# JVM starts, or static SQL settings.
LAUNCH_ONLY_PREFIXES = ("spark.driver.", "spark.executor.", "spark.jars", "spark.ui.",
                        "spark.cleaner.", "spark.master", "spark.default.parallelism",
                        "spark.plugins")
LAUNCH_ONLY = frozenset({
    "spark.sql.extensions", "spark.sql.catalog.spark_catalog",
    "spark.sql.codegen.cache.maxEntries", "spark.databricks.delta.delta.log.cacheSize",
    "spark.python.sql.dataFrameDebugging.enabled",
})


def base_conf(settings: SpliceSettings) -> dict[str, str]:
    """Splice's own Spark settings (``settings.conf`` overrides them)."""
    partitions = str(settings.shuffle_partitions)
    return {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        # Streaming state is partitioned by this and it cannot change once a
        # checkpoint exists: chosen once, on purpose (PLATFORM.md measured the
        # default 200 at 2.6x slower on two cores).
        "spark.sql.shuffle.partitions": partitions,
        "spark.default.parallelism": partitions,
        # Delta's snapshot work defaults to 50 partitions, which made every tiny
        # streaming query here take 10+ seconds.
        "spark.databricks.delta.snapshotPartitions": "1",
        "spark.databricks.delta.autoCompact.enabled": "false",
        # VACUUM lists a table's files in this many tasks, 10000 by default:
        # one VACUUM of a tiny table took 41-56 s here against 2.5-4 s with
        # 2, and maintenance vacuums every table a pipeline owns.
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": partitions,
        # No checksum file. With one, Delta computes it from the last one
        # without a job and a snapshot takes its protocol and metadata from
        # it (a projection's micro-batch: 1 job instead of 2, measured); but
        # a corrupted commit file is then found by the next step's stream,
        # not the source step (docs/decisions/micro-batch-marks.md).
        "spark.databricks.delta.writeChecksumFile.enabled": "false",
        "spark.sql.streaming.multipleWatermarkPolicy": "max",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.sql.adaptive.enabled": "false",
        # In local mode the driver is the executor too: cached and
        # checkpointed micro-batches, Delta snapshots and streaming state all
        # live in its heap. Spark's 1 GB default ran out in a long test run
        # (a broadcast failed in the last test); the machine has 24 GB.
        "spark.driver.memory": settings.driver_memory,
        # Delta keeps a DeltaLog (with its cached snapshot) for every table
        # path it has seen, up to 10000; a process that touches thousands of
        # short-lived tables (a test run) should not keep them all.
        "spark.databricks.delta.delta.log.cacheSize": "64",
        # Every micro-batch plans its queries anew, so the same generated code
        # is compiled again and again; Spark keeps 100 compiled classes by
        # default, fewer than one pipeline run of a few steps produces (a
        # multi-run case went 11% faster with 1000).
        "spark.sql.codegen.cache.maxEntries": "1000",
        # Let the ContextCleaner drop unreferenced cached blocks and
        # broadcasts every few minutes, not every 30.
        "spark.cleaner.periodicGC.interval": "3min",
        # PySpark records the Python line behind every DataFrame function
        # for Spark's error messages: four more calls into the JVM per
        # function, 2,137 calls where 832 do for the Kafka source's decode
        # of each micro-batch (0.13 to 0.18 s instead of 0.19 to 0.25 s).
        # Splice places an error at its SQL statement and drops that
        # context (engine/errors.py); ``conf`` can turn it back on.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
    }


def spark_conf(settings: SpliceSettings) -> dict[str, str]:
    """Every Spark setting the session is built with (packages aside)."""
    return {**base_conf(settings), **settings.storage_conf()}


def is_launch_only(key: str) -> bool:
    return key in LAUNCH_ONLY or key.startswith(LAUNCH_ONLY_PREFIXES)


def connect_conf(settings: SpliceSettings) -> tuple[dict[str, str], list[str]]:
    """The settings sent to a Spark Connect server, and those left out."""
    conf = spark_conf(settings)
    if not _remote_server(settings):
        return conf, []
    skipped = sorted(k for k in conf if is_launch_only(k))
    return {k: v for k, v in conf.items() if k not in skipped}, skipped


def _remote_server(settings: SpliceSettings) -> bool:
    """A Connect URL naming a server (``sc://``), not one this process starts."""
    return bool(settings.connect_url) and not str(settings.connect_url).startswith("local")


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no SparkContext)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def loads_splice_jar(spark: Any) -> bool:
    """Whether the tasks of ``spark`` load Splice's jar (engine/local_fs.py):
    a classic session of a local master started with the jar on its
    driver's classpath, the driver being the executor. A cluster's
    executors and a Spark Connect server's session are not known to."""
    if is_connect(spark):
        return False
    jar = local_fs.built_jar()
    context = spark.sparkContext
    return (jar is not None and context.master.startswith("local")
            and jar in context.getConf().get(local_fs.CLASS_PATH, "").split(os.pathsep))


def check_master(master: str) -> None:
    """A standalone master (``spark://host:port[,host:port]``) that accepts
    no connection is one message before the JVM starts: Spark itself would
    retry registering for a minute and then fail with a stack trace."""
    if master.startswith("spark://"):
        _reachable(master, master.removeprefix("spark://").split(","),
                   "bash scripts/cluster.sh start", f"--master / {ENV['master']}")


def check_connect_server(url: str) -> None:
    """A Connect server (``sc://host:port/;params``) that accepts no
    connection is one message: the client would retry for minutes."""
    if url.startswith("sc://"):
        address = url.removeprefix("sc://").split("/", 1)[0]
        _reachable(url, [address if ":" in address else f"{address}:15002"],
                   "bash scripts/connect.sh start", f"--connect / {ENV['connect_url']}")


def _reachable(url: str, addresses: list[str], start: str, setting: str) -> None:
    reasons = unanswered(addresses)
    if reasons:
        raise SettingsError(f"cannot reach {url} ({'; '.join(reasons)}): start it ({start} "
                            f"prints its URL) or fix {setting}")


@dataclass(frozen=True)
class DriverLaunch:
    """What a driver JVM launched here takes beyond its Spark settings:
    ``conf``, settings to add, and ``class_path``, the recorded jars to put
    after its classpath (None: Spark resolves Delta's and the extra packages)."""

    conf: dict[str, str]
    class_path: str | None
    # Whether it may take recorded jars at all (a local master, its own
    # settings not deciding the classpath): a start that resolved records them.
    recordable: bool


def driver_launch(master: str, conf: dict[str, str], packages: list[str]) -> DriverLaunch:
    """How to launch the driver JVM of ``master`` whose settings are ``conf``
    with Delta plus ``packages``: the recorded jars when it may take them
    (engine/jars.py), Hadoop's local file system without a process per file
    (engine/local_fs.py), then classes from an archive (engine/class_data.py),
    which records that classpath. A local session's JVM and the Spark
    Connect server (splice/testing/connect_server.py) are launched alike."""
    recordable = jars.usable(master, conf)
    known = jars.class_path(packages) if recordable else None
    added = dict(local_fs.session_options(master, conf))
    options = class_data.sharing_options(conf)
    if options is not None:
        added[class_data.JAVA_OPTIONS] = options
    return DriverLaunch(conf=added, class_path=known, recordable=recordable)


def dist_class_path(path: str, own: str | None) -> str:
    """``SPARK_DIST_CLASSPATH`` with ``path`` after it: Spark's launcher
    appends it last; one already set, as a Hadoop-free Spark needs, stays
    first."""
    return f"{own}{os.pathsep}{path}" if own else path


@contextlib.contextmanager
def _launch_class_path(path: str | None) -> Iterator[None]:
    """``path`` after the classpath of the JVM launched inside
    (:func:`dist_class_path`), for that launch only."""
    if path is None:
        yield
        return
    own = os.environ.get(DIST_CLASS_PATH)
    os.environ[DIST_CLASS_PATH] = dist_class_path(path, own)
    try:
        yield
    finally:
        if own is None:
            os.environ.pop(DIST_CLASS_PATH, None)
        else:
            os.environ[DIST_CLASS_PATH] = own


def _existing_session(session_class: Any) -> Any:
    """The session this process already has (the thread's, else the
    default one), or None."""
    try:
        return session_class.active()
    except Exception:  # PySparkRuntimeError: no session yet
        return None


def own_session(spark: Any) -> Any:
    """A session of its own (settings apart, one SparkContext), or under
    Spark Connect, which cannot clone a session, ``spark`` itself.

    A new session starts from the application's settings: Splice's own
    (``SESSION_SETTINGS``, such as ``splice.tableJoin.plan``) set on
    ``spark`` since are carried over, so that they hold for the steps a
    caller runs. They are asked for by name: PySpark's ``conf.getAll``
    fetches every setting in a round trip of its own and ends on a Java
    exception that PySpark converts: 29 ms a call, where this whole
    function now takes 3 ms (measured), once for every step of every run
    (docs/decisions/README.md)."""
    if is_connect(spark):
        return spark
    session = spark.newSession()
    for name in SESSION_SETTINGS:
        value = spark.conf.get(name, None)
        if value is not None:
            session.conf.set(name, value)
    return session


def start_session(settings: SpliceSettings | None = None):  # -> SparkSession (lazy import)
    """The process's SparkSession: the active one if there is one, else a new
    one built from ``settings`` (from the environment when None)."""
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    settings = settings or SpliceSettings.from_env()
    with _lock:
        if not settings.connect_url:
            # The process's session from any thread: getActiveSession is
            # per thread, and a second "first" start in a worker thread
            # would reconfigure the file layer with that caller's settings
            # (an S3 test lost its credentials after a threaded Dagster run).
            active = _existing_session(SparkSession)
            if active is not None:
                return active
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        if settings.connect_url:
            builder = SparkSession.builder.remote(settings.connect_url)
            conf, _ = connect_conf(settings)
        else:
            builder = SparkSession.builder.master(settings.master)
            conf = spark_conf(settings)
        builder = builder.appName(settings.app_name)
        for key, value in conf.items():
            builder = builder.config(key, value)
        if settings.connect_url:
            check_connect_server(settings.connect_url)
        else:
            check_master(settings.master)
        local_jars, known = False, None
        if not _remote_server(settings):
            # Asked before the JVM starts: a wrong endpoint, missing keys or
            # bucket is then one message, not a stack trace from a step.
            check_storage(settings.warehouse, settings.storage_conf(),
                          f"the warehouse (--warehouse, {ENV['warehouse']})")
            packages = list(dict.fromkeys(
                [*settings.packages, *storage_packages([settings.warehouse])]))
            launch = driver_launch(settings.master, conf, packages)
            local_jars = launch.recordable
            known = launch.class_path
            if known is None:  # else resolved by an earlier start (engine/jars.py)
                builder = configure_spark_with_delta_pip(builder, extra_packages=packages)
            if not settings.connect_url:
                for key, value in launch.conf.items():
                    builder = builder.config(key, value)
        logged = os.path.getsize(settings.spark_log) if os.path.exists(settings.spark_log) else 0
        with _jvm_output_to(settings.spark_log), _launch_class_path(known):
            try:
                spark = builder.getOrCreate()
            except ImportError as err:  # PySparkImportError: Connect's client libraries
                if not settings.connect_url:
                    raise
                # PySpark words the cause its own way on a first import and
                # Python's way once PySpark's check has run: both are kept.
                cause = str(err).split("] ", 1)[-1].rstrip(".")
                raise SettingsError(_connect_libraries(settings.connect_url, cause)) from None
            except SystemExit:
                # In a process whose __main__ has no file (a pytest-xdist
                # worker, an embedded interpreter) PySpark takes itself for a
                # doctest run and exits with 0 when those libraries are
                # missing: a run that would end silently, "successfully".
                if not settings.connect_url:
                    raise
                from pyspark.testing.connectutils import connect_requirement_message

                cause = (connect_requirement_message or "they are missing").rstrip(".")
                raise SettingsError(_connect_libraries(settings.connect_url, cause)) from None
            except Exception as err:  # PySparkRuntimeError: the JVM exited at once
                if "JAVA_GATEWAY_EXITED" not in str(err):
                    raise
                raise SettingsError(_jvm_failure(settings.spark_log, logged)) from None
        if not is_connect(spark):
            spark.sparkContext.setLogLevel("ERROR")
            if local_jars and known is None:
                jars.remember(packages, spark.sparkContext.getConf().get("spark.jars", ""))
        elif _remote_server(settings):
            check_connectors(spark, settings)
        configure_files(settings)
        return spark


# The data source a connector package provides, by its artifact: what a
# Connect server must already have, since a client cannot add packages.
_CONNECTOR_FORMATS = {"spark-sql-kafka-0-10": "kafka"}


def check_connectors(spark: Any, settings: SpliceSettings) -> None:
    """Under Spark Connect the server's classpath is fixed when it starts:
    each connector the pipeline needs is looked up there before any step
    runs (analysing a read of its format, which needs no data), so a missing
    one is one message naming the server's start option, not a step's
    failure."""
    for package in settings.packages:
        artifact = package.split(":")[1].rsplit("_", 1)[0] if package.count(":") == 2 else ""
        fmt = _CONNECTOR_FORMATS.get(artifact)
        if fmt is None:
            continue
        try:
            spark.read.format(fmt).load().schema  # noqa: B018  (analysis only)
        except Exception as err:  # found, the read only lacks its options
            if "Failed to find data source" not in str(err) and \
                    "DATA_SOURCE_NOT_FOUND" not in str(err):
                continue
            raise SettingsError(
                f"the pipeline reads '{fmt}', and the Spark Connect server at "
                f"{settings.connect_url} has no '{fmt}' data source: a Connect client cannot "
                f"add packages, so start the server with --packages {package} (scripts/"
                "connect.sh takes SPLICE_SPARK_PACKAGES), or run without "
                f"{ENV['connect_url']}") from None


def _connect_libraries(url: str, cause: str) -> str:
    return (f"Spark Connect ({url}) needs PySpark's Connect client libraries (grpcio, "
            f"grpcio-status, googleapis-common-protos, pyarrow): {cause}. Install them with "
            "pip install 'pyspark[connect]==4.2.0'")


def _jvm_failure(log: str, offset: int) -> str:
    """Why the driver's JVM exited before Spark started (a heap size or a
    Java option it refused, no Java): the JVM says so on its console, which
    goes to the Spark log; its last lines from this start."""
    with open(log, errors="replace") as fh:
        fh.seek(offset)
        lines = [line.strip() for line in fh.read().splitlines() if line.strip()]
    said = [line for line in lines if not line.startswith(("Setting default log level",
                                                           "To adjust logging level"))]
    reason = "; ".join(said[-3:]) or "it printed nothing"
    return (f"Spark's JVM exited before it started: {reason} (check {ENV['driver_memory']}, "
            f"the Java options in {ENV['conf']} and that Java 17 is installed; the JVM's "
            f"output is in {log})")


@contextlib.contextmanager
def _jvm_output_to(path: str) -> Iterator[None]:
    """The JVM inherits the process's stdout and stderr when it is launched;
    point them at a log file for the launch, so the JVM writes there for good,
    and restore ours."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
