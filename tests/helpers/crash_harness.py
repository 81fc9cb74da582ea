"""Killing runs at named commit points, and checking nothing was lost.

A killed run is a real ``splice run`` in a child process, armed through
``SPLICE_KILL_AT`` (engine/faults.py): at the named point of the named step
it SIGKILLs its JVM and itself, as ``kill -9`` would. The run after it, in
the test's own Spark session, completes the pipeline. A reference warehouse
gets the same data in uninterrupted runs; every output and dead-letter
table must end up with exactly the same rows.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splice.engine.faults import ENV, KillPoint
from splice.engine.io import StepIO
from splice.resources.warehouse import WarehouseResource
from splice.runtime.runner import run_pipeline
from splice.runtime.workspace import Workspace
from splice.sql.plan import Kind, Pipeline

from splice.testing.cases import append_rows
from tests.conftest import ROOT, child_env

BASE = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
PIPELINE = ROOT / "tests" / "crash" / "pipeline.sql"
REMOTE_PIPELINE = ROOT / "tests" / "crash" / "remote.sql"


@dataclass(frozen=True)
class Kill:
    point: KillPoint
    step: str

    def __str__(self) -> str:
        return f"{self.point.value}@{self.step}"


def round_rows(n: int) -> dict[str, list[dict[str, Any]]]:
    """Round ``n``'s records, the same for every warehouse. Each round is
    15 minutes after the one before, so a round's stream time closes the
    10-minute windows of the round before (LEFT joins emit their
    null-padded rows); every round updates customers and tiers, pays some
    orders and leaves others unpaid, and holds one record for the dead
    letter."""
    t0 = BASE + dt.timedelta(minutes=15 * n)

    def ts(seconds: int) -> str:
        return (t0 + dt.timedelta(seconds=seconds)).isoformat()

    orders: list[dict[str, Any]] = [
        {"id": 100 * n + i, "customer_id": 1 + (i + n) % 4, "item": f"item{n}-{i}",
         "amount": (i * 7 + n) % 5, "ts": ts(10 * i)} for i in range(8)]
    orders.append({"id": 100 * n + 99, "customer_id": "x", "item": "bad", "amount": 1,
                   "ts": ts(1)})
    customers = [{"id": c, "name": f"c{c}-r{n}", "tier": 1 + (c + n) % 3, "ts": ts(c)}
                 for c in range(1, 5) if (c + n) % 3 != 0]
    tiers = [{"id": t, "label": f"t{t}-r{n}", "grp": 1 + (t + n) % 3, "ts": ts(t)}
             for t in range(1, 4)]
    payments = [{"pid": 100 * n + i, "order_id": 100 * n + i, "paid": 10 * i + n,
                 "ts": ts(10 * i + 5 * (i % 2))} for i in range(0, 8, 2)]
    return {"orders": orders, "customers": customers, "tiers": tiers, "payments": payments}


def add_round(io: StepIO, n: int) -> None:
    """Round ``n``'s records of every source the pipeline declares."""
    for source, rows in round_rows(n).items():
        if source in io.pipeline.sources:
            append_rows(io, io.pipeline.sources[source], rows)


def warehouses(spark: Any, pipeline: Pipeline, root: Path) -> tuple[StepIO, StepIO]:
    """A reference warehouse (uninterrupted runs) and one whose runs are
    killed, under ``root``."""
    reference, crashed = (Workspace(pipeline, warehouse=WarehouseResource(root=str(root / name)),
                                    spark=spark).io
                          for name in ("reference", "crashed"))
    return reference, crashed


def first_round(spark: Any, pipeline: Pipeline, root: Path) -> tuple[StepIO, StepIO]:
    """:func:`warehouses` with round 0's records: the reference's run
    done, the other's runs still to kill."""
    reference, crashed = warehouses(spark, pipeline, root)
    add_round(reference, 0)
    complete(reference)
    add_round(crashed, 0)
    return reference, crashed


def assert_same_rows(reference: StepIO, crashed: StepIO, filled: tuple[str, ...] = (),
                     when: str = "") -> None:
    """Every output and dead letter of ``crashed`` holds exactly the rows of
    ``reference``'s; those named in ``filled`` hold some (equal empty
    tables prove nothing)."""
    expected = table_rows(reference)
    assert all(expected[name] for name in filled), f"empty outputs {when}"
    assert differences(expected, table_rows(crashed)) == {}, when


