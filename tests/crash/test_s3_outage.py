"""An object-store outage under ``splice run``: moto's S3 server reached
through a TCP forwarder (tests/helpers/tcp_forwarder.py) that the test cuts and
restores. Splice's own calls to the store (fsspec's s3fs, which gives up
after about 2 s; Spark's S3A retries for far longer) failed with a
botocore traceback, at a step's start even after a 5 s outage (seen by
hand: the input markers' listing of a Delta log); now the run ends in one
message naming the store, what it was doing and that a rerun is safe, exit
1. The rerun, through the restored forwarder, completes the pipeline, and
every output and dead letter equals an uninterrupted run's. The cut comes
while Spark starts, so the run's next call to the store is inside it on
any machine (a cut at a step's start raced the step's own calls)."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from splice.resources.warehouse import WarehouseResource as Warehouse
from splice.runtime.lock import LEASE_ENV

from splice.processes import wait_until
from tests.conftest import child_env
from tests.helpers.crash_harness import differences
from tests.helpers.faults import SQL, Child, add_round, every_row, jvm_in_group
from tests.helpers.pipeline import make_io
from tests.helpers.tcp_forwarder import forwarding

pytestmark = [pytest.mark.spark, pytest.mark.s3, pytest.mark.faults]

def test_an_s3_outage_is_one_message_and_a_rerun_completes(spark, s3_server,
                                                          tmp_path: Path) -> None:
    run_id = f"outage-{time.time_ns()}"
    reference = make_io(spark, Warehouse(root=str(tmp_path / "reference")), SQL, name="outage")
    cut = make_io(spark, Warehouse(root=s3_server.uri(run_id)), SQL, name="outage")
    for io in (reference, cut):
        add_round(io, 0)
    from splice.runtime.runner import run_pipeline

    run_pipeline(reference.pipeline, reference)
    sql = tmp_path / "outage.sql"
    sql.write_text(SQL)
    target = urlparse(s3_server.endpoint)
    with forwarding((target.hostname, target.port)) as link:
        endpoint = f"http://{link.address}"
        env = child_env(**{**s3_server.env(), "SPLICE_S3_ENDPOINT": endpoint,
                           "AWS_EC2_METADATA_DISABLED": "true", LEASE_ENV: "10"})
        args = ["run", str(sql), "--warehouse", cut.warehouse.root]
        run = Child(args, env)
        # Cut once Spark's JVM is launching: the bucket check before it has
        # passed, and the run's next call to the store (its claims, through
        # s3fs) comes inside the outage, whatever the machine's load.
        assert wait_until(lambda: jvm_in_group(run.proc.pid), 300), run.text[-3000:]
        link.cut()
        try:
            code = run.wait(300)
        finally:
            link.restore()
        assert code == 1, run.text[-4000:]
        run.assert_no_traceback()
        said = run.said()
        print(f"\n{said}")
        assert said.startswith(f"splice: the object store {endpoint} did not answer while "), said
        assert f"(at s3a://{s3_server.bucket}/{run_id}" in said
        assert "Run again once it answers. A rerun is safe" in said

        rerun = Child(args, env)  # through the restored link
        assert rerun.wait(300) == 0, rerun.text[-4000:]
    assert differences(every_row(reference), every_row(cut)) == {}
    assert every_row(cut)["dead_letter:orders"], "the bad order went to the dead letter"
