"""What a step runs: a streaming input, a per-micro-batch transform, a sink."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from pyspark.sql import DataFrame, SparkSession


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
class StepQuery:
    """One step's Structured Streaming query.

    ``stream`` is the streaming DataFrame the query reads (it may itself hold
    stateful operators, such as a stream-stream join). ``batch`` turns each
    micro-batch into the rows to store (by default :func:`unchanged`); it runs
    on static DataFrames, so it may read other tables afresh. ``tombstone``
    (MERGE sinks) is the condition that marks a row as a deletion of its key.
    """

    stream: DataFrame
    batch: Callable[[DataFrame], DataFrame] = unchanged
    sink: Sink = Sink.APPEND
    tombstone: str | None = None
    # For Sink.CUSTOM: writes the raw micro-batch itself (``batch`` then only
    # gives the output's schema).
    writer: Callable[[DataFrame, BatchTarget], None] | None = None
    # Spark's output mode: "update" for a stateful aggregation, whose
    # micro-batches then hold the groups it changed.
    output_mode: str = "append"
