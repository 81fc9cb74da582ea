"""Who owns a name in a warehouse.

Two pipelines must not share a warehouse folder: one pipeline name means one
internal folder ``_splice/<pipeline>`` (checkpoints, step tables, input
markers), and one output name means one Delta table at the warehouse root.
Two SQL folders that derive one pipeline name (``a/demo`` and ``b/demo``,
``my-demo`` and ``my_demo``), or two pipelines writing one output, would mix
their checkpoints or their rows without any error.

So every run first claims its names in a small registry kept in the
warehouse itself (docs/DECISIONS.md, "Names and paths"):

- ``_splice/<pipeline>/owner.json``: the pipeline's name and origin (the
  absolute path of its SQL folder or file, ``Pipeline.origin``);
- ``_splice/output-claims/<output>.json``: the pipeline that writes the
  output (the output's name in lower case: outputs are compared without
  case, as the Dagster definitions compare them).

A claim held by the same pipeline (same name, and the same origin when both
are known: a pipeline compiled from text has none) is fine; any other is a
:class:`ClaimRefused` naming both pipelines and the fix. Everything is
checked before anything is written, so a refused run leaves no claim behind.
A name without a claim (a warehouse written before claims existed) is
claimed by the first pipeline that runs.

Claim files are created atomically and only when absent
(``engine.fs.create_text``): on a local path a temporary file is hard-linked
into place (a link fails when the name exists, so two runs racing for one
name cannot both win); on a URI the file is opened in fsspec's exclusive
mode, a conditional put where the store has one (on a store without, two
runs racing can both believe they won: the check is there to catch
mistakes, not concurrent rivals).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine import fs
from sql.names import MAX_NAME_BYTES, segment_problem
from sql.plan import Pipeline

if TYPE_CHECKING:
    from engine.io import StepIO


class ClaimRefused(Exception):
    """A pipeline may not run on this warehouse: a name it needs is
    another pipeline's. The message names both and the fix."""


@dataclass(frozen=True)
class _Claim:
    path: str
    record: dict[str, Any]
    what: str  # "its pipeline name" / "output 'x'"


def claim(pipeline: Pipeline, io: StepIO) -> None:
    """Claim ``pipeline``'s name and outputs in ``io``'s warehouse, or raise
    :class:`ClaimRefused` without claiming anything."""
    problem = segment_problem(pipeline.name, MAX_NAME_BYTES, reserved=False)
    if problem is not None:
        raise ClaimRefused(f"the pipeline name {pipeline.name[:40]!r} {problem[0]}; "
                           "rename the pipeline's folder or file")
    me = {"pipeline": pipeline.name, "origin": pipeline.origin}
    warehouse = io.warehouse
    claims = [_Claim(warehouse.owner_path(pipeline.name), me, "its pipeline name")]
    claims += [_Claim(warehouse.output_claim_path(name), {**me, "output": name},
                      f"output '{name}'") for name in sorted(pipeline.outputs)]
    for c in claims:
        _check(c, _read(io.spark, c.path), pipeline, io)
    for c in claims:
        if not fs.create_text(io.spark, c.path, json.dumps(c.record, indent=1) + "\n"):
            # Lost a race to another run: check against what it wrote.
            _check(c, _read(io.spark, c.path), pipeline, io)


def _same_owner(held: dict[str, Any], pipeline: Pipeline) -> bool:
    if held.get("pipeline") != pipeline.name:
        return False
    origin = held.get("origin")
    return origin is None or pipeline.origin is None or origin == pipeline.origin


def _describe(name: Any, origin: Any) -> str:
    return f"'{name}' ({origin})" if origin else f"'{name}' (compiled from text)"


def _check(c: _Claim, held: dict[str, Any] | None, pipeline: Pipeline, io: StepIO) -> None:
    if held is None or _same_owner(held, pipeline):
        return
    other = _describe(held.get("pipeline"), held.get("origin"))
    mine = _describe(pipeline.name, pipeline.origin)
    root = io.warehouse.output_path("").rstrip("/")
    if c.what == "its pipeline name":
        folder = io.warehouse.owner_path(pipeline.name).rsplit("/", 1)[0]
        raise ClaimRefused(
            f"pipeline {mine} cannot run on warehouse {root}: pipeline {other} has the same "
            f"name and owns {folder}; rename one of the two pipeline folders (or files), or "
            f"drop the old pipeline (delete {folder} and its outputs)")
    output = c.record["output"]
    raise ClaimRefused(
        f"pipeline {mine} cannot write output '{output}' on warehouse {root}: pipeline "
        f"{other} already writes it; rename the output in one of the two pipelines, or drop "
        f"the old one (delete {io.warehouse.output_path(output)} and {c.path})")


def _read(spark: Any, path: str) -> dict[str, Any] | None:
    if not fs.exists(spark, path):
        return None
    record = json.loads(fs.read_text(spark, path))
    return record if isinstance(record, dict) else None
