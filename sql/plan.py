"""The logical plan: what a pipeline computes, step by step.

The analyzer turns parsed statements into a :class:`Pipeline` of frozen
pydantic steps. Each step produces one relation (a stream or a table, with a
key and value columns), is stored as one Delta table, and becomes one Dagster
asset. Expressions are stored as Spark SQL text already resolved against the
step's input naming: a single-input step sees its input's columns by name
(``_key``, value columns, ``ROWTIME``); a join step sees its inputs under the
aliases ``l`` and ``r``.

The join planner (``splice.physical.planner``) picks a physical strategy for every
:class:`JoinStep`; nothing here runs Spark.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from splice.sql.errors import Position


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Kind(StrEnum):
    STREAM = "stream"
    TABLE = "table"


class JoinType(StrEnum):
    INNER = "INNER"
    LEFT = "LEFT"
    RIGHT = "RIGHT"
    FULL = "FULL"
    CROSS = "CROSS"


class ColumnSpec(Model):
    name: str
    type: str  # Spark DDL type: "int", "string", "struct<a:int,b:string>"
    nullable: bool = True


class Relation(Model):
    """What a step produces: every stored row is ``_key``, the value columns
    in order, then ``ROWTIME``."""

    kind: Kind
    key_type: str
    columns: tuple[ColumnSpec, ...]
    # The value columns the key is made of, in order, when the key is known to
    # be exactly those columns (one column: the key is that column; several:
    # a struct of them). Empty when the key is anything else.
    key_columns: tuple[str, ...] = ()
    # The value column the event time came from, when it is still one.
    time_column: str | None = None
    # How late the records may arrive, from the source's WATERMARK FOR ts AS
    # ts - d (the larger of a join's two inputs'); kept through every step
    # derived from the source, so a join can use it as its grace period.
    watermark_ms: int | None = None

    def column(self, name: str) -> ColumnSpec | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.name.lower() == lowered), None)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


class Projection(Model):
    """One output value column: its name and the Spark SQL that computes it."""

    name: str
    expr: str


class Window(Model):
    """The one window model every stream-stream form normalizes to.

    A left record ``l`` and a right record ``r`` match when
    ``-before_ms <= r.ROWTIME - l.ROWTIME <= after_ms``; records may arrive up
    to ``grace_ms`` late. A left record's window closes at its time +
    ``after_ms`` + ``grace_ms``, a right record's at its time + ``before_ms`` +
    ``grace_ms``. Both bounds are never negative: a range in ON that does not
    hold 0 (``r.ts BETWEEN l.ts + INTERVAL '1' MINUTE AND l.ts + INTERVAL '2'
    MINUTE``) is widened to hold it (``(0, 120000)``) and stays exact through
    the join's residual predicate.

    For the window-function forms (``TUMBLE``, ``HOP``) the inputs also carry
    ``window_start`` / ``window_end`` columns whose equality is one of the
    join's equalities; ``(size_ms, size_ms)`` bounds the state of records of
    one window.
    """

    before_ms: int
    after_ms: int
    grace_ms: int = 0
    # How the user wrote it: "WITHIN", "OVER", "BETWEEN", "INTERVAL" (ON
    # comparisons), "EQUAL TIME" (l.ts = r.ts), "TUMBLE", "HOP".
    form: str
    size_ms: int | None = None  # TUMBLE / HOP window size
    slide_ms: int | None = None  # HOP slide

    def describe(self) -> str:
        """One line for EXPLAIN."""
        text = (f"{self.form}: {-self.before_ms} ms <= r.ROWTIME - l.ROWTIME <= "
                f"{self.after_ms} ms, grace {self.grace_ms} ms")
        if self.form in ("TUMBLE", "HOP"):
            text += f", size {self.size_ms} ms"
            if self.slide_ms is not None:
                text += f", slide {self.slide_ms} ms"
        return text


class StepBase(Model):
    id: str
    inputs: tuple[str, ...] = ()
    relation: Relation
    # The output this step writes, when it is one (INSERT INTO / CREATE ... AS).
    output: str | None = None
    where: Position  # where the step's statement starts, for errors and EXPLAIN
    sql: str = ""  # the statement text this step came from

    @property
    def kind(self) -> Kind:
        return self.relation.kind

    @property
    def in_place(self) -> bool:
        """A source read in place by the one step that reads it (only a
        Kafka stream can be: :class:`SourceStep`)."""
        return False


class SourceStep(StepBase):
    """A declared source. Delta sources are read in place; file formats are
    ingested into a Delta table first. Records that do not fit the declared
    schema go to the source's dead-letter table."""

    op: Literal["source"] = "source"
    name: str
    location: str
    format: str = "delta"
    declared: tuple[ColumnSpec, ...]
    timestamp_column: str | None = None
    watermark_ms: int | None = None
    changelog: bool = True
    options: dict[str, str] = Field(default_factory=dict)

    @property
    def in_place(self) -> bool:
        """A Kafka stream read in place (``stored='false'``): no table of its
        own; the one step that reads it streams the topic and writes its dead
        letters."""
        return self.options.get("stored") == "false"


