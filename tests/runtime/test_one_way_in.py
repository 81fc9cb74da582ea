"""One way in (docs/decisions/one-way-in.md): the Workspace is the only
builder of a StepIO in the product and the benchmarks, the runtime runs
only a compiled physical plan, and a step's run takes the executors the
registry bound once. No Spark: the refusals come before any session."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from splice.engine.io import StepIO
from splice.engine.settings import SpliceSettings, Warehouse
from splice.physical.kinds import KINDS, NODES
from splice.runtime.compile import analyze_sources, compile_text
from splice.runtime.executors import EXECUTORS, bind
from splice.runtime.runner import run_pipeline
from splice.runtime.step_run import StepRun
from splice.runtime.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ["sql", "physical", "engine", "joins", "operators", "runtime", "resources",
           "orchestration", "splice", "bench"]
# engine/io.py restores a StepIO a Spark Connect worker unpickles.
BUILDERS = {"runtime/workspace.py", "engine/io.py"}

SQL = """
CREATE STREAM orders (id INT, item STRING) WITH (location='orders', key='id');
INSERT INTO copied SELECT STREAM id, item FROM orders;
"""


def builders_of_step_io() -> list[str]:
    found = []
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id == "StepIO"):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_only_the_workspace_builds_a_step_io() -> None:
    found = builders_of_step_io()
    assert {f.split(":")[0] for f in found} == BUILDERS, found


def test_the_workspace_binds_every_node_once_without_spark() -> None:
    plan = compile_text(SQL, file="t.sql", name="t")
    io = bind(StepIO(spark=None, warehouse=Warehouse(root="wh"), pipeline=plan), plan)
    assert io.executors is not None
    assert {i: type(e) for i, e in io.executors.items()} == {
        i: type(EXECUTORS[n.kind]) for i, n in plan.nodes.items()}
    run = StepRun(io, "copied")
    assert run.executor is io.executors["copied"]
    assert run.in_place == []


def test_every_node_kind_has_one_executor_and_no_executor_is_spare() -> None:
    assert set(EXECUTORS) == set(KINDS)
    assert len(KINDS) == len(NODES)  # no two nodes of one kind


def test_a_workspace_takes_its_settings_with_the_plans_connectors() -> None:
    kafka = """
    CREATE STREAM orders (id INT, item STRING) WITH (KAFKA_TOPIC='o', VALUE_FORMAT='JSON',
      KEY_FORMAT='KAFKA');
    CREATE STREAM copied AS SELECT id, item FROM orders;
    """
    plan = compile_text(kafka, file="k.sql", name="k")
    ws = Workspace(plan, SpliceSettings.from_env({}, warehouse="wh", kafka_bootstrap="h:1"))
    assert set(plan.packages()) <= set(ws.settings.packages)
    assert ws.settings.kafka_bootstrap == "h:1"
    assert ws.warehouse.root == "wh"
    assert ws.step_of("copied") is plan.outputs["copied"]
    assert ws.step_of("nothing") is None


def test_the_runtime_refuses_a_pipeline_that_is_not_compiled() -> None:
    logical = analyze_sources([("t.sql", SQL)], "t")
    with pytest.raises(TypeError, match="not compiled"):
        Workspace(logical)  # type: ignore[arg-type]
    io = StepIO(spark=None, warehouse=Warehouse(root="wh"), pipeline=logical)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not compiled"):
        run_pipeline(logical, io)  # type: ignore[arg-type]


def test_a_step_run_refuses_a_step_io_that_is_not_bound() -> None:
    plan = compile_text(SQL, file="t.sql", name="t")
    io = StepIO(spark=None, warehouse=Warehouse(root="wh"), pipeline=plan)
    with pytest.raises(TypeError, match=r"splice\.Workspace"):
        StepRun(io, "copied")
