"""Splice under Spark Connect, against a real Connect server started from
pyspark's jars (splice/testing/connect_server.py) on 127.0.0.1.

A process holds either a classic session or a Connect client, never both
(PySpark refuses: SESSION_ALREADY_EXIST), and this test process holds the
suite's classic session: each run under Connect is a child process (the
CLI, or Dagster's own CLI materializing the assets), and the tables it
wrote are read back here with the classic session."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from splice.engine import class_data, jars, local_fs
from splice.engine.faults import KillPoint
from splice.runtime.compile import compile_path

from splice.testing.connect_server import Server, start_server, stop_server
from tests.conftest import CASES, ROOT, suite_conf
from tests.helpers.crash_harness import (
    REMOTE_PIPELINE,
    Kill,
    assert_same_rows,
    first_round,
    run_killed,
)

DEMO = ROOT / "pipelines" / "demo"

pytestmark = [pytest.mark.connect, pytest.mark.spark]


# Spark Connect waits 10 s, not a setting, for the Python worker of a
# query's foreachBatch function to connect back.
_FOREACH_BATCH_WORKER = "pyspark.sql.connect.streaming.worker.foreach_batch_worker"


def _late_worker_python(folder: Path) -> tuple[Path, Path]:
    """A program for the server's Python workers: this interpreter, except
    that the first foreachBatch worker started while the returned flag file
    exists (it deletes the file) starts 12 s late, which is later than
    Spark waits. Returns the program and the flag file."""
    flag, program = folder / "late-next-worker", folder / "python.sh"
    program.write_text(
        "#!/bin/sh\n"
        f'if [ "$2" = "{_FOREACH_BATCH_WORKER}" ] && rm "{flag}" 2>/dev/null; then sleep 12; fi\n'
        f'exec "{sys.executable}" "$@"\n')
    program.chmod(0o755)
    return program, flag


@pytest.fixture(scope="module")
def connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("connect")
    program, _ = _late_worker_python(folder)
    # The suite's settings of a JVM that plans many small queries
    # (tests/conftest.py): the server runs every step of the tests below.
    server = start_server(folder, python=str(program), conf=suite_conf())
    try:
        yield server
    finally:
        stop_server(folder)


def _run(args: list[str], server: Server, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "SPLICE_SPARK_REMOTE": server.url, **env}
    environ.pop("SPLICE_SPARK_MASTER", None)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=environ, capture_output=True,
                          text=True, timeout=900)


def _rows(spark, path: str, *columns: str) -> list[tuple]:
    return sorted((tuple(r[c] for c in columns)
                   for r in spark.read.format("delta").load(path).collect()), key=repr)


def test_the_server_is_launched_as_a_local_session(connect: Server) -> None:
    """The server's JVM (its master is local) takes what a local session's
    does: the jars recorded by an earlier start on its classpath, no
    package resolved or copied at its start, classes from the archive,
    Hadoop's local file system without a process per file."""
    recorded = jars.recorded([])
    assert recorded, "no start recorded Delta's jars (scripts/setup.sh records them)"
    command = Path(f"/proc/{connect.pid}/cmdline").read_text().split("\0")
    assert command[0].endswith("java"), command[0]
    class_path = command[command.index("-cp") + 1].split(os.pathsep)
    assert set(map(lambda j: urlparse(j).path, recorded)) <= set(class_path)
    assert "--packages" not in command and not any(
        a.startswith("spark.jars") for a in command), command
    for key, value in local_fs.IMPLEMENTATIONS.items():
        assert f"{key}={value}" in command
    archive = class_data.archive_path()
    assert archive and archive in Path(f"/proc/{connect.pid}/maps").read_text()


