"""EXPLAIN: a tree per step, and the step graph as Mermaid text."""

from __future__ import annotations

from joins.explain import ExplainNode
from joins.planner import physical_join
from joins.strategy import choose_strategy
from sql.errors import SqlError
from sql.plan import (
    AggregateStep,
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
        return _explain_join(step, props)
    if isinstance(step, AggregateStep):
        return ExplainNode(name="Aggregate", props={
            **props, "input": step.inputs[0], "filter": step.filter or "",
            "group by": ", ".join(step.group_by), "new key": step.key,
            "having": step.having or "",
            "output": "[" + ", ".join(f"{p.name} = {p.expr}" for p in step.select) + "]",
            "rowtime": step.rowtime,
            "state": "Spark's streaming aggregation, one row per group in the checkpoint",
            "emits": "the groups each micro-batch changed (update mode)",
            "maintained by": "MERGE on _key" + (
                "; a group whose HAVING turns false is deleted" if step.having else ""),
            "skips": "records whose value columns are all NULL"})
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


def _explain_join(step: JoinStep, props: dict[str, str]) -> ExplainNode:
    """The physical join's own tree; for a join whose physical operator is
    not available yet, the logical join with its strategy and a note."""
    try:
        physical = physical_join(step)
    except SqlError as err:
        s = step
        return ExplainNode(name="Join", props={
            "strategy": choose_strategy(s).value, **props, "type": s.join_type.value,
            "predicate": " AND ".join(e.text for e in s.equalities),
            "left filter": s.left_filter or "", "right filter": s.right_filter or "",
            "residual": s.residual or "", "after join": s.post_filter or "",
            "window": s.window.describe() if s.window else "",
            "key": s.key, "rowtime": s.rowtime,
            "output": "[" + ", ".join(p.name for p in s.select) + "]",
            "note": f"not runnable yet: {err.rule}"},
            children=(ExplainNode(name=f"Input l: {s.inputs[0]}"),
                      ExplainNode(name=f"Input r: {s.inputs[1]}")))
    node = physical.explain()
    return node.model_copy(update={"props": {
        "strategy": physical.strategy.value, **props, **node.props}})


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
