"""SIGTERM and SIGINT to the process group of ``splice serve`` and ``splice
run`` (what systemd's stop and a terminal's Ctrl-C send): every query
stopped, the lock released, one line, the documented exit code, no
traceback; then a rerun, and every output and dead letter equal to an
uninterrupted run's (tests/crash_harness.py compares).

The JVM is in the group and gets the signal too: before, it stopped Spark
under the Python side and serve ended in a Py4J traceback, exit 1.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from runtime.runner import run_pipeline
from splice.compile import compile_path
from tests.conftest import child_env
from tests.crash_harness import PIPELINE, add_round, assert_same_rows, first_round
from tests.fault_helpers import Child, group_ended

pytestmark = [pytest.mark.spark, pytest.mark.faults]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_splice_run_stopped_by_a_signal_to_its_group(spark, tmp_path: Path, signum) -> None:
    """The signal comes while the run's steps run (two side by side): no
    further step starts, the running ones are cut in their micro-batch,
    the run exits 128 + the signal's number with one line; the lock is
    free at once (a run with wait=0 takes it) and completes the pipeline
    with the reference's rows."""
    pipeline = compile_path(PIPELINE)
    reference, stopped = first_round(spark, pipeline, tmp_path)
    run = Child(["run", str(PIPELINE), "--warehouse", stopped.warehouse.root,
                 "--parallel", "2"], child_env())
    # The third step started: the first ones wrote, the others have not.
    run.wait_for(lambda line: line.startswith("[3/") and line.rstrip().endswith("..."))
    run.signal_group(signum)
    code = run.wait(180)
    assert code == 128 + signum, run.text[-4000:]
    run.assert_no_traceback()
    name = signal.Signals(signum).name
    assert f"{name}: stopping the run: no further step starts" in run.text
    last = run.last_line()
    assert last.startswith(f"splice: stopped by {name} ("), run.text[-3000:]
    assert last.endswith(f"A rerun is safe: it goes on from each step's last commit "
                         f"(exit {128 + signum})")
    assert "summary" not in run.text  # it did not run to its end
    print(f"\n{last}")
    assert group_ended(run.proc.pid), "a process of the run's group outlived it"

    run_pipeline(pipeline, stopped, wait=0)  # the lock is free: no wait
    assert_same_rows(reference, stopped, filled=("enriched", "paid_left"), when="after the stop")
    add_round(reference, 1)
    add_round(stopped, 1)
    run_pipeline(pipeline, reference)
    run_pipeline(pipeline, stopped)
    assert_same_rows(reference, stopped, when="a round later")


def test_splice_serve_stopped_by_sigterm_to_its_group(spark, tmp_path: Path) -> None:
    """`splice serve` under a SIGTERM to its group while it serves a round
    that arrived: every query stopped between micro-batches, exit 0 (a
    clean stop is serve's normal end), no traceback; the lock is free, and
    a run then holds the reference's rows."""
    pipeline = compile_path(PIPELINE)
    reference, served = first_round(spark, pipeline, tmp_path)
    serve = Child(["serve", str(PIPELINE), "--warehouse", served.warehouse.root,
                   "--interval", "0.5", "--report-every", "2"], child_env())
    serve.wait_for(lambda line: line.startswith("serving 'pipeline'"), 400)
    add_round(served, 1)  # arrives while it serves
    serve.wait_for(lambda line: "enriched: " in line and "caught up" in line
                   and not line.strip().startswith("enriched: 0 rows"), 300)
    serve.signal_group(signal.SIGTERM)
    code = serve.wait(180)
    assert code == 0, serve.text[-4000:]
    serve.assert_no_traceback()
    assert "SIGTERM: stopping every query" in serve.text
    assert "stopped; what each step read while serving:" in serve.text
    assert group_ended(serve.proc.pid)

    add_round(reference, 1)
    run_pipeline(pipeline, reference)
    run_pipeline(pipeline, served, wait=0)  # the lock is free
    assert_same_rows(reference, served, filled=("enriched", "paid_left"), when="after serve")
