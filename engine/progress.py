"""What a step's streaming query reports about itself: late records, state,
and whether a micro-batch read new input.

A stateful operator (a stream-stream join) drops an input record that
arrives after its window has closed, and counts it in its progress
(``stateOperators[].numRowsDroppedByWatermark``). The count is summed over
the micro-batches of one run, so that no record is dropped silently. The
rows the operator keeps in its state after the run
(``stateOperators[].numRowsTotal``) show that state stays bounded.

Spark keeps only the last ``spark.sql.streaming.numRecentProgressUpdates``
(100) progress reports of a query, so the reports are also taken while the
run goes on: inside each micro-batch the previous batch's report is final.

The queries running in this process are listed by pipeline and step
(:func:`live`), so that a display (``splice run``'s) can say how far a
long step has read while it runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from py4j.protocol import Py4JError
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery
from splice.engine.offset_log import source_offsets


class RunProgress:
    """The progress reports of one run of one query, by micro-batch."""

    def __init__(self) -> None:
        self.query: StreamingQuery | None = None
        self.started = time.monotonic()
        # Input rows of each micro-batch reported so far, and their sum (an
        # int another thread may read while batches go on).
        self.read: dict[int, int] = {}
        self.rows_read = 0
        self._name: tuple[str, str] | None = None
        self.dropped: dict[int, int] = {}
        self.state: dict[int, int] = {}
        # Each micro-batch's observed metrics (``DataFrame.observe``) by name:
        # a Kafka source read in place locates its bad records by them.
        self.observed: dict[int, dict[str, Any]] = {}

    def observe(self, reports: Iterable[Mapping[str, Any] | None]) -> None:
        for report in reports:
            if report and "batchId" in report and int(report["batchId"]) not in self.read:
                batch = int(report["batchId"])
                self.read[batch] = int(report.get("numInputRows") or 0)
                self.rows_read += self.read[batch]
            metrics = (report or {}).get("observedMetrics") or {}
            if metrics:
                self.observed[int(report["batchId"])] = dict(metrics)  # type: ignore[index]
            operators = (report or {}).get("stateOperators") or []
            if not operators:  # no stateful operator, or an idle report
                continue
            batch = int(report["batchId"])  # type: ignore[index]
            self.dropped[batch] = sum(int(op.get("numRowsDroppedByWatermark", 0))
                                      for op in operators)
            self.state[batch] = sum(int(op.get("numRowsTotal", 0)) for op in operators)

    def watch(self, pipeline: str, step_id: str, query: StreamingQuery) -> None:
        """The step's query has started: listed for :func:`live` until
        :meth:`finish`."""
        self.query = query
        self._name = (pipeline, step_id)
        with _lock:
            _running[self._name] = self

    def during_run(self) -> None:
        """Called inside a micro-batch: the previous batch's report is final."""
        if self.query is not None:
            self.observe([self.query.lastProgress])

    def finish(self, query: StreamingQuery) -> None:
        """Take the run's last reports, and let the query go.

        The query's foreachBatch function holds this object, and the JVM
        holds that function for as long as the query lives; were this object
        to keep the query too, the two would hold each other across the
        Python and JVM heaps, where neither garbage collector sees the cycle,
        and every query a process ever ran would stay in memory with its
        last plans and broadcast tables (a test run's heap grew by a gigabyte
        in minutes, and the driver stalled)."""
        try:
            self.observe(query.recentProgress)
        finally:
            self.query = None
            with _lock:
                if self._name is not None and _running.get(self._name) is self:
                    del _running[self._name]

    @property
    def late_dropped(self) -> int:
        return sum(self.dropped.values())

    @property
    def state_rows(self) -> int | None:
        """The state rows after the run's last micro-batch (None without
        a stateful operator, or when the run executed no micro-batch)."""
        return self.state[max(self.state)] if self.state else None


_running: dict[tuple[str, str], RunProgress] = {}
_lock = threading.Lock()


def live(pipeline: str, step_id: str) -> RunProgress | None:
    """The progress of the step's query running in this process, if one is."""
    with _lock:
        return _running.get((pipeline, step_id))


def is_no_data_batch(spark: SparkSession, checkpoint: str, batch_id: int) -> bool:
    """Whether micro-batch ``batch_id`` read no new input: its offsets (in
    the checkpoint's offset log, written before the batch runs) are those of
    the batch before. Spark runs such a batch only to let a moved watermark
    take effect (close windows, evict state)."""
    if batch_id == 0:
        return False
    try:
        this, last = (source_offsets(spark, checkpoint, n) for n in (batch_id, batch_id - 1))
    except (OSError, Py4JError):  # an unreadable log: treat it as new input
        return False
    return this == last
