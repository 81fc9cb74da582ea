"""EXPLAIN of one step: its header and its physical node's tree."""

from __future__ import annotations

from engine.nodes import ExplainNode, PhysicalPlan
from runtime.planner import plan, plan_step
from sql.plan import Pipeline, Step


def explainable(pipeline: Pipeline) -> PhysicalPlan:
    """A compiled pipeline's plan as it is; an analyzed one planned for
    EXPLAIN (a step that cannot run yet shows as such)."""
    if isinstance(pipeline, PhysicalPlan):
        return pipeline
    return plan(pipeline, explainable=True)


def explain_step(step: Step, pipeline: PhysicalPlan | None = None) -> ExplainNode:
    """The EXPLAIN tree of ``step``: its node in ``pipeline``'s plan, or,
    without a plan, the node planned for it alone."""
    if pipeline is not None:
        return pipeline.node(step.id).explain()
    return plan_step(step, explainable=True).explain()


def step_header(step: Step) -> str:
    target = f" -> output '{step.output}'" if step.output else ""
    columns = ", ".join(f"{c.name} {c.type}" + ("" if c.nullable else " not null")
                        for c in step.relation.columns)
    return (f"step {step.id} [{step.op}, {step.kind.value}]{target}  ({step.where})\n"
            f"  schema: _key {step.relation.key_type}, {columns}, ROWTIME timestamp")
