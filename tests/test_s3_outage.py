"""An object-store outage under ``splice run``: moto's S3 server reached
through a TCP forwarder (tests/tcp_forwarder.py) that the test cuts for
5 s while a step starts. Splice's own reads (fsspec's s3fs, which gives up
after about 2 s) failed there with a botocore traceback; now the run ends
in one message naming the store, the step and that a rerun is safe, exit
1. The rerun, through the restored forwarder, completes the pipeline, and
every output and dead letter equals an uninterrupted run's."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from engine.lock import LEASE_ENV
from resources.warehouse import WarehouseResource as Warehouse
from tests.conftest import child_env
from tests.crash_harness import differences
from tests.fault_helpers import SQL, Child, add_round, every_row
from tests.pipeline_helpers import make_io
from tests.tcp_forwarder import forwarding

pytestmark = [pytest.mark.spark, pytest.mark.s3, pytest.mark.faults]

def test_an_s3_outage_is_one_message_and_a_rerun_completes(spark, s3_server,
                                                          tmp_path: Path) -> None:
    run_id = f"outage-{time.time_ns()}"
    reference = make_io(spark, Warehouse(root=str(tmp_path / "reference")), SQL, name="outage")
    cut = make_io(spark, Warehouse(root=s3_server.uri(run_id)), SQL, name="outage")
    for io in (reference, cut):
        add_round(io, 0)
    from runtime.runner import run_pipeline

    run_pipeline(reference.pipeline, reference)
    sql = tmp_path / "outage.sql"
    sql.write_text(SQL)
    target = urlparse(s3_server.endpoint)
    with forwarding((target.hostname, target.port)) as link:
        endpoint = f"http://{link.address}"
        env = child_env(**{**s3_server.env(), "SPLICE_S3_ENDPOINT": endpoint,
                           "AWS_EC2_METADATA_DISABLED": "true", LEASE_ENV: "30"})
        args = ["run", str(sql), "--warehouse", cut.warehouse.root, "--parallel", "1"]
        run = Child(args, env)
        run.wait_for(lambda line: line.startswith("[2/") and line.rstrip().endswith("..."))
        link.cut()
        time.sleep(5)
        link.restore()
        code = run.wait(300)
        assert code == 1, run.text[-4000:]
        run.assert_no_traceback()
        last = run.said()
        print(f"\n{last}")
        step = cut.pipeline.steps[1]
        assert last.startswith(f"splice: the object store {endpoint} did not answer in step "
                               f"'{step.id}'"), run.text[-3000:]
        assert f"(at s3a://{s3_server.bucket}/{run_id}" in last
        assert "A rerun is safe" in last

        # A lease of 30 s: renewed every 10 s, it outlives the outage; the
        # run could not release it in the outage, so the rerun waits it out.
        rerun = Child([*args, "--wait", "60"], env)
        assert rerun.wait(300) == 0, rerun.text[-4000:]
    assert differences(every_row(reference), every_row(cut)) == {}
    assert every_row(cut)["dead_letter:orders"], "the bad order went to the dead letter"
    for io in (reference, cut):
        add_round(io, 1)
        run_pipeline(io.pipeline, io)
    assert differences(every_row(reference), every_row(cut)) == {}