def run_killed(io: StepIO, kill: Kill, pipeline: Path = PIPELINE,
               conf: dict[str, str] | None = None, env: dict[str, str] | None = None) -> str:
    """``splice run`` of ``pipeline`` in a child process (the test session's
    Spark settings, and ``conf``; ``env`` added to its environment), killed
    at ``kill``; fails unless it died by SIGKILL (the point was reached).
    Returns its output."""
    env = child_env(conf, **{**(env or {}), ENV: str(kill)})
    proc = subprocess.run(
        [sys.executable, "-m", "splice.cli", "run", str(pipeline),
         "--warehouse", io.warehouse.root, "--parallel", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
        start_new_session=True)
    output = proc.stdout + proc.stderr
    assert proc.returncode == -signal.SIGKILL, (
        f"the run armed at {kill} was not killed (exit {proc.returncode}):\n{output[-3000:]}")
    return output


def complete(io: StepIO) -> None:
    run_pipeline(io.pipeline, io)


def table_rows(io: StepIO) -> dict[str, Counter]:
    """Every output's rows and every dead letter (less the time it was
    rejected and the micro-batch it came in), as multisets."""
    spark, pipeline = io.spark, io.pipeline

    def output(name: str) -> Counter:
        step = pipeline.outputs[name]
        rows = io.read_stored(step).collect()
        if step.kind == Kind.TABLE:
            keys = Counter(repr(r["_key"]) for r in rows)
            assert max(keys.values(), default=1) == 1, f"{name}: a key twice"
        return Counter(_hashable(r.asDict(recursive=True)) for r in rows)

    def dead_letter(path: str) -> Counter:
        df = spark.read.format("delta").load(path).drop("rejected_at", "batch_id")
        return Counter(tuple(sorted(r.asDict().items())) for r in df.collect())

    letters = {f"dead_letter:{name}": path for name in pipeline.sources
               if os.path.exists(path := io.warehouse.dead_letter_path(pipeline.name, name))}
    # Read side by side: planning a Delta read computes the table's
    # snapshot, and one table need not wait for another's (as `splice test`
    # reads its outputs).
    with ThreadPoolExecutor(max_workers=4) as pool:
        reads = {**{name: pool.submit(output, name) for name in pipeline.outputs},
                 **{name: pool.submit(dead_letter, path) for name, path in letters.items()}}
        return {name: read.result() for name, read in reads.items()}


def _hashable(row: dict[str, Any]) -> tuple:
    """A row as a sorted tuple of (column, value), struct values included."""
    return tuple(sorted((k, _hashable(v) if isinstance(v, dict) else v)
                        for k, v in row.items()))


def differences(expected: dict[str, Counter], actual: dict[str, Counter]) -> dict[str, str]:
    """Per table: rows lost, duplicated or different (empty when equal)."""
    problems = {}
    for name in sorted(set(expected) | set(actual)):
        want, got = expected.get(name, Counter()), actual.get(name, Counter())
        if want != got:
            missing, extra = want - got, got - want
            problems[name] = (f"{sum(missing.values())} missing {list(missing)[:3]}, "
                              f"{sum(extra.values())} extra {list(extra)[:3]}")
    return problems


def all_kills(pipeline: Pipeline) -> list[Kill]:
    """Every kill point of every step kind the pipeline has, in the order of
    the steps (a step's points in the order a run reaches them)."""
    kills = []
    for step in pipeline.steps:
        points: list[KillPoint] = []
        if step.op == "source":
            if step.format == "json":  # type: ignore[union-attr]
                points.append(KillPoint.SOURCE_INGESTED)
            points.append(KillPoint.OUTPUT_COMMITTED)
        elif step.op == "sink":
            points += [KillPoint.SINK_SENDING, KillPoint.SINK_SENT, KillPoint.OUTPUT_COMMITTED]
        elif step.kind == Kind.TABLE:
            points += [KillPoint.INSIDE_MERGE, KillPoint.OUTPUT_COMMITTED]
        else:
            points.append(KillPoint.OUTPUT_COMMITTED)
        points.append(KillPoint.CHECKPOINT_COMMITTED)
        kills += [Kill(p, step.id) for p in points]
    return kills
