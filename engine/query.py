"""What a step runs: a streaming input, a per-micro-batch transform, a sink;
and the executor that builds it from the step's physical node."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

from pyspark.sql import DataFrame, SparkSession
from splice.engine.errors import Cause
from splice.engine.io import StepIO, delta_version
from splice.physical.base import PhysicalNode
from splice.sql.plan import Step


class Sink(StrEnum):
    APPEND = "append"  # a stream: every output row is appended
    MERGE = "merge"  # a table: rows are upserted by _key, tombstones delete
    CUSTOM = "custom"  # the step writes each micro-batch itself (StepQuery.writer)


@dataclass
class BatchTarget:
    """Where and how a custom writer writes one micro-batch."""

    spark: SparkSession
    path: str
    txn_app: str
    batch_id: int
    step_id: str = ""


def unchanged(rows: DataFrame) -> DataFrame:
    """The batch transform of a step whose streaming query already yields
    the rows to store."""
    return rows


@dataclass
class Outcome:
    """What a step that writes more than its output table (a source: dead
    letters, a file manifest) reports of its run, instead of the rows its
    output table gained."""

    rows: int
    dead_letters: int = 0
    # Files of a file source changed in place after they were ingested.
    changed_files: list[Any] = field(default_factory=list)


@dataclass
class StepQuery:
    """One step's Structured Streaming query.

    ``stream`` is the streaming DataFrame the query reads (it may itself hold
    stateful operators, such as a stream-stream join); None when the step
    has nothing to stream (a Delta source without an event time to check).
    ``batch`` turns each micro-batch into the rows to store (by default
    :func:`unchanged`); it runs on static DataFrames, so it may read other
    tables afresh. ``tombstone`` (MERGE sinks) is the condition that marks a
    row as a deletion of its key.
    """

    stream: DataFrame | None
    batch: Callable[[DataFrame], DataFrame] = unchanged
    sink: Sink = Sink.APPEND
    tombstone: str | None = None
    # For Sink.CUSTOM: writes the raw micro-batch itself (``batch`` then only
    # gives the output's schema).
    writer: Callable[[DataFrame, BatchTarget], None] | None = None
    # Spark's output mode: "update" for a stateful aggregation, whose
    # micro-batches then hold the groups it changed.
    output_mode: str = "append"
    # Called once the run's query stopped: what the run reports, when that
    # is not the rows the output table gained (a source).
    outcome: Callable[[], Outcome] | None = None
    # The streaming query's name, for Spark's UI and logs (default
    # "<pipeline>:<step>").
    name: str | None = None


N = TypeVar("N", bound=PhysicalNode)


class Executor(ABC, Generic[N]):
    """Runs one kind of physical node on Spark; the registry
    (``splice.runtime.executors``) maps every node kind to one."""

    @abstractmethod
    def query(self, node: N, io: StepIO) -> StepQuery:
        """The node's streaming query."""

    def read_stream(self, node: N, io: StepIO, options: dict[str, str]) -> DataFrame:
        """The node's rows as a stream, for a step downstream: its stored
        table (an executor whose table is not in the stored layout, a
        source's, overrides this)."""
        return io.read_delta_stream(node.step, options)

    def markers(self, node: N, io: StepIO) -> dict[str, str]:
        """What the node's streamed inputs look like now: the Delta version
        of each; a run is skipped when none changed."""
        markers: dict[str, str] = {}
        for input_id in node.reads().streamed:
            path = io.table_path(io.pipeline.step(input_id))
            markers[path] = str(delta_version(io.spark, path))
        return markers

    def failure(self, node: N, io: StepIO, cause: Cause) -> str | None:
        """The failure ``cause`` of the node's run in this kind's own words,
        when it knows more than Spark's message says (a Kafka source whose
        records the broker deleted); None keeps the root cause's."""
        return None

    def settle(self, node: N, io: StepIO, reader: Step,
               observed: dict[int, dict[str, Any]]) -> int:
        """For a source read in place (``Step.in_place``): write what
        it owes for the committed micro-batches of the step ``reader`` that
        streams it (``observed``: their observations at hand, by
        micro-batch); how many rows. Other nodes owe nothing."""
        return 0

    def skipped(self, node: N, io: StepIO) -> list[Any]:
        """What a skipped run reports: the files changed in place that its
        last run found (a file source); none by default."""
        return []