def test_the_demo_runs_under_spark_connect(connect: Server, spark, tmp_path: Path) -> None:
    """The first of the demo's steps to start a foreachBatch worker meets
    one that starts later than Spark waits for it (the timeout that failed
    CI on a loaded machine): the step runs again, and the rows are the
    same."""
    warehouse = tmp_path / "wh"
    flag = connect.folder / "late-next-worker"
    flag.touch()
    done = _run(["-m", "splice.cli", "demo", "--warehouse", str(warehouse)], connect)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert not flag.exists()  # a worker was late
    assert f"starting Spark (Spark Connect {connect.url})" in done.stdout
    # steps run side by side: the late worker is the first one any step
    # starts, and which step that is depends on timing (CI saw the
    # materialization of customers start its worker before orders did; an
    # empty source starts none), so the test asks only that a step ran
    # again, for this reason (its line may name dead letters before it)
    again = [line for line in done.stdout.splitlines()
             if "; ran again" in line and line.startswith("[")]
    assert again, done.stdout
    # customers is a Delta table read where it is: under Connect its check's
    # rows are not counted (foreachBatch runs in the server's worker)
    assert any(line.startswith("[1/7] source      customers: a Delta table, read where it is")
               for line in done.stdout.splitlines()), done.stdout
    # once for the late worker; on a loaded machine other steps' workers can
    # be late by themselves, and a retry's own worker too (three workers on
    # two cores: two steps ran again, 1x and 3x), but only ever for this
    for line in again:
        assert re.search(r"; ran again [1-4]x: Spark's Python worker for foreachBatch did not "
                         r"connect back within 10 s \(", line), line
    assert "[2/7] source      orders: 3 rows written, 1 to dead letter" in done.stdout
    assert _rows(spark, str(warehouse / "orders_matched"), "name", "item") == [
        ("John", "Computer"), ("John", "Mouse")]
    assert _rows(spark, str(warehouse / "orders_enriched"), "name", "item") == [
        ("John", "Computer"), ("John", "Mouse"), (None, "Keyboard")]
    # splice run on the same warehouse: nothing new, nothing written twice
    done = _run(["-m", "splice.cli", "run", str(DEMO), "--warehouse", str(warehouse)], connect)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "[6/7] join        orders_enriched: 0 rows written" in done.stdout
    assert _rows(spark, str(warehouse / "orders_enriched"), "name", "item") == [
        ("John", "Computer"), ("John", "Mouse"), (None, "Keyboard")]


def test_a_stream_stream_and_a_stream_table_case_pass_under_spark_connect(
        connect: Server, tmp_path: Path) -> None:
    cases = [CASES / "lenses-stream-stream-within.yaml", CASES / "lenses-stream-table-left.yaml"]
    done = _run(["-m", "splice.cli", "test", *map(str, cases)], connect)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "PASS lenses-stream-stream-within" in done.stdout
    assert "PASS lenses-stream-table-left" in done.stdout
    assert done.stdout.rstrip().endswith("2 passed, 0 failed")


def test_dagster_materializes_the_demo_under_spark_connect(connect: Server, spark,
                                                           tmp_path: Path) -> None:
    """The demo's assets materialized by Dagster's own CLI, its Spark
    resource reading SPLICE_SPARK_REMOTE as the CLI does."""
    from splice.runtime.compile import compile_path

    from splice.cli.demo import write_demo_data

    pipelines, warehouse = tmp_path / "pipelines", tmp_path / "wh"
    (pipelines / "demo").mkdir(parents=True)
    for sql in DEMO.glob("*.sql"):
        (pipelines / "demo" / sql.name).write_text(sql.read_text())
    write_demo_data(compile_path(DEMO), str(warehouse))
    home = tmp_path / "dagster_home"
    home.mkdir()
    done = _run(["-m", "dagster", "asset", "materialize", "-m", "splice.orchestration.definitions",
                 "--select", "*"], connect, SPLICE_PIPELINES=str(pipelines),
                SPLICE_WAREHOUSE=str(warehouse), DAGSTER_HOME=str(home))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "RUN_SUCCESS" in done.stdout + done.stderr
    assert _rows(spark, str(warehouse / "orders_matched"), "name", "item") == [
        ("John", "Computer"), ("John", "Mouse")]
    assert _rows(spark, str(warehouse / "orders_enriched"), "name", "item") == [
        ("John", "Computer"), ("John", "Mouse"), (None, "Keyboard")]


