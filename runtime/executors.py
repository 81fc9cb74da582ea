"""Which executor runs each kind of physical node, bound once per plan.

The kinds are those of the one registry of node kinds
(``splice.physical.kinds``); adding one is its node, its line there, its
executor and one line here (docs/decisions/adding-a-node-kind.md).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from splice.engine.io import StepIO
from splice.engine.query import Executor
from splice.joins.asof import AsofQuery
from splice.joins.core import JoinExecutor
from splice.joins.interval import IntervalQuery
from splice.joins.lookup import LookupQuery
from splice.joins.table_table import TableTableQuery
from splice.operators.aggregate import AggregateExecutor
from splice.operators.json_source import JsonSourceExecutor
from splice.operators.kafka_in_place import KafkaInPlaceExecutor
from splice.operators.kafka_sink import KafkaSinkExecutor
from splice.operators.kafka_source import KafkaSourceExecutor
from splice.operators.materialize import MaterializeExecutor
from splice.operators.sources import DeltaSourceExecutor
from splice.operators.table_project import TableProjectExecutor
from splice.operators.transform import ProjectExecutor, RepartitionExecutor
from splice.physical.base import PhysicalNode, PhysicalPlan
from splice.physical.joins import AsofJoin, IncrementalTableJoin, IntervalJoin, StreamTableLookup
from splice.physical.operators import (
    AggregateNode,
    KafkaSink,
    MaterializeNode,
    ProjectNode,
    RepartitionNode,
    TableProjectNode,
)
from splice.physical.sources import DeltaSource, JsonSource, KafkaInPlace, KafkaSource

EXECUTORS: dict[str, Executor[Any]] = {
    DeltaSource.kind: DeltaSourceExecutor(),
    JsonSource.kind: JsonSourceExecutor(),
    KafkaSource.kind: KafkaSourceExecutor(),
    KafkaInPlace.kind: KafkaInPlaceExecutor(),
    KafkaSink.kind: KafkaSinkExecutor(),
    ProjectNode.kind: ProjectExecutor(),
    TableProjectNode.kind: TableProjectExecutor(),
    RepartitionNode.kind: RepartitionExecutor(),
    MaterializeNode.kind: MaterializeExecutor(),
    AggregateNode.kind: AggregateExecutor(),
    StreamTableLookup.kind: JoinExecutor(LookupQuery),
    IntervalJoin.kind: JoinExecutor(IntervalQuery),
    IncrementalTableJoin.kind: JoinExecutor(TableTableQuery),
    AsofJoin.kind: JoinExecutor(AsofQuery),
}


def executor(node: PhysicalNode) -> Executor[Any]:
    """The executor of ``node``'s kind."""
    try:
        return EXECUTORS[node.kind]
    except KeyError:
        raise RuntimeError(f"step '{node.step.id}': no executor runs a '{node.kind}' node "
                           "(compile the pipeline: it refuses what cannot run)") from None


def bind(io: StepIO, plan: PhysicalPlan) -> StepIO:
    """``io`` for running ``plan``'s steps, with every node's executor looked
    up once: a step's run (``splice.runtime.step_run.StepRun``) takes its
    own from there, and an input step is read as a stream by its own."""
    return replace(io, pipeline=plan,
                   executors={step_id: executor(node) for step_id, node in plan.nodes.items()})
