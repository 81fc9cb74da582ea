"""Crash safety, proved by killing runs at every named commit point.

One pipeline holds a step of every kind (tests/crash/pipeline.sql). Over
three rounds of new data, a chain of ``splice run`` child processes is
killed (SIGKILL, JVM included) at named kill points, each round a third of
them; the run after each chain completes the pipeline.
After every round, and after the closing run with no new data, every output
and dead-letter table holds exactly the rows of a warehouse that got the
same data in uninterrupted runs: nothing lost, duplicated or different,
null-padded rows included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from splice.engine.faults import KillPoint
from splice.runtime.compile import compile_path
from splice.sql.plan import Pipeline

from tests.helpers.crash_harness import (
    PIPELINE,
    Kill,
    add_round,
    all_kills,
    assert_same_rows,
    complete,
    differences,
    run_killed,
    table_rows,
    warehouses,
)

pytestmark = [pytest.mark.spark, pytest.mark.faults]

ROUNDS = 3
KINDS = {
    "orders": "source (JSON)", "customers": "source (Delta)", "bigOrders": "projection",
    "bigOrders_by_customer_id": "repartition", "customersTable": "materialization",
    "enriched": "stream-table", "paid_inner": "stream-stream inner",
    "paid_left": "stream-stream left", "customer_tiers": "table-table primary key",
    "same_tier": "table-table many-to-many", "last_payment": "ASOF", "spend": "aggregation",
    "upper_tiers": "table query",
}


# The default suite's chain: every step kind killed in the window between
# its output commit and its checkpoint's (a replayed micro-batch), and every
# other kill point at least once. The whole matrix (every point of every
# step, 39 kills) runs with `pytest -m faults_full` (40 minutes here beside another
# Spark test run).
SPANNING = [
    *(Kill(KillPoint.OUTPUT_COMMITTED, step) for step in KINDS),
    Kill(KillPoint.SOURCE_INGESTED, "orders"),
    Kill(KillPoint.INSIDE_MERGE, "same_tier"), Kill(KillPoint.INSIDE_MERGE, "spend"),
    Kill(KillPoint.CHECKPOINT_COMMITTED, "paid_left"),
]


def _in_run_order(pipeline: Pipeline, kills: list[Kill]) -> list[Kill]:
    order = {str(k): i for i, k in enumerate(all_kills(pipeline))}
    return sorted(kills, key=lambda k: order[str(k)])


def test_a_kill_at_each_point_and_each_step_kind_loses_nothing(spark, tmp_path: Path) -> None:
    pipeline = compile_path(PIPELINE)
    kills = _in_run_order(pipeline, SPANNING)
    # Four points need the broker: a Kafka sink's two (tests/operators/test_kafka_sink.py
    # kills there), a Kafka source's lost records (tests/operators/test_kafka_lost.py)
    # and a topic read in place (tests/operators/test_kafka_in_place.py).
    assert {k.point for k in kills} == set(KillPoint) - {
        KillPoint.SINK_SENDING, KillPoint.SINK_SENT, KillPoint.LOST_RECORDED,
        KillPoint.READ_IN_PLACE}
    _kill_and_compare(spark, tmp_path, pipeline, kills)


@pytest.mark.faults_full
def test_every_kill_point_of_every_step_loses_nothing(spark, tmp_path: Path) -> None:
    pipeline = compile_path(PIPELINE)
    kills = all_kills(pipeline)
    covered = {k.step for k in kills}
    assert set(KINDS) <= covered, f"step kinds without kill points: {set(KINDS) - covered}"
    _kill_and_compare(spark, tmp_path, pipeline, kills)


def _kill_and_compare(spark: Any, tmp_path: Path, pipeline: Pipeline, kills: list[Kill]) -> None:
    reference, crashed = warehouses(spark, pipeline, tmp_path)
    for n in range(ROUNDS):
        add_round(reference, n)
        complete(reference)
        add_round(crashed, n)
        for kill in kills[n::ROUNDS]:  # in the order a run reaches them
            run_killed(crashed, kill)
        complete(crashed)
        assert_same_rows(reference, crashed, when=f"round {n}")

    complete(reference)  # the closing run, with no new data
    complete(crashed)
    expected, actual = table_rows(reference), table_rows(crashed)
    assert differences(expected, actual) == {}
    # The comparison covers what could go wrong: LEFT rows null-padded when
    # their window closed, dead letters, a row of every output.
    assert any(dict(row)["paid"] is None for row in expected["paid_left"])  # null-padded
    assert sum(expected["dead_letter:orders"].values()) == ROUNDS
    assert all(sum(expected[name].values()) > 0 for name in pipeline.outputs)
    print(f"\n{len(kills)} kills at {len({k.point for k in kills})} kill points over "
          f"{len({k.step for k in kills})} steps; rows compared: "
          f"{sum(sum(c.values()) for c in expected.values())}; lost, duplicated, different: 0")
