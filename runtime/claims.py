"""Who owns a name in a warehouse.

One pipeline name means one internal folder ``_splice/<pipeline>``
(checkpoints, step tables, input markers), and one output name means one
Delta table at the warehouse root. Two pipelines writing one output would
mix their rows without any error.

So every run first claims its names in a small registry kept in the
warehouse itself (docs/decisions/names-and-paths.md):

- ``_splice/<pipeline>/owner.json``: the pipeline's name and origin (the
  absolute path of its SQL folder or file, ``Pipeline.origin``);
- ``_splice/output-claims/<output>.json``: the pipeline that writes the
  output (the output's name in lower case: outputs are compared without
  case, as the Dagster definitions compare them).

A pipeline is its name in its warehouse, wherever its SQL lies: a claim
held under the same name is the pipeline's own, so a folder moved or copied
(a new deploy, another checkout) runs on the same tables and checkpoints,
and its claims then record the new origin (``moved_from``: the one before).
A name's steps whose SQL differs are still refused by the definitions check
(``engine/definitions.py``), so two unrelated folders that happen to share
a name cannot mix results. A claim held under another name is a
:class:`ClaimRefused` naming both pipelines and the fix, the
non-destructive one first. Everything is
checked before anything is written, so a refused run leaves no claim behind.
A name without a claim (a warehouse written before claims existed) is
claimed by the first pipeline that runs.

Claim files are created atomically and only when absent
(``splice.engine.fs.create_text``): on a local path a temporary file is hard-linked
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

from splice.engine import fs
from splice.engine.settings import Warehouse
from splice.sql.names import MAX_NAME_BYTES, segment_problem
from splice.sql.plan import Pipeline

if TYPE_CHECKING:
    from splice.engine.io import StepIO


class ClaimRefused(Exception):
    """A pipeline may not run on this warehouse: a name it needs is
    another pipeline's. The message names both and the fix."""


@dataclass(frozen=True)
class _Claim:
    path: str
    record: dict[str, Any]
    what: str  # "its pipeline name" / "output 'x'"


def claim(pipeline: Pipeline, io: StepIO | Warehouse) -> None:
    """Claim ``pipeline``'s name and outputs in the warehouse (``io``'s, or
    the one given), or raise :class:`ClaimRefused` without claiming
    anything: a claim this call created before it lost a race for another
    is removed again."""
    warehouse = io if isinstance(io, Warehouse) else io.warehouse
    problem = segment_problem(pipeline.name, MAX_NAME_BYTES, reserved=False)
    if problem is not None:
        raise ClaimRefused(f"the pipeline name {pipeline.name[:40]!r} {problem[0]}; "
                           "rename the pipeline's folder or file")
    claims = _claims(pipeline, warehouse)
    held = {c.path: _read(c.path) for c in claims}
    for c in claims:
        _check(c, held[c.path], pipeline, warehouse)
    for c in claims:  # the same pipeline from another folder: the claim follows it
        before = held[c.path]
        if before is not None and _moved(before, pipeline):
            fs.write_text(None, c.path, json.dumps(
                {**c.record, "moved_from": before["origin"]}, indent=1) + "\n")
    created: list[str] = []
    try:
        for c in claims:
            if fs.create_text(None, c.path, json.dumps(c.record, indent=1) + "\n"):
                created.append(c.path)
            else:  # lost a race to another run: check against what it wrote
                _check(c, _read(c.path), pipeline, warehouse)
    except ClaimRefused:
        for path in created:
            fs.remove(None, path)
        raise


def unclaimed(pipeline: Pipeline, warehouse: Warehouse) -> str | None:
    """Why ``pipeline`` no longer owns a name it claimed (None while it owns
    every one): a claim removed, or replaced by another pipeline's, while
    it runs. Checked again during a run (runtime/tenure.py)."""
    for c in _claims(pipeline, warehouse):
        held = _read(c.path)
        if held is None:
            return f"the claim on {c.what} ({c.path}) was removed"
        if not _same_owner(held, pipeline):
            return (f"the claim on {c.what} ({c.path}) now names pipeline "
                    f"{_describe(held.get('pipeline'), held.get('origin'))}")
    return None


