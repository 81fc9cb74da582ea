"""A warehouse on S3 (moto's server on 127.0.0.1, tests/helpers/s3_server.py): the
demo, ``splice test`` of a stream-stream and a table-table acceptance case
and ``splice run``, each in its own process, a Dagster materialization, the
sensor's markers, and the misconfiguration messages. ``pytest -m s3`` runs these alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from splice.engine import fs
from splice.engine.faults import ENV as KILL_AT
from splice.engine.faults import KillPoint
from splice.engine.settings import Warehouse
from splice.engine.source_state import SourceStateUnreadable, source_marker
from splice.runtime.compile import compile_path
from splice.runtime.lock import LEASE_ENV
from splice.runtime.runner import run_pipeline

from splice.cli import main
from tests.conftest import CASES, ROOT, child_env
from tests.helpers.pipeline import LENSES_LEFT, append, make_io, output_rows

pytestmark = pytest.mark.s3
DEMO = ROOT / "pipelines" / "demo"


def _cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in child_env().items() if not k.startswith(("AWS_", "SPLICE_S3"))}
    return subprocess.run([sys.executable, "-m", "splice.cli", *args], cwd=ROOT,
                          env={**base, "AWS_EC2_METADATA_DISABLED": "true",
                               "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
                               "AWS_CONFIG_FILE": "/nonexistent", **env},
                          capture_output=True, text=True, timeout=600)


@pytest.mark.spark
def test_the_demo_writes_and_reads_an_s3_warehouse(spark, s3_server, capsys) -> None:
    uri = s3_server.uri("demo")
    assert main(["demo", "--warehouse", uri, "--pipeline", str(DEMO)]) == 0
    out = capsys.readouterr().out
    assert f"output orders_enriched (stream) at {uri}/orders_enriched: 3 rows" in out
    assert f"output orders_matched (stream) at {uri}/orders_matched: 2 rows" in out
    rows = sorted((r["name"], r["item"]) for r in
                   spark.read.format("delta").load(f"{uri}/orders_matched").collect())
    assert rows == [("John", "Computer"), ("John", "Mouse")]
    # Splice's own files went to S3 too: the owner claim and output claims.
    assert fs.list_names(spark, f"{uri}/_splice/output-claims") == [
        "orders_enriched.json", "orders_matched.json"]


@pytest.mark.spark
def test_the_sensor_marker_changes_with_new_data_on_s3(spark, s3_server) -> None:
    warehouse = Warehouse(root=s3_server.uri("sensor"))
    io = make_io(spark, warehouse, LENSES_LEFT, name="sensed")
    orders = io.pipeline.sources["orders"]
    assert source_marker(warehouse, orders) == ""
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"}])
    first = source_marker(warehouse, orders)
    assert first == "00000000000000000000.json"
    append(io, "orders", [{"id": 2, "customer_id": 1, "item": "Mouse"}])
    assert source_marker(warehouse, orders) == "00000000000000000001.json"


def test_an_unreadable_source_state_is_an_error_and_the_sensor_says_so(s3_server,
                                                                       monkeypatch) -> None:
    from dagster import SkipReason, build_sensor_context
    from splice.orchestration.sensors import pipeline_sensor
    from splice.resources.warehouse import WarehouseResource

    monkeypatch.setenv("SPLICE_S3_ENDPOINT", "http://127.0.0.1:9")  # nothing listens
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    # Read the environment, as a sensor process does (restored afterwards).
    monkeypatch.setattr(fs, "_s3_options", None)
    pipeline = compile_path(DEMO)
    warehouse = WarehouseResource(root=s3_server.uri("unreachable"))
    with pytest.raises(SourceStateUnreadable, match="cannot read the state of source "
                                                    "'customers' at s3a://splice-test/"):
        source_marker(warehouse, pipeline.sources["customers"])
    sensor = pipeline_sensor(pipeline, "demo_job", warehouse)
    result = sensor(build_sensor_context())
    assert isinstance(result, SkipReason)
    assert result.skip_message.startswith("source state unreadable: cannot read the state")


@pytest.mark.spark
@pytest.mark.faults
def test_splice_run_on_s3_killed_then_completed_in_their_own_processes(spark, s3_server,
                                                                        tmp_path) -> None:
    """`splice run` on an S3 warehouse, each in a process of its own: the
    first is killed (SIGKILL, JVM included) at the join's output commit
    while it holds the pipeline's lease; the second takes that lease over
    once it expired (SPLICE_LOCK_LEASE_SECONDS=3: the 60 s default would
    hold it up), replays the interrupted micro-batch without appending it
    again, and exits 0; the next run goes on. Every row once."""
    uri = s3_server.uri("cli")
    io = make_io(spark, Warehouse(root=uri), LENSES_LEFT, name="lenses")
    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"},
                          {"id": 3, "customer_id": 3, "item": "Keyboard"}])
    pipeline = tmp_path / "lenses.sql"
    pipeline.write_text(LENSES_LEFT)
    env = {**s3_server.env(), LEASE_ENV: "3"}
    killed = _cli(["run", str(pipeline), "--warehouse", uri],
                  {**env, KILL_AT: f"{KillPoint.OUTPUT_COMMITTED.value}@result"})
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-2000:] + killed.stderr[-2000:]
    expected = [("John", "Computer"), (None, "Keyboard")]
    assert output_rows(io, "result", "name", "item") == expected  # committed, not checkpointed
    leases = f"{uri}/_splice/lenses/run.lease"
    [dead] = fs.list_names(spark, leases)  # the dead holder's generation, never released

    done = _cli(["run", str(pipeline), "--warehouse", uri], env)
    assert done.returncode == 0, done.stderr
    assert "starting Spark" in done.stdout
    assert output_rows(io, "result", "name", "item") == expected
    assert fs.list_names(spark, leases) == [f"{int(dead.split('.')[0]) + 1:012d}.json"]
    append(io, "orders", [{"id": 4, "customer_id": 1, "item": "Pen"}])
    run_pipeline(io.pipeline, io)
    assert output_rows(io, "result", "name", "item") == [("John", "Computer"), ("John", "Pen"),
                                                          (None, "Keyboard")]


@pytest.mark.spark
def test_splice_test_runs_cases_in_an_s3_warehouse(spark, s3_server) -> None:
    """`splice test --warehouse s3a://...` in its own process runs the
    issue's stream-stream and table-table acceptance cases, each case's
    warehouse on S3 (one folder per case under the invocation's); each
    passes only if every expected row came out."""
    uri = s3_server.uri("splice-test")
    cases = ["lenses-stream-stream-within", "lenses-three-tables-with"]
    done = _cli(["test", *(str(CASES / f"{case}.yaml") for case in cases),
                 "--warehouse", uri], s3_server.env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert all(f"PASS {case}" in done.stdout for case in cases), done.stdout[-3000:]
    assert done.stdout.rstrip().endswith("2 passed, 0 failed")
    [stamp] = fs.list_names(spark, uri)
    assert fs.list_names(spark, f"{uri}/{stamp}") == cases


@pytest.mark.spark
def test_dagster_materializes_assets_into_an_s3_warehouse(spark, s3_server) -> None:
    from dagster import AssetKey, materialize
    from splice.orchestration.assets import build_assets
    from splice.resources.spark import SparkResource
    from splice.resources.warehouse import WarehouseResource

    warehouse = WarehouseResource(root=s3_server.uri("dagster"))
    io = make_io(spark, warehouse, LENSES_LEFT, name="lenses")
    append(io, "customers", [{"id": 1, "name": "John"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"},
                          {"id": 3, "customer_id": 3, "item": "Keyboard"}])
    result = materialize(build_assets(io.pipeline),
                         resources={"spark": SparkResource(), "warehouse": warehouse})
    assert result.success
    assert output_rows(io, "result", "name", "item") == [("John", "Computer"),
                                                          (None, "Keyboard")]
    [event] = [e for e in result.get_asset_materialization_events()
               if e.asset_key == AssetKey(["lenses", "result"])]
    metadata = event.materialization.metadata
    assert metadata["dagster/uri"].value == f"{warehouse.root}/result"
    assert metadata["dagster/row_count"].value == 2


def test_an_unreachable_endpoint_is_one_message_naming_the_setting(s3_server) -> None:
    env = {**s3_server.env(), "SPLICE_S3_ENDPOINT": "http://127.0.0.1:9"}
    done = _cli(["run", str(DEMO), "--warehouse", s3_server.uri("wh")], env)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "splice: the warehouse (--warehouse, SPLICE_WAREHOUSE) is s3a://splice-test/wh, but "
        "the S3 endpoint http://127.0.0.1:9 cannot be reached (")
    assert done.stderr.endswith(
        "): set SPLICE_S3_ENDPOINT (or s3_endpoint in splice.yaml, or "
        "spark.hadoop.fs.s3a.endpoint in SPLICE_SPARK_CONF) to your S3 server's URL\n")


def test_a_missing_bucket_is_one_message_naming_the_setting(s3_server) -> None:
    done = _cli(["run", str(DEMO), "--warehouse", "s3a://no-such-bucket/wh"], s3_server.env())
    assert done.returncode == 2
    assert done.stderr == (
        "splice: the warehouse (--warehouse, SPLICE_WAREHOUSE) is s3a://no-such-bucket/wh, but "
        f"the bucket 'no-such-bucket' does not exist at the S3 endpoint {s3_server.endpoint}: "
        "create the bucket, or fix the warehouse (--warehouse, SPLICE_WAREHOUSE)\n")


def test_no_credentials_and_no_endpoint_is_one_message_naming_both(s3_server) -> None:
    done = _cli(["run", str(DEMO), "--warehouse", s3_server.uri("wh")], {})
    assert done.returncode == 2
    assert done.stderr == (
        "splice: the warehouse (--warehouse, SPLICE_WAREHOUSE) is s3a://splice-test/wh, but "
        "there are no S3 credentials for AWS S3 (no endpoint is set): set "
        "spark.hadoop.fs.s3a.access.key and spark.hadoop.fs.s3a.secret.key in "
        "SPLICE_SPARK_CONF (or conf: in splice.yaml), or AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY; for an S3-compatible server, also set SPLICE_S3_ENDPOINT "
        "(or s3_endpoint in splice.yaml, or spark.hadoop.fs.s3a.endpoint in "
        "SPLICE_SPARK_CONF) to your S3 server's URL\n")


def test_a_settings_file_gives_the_endpoint_and_credentials(s3_server, tmp_path) -> None:
    """splice.yaml in the current directory, nothing in the environment: the
    bucket check passes and the missing bucket is named against its endpoint."""
    (tmp_path / "splice.yaml").write_text(
        f"s3_endpoint: {s3_server.endpoint}\n"
        "conf:\n  spark.hadoop.fs.s3a.access.key: testing\n"
        "  spark.hadoop.fs.s3a.secret.key: testing\n")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SPLICE_S3"))}
    done = subprocess.run([sys.executable, "-m", "splice.cli", "run", str(DEMO),
                           "--warehouse", "s3a://absent/wh"], cwd=tmp_path,
                          env={**base, "PYTHONPATH": str(ROOT),
                               "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"'absent' does not exist at the S3 endpoint {s3_server.endpoint}" in done.stderr




def test_create_if_absent_is_exclusive_on_s3(s3_server) -> None:
    """Leases and claims rely on it (docs/decisions/README.md, Object storage)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fs, "_s3_options", None)  # the environment's settings, restored after
        for k, v in s3_server.env().items():
            mp.setenv(k, v)
        path = s3_server.uri("lease-test", "1.json")
        assert fs.create_text(None, path, "first") is True
        assert fs.create_text(None, path, "second") is False
        assert fs.read_text(None, path) == "first"