class SinkStep(StepBase):
    """An output also written to a Kafka topic (its input): a stream's rows,
    or a table's changes (a deleted key as a tombstone), as records keyed by
    ``_key`` in its formats (JSON; AVRO or JSON_SR through the schema
    registry, ``options['value_subject']``). Its own rows are the records it
    sent."""

    op: Literal["sink"] = "sink"
    format: str = "kafka"
    topic: str
    options: dict[str, str] = Field(default_factory=dict)


class MaterializeStep(StepBase):
    """A stream read as a table: one row per key, latest record wins, a record
    whose ``tombstone_columns`` are all NULL deletes its key."""

    op: Literal["materialize"] = "materialize"
    tombstone_columns: tuple[str, ...]


class ProjectStep(StepBase):
    """A filter and projection over one input (no join)."""

    op: Literal["project"] = "project"
    filter: str | None = None
    select: tuple[Projection, ...]
    key: str | None = None  # Spark SQL for the new _key; None keeps the input's


class RepartitionStep(StepBase):
    """Re-keys a stream so that its ``_key`` is the join expression."""

    op: Literal["repartition"] = "repartition"
    key: str


class Equality(Model):
    left: str
    right: str
    text: str  # as the user wrote it


class AsofInequality(Model):
    """An ASOF join's one inequality, as ``left op right`` with ``left`` over
    ``l`` and ``right`` over ``r`` (``md.t <= sp.t`` is ``sp.t >= md.t``).

    A left row's match is the right row nearest to it that satisfies it: the
    largest ``right`` for ``>=`` / ``>``, the smallest for ``<=`` / ``<``.
    """

    left: str
    op: Literal[">=", ">", "<=", "<"]
    right: str
    text: str  # as the user wrote it

    @property
    def nearest_is_largest(self) -> bool:
        return self.op in (">=", ">")

    def describe(self) -> str:
        """One line for EXPLAIN."""
        which = "largest" if self.nearest_is_largest else "smallest"
        return (f"{self.text} (nearest: the {which} {self.right} with {self.left} {self.op} "
                f"{self.right})")


class JoinStep(StepBase):
    """A join of two inputs, ``l`` and ``r``. Predicates are split where the
    language says they run: per input before the join, as equalities, as a
    residual over candidate pairs, and after the join (WHERE)."""

    op: Literal["join"] = "join"
    join_type: JoinType
    left_kind: Kind
    right_kind: Kind
    equalities: tuple[Equality, ...] = ()
    left_filter: str | None = None
    right_filter: str | None = None
    residual: str | None = None
    post_filter: str | None = None
    window: Window | None = None
    select: tuple[Projection, ...]
    key: str  # Spark SQL for the result's _key, over l and r
    rowtime: str  # Spark SQL for the result's ROWTIME, over l and r
    proctime: bool = False  # FOR SYSTEM_TIME AS OF PROCTIME()
    # Table-table joins: how the result is keyed ("primary", "left", "right",
    # "pair"; see sql/table_keys.py); None for joins with a stream.
    key_mode: str | None = None
    late_match_retention_ms: int | None = None
    # ASOF [LEFT] JOIN (RisingWave): its inequality. The result is a table
    # keyed by the left row's key, whatever the inputs' kinds.
    asof: AsofInequality | None = None


class AggregateStep(StepBase):
    """GROUP BY over one input: a table keyed by the grouping expressions.

    ``filter`` (WHERE) runs before grouping, ``having`` after; ``select`` holds
    aggregate calls (COUNT, SUM, MIN, MAX, AVG) and expressions of the
    grouping expressions, all as Spark SQL over the input's columns. A group's
    ``ROWTIME`` is the latest event time among its records.
    """

    op: Literal["aggregate"] = "aggregate"
    filter: str | None = None
    group_by: tuple[str, ...]
    key: str  # Spark SQL for the result's _key: the grouping expression, or a struct
    select: tuple[Projection, ...]
    having: str | None = None
    rowtime: str = "max(ROWTIME)"


Step = Annotated[
    SourceStep | MaterializeStep | ProjectStep | RepartitionStep | JoinStep | AggregateStep
    | SinkStep,
    Field(discriminator="op"),
]


class Pipeline(Model):
    """A whole compiled pipeline: its steps in dependency order."""

    name: str
    steps: tuple[Step, ...]
    explain: tuple[str, ...] = ()  # ids of steps named by EXPLAIN statements
    # The absolute path of the SQL folder or file it was compiled from (None
    # for text compiled directly): which pipeline owns a name in a warehouse
    # (runtime/claims.py).
    origin: str | None = None

    def step(self, step_id: str) -> Step:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    @property
    def outputs(self) -> dict[str, Step]:
        return {s.output: s for s in self.steps if s.output}

    @property
    def sources(self) -> dict[str, SourceStep]:
        return {s.name: s for s in self.steps if isinstance(s, SourceStep)}

    def downstream(self, step_id: str) -> list[Step]:
        return [s for s in self.steps if step_id in s.inputs]

    def read_in_place(self, step_id: str) -> list[str]:
        """The sources step ``step_id`` reads in place (``stored='false'``):
        it streams their topics and writes their dead letters."""
        return [i for i in self.step(step_id).inputs if self.step(i).in_place]
