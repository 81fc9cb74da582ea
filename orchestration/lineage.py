"""Column lineage: which input columns each column of a step's table comes
from, as Dagster shows it (``dagster/column_lineage``), like dagster-dbt's.

The compiled plan holds each output column as Spark SQL over the step's
inputs (a join's over ``l`` and ``r``, a projection's over its one input),
and the key and ROWTIME as expressions too. The columns an expression reads
are found by parsing it with sqlglot (Spark's dialect), never by matching
text. A step that only moves rows (a table materialization, a
repartition) keeps its input's columns by name.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlglot
from dagster import AssetKey, TableColumnDep, TableColumnLineage
from splice.orchestration.translator import compiled_schema
from splice.sql.plan import JoinStep, Pipeline, Step
from sqlglot import exp

PASS_THROUGH = ("materialize", "repartition")


def _read(expr: str) -> list[tuple[str | None, str]]:
    """The (qualifier, column) pairs an expression reads."""
    try:
        tree = sqlglot.parse_one(expr, read="spark")
    except sqlglot.errors.ParseError:
        return []
    return [(c.table or None, c.name) for c in tree.find_all(exp.Column)]


def column_lineage(step: Step, pipeline: Pipeline,
                   key_of: Callable[[Step], AssetKey | None]) -> TableColumnLineage | None:
    """The lineage of ``step``'s columns; ``key_of`` gives an input step's
    asset key (None: the input is no asset, and is left out). None when the
    step's columns come from no input (a source) or nothing is known."""
    inputs = [pipeline.step(i) for i in step.inputs]
    if not inputs:
        return None
    sides = {"l": inputs[0], "r": inputs[-1]} if isinstance(step, JoinStep) else {}
    exprs: dict[str, str] = {p.name: p.expr for p in getattr(step, "select", ())}
    for name in ("key", "rowtime"):
        value = getattr(step, name, None)
        if isinstance(value, str):
            exprs["_key" if name == "key" else "ROWTIME"] = value
    if step.op in PASS_THROUGH and not exprs.keys() - {"_key", "ROWTIME"}:
        exprs.update({c.name: f"`{c.name}`" for c in compiled_schema(step).columns
                      if c.name not in exprs})
    lineage: dict[str, list[TableColumnDep]] = {}
    for column, expr in exprs.items():
        deps = []
        for qualifier, name in _read(expr):
            source = sides.get(qualifier or "", inputs[0] if len(inputs) == 1 else None)
            key = key_of(source) if source is not None else None
            if key is not None:
                dep = TableColumnDep(asset_key=key, column_name=name)
                if dep not in deps:
                    deps.append(dep)
        if deps:
            lineage[column] = deps
    return TableColumnLineage(deps_by_column=lineage) if lineage else None
