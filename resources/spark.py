"""The Spark session, with Delta configured, as a Dagster resource.

One session serves a whole process: a run of the CLI, a Dagster run worker, a
test session. Starting Spark costs seconds, so it is started once and shared.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
from collections.abc import Iterator

from dagster import ConfigurableResource
from pydantic import Field

_lock = threading.Lock()


def _base_conf(shuffle_partitions: int) -> dict[str, str]:
    return {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        # Streaming state is partitioned by this and it cannot change once a
        # checkpoint exists: chosen once, on purpose (PLATFORM.md measured the
        # default 200 at 2.6x slower on two cores).
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.default.parallelism": str(shuffle_partitions),
        # Delta's snapshot work defaults to 50 partitions, which made every tiny
        # streaming query here take 10+ seconds.
        "spark.databricks.delta.snapshotPartitions": "1",
        "spark.databricks.delta.autoCompact.enabled": "false",
        # The checksum file costs a snapshot job after every commit; Delta does
        # not need it to read or write correctly.
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
        "spark.driver.memory": os.environ.get("SPLICE_DRIVER_MEMORY", "4g"),
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
    }


class SparkResource(ConfigurableResource):
    """A SparkSession with Delta Lake. ``master`` is ``local[2]`` by default
    (the embedded default); point it at a cluster with ``spark://...`` or
    ``yarn`` and the same pipeline runs there."""

    master: str = Field(default="local[2]", description="Spark master URL")
    app_name: str = Field(default="splice")
    shuffle_partitions: int = Field(default=2, description="partitions of join state")
    conf: dict[str, str] = Field(default_factory=dict, description="extra Spark settings")

    def session(self):  # -> pyspark.sql.SparkSession (imported lazily: Spark is heavy)
        from delta import configure_spark_with_delta_pip
        from pyspark.sql import SparkSession

        with _lock:
            active = SparkSession.getActiveSession()
            if active is not None:
                return active
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
            builder = SparkSession.builder.master(self.master).appName(self.app_name)
            settings = {**_base_conf(self.shuffle_partitions), **env_conf(), **self.conf}
            for key, value in settings.items():
                builder = builder.config(key, value)
            with _jvm_output_to(spark_log_path()):
                spark = configure_spark_with_delta_pip(builder).getOrCreate()
            spark.sparkContext.setLogLevel("ERROR")
            return spark


def env_conf() -> dict[str, str]:
    """Extra Spark settings from ``SPLICE_SPARK_CONF``: a JSON object of
    setting names to values (``{"spark.sql.shuffle.partitions": "4"}``).
    They override Splice's own; the resource's ``conf`` overrides them."""
    text = os.environ.get("SPLICE_SPARK_CONF", "").strip()
    if not text:
        return {}
    try:
        values = json.loads(text)
    except ValueError as err:
        raise ValueError(f"SPLICE_SPARK_CONF is not a JSON object: {err}") from None
    if not isinstance(values, dict):
        raise ValueError("SPLICE_SPARK_CONF must be a JSON object of setting: value")
    return {str(k): str(v) for k, v in values.items()}


def spark_log_path() -> str:
    """Where the JVM's own console output goes (Ivy's resolution report,
    Spark's log): ``SPLICE_SPARK_LOG``, or a file in the temp folder."""
    return os.environ.get("SPLICE_SPARK_LOG",
                          os.path.join(tempfile.gettempdir(), "splice-spark.log"))


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
