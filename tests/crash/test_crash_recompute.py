"""Crash safety of the table-table join's recompute plan.

The recompute writes differently from the incremental plan (a MERGE of the
rows that differ, or an overwrite), so its commits are killed too: a
``splice run`` child process forced to recompute is killed (SIGKILL, JVM
included) inside its MERGE, after each kind of output commit, and after a
checkpoint commit downstream; the run after it completes. After every round
every output holds exactly the rows of a warehouse that got the same data
in uninterrupted runs of the same plan.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from splice.engine.faults import KillPoint
from splice.runtime.compile import compile_path

from tests.conftest import ROOT, table_join_plan
from tests.helpers.crash_harness import (
    Kill,
    add_round,
    assert_same_rows,
    complete,
    run_killed,
    warehouses,
)

pytestmark = [pytest.mark.spark, pytest.mark.faults]

PIPELINE = ROOT / "tests" / "crash" / "recompute.sql"
RECOMPUTE = {"splice.tableJoin.plan": "recompute"}
# In the order a run reaches them; round n kills KILLS[n::ROUNDS].
KILLS = [Kill(KillPoint.INSIDE_MERGE, "customer_tiers"),
         Kill(KillPoint.OUTPUT_COMMITTED, "customer_tiers"),
         Kill(KillPoint.OUTPUT_COMMITTED, "same_tier"),
         Kill(KillPoint.CHECKPOINT_COMMITTED, "labelled")]
ROUNDS = 2


def test_kills_during_recomputes_lose_nothing(spark, tmp_path: Path) -> None:
    pipeline = compile_path(PIPELINE)
    reference, crashed = warehouses(spark, pipeline, tmp_path)
    with table_join_plan(spark, "recompute"):
        for n in range(ROUNDS):
            add_round(reference, n)
            complete(reference)
            add_round(crashed, n)
            for kill in KILLS[n::ROUNDS]:
                run_killed(crashed, kill, PIPELINE, RECOMPUTE)
            complete(crashed)
            assert_same_rows(reference, crashed, ("customer_tiers", "same_tier"), f"round {n}")
