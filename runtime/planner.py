"""The planner: every step of a pipeline to its physical node, once.

Which node a step gets is looked up by the step's class (one line each);
a source's node by its format (``splice.operators.nodes.SOURCE_FORMATS``), a
join's by its strategy (``splice.joins.planner.VARIANTS``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from splice.engine.nodes import PhysicalNode, PhysicalPlan
from splice.joins.planner import explainable_join, physical_join
from splice.operators.nodes import (
    AggregateNode,
    KafkaSink,
    MaterializeNode,
    RepartitionNode,
    plan_project,
    plan_source,
)
from splice.sql.errors import SqlError, SqlErrors
from splice.sql.plan import (
    AggregateStep,
    JoinStep,
    MaterializeStep,
    Pipeline,
    ProjectStep,
    RepartitionStep,
    SinkStep,
    SourceStep,
    Step,
)

# step class -> (its node when it must run, its node for EXPLAIN)
_Planner = Callable[[Any], PhysicalNode]
PLANNERS: dict[type, tuple[_Planner, _Planner]] = {
    SourceStep: (plan_source, lambda s: plan_source(s, explainable=True)),
    ProjectStep: (plan_project,) * 2,
    RepartitionStep: (lambda s: RepartitionNode(step=s),) * 2,
    MaterializeStep: (lambda s: MaterializeNode(step=s),) * 2,
    AggregateStep: (lambda s: AggregateNode(step=s),) * 2,
    SinkStep: (lambda s: KafkaSink(step=s),) * 2,
    JoinStep: (physical_join, explainable_join),
}


def plan_step(step: Step, explainable: bool = False) -> PhysicalNode:
    """``step``'s node; a positioned :class:`SqlError` when the engine cannot
    run it, unless ``explainable`` asks for a node EXPLAIN can show anyway."""
    runnable, shown = PLANNERS[type(step)]
    return (shown if explainable else runnable)(step)


def plan(pipeline: Pipeline, explainable: bool = False) -> PhysicalPlan:
    """The physical plan of ``pipeline``: every step planned once. Every
    step the engine cannot run is reported together (:class:`SqlErrors`)."""
    nodes: dict[str, PhysicalNode] = {}
    errors: list[SqlError] = []
    for step in pipeline.steps:
        try:
            nodes[step.id] = plan_step(step, explainable)
        except SqlError as err:
            errors.append(err)
    if errors:
        raise SqlErrors(errors)
    physical = PhysicalPlan(**dict(pipeline), nodes=nodes)
    if not explainable:
        refused = [e for e in (refused_in_place(physical, n) for n in nodes.values())
                   if e is not None]
        if refused:
            raise SqlErrors(refused)
    return physical


def refused_in_place(plan: PhysicalPlan, node: PhysicalNode) -> SqlError | None:
    """Why a source read in place (``stored='false'``) cannot be: it needs
    exactly one step reading it, which streams it
    (``PhysicalNode.streams_in_place``), with no step downstream depending
    on its arrival order, and reads no other source of the same topic in
    place."""
    if not node.step.in_place:
        return None
    step, nodes = node.step, plan.nodes
    readers = [s for s in plan.steps if step.id in s.inputs]
    where = step.where
    fix = ("remove stored='false': the source's table is then stored once, and any step "
           "reads it")
    if len(readers) != 1:
        return SqlError(where, f"source '{step.name}' is read in place (stored='false') "
                        f"but {len(readers)} steps read it; one reads a topic in place", fix)
    reader = nodes[readers[0].id]
    if not reader.streams_in_place(step.id) or plan.read_in_order(step.id):
        return SqlError(where, f"source '{step.name}' is read in place (stored='false') "
                        f"by step '{reader.step.id}' ({reader.kind}), which cannot: only an "
                        "interval join, a stream-table join's stream side, a projection or "
                        "a repartition reads a topic in place, and none that feeds a step "
                        "depending on arrival order (a table materialization)", fix)
    topic = step.options.get("topic")
    twins = [i for i in plan.read_in_place(reader.step.id) if i != step.id
             and nodes[i].step.options.get("topic") == topic]
    if twins:
        return SqlError(where, f"sources '{step.name}' and '{twins[0]}' both read topic "
                        f"'{topic}' in place for step '{reader.step.id}'; one may", fix)
    return None


def planned(pipeline: Pipeline) -> PhysicalPlan:
    """A compiled pipeline's plan as it is; a pipeline built otherwise
    (analyzed only, or edited) is planned here, once."""
    return pipeline if isinstance(pipeline, PhysicalPlan) else plan(pipeline)
