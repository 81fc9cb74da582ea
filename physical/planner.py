"""The planner: every step of a pipeline to its physical node, once.

Which node a step gets is the one list of node kinds
(``splice.physical.kinds``); here are only the refusals, positioned: a
source format no node reads, a stream-stream join without a window, a join
strategy no node runs.
"""

from __future__ import annotations

from splice.physical.base import PhysicalNode, PhysicalPlan
from splice.physical.joins import UnsupportedJoin
from splice.physical.kinds import node_for, source_formats
from splice.physical.sources import UnsupportedSource
from splice.physical.strategy import Strategy, choose_strategy
from splice.sql.errors import Position, SqlError, SqlErrors
from splice.sql.plan import JoinStep, Pipeline, SourceStep, Step


def plan_step(step: Step, explainable: bool = False) -> PhysicalNode:
    """``step``'s node; a positioned :class:`SqlError` when the engine cannot
    run it, unless ``explainable`` asks for a node EXPLAIN can show anyway
    (the step as the language understood it, with why it cannot run)."""
    try:
        why_not_runnable(step)
        node = node_for(step)
        if node is None:  # a step class or strategy no node plans
            raise SqlError(step.where, f"no physical node runs a {step.op} step yet",
                           "see the project's open issues for when it arrives")
        return node(step=step)
    except SqlError as err:
        if not explainable:
            raise
        if isinstance(step, SourceStep):
            return UnsupportedSource(step=step)
        if isinstance(step, JoinStep):
            return UnsupportedJoin(step=step, reason=err.rule)
        raise


def why_not_runnable(step: Step) -> None:
    """Why the engine cannot run ``step`` although the language allows it,
    as a positioned error; nothing when it can."""
    if isinstance(step, SourceStep) and step.format not in source_formats():
        where = Position(step.where.file, step.where.line, step.where.col)
        raise SqlError(where, f"the {step.format} source format is not supported yet",
                       f"use one of: {', '.join(source_formats())}")
    if isinstance(step, JoinStep):
        strategy = choose_strategy(step)
        if strategy == Strategy.INTERVAL and step.window is None:
            # The analyzer lets a CROSS JOIN of two streams through without one.
            raise SqlError(step.where, f"a stream-stream {step.join_type.value} JOIN needs a "
                           "window: without one every record would be kept forever, waiting "
                           "for a match",
                           "add WITHIN, for example '... CROSS JOIN b WITHIN 5 MINUTES'")
        if node_for(step) is None:
            raise SqlError(step.where, f"the {strategy.value} is not supported yet",
                           "see the project's open issues for when it arrives")


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
