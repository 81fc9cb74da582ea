"""EXPLAIN: a tree per step (its physical node's), and the step graph as
Mermaid text."""

from __future__ import annotations

from runtime.explain import explain_step, explainable, step_header
from sql.plan import Pipeline

__all__ = ["explain_pipeline", "explain_step", "mermaid", "step_header"]


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
