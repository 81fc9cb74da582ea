"""SIGTERM and SIGINT to the process group of ``splice serve`` and ``splice
run`` (what systemd's stop and a terminal's Ctrl-C send): every query
stopped, the lock released, one line, the documented exit code, no
traceback; then a rerun, and every output and dead letter equal to an
uninterrupted run's (tests/helpers/crash_harness.py compares).

The JVM is in the group and gets the signal too: before, it stopped Spark
under the Python side and serve ended in a Py4J traceback, exit 1.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from splice.engine.io import StepIO
from splice.resources.warehouse import WarehouseResource
from splice.runtime.runner import run_pipeline

from tests.conftest import child_env
from tests.helpers.crash_harness import differences
from tests.helpers.faults import SQL, Child, add_round, every_row, group_ended
from tests.helpers.pipeline import make_io

pytestmark = [pytest.mark.spark, pytest.mark.faults]


def _first_round(spark, tmp_path: Path) -> tuple[StepIO, StepIO, Path]:
    """A reference warehouse run through round 0, one with round 0 still to
    run, and the pipeline's file."""
    reference, other = (make_io(spark, WarehouseResource(root=str(tmp_path / name)), SQL,
                                name="faults") for name in ("reference", "other"))
    for io in (reference, other):
        add_round(io, 0)
    run_pipeline(reference.pipeline, reference)
    sql = tmp_path / "faults.sql"
    sql.write_text(SQL)
    return reference, other, sql


def _same_rows(reference: StepIO, other: StepIO) -> None:
    expected = every_row(reference)
    assert expected["result"] and expected["dead_letter:orders"]
    assert differences(expected, every_row(other)) == {}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_splice_run_stopped_by_a_signal_to_its_group(spark, tmp_path: Path, signum) -> None:
    """The signal comes while the run's steps run (two side by side): no
    further step starts, the running ones are cut in their micro-batch,
    the run exits 128 + the signal's number with one line; the lock is
    free at once (a run with wait=0 takes it) and completes the pipeline
    with the reference's rows."""
    reference, stopped, sql = _first_round(spark, tmp_path)
    run = Child(["run", str(sql), "--warehouse", stopped.warehouse.root,
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

    # The lock is free (no wait), and no step the stop cut is skipped as
    # done: a rerun gives the reference's rows.
    run_pipeline(stopped.pipeline, stopped, wait=0)
    _same_rows(reference, stopped)


def test_splice_serve_stopped_by_sigterm_to_its_group(spark, tmp_path: Path) -> None:
    """`splice serve` under a SIGTERM to its group while it serves a round
    that arrived: every query stopped between micro-batches, exit 0 (a
    clean stop is serve's normal end), no traceback; the lock is free, and
    a run then holds the reference's rows."""
    reference, served, sql = _first_round(spark, tmp_path)
    serve = Child(["serve", str(sql), "--warehouse", served.warehouse.root,
                   "--interval", "0.5", "--report-every", "2"], child_env())
    serve.wait_for(lambda line: line.startswith("serving 'faults'"), 400)
    add_round(served, 1)  # arrives while it serves
    serve.wait_for(lambda line: line.strip().startswith("result: 4 rows read in"), 300)
    serve.signal_group(signal.SIGTERM)
    code = serve.wait(180)
    assert code == 0, serve.text[-4000:]
    serve.assert_no_traceback()
    assert "SIGTERM: stopping every query" in serve.text
    assert "stopped; what each step read while serving:" in serve.text
    assert group_ended(serve.proc.pid)

    add_round(reference, 1)
    run_pipeline(reference.pipeline, reference)
    run_pipeline(served.pipeline, served, wait=0)  # the lock is free
    _same_rows(reference, served)
