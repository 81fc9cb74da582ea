"""What a step runs: a streaming input, a per-micro-batch transform, a sink."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from pyspark.sql import DataFrame


class Sink(StrEnum):
    APPEND = "append"  # a stream: every output row is appended
    MERGE = "merge"  # a table: rows are upserted by _key, tombstones delete


@dataclass
class StepQuery:
    """One step's Structured Streaming query.

    ``stream`` is the streaming DataFrame the query reads (it may itself hold
    stateful operators, such as a stream-stream join). ``batch`` turns each
    micro-batch into the rows to store; it runs on static DataFrames, so it may
    read other tables afresh. ``tombstone`` (MERGE sinks) is the condition that
    marks a row as a deletion of its key.
    """

    stream: DataFrame
    batch: Callable[[DataFrame], DataFrame]
    sink: Sink = Sink.APPEND
    tombstone: str | None = None
    counters: dict[str, int] = field(default_factory=dict)
