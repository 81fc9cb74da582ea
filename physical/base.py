"""The physical plan's base: a node per step, what it reads, how it explains
itself. Pure (no Spark): the planner (``splice.physical.planner``) builds a
node for every step once per compile, from the one list of node kinds
(``splice.physical.kinds``); EXPLAIN renders the nodes; the runtime binds
each node to the executor its ``kind`` names (``splice.runtime.executors``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from pydantic import BaseModel, ConfigDict
from splice.sql.plan import Pipeline, Step


class ExplainNode(BaseModel):
    """One operator of an EXPLAIN tree (in the manner of RisingWave's): its
    name, its properties, its inputs."""

    model_config = ConfigDict(frozen=True)

    name: str
    props: dict[str, str] = {}
    children: tuple[ExplainNode, ...] = ()

    def render(self) -> str:
        return "\n".join(self._lines("", ""))

    def _lines(self, first: str, rest: str) -> list[str]:
        props = ", ".join(f"{k}: {v}" for k, v in self.props.items() if v)
        head = f"{first}{self.name}" + (f" {{ {props} }}" if props else "")
        lines = [head]
        for i, child in enumerate(self.children):
            last = i == len(self.children) - 1
            lines += child._lines(rest + ("└─" if last else "├─"),
                                  rest + ("  " if last else "│ "))
        return lines


def duration(ms: int) -> str:
    """Milliseconds in words, for EXPLAIN."""
    for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


class Reads(BaseModel):
    """What a node reads of the steps before it.

    ``streamed``: the inputs whose new rows make the step run (a run is
    skipped when none of them changed); ``looked_up``: the inputs it reads as
    they stand, without being started by them; ``in_order``: the inputs it
    reads one Delta file per micro-batch, because it depends on their
    arrival order."""

    model_config = ConfigDict(frozen=True)

    streamed: tuple[str, ...] = ()
    looked_up: tuple[str, ...] = ()
    in_order: tuple[str, ...] = ()


class PhysicalNode(BaseModel, ABC):
    """How one step runs. ``kind`` names the node's executor in the registry
    (``splice.runtime.executors``); a node holds its logical step and nothing that
    needs Spark."""

    model_config = ConfigDict(frozen=True)

    kind: ClassVar[str]
    # The logical step class this node plans: the planner gives a step the
    # first node of splice.physical.kinds.NODES that plans its class and
    # takes it (``takes``).
    plans: ClassVar[type[Step]] = Step
    # A node whose rows keep the order of its input's (a projection): an
    # input read in order for a step downstream is read in order for it too.
    passes_order: ClassVar[bool] = False
    # Maven coordinates of the Spark connectors its executor needs (added
    # to Delta's when the session starts: engine/session.py).
    packages: ClassVar[tuple[str, ...]] = ()
    step: Step

    @classmethod
    def takes(cls, step: Step) -> bool:
        """Whether this node runs ``step``, of the class it plans (a source
        node: of its format; a join: of its strategy). Any, by default."""
        return True

    def needs(self) -> tuple[str, ...]:
        """The connectors this step needs: its kind's ``packages`` (and, for
        some, ones its options call for)."""
        return self.packages

    def streams_in_place(self, input_id: str) -> bool:
        """Whether this node may stream its input ``input_id`` from a source
        read in place: it streams it, without depending on its arrival
        order, and never reads it as a table. None does by default."""
        return False

    @abstractmethod
    def explain(self) -> ExplainNode: ...

    def reads(self) -> Reads:
        """By default the first input, streamed (single-input steps)."""
        return Reads(streamed=self.step.inputs[:1])

    def header(self) -> dict[str, str]:
        """The properties every step's EXPLAIN starts with."""
        return {"kind": self.step.kind.value, "key": self.step.relation.key_type}


class PhysicalPlan(Pipeline):
    """A compiled pipeline: the logical pipeline with the physical node of
    every step, planned once. It is a :class:`Pipeline`, so whatever reads a
    pipeline reads a plan."""

    nodes: dict[str, PhysicalNode]

    def node(self, step_id: str) -> PhysicalNode:
        return self.nodes[step_id]

    def packages(self) -> tuple[str, ...]:
        """The Spark connectors the plan's steps need, beyond Delta (the
        storage's, for a source on ``s3a://``, the Workspace adds:
        ``splice.runtime.workspace.plan_packages``)."""
        return tuple(dict.fromkeys(p for n in self.nodes.values() for p in n.needs()))

    def source_locations(self) -> list[str]:
        """Where the plan's sources are, for those that name a location."""
        return [s.location for s in self.sources.values() if s.location]

    def read_in_order(self, step_id: str) -> bool:
        """Whether a step downstream depends on the arrival order of
        ``step_id``'s rows (a table materialization: the latest record of a
        key wins), directly or through steps that keep the order."""
        for consumer in self.downstream(step_id):
            node = self.nodes[consumer.id]
            if step_id in node.reads().in_order:
                return True
            if node.passes_order and self.read_in_order(consumer.id):
                return True
        return False


def read_in_order(pipeline: Pipeline, step_id: str) -> bool:
    """:meth:`PhysicalPlan.read_in_order` of the pipeline an executor runs
    with (a :class:`StepIO` bound to a run holds the plan)."""
    assert isinstance(pipeline, PhysicalPlan), "executors run with the pipeline's plan"
    return pipeline.read_in_order(step_id)
