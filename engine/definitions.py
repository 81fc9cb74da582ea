"""What each step's checkpoint and table were built from, and rebuilding.

A step's streaming checkpoint (its offsets and operator state) and its
table hold results of the SQL the step had when they were written. When the
SQL changes, Spark may refuse the old state (a new column of a join's state,
a changed source), or worse, accept it and mix old results with new ones (a
new WHERE on a GROUP BY leaves the groups it no longer touches stale). So
each step keeps the definition it was built from next to its checkpoint; a
step whose definition, or that of a step upstream of it, differs from the
compiled one is refused, with the command that rebuilds it (dbt's
``--full-refresh``): :func:`drop` drops the step's checkpoint and table
and those of every step downstream, and the next run recomputes them from
their sources.

The definition is the step's compiled plan less where its SQL stands in
the file (its position and text): moving a statement or editing a comment
changes nothing; any change of what the step computes does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from splice.engine import fs
from splice.engine.io import StepIO
from splice.sql.plan import Pipeline, SourceStep, Step
from splice.sql.value_schemas import RESOLVED

FILE = "splice_definition.json"
_POSITION = {"where", "sql"}


def definition(step: Step) -> dict[str, Any]:
    """What the step computes, as JSON-able data (an Avro source's schema
    id found at compile time left out: splice.sql.value_schemas.RESOLVED)."""
    data = step.model_dump(mode="json", exclude=_POSITION)
    if isinstance(data.get("options"), dict):
        data["options"].pop(RESOLVED, None)
    return data


def definition_hash(step: Step) -> str:
    text = json.dumps(definition(step), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _file(io: StepIO, step: Step) -> str:
    return f"{io.checkpoint(step)}/{FILE}"


def stored(io: StepIO, step: Step) -> dict[str, Any] | None:
    """The definition the step's checkpoint was built from; None when the
    step has not run yet (or ran before definitions were kept)."""
    path = _file(io, step)
    if not fs.exists(io.spark, path):
        return None
    try:
        return json.loads(fs.read_text(io.spark, path))
    except (OSError, ValueError):
        return None  # an unreadable file is taken as no record: it is written anew


def record(io: StepIO, step: Step) -> None:
    """Keep the definition the step's checkpoint is now built from."""
    data = {"hash": definition_hash(step), "definition": definition(step)}
    if stored(io, step) != data:
        fs.write_text(io.spark, _file(io, step), json.dumps(data, sort_keys=True))


@dataclass(frozen=True)
class Change:
    step: Step
    fields: tuple[str, ...]  # the top-level fields that differ, described

    def describe(self) -> str:
        return f"'{self.step.id}' ({self.step.op}, {self.step.where}): {'; '.join(self.fields)}"


def _describe(name: str, old: Any, new: Any) -> str:
    def short(value: Any) -> str:
        text = "none" if value is None else json.dumps(value, sort_keys=True)
        return text if len(text) <= 80 else text[:77] + "..."

    if isinstance(old, dict | list) or isinstance(new, dict | list):
        return f"{name} changed"
    return f"{name}: {short(old)} -> {short(new)}"


def change_of(io: StepIO, step: Step) -> Change | None:
    """How the step's definition differs from the one its checkpoint was
    built from; None when it does not, or when there is no record."""
    old = stored(io, step)
    if old is None or old.get("hash") == definition_hash(step):
        return None
    before, now = old.get("definition") or {}, definition(step)
    fields = tuple(_describe(k, before.get(k), now.get(k))
                   for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k))
    return Change(step, fields or ("the definition changed",))


def downstream_closure(pipeline: Pipeline, step_ids: Iterable[str]) -> list[str]:
    """The steps given and every step that reads them, directly or not, in
    the pipeline's order."""
    chosen = set(step_ids)
    for step in pipeline.steps:  # steps come in dependency order
        if any(i in chosen for i in step.inputs):
            chosen.add(step.id)
    return [s.id for s in pipeline.steps if s.id in chosen]


class DefinitionChanged(Exception):
    """Steps whose SQL changed since their checkpoint and table were built."""

    def __init__(self, pipeline: Pipeline, changes: list[Change], refused: list[str]) -> None:
        self.changes = changes
        self.refused = refused
        targets = " ".join(sorted({c.step.id for c in changes}))
        lines = [f"pipeline '{pipeline.name}': the SQL of {len(changes)} step(s) changed since "
                 "their checkpoint and table were built:"]
        lines += [f"  {c.describe()}" for c in changes]
        lines += [
            f"Splice does not mix results of the old SQL with the new, so these steps and the "
            f"ones downstream are refused: {', '.join(refused)}.",
            "Rebuild them from their sources (drops their checkpoints and tables, then "
            f"recomputes): splice run <pipeline> --rebuild {targets}   (or --rebuild all); "
            "in Dagster, the same steps in the run config's `rebuild` (the launchpad's "
            "config of the pipeline's op)",
        ]
        super().__init__("\n".join(lines))


def check(pipeline: Pipeline, io: StepIO, step_ids: Iterable[str]) -> None:
    """Refuse to run any of ``step_ids`` that changed, or that reads
    (directly or not) a step that changed: raise :class:`DefinitionChanged`."""
    wanted = list(step_ids)
    ancestors: set[str] = set(wanted)
    for step in reversed(pipeline.steps):
        if step.id in ancestors:
            ancestors.update(step.inputs)
    changes = [c for s in pipeline.steps if s.id in ancestors
               if (c := change_of(io, s)) is not None]
    if not changes:
        return
    affected = set(downstream_closure(pipeline, [c.step.id for c in changes]))
    refused = [i for i in wanted if i in affected]
    if refused:
        raise DefinitionChanged(pipeline, changes, refused)


def rebuild_targets(pipeline: Pipeline, targets: list[str],
                    named_by: str = "--rebuild") -> list[str]:
    """The steps that rebuilding ``targets`` (step ids, or ``["all"]``)
    drops: those and every step downstream of them, in the pipeline's
    order. A KeyError names targets that are no step of the pipeline, and
    what named them (``named_by``: the CLI's flag, or Dagster's run config)."""
    runnable = [s.id for s in pipeline.steps if s.id not in pipeline.explain]
    if [t.lower() for t in targets] == ["all"]:
        return runnable
    by_lower = {s.lower(): s for s in runnable}
    unknown = [t for t in targets if t.lower() not in by_lower]
    if unknown:
        raise KeyError(f"{named_by} names no step of pipeline '{pipeline.name}': "
                       f"{', '.join(unknown)} (its steps: {', '.join(runnable)})")
    named = [by_lower[t.lower()] for t in targets]
    # A source read in place lives in its reader's checkpoint: rebuilding the
    # reader reads the topic afresh, so the source's dead letters go too.
    in_place = [i for t in named for i in pipeline.read_in_place(t)]
    return downstream_closure(pipeline, [*in_place, *named])


def drop(pipeline: Pipeline, io: StepIO, step_ids: list[str]) -> None:
    """Drop the checkpoints and tables of ``step_ids``; the next run
    recomputes them from their sources. A Delta source read in place is the
    user's data: only its checkpoint (and its dead letters) go. The caller
    holds the pipeline's lock and passes a closed set (rebuild_targets)."""
    for step_id in step_ids:
        step = pipeline.step(step_id)
        fs.remove_tree(io.spark, io.checkpoint(step))
        if isinstance(step, SourceStep):
            fs.remove_tree(io.spark, io.warehouse.dead_letter_path(pipeline.name, step.name))
            if step.format == "delta":
                continue
        fs.remove_tree(io.spark, io.table_path(step))