def _claims(pipeline: Pipeline, warehouse: Warehouse) -> list[_Claim]:
    me = {"pipeline": pipeline.name, "origin": pipeline.origin}
    claims = [_Claim(warehouse.owner_path(pipeline.name), me, "its pipeline name")]
    return claims + [_Claim(warehouse.output_claim_path(name), {**me, "output": name},
                            f"output '{name}'") for name in sorted(pipeline.outputs)]


def _same_owner(held: dict[str, Any], pipeline: Pipeline) -> bool:
    """A pipeline is its name in the warehouse: its origin may change."""
    return held.get("pipeline") == pipeline.name


def _moved(held: dict[str, Any], pipeline: Pipeline) -> bool:
    origin = held.get("origin")
    return (held.get("pipeline") == pipeline.name and origin is not None
            and pipeline.origin is not None and origin != pipeline.origin)


def _describe(name: Any, origin: Any) -> str:
    return f"'{name}' ({origin})" if origin else f"'{name}' (compiled from text)"


def _check(c: _Claim, held: dict[str, Any] | None, pipeline: Pipeline,
           warehouse: Warehouse) -> None:
    if held is None or _same_owner(held, pipeline):
        return
    other = _describe(held.get("pipeline"), held.get("origin"))
    mine = _describe(pipeline.name, pipeline.origin)
    root = warehouse.output_path("").rstrip("/")
    if c.what == "its pipeline name":  # a record naming another pipeline in our folder
        folder = warehouse.owner_path(pipeline.name).rsplit("/", 1)[0]
        raise ClaimRefused(
            f"pipeline {mine} cannot run on warehouse {root}: {c.path} names pipeline "
            f"{other}; rename this pipeline's folder (or file), or, if {folder} is this "
            f"pipeline's, put its name back in {c.path}")
    output = c.record["output"]
    part = _part_of(pipeline.origin, held.get("origin"))
    if part is not None and part[1] == held.get("origin"):  # a file of the holder's folder
        file, folder = part
        raise ClaimRefused(
            f"pipeline {mine} cannot write output '{output}' on warehouse {root}: {file} is "
            f"a file of pipeline '{held.get('pipeline')}' (the folder {folder}), which already "
            f"writes it; run the folder as the pipeline it is (splice run {folder}), not the "
            "file alone")
    if part is not None:  # the holder is a file of this pipeline's folder, run alone
        file, folder = part
        raise ClaimRefused(
            f"pipeline {mine} cannot write output '{output}' on warehouse {root}: its file "
            f"{file} was run alone as pipeline '{held.get('pipeline')}', which already writes "
            f"it; keep running that file as it was (splice run {file}), or drop pipeline "
            f"'{held.get('pipeline')}' (delete {warehouse.pipeline_path(str(held.get('pipeline')))}"
            f", its outputs and {c.path}) to run the folder")
    raise ClaimRefused(
        f"pipeline {mine} cannot write output '{output}' on warehouse {root}: pipeline "
        f"{other} already writes it; rename the output in one of the two pipelines, or drop "
        f"the old one (delete {warehouse.output_path(output)} and {c.path})")


def _part_of(mine: Any, held: Any) -> tuple[str, str] | None:
    """(file, folder) when one origin is a .sql file
    directly in the other origin, a folder: the same SQL reached as a
    pipeline of its own and as part of its folder's pipeline."""
    if not isinstance(mine, str) or not isinstance(held, str):
        return None
    for file, folder in ((mine, held), (held, mine)):
        if file.endswith(".sql") and file.rsplit("/", 1)[0] == folder.rstrip("/"):
            return file, folder
    return None


def _read(path: str) -> dict[str, Any] | None:
    if not fs.exists(None, path):
        return None
    try:
        record = json.loads(fs.read_text(None, path))
    except ValueError:  # half written by a store without atomic puts: nobody's claim
        return None
    return record if isinstance(record, dict) else None
