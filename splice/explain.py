"""EXPLAIN: a tree per step, and the step graph as Mermaid text."""

from __future__ import annotations

from joins.explain import ExplainNode
from joins.planner import physical_join
from sql.plan import (
    JoinStep,
    MaterializeStep,
    Pipeline,
    ProjectStep,
    RepartitionStep,
    SourceStep,
    Step,
)


def explain_step(step: Step) -> ExplainNode:
    props = {"kind": step.kind.value, "key": step.relation.key_type}
    if isinstance(step, JoinStep):
        physical = physical_join(step)
        node = physical.explain()
        return node.model_copy(update={"props": {
            "strategy": physical.strategy.value, **props, **node.props}})
    if isinstance(step, SourceStep):
        return ExplainNode(name="Source", props={
            **props, "format": step.format, "location": step.location,
            "event time": step.timestamp_column or "ingestion time",
            "watermark": f"{step.watermark_ms} ms" if step.watermark_ms is not None else "",
            "bad records": "dead-letter table"})
    if isinstance(step, MaterializeStep):
        return ExplainNode(name="TableMaterialize", props={
            **props, "input": step.inputs[0], "maintained by": "MERGE on _key",
            "latest wins": "by arrival",
            "tombstone": "all of " + ", ".join(step.tombstone_columns) + " NULL"
            if step.tombstone_columns else "never"})
    if isinstance(step, RepartitionStep):
        return ExplainNode(name="Repartition", props={
            **props, "input": step.inputs[0], "new key": step.key})
    if isinstance(step, ProjectStep):
        return ExplainNode(name="Project", props={
            **props, "input": step.inputs[0], "filter": step.filter or "",
            "new key": step.key or "",
            "output": "[" + ", ".join(p.name for p in step.select) + "]"})
    raise TypeError(step)


def step_header(step: Step) -> str:
    target = f" -> output '{step.output}'" if step.output else ""
    columns = ", ".join(f"{c.name} {c.type}" for c in step.relation.columns)
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
    parts = [f"pipeline {pipeline.name}: {len(pipeline.steps)} steps", ""]
    for step in pipeline.steps:
        parts.append(step_header(step))
        parts.append(_indent(explain_step(step).render(), "  "))
        parts.append("")
    parts.append("step graph (Mermaid):")
    parts.append(mermaid(pipeline))
    return "\n".join(parts)


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())
