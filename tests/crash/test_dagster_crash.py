"""A Dagster run killed halfway, and the Dagster run after it.

`dagster job execute` runs a pipeline's job in a process of its own (the
in-process executor the factory gives every job, as a run worker of a
deployment runs it), armed to die at a kill point (engine/faults.py); the
next materialization, in the test's session, completes the pipeline: every
row once. The crash chain (tests/crash/test_crash_safety.py) proves the points
for `splice run`; this proves a Dagster run reaches them and recovers the
same way, through the assets' own code path and the pipeline's lock.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import materialize
from splice.engine.faults import ENV as KILL_AT
from splice.engine.faults import KillPoint
from splice.orchestration.assets import build_assets
from splice.resources.spark import SparkResource
from splice.resources.warehouse import WarehouseResource

from tests.conftest import ROOT, child_env
from tests.helpers.pipeline import LENSES_LEFT, append, make_io, output_rows

pytestmark = [pytest.mark.spark, pytest.mark.faults]


def test_a_killed_dagster_run_loses_and_repeats_nothing(spark, tmp_path: Path) -> None:
    pipelines = tmp_path / "pipelines"
    (pipelines / "killed").mkdir(parents=True)
    (pipelines / "killed" / "p.sql").write_text(LENSES_LEFT)
    warehouse = WarehouseResource(root=str(tmp_path / "wh"))
    io = make_io(spark, warehouse, LENSES_LEFT, name="killed")
    append(io, "customers", [{"id": 1, "name": "John"}, {"id": 2, "name": "Frank"}])
    append(io, "orders", [{"id": 1, "customer_id": 1, "item": "Computer"},
                          {"id": 2, "customer_id": 3, "item": "Keyboard"}])
    (tmp_path / "dagster").mkdir()
    env = child_env(**{KILL_AT: f"{KillPoint.OUTPUT_COMMITTED.value}@result",
                       "SPLICE_PIPELINES": str(pipelines), "SPLICE_WAREHOUSE": warehouse.root,
                       "DAGSTER_HOME": str(tmp_path / "dagster")})
    run = subprocess.run(
        [str(Path(sys.executable).parent / "dagster"), "job", "execute",
         "-m", "splice.orchestration.definitions", "-j", "killed_job"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, start_new_session=True)
    output = run.stdout + run.stderr
    assert run.returncode == -signal.SIGKILL, output[-3000:]
    assert 'Started execution of step "killed_steps"' in output  # the pipeline's op
    # The steps that ended before the kill were recorded as they ended.
    assert "Materialized value killed customersTable." in output, output[-3000:]
    assert "Materialized value killed result." not in output
    # Killed after the join's append committed, before its checkpoint did:
    # the next run replays that micro-batch, and must not append it again.
    assert output_rows(io, "result", "name", "item") == [("John", "Computer"), (None, "Keyboard")]

    assets = build_assets(io.pipeline)
    resources = {"spark": SparkResource(), "warehouse": warehouse}
    assert materialize(assets, resources=resources).success
    append(io, "orders", [{"id": 3, "customer_id": 2, "item": "Pen"}])
    assert materialize(assets, resources=resources).success
    assert output_rows(io, "result", "name", "item") == [
        ("Frank", "Pen"), ("John", "Computer"), (None, "Keyboard")]
