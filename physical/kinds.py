"""The one registry of node kinds: which physical node each step gets.

A step gets the first node of :data:`NODES` whose ``plans`` is the step's
class and that ``takes`` it: a source by its format (and whether it is read
in place), a projection by whether it projects a table, a join by its
strategy. Adding a kind is its node, one line here and its executor's line
in ``splice.runtime.executors`` (docs/decisions/adding-a-node-kind.md); a
test checks that every kind here has an executor there, and no other.
"""

from __future__ import annotations

from splice.physical.base import PhysicalNode
from splice.physical.joins import AsofJoin, IncrementalTableJoin, IntervalJoin, StreamTableLookup
from splice.physical.operators import (
    AggregateNode,
    KafkaSink,
    MaterializeNode,
    ProjectNode,
    RepartitionNode,
    TableProjectNode,
)
from splice.physical.sources import DeltaSource, JsonSource, KafkaInPlace, KafkaSource, SourceNode
from splice.sql.plan import Step

# In the order a step is matched: the narrower node of a step class first.
NODES: tuple[type[PhysicalNode], ...] = (
    DeltaSource,
    JsonSource,
    KafkaInPlace,  # a Kafka stream read in place (stored='false')
    KafkaSource,
    TableProjectNode,  # a projection of a table
    ProjectNode,
    RepartitionNode,
    MaterializeNode,
    AggregateNode,
    KafkaSink,
    StreamTableLookup,
    IntervalJoin,
    IncrementalTableJoin,
    AsofJoin,
)

KINDS: dict[str, type[PhysicalNode]] = {node.kind: node for node in NODES}


def node_for(step: Step) -> type[PhysicalNode] | None:
    """The node kind that runs ``step``; None when none does (yet)."""
    return next((node for node in NODES if isinstance(step, node.plans) and node.takes(step)),
                None)


def source_formats() -> list[str]:
    """The source formats a node reads, in the registry's order."""
    return list(dict.fromkeys(n.format for n in NODES if issubclass(n, SourceNode)))
