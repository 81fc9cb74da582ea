"""EXPLAIN: a tree per step (its physical node's), each step's header, and
the step graph as Mermaid text."""

from __future__ import annotations

from splice.physical.base import ExplainNode, PhysicalPlan
from splice.physical.planner import plan, plan_step
from splice.sql.plan import Pipeline, Step


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


def mermaid(pipeline: Pipeline) -> str:
    lines = ["graph LR"]
    for step in pipeline.steps:
        label = f"{step.id}<br/>{step.op} · {step.kind.value}"
        shape = f'(["{label}"])' if step.kind.value == "stream" else f'[("{label}")]'
        lines.append(f"  {_mid(step.id)}{shape}")
    for step in pipeline.steps:
        for upstream in step.inputs:
            lines.append(f"  {_mid(upstream)} --> {_mid(step.id)}")
    return "\n".join(lines)


def _mid(step_id: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in step_id)


def explain_pipeline(pipeline: Pipeline) -> str:
    plan = explainable(pipeline)
    parts = [f"pipeline {plan.name}: {len(plan.steps)} steps", ""]
    for step in plan.steps:
        parts.append(step_header(step))
        parts.append(_indent(plan.node(step.id).explain().render(), "  "))
        parts.append("")
    parts.append("step graph (Mermaid):")
    parts.append(mermaid(plan))
    return "\n".join(parts)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())
