"""Which steps of a pipeline are assets, and which run inside another asset.

With every step shown, each runnable step is an asset that runs itself and
depends on the steps it reads. With internal steps hidden, an asset also
runs, first and in the pipeline's order, the hidden steps it reads (directly
or through other hidden steps), and depends on the visible steps at the end
of those chains: the asset graph skips the hidden steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from splice.orchestration.translator import SpliceTranslator
from splice.sql.plan import Pipeline, SourceStep, Step


@dataclass(frozen=True)
class AssetShape:
    step: Step  # the step whose table the asset is
    runs_first: tuple[Step, ...]  # hidden steps the asset runs before it, in order
    reads: tuple[str, ...]  # ids of the visible steps it depends on


def runnable(pipeline: Pipeline) -> list[Step]:
    """The steps that run: all but those only named by EXPLAIN."""
    return [s for s in pipeline.steps if s.id not in pipeline.explain]


def hidden_steps(pipeline: Pipeline, translator: SpliceTranslator) -> set[str]:
    """The steps the translator calls internal, less sources, outputs, and
    steps no runnable step reads (nothing would ever run those)."""
    steps = runnable(pipeline)
    read = {i for s in steps for i in s.inputs}
    return {s.id for s in steps
            if not isinstance(s, SourceStep) and s.output is None and s.id in read
            and translator.is_internal(s, pipeline)}


def asset_shapes(pipeline: Pipeline, hidden: set[str]) -> list[AssetShape]:
    """One shape per visible step, in the pipeline's order."""
    order = {s.id: n for n, s in enumerate(pipeline.steps)}
    shapes = []
    for step in runnable(pipeline):
        if step.id in hidden:
            continue
        first: set[str] = set()
        reads: set[str] = set()
        pending = list(step.inputs)
        while pending:
            step_id = pending.pop()
            if step_id in hidden:
                if step_id not in first:
                    first.add(step_id)
                    pending += pipeline.step(step_id).inputs
            else:
                reads.add(step_id)
        shapes.append(AssetShape(
            step=step,
            runs_first=tuple(pipeline.step(i) for i in sorted(first, key=order.__getitem__)),
            reads=tuple(sorted(reads, key=order.__getitem__))))
    return shapes
