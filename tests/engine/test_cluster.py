"""Splice on a Spark standalone cluster: a master and one worker started
from pyspark's jars on 127.0.0.1 (splice/testing/cluster.py), executors on the
worker.

A JVM holds one SparkContext, and this test process holds the suite's local
one: the driver of each cluster run is a child process (the CLI), as
``spark-submit`` would start it, and the tables it wrote are read back here
with the local session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from splice.engine.faults import KillPoint
from splice.runtime.compile import compile_path

from splice.testing.cluster import Cluster, start_cluster, stop_cluster
from tests.conftest import CASES, ROOT, TEST_JAVA_OPTIONS
from tests.helpers.crash_harness import (
    REMOTE_PIPELINE,
    Kill,
    assert_same_rows,
    first_round,
    run_killed,
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    folder = tmp_path_factory.mktemp("cluster")
    found = start_cluster(folder)
    try:
        yield found
    finally:
        stop_cluster(folder)


def _run(args: list[str], cluster: Cluster) -> subprocess.CompletedProcess[str]:
    # Spark's defaults, but the suite's JVM settings in the run's short-lived
    # JVMs (the driver here, its executor on the worker): tests/conftest.py
    java = {f"spark.{jvm}.extraJavaOptions": TEST_JAVA_OPTIONS for jvm in ("driver", "executor")}
    env = {**os.environ, "SPLICE_SPARK_MASTER": cluster.master, "SPLICE_DRIVER_MEMORY": "1g",
           "SPLICE_SPARK_CONF": json.dumps(java)}
    env.pop("SPLICE_SPARK_REMOTE", None)
    return subprocess.run([sys.executable, "-m", "splice.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


def _rows(spark, path: Path, *columns: str) -> list[tuple]:
    return sorted((tuple(r[c] for c in columns)
                   for r in spark.read.format("delta").load(str(path)).collect()), key=repr)


def _finished_apps(cluster: Cluster) -> int:
    return sum(1 for app in cluster.state().get("completedapps", [])
               if app.get("name") == "splice")


@pytest.mark.cluster
@pytest.mark.spark
def test_the_demo_runs_on_the_cluster(cluster: Cluster, spark, tmp_path: Path) -> None:
    before = _finished_apps(cluster)
    done = _run(["demo", "--warehouse", str(tmp_path / "wh")], cluster)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"starting Spark ({cluster.master})" in done.stdout
    assert "[2/7] source      orders: 3 rows written, 1 to dead letter" in done.stdout
    assert _rows(spark, tmp_path / "wh" / "orders_matched", "name", "item") == [
        ("John", "Computer"), ("John", "Mouse")]
    assert _rows(spark, tmp_path / "wh" / "orders_enriched", "name", "item") == [
        ("John", "Computer"), ("John", "Mouse"), (None, "Keyboard")]
    # the master ran it as an application, with an executor on the worker
    assert _finished_apps(cluster) == before + 1


@pytest.mark.cluster
@pytest.mark.spark
def test_a_stream_stream_and_a_table_table_case_pass_on_the_cluster(cluster: Cluster) -> None:
    cases = [CASES / "lenses-stream-stream-within.yaml",
             CASES / "lenses-three-tables-with.yaml"]
    done = _run(["test", *map(str, cases)], cluster)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "PASS lenses-stream-stream-within" in done.stdout
    assert "PASS lenses-three-tables-with" in done.stdout
    assert done.stdout.rstrip().endswith("2 passed, 0 failed")


# A second proof of the kill matrix's MERGE kill, where the executor is on
# the worker: pytest -m faults_full.
@pytest.mark.cluster
@pytest.mark.spark
@pytest.mark.faults
@pytest.mark.faults_full
def test_a_run_killed_inside_a_merge_on_the_cluster_loses_and_repeats_nothing(
        cluster: Cluster, spark, tmp_path: Path) -> None:
    """A `splice run` on the cluster killed while the executor on the worker
    writes a table-table MERGE's data files (its Python worker kills the
    driver's process tree: the driver JVM and the run), then a run on the
    cluster completes the pipeline: every table equals an uninterrupted
    run's, nothing lost or written twice. The killed application's
    executor is the master's to end; the next run gets one of its own."""
    reference, crashed = first_round(spark, compile_path(REMOTE_PIPELINE), tmp_path)
    java = {"spark.executor.extraJavaOptions": TEST_JAVA_OPTIONS}
    output = run_killed(crashed, Kill(KillPoint.INSIDE_MERGE, "customer_tiers"),
                        REMOTE_PIPELINE, java, {"SPLICE_SPARK_MASTER": cluster.master})
    assert f"starting Spark ({cluster.master})" in output
    done = _run(["run", str(REMOTE_PIPELINE), "--warehouse", crashed.warehouse.root], cluster)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert_same_rows(reference, crashed, ("big_orders", "customer_tiers", "dead_letter:orders"))