def test_a_connector_the_server_lacks_is_named_before_any_step_runs(connect: Server,
                                                                      tmp_path: Path) -> None:
    """The fixture's server has Delta only: a pipeline reading a Kafka topic
    is refused before its first step, with the server option that fixes it."""
    pipeline = tmp_path / "topics.sql"
    pipeline.write_text(
        "CREATE STREAM orders (id INT, item STRING) WITH (format='kafka', topic='orders', "
        "key='id', bootstrap='127.0.0.1:9');\n"
        "INSERT INTO copied SELECT STREAM id, item FROM orders;\n")
    done = _run(["-m", "splice.cli", "run", str(pipeline), "--warehouse", str(tmp_path / "wh")],
                connect)
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    assert "[1/" not in done.stdout  # no step started
    assert done.stderr.strip() == (
        f"splice: the pipeline reads 'kafka', and the Spark Connect server at {connect.url} "
        "has no 'kafka' data source: a Connect client cannot add packages, so start the "
        "server with --packages org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0 "
        "(scripts/connect.sh takes SPLICE_SPARK_PACKAGES), or run without SPLICE_SPARK_REMOTE")


def _delta_rows(spark, path: str) -> int:
    return spark.read.format("delta").load(path).count() if os.path.exists(path) else 0


# Where a run under Connect is killed, and what the server had committed when
# it died. The output commit in the suite; the kill points deep in the
# writers (they fire in the server's foreachBatch worker, and inside the
# MERGE in its UDF worker) with `pytest -m faults_full`, as the crash
# chain's whole matrix.
CONNECT_KILLS = [
    pytest.param(Kill(KillPoint.OUTPUT_COMMITTED, "big_orders"), "big_orders", True,
                 id="output-committed"),
    pytest.param(Kill(KillPoint.SOURCE_INGESTED, "orders"), "dead_letter:orders", False,
                 id="source-ingested", marks=pytest.mark.faults_full),
    pytest.param(Kill(KillPoint.INSIDE_MERGE, "customer_tiers"), "customer_tiers", False,
                 id="inside-merge", marks=pytest.mark.faults_full),
]


@pytest.mark.faults
@pytest.mark.parametrize(("kill", "witness", "written"), CONNECT_KILLS)
def test_a_run_killed_under_connect_loses_and_repeats_nothing(
        connect: Server, spark, tmp_path: Path, kill: Kill, witness: str,
        written: bool) -> None:
    """A `splice run` under Spark Connect armed at a kill point: the point is
    reached in the server's Python worker (inside a MERGE: in the worker
    evaluating its source), which kills the run (SIGKILL) and itself; the
    server goes on. ``witness`` shows where it died: the projection's
    append (a micro-batch written twice would show) committed; the source's
    dead letter, due after its ingest commit, not yet written; the
    table-table MERGE not committed. A second run under Connect completes
    the pipeline: every output and the dead letter equal an uninterrupted
    run's."""
    reference, crashed = first_round(spark, compile_path(REMOTE_PIPELINE), tmp_path)
    output = run_killed(crashed, kill, REMOTE_PIPELINE, env={"SPLICE_SPARK_REMOTE": connect.url})
    assert f"starting Spark (Spark Connect {connect.url})" in output
    pipeline = crashed.pipeline
    path = (crashed.warehouse.dead_letter_path(pipeline.name, "orders")
            if witness == "dead_letter:orders" else crashed.table_path(pipeline.outputs[witness]))
    assert (_delta_rows(spark, path) > 0) == written, f"{witness} when the run died"
    done = _run(["-m", "splice.cli", "run", str(REMOTE_PIPELINE), "--warehouse",
                 crashed.warehouse.root], connect)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert_same_rows(reference, crashed, ("big_orders", "customer_tiers", "dead_letter:orders"))
