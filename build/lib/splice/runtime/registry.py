"""The registry: which executor runs each kind of physical node.

Adding a node kind (a source format, a join variant) is its node, its
executor, and one line here (docs/decisions/adding-a-node-kind.md).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pyspark.sql import DataFrame
from splice.engine.io import StepIO
from splice.engine.nodes import PhysicalNode, PhysicalPlan
from splice.engine.query import Executor
from splice.joins.physical.asof import AsofQuery
from splice.joins.physical.base import JoinExecutor
from splice.joins.physical.interval import IntervalQuery
from splice.joins.physical.lookup import LookupQuery
from splice.joins.physical.table_table import TableTableQuery
from splice.operators.aggregate import AggregateExecutor
from splice.operators.json_source import JsonSourceExecutor
from splice.operators.kafka_in_place import KafkaInPlaceExecutor
from splice.operators.kafka_sink import KafkaSinkExecutor
from splice.operators.kafka_source import KafkaSourceExecutor
from splice.operators.materialize import MaterializeExecutor
from splice.operators.sources import DeltaSourceExecutor
from splice.operators.table_project import TableProjectExecutor
from splice.operators.transform import ProjectExecutor, RepartitionExecutor

EXECUTORS: dict[str, Executor[Any]] = {
    "source.delta": DeltaSourceExecutor(),
    "source.json": JsonSourceExecutor(),
    "source.kafka": KafkaSourceExecutor(),
    "source.kafka.in_place": KafkaInPlaceExecutor(),
    "sink.kafka": KafkaSinkExecutor(),
    "project": ProjectExecutor(),
    "project.table": TableProjectExecutor(),
    "repartition": RepartitionExecutor(),
    "materialize": MaterializeExecutor(),
    "aggregate": AggregateExecutor(),
    "join.lookup": JoinExecutor(LookupQuery),
    "join.interval": JoinExecutor(IntervalQuery),
    "join.table_table": JoinExecutor(TableTableQuery),
    "join.asof": JoinExecutor(AsofQuery),
}


def executor(node: PhysicalNode) -> Executor[Any]:
    """The executor of ``node``'s kind."""
    try:
        return EXECUTORS[node.kind]
    except KeyError:
        raise RuntimeError(f"step '{node.step.id}': no executor runs a '{node.kind}' node "
                           "(compile the pipeline: it refuses what cannot run)") from None


def bind(io: StepIO, plan: PhysicalPlan) -> StepIO:
    """``io`` for running ``plan``'s steps: an input step is read as a
    stream by its own executor."""
    return replace(io, pipeline=plan, reader=_read_input)


def _read_input(io: StepIO, step_id: str, options: dict[str, str]) -> DataFrame:
    plan = io.pipeline
    assert isinstance(plan, PhysicalPlan), "a bound StepIO holds the plan"
    node = plan.node(step_id)
    return executor(node).read_stream(node, io, options)
