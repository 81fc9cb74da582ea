"""Continuous mode (``splice serve``): every step of a pipeline as a
long-running streaming query in this one Spark application.

Each step runs the query ``splice run`` runs (the same executor, the same
foreachBatch writer with the same micro-batch marks, the same checkpoint),
with a processing-time trigger instead of ``availableNow``. So a user can
switch between the two modes either way: both continue from the step's
checkpoint, and nothing is read twice or skipped.

Serving starts with one ``run_steps`` pass, which catches up on what
arrived while nothing ran and leaves every step's table in place (a query
reading a table that does not exist yet cannot start). It holds the
pipeline's lock throughout, so ``splice run`` and Dagster wait for it. A
query that fails is reported (its root cause, as ``splice run`` reports
it) and restarted after a back-off that doubles up to a limit; the others
go on. ``stop`` (set by SIGTERM or Ctrl-C in the CLI) stops every query,
each once its micro-batch in flight, if any, has finished.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql.streaming import StreamingQuery
from splice.engine import definitions
from splice.engine.io import StepIO
from splice.engine.progress import RunProgress
from splice.engine.session import own_session
from splice.operators.sources import SourceError
from splice.physical.base import PhysicalPlan
from splice.runtime.runner import bound_to, run_steps
from splice.runtime.step_run import StepRun
from splice.runtime.tenure import check_held, hold


@dataclass
class ServedStep:
    """One step's long-running query and what it has done so far."""

    run: StepRun
    query: StreamingQuery | None = None
    progress: RunProgress = field(default_factory=RunProgress)
    batches: int = 0
    rows: int = 0
    watermark: str = ""
    failures: int = 0
    last_error: str = ""
    restart_at: float = 0.0
    started: bool = False
    last_seen: str = ""  # the timestamp of the last progress report counted
    cut: bool = False  # stopped inside a micro-batch, which the next run does again

    @property
    def step_id(self) -> str:
        return self.run.step.id

    @property
    def io(self) -> StepIO:
        return self.run.io

    @property
    def reads_in_place(self) -> bool:
        """Whether the step streams a source read in place, whose dead
        letters it then settles as its micro-batches commit."""
        return bool(self.run.in_place)

    def absorb(self) -> None:
        """Count the micro-batches the query reported since last time."""
        if self.query is None:
            return
        for report in self.query.recentProgress:
            stamp = f"{report.get('timestamp')}"  # ISO-8601 UTC: sorts as time does
            if stamp <= self.last_seen:
                continue
            self.last_seen = stamp
            rows = int(report.get("numInputRows") or 0)
            if rows:
                self.batches += 1
                self.rows += rows
            self.watermark = (report.get("eventTime") or {}).get("watermark", self.watermark)

    def busy(self) -> bool:
        """Whether the query's last micro-batch read rows (more may follow);
        an idle trigger reads none."""
        report = self.query.lastProgress if self.query is not None else None
        return bool(report and int(report.get("numInputRows") or 0))

    def line(self) -> str:
        if not self.started:
            return f"{self.step_id}: read in place"
        state = ("restarting" if self.restart_at else "stopped" if self.query is None else
                 "reading" if self.busy() else "caught up")
        # Rows read, as splice run's running line and Dagster's rows_read
        # count them (the input rows of the query's micro-batches).
        text = (f"{self.step_id}: {self.rows} rows read in {self.batches} micro-batches, "
                f"{state}")
        if self.watermark:
            text += f", watermark {self.watermark}"
        if self.progress.late_dropped:
            text += f", {self.progress.late_dropped} late records dropped"
        if self.progress.state_rows is not None:
            text += f", {self.progress.state_rows} state rows"
        if self.failures:
            text += f", {self.failures} failures (last: {self.last_error})"
        if self.cut:
            text += ", stopped inside a micro-batch (the next run or serve does it again)"
        return text


@dataclass
class ServeOptions:
    """How ``serve`` runs: the trigger interval, how often it reports, the
    back-off after a failure (doubling from ``backoff_s`` up to
    ``max_backoff_s``)."""

    # Each of a pipeline's hops waits up to one interval before its
    # micro-batch, so the interval adds up along a chain; an idle trigger
    # costs a look at the input's log. 0.25 s: the demo's p50 2.49 s at 0.12
    # CPU seconds a second idle, against 2.92 s (0.09) at 0.5 s and 2.41 s
    # (0.19) at 0.1 s (bench/serve_latency_bench.py, docs/decisions/README.md).
    interval_s: float = 0.25
    report_every_s: float = 10.0
    backoff_s: float = 2.0
    max_backoff_s: float = 60.0
    poll_s: float = 0.5
    # How long a stop waits, for all the queries together, for micro-batches
    # in flight before it interrupts them (Spark's stop() has no drain).
    drain_s: float = 30.0


def serve(pipeline: PhysicalPlan, io: StepIO, stop: threading.Event,
          on_report: Callable[[list[str]], None] | None = None,
          options: ServeOptions | None = None,
          on_started: Callable[[], None] | None = None,
          wait: float | None = 0) -> list[ServedStep]:
    """Serve ``pipeline`` until ``stop`` is set; the served steps, as they
    ended (what each did). ``wait``: how long to wait for a run that holds
    the pipeline's lock (0: refuse at once, naming it; None: as long as it
    takes)."""
    options = options or ServeOptions()
    io = bound_to(pipeline, io)
    with hold(pipeline, io.warehouse, wait=wait):
        run_steps(pipeline, io)  # catch up; every step's table exists after it
        if stop.is_set():  # stopped during the catch-up: no query to start
            return []
        served = [ServedStep(run=StepRun(replace(io, spark=own_session(io.spark)), s.id))
                  for s in pipeline.steps if s.id not in pipeline.explain]
        trigger = {"processingTime": f"{options.interval_s} seconds"}
        try:
            for step in served:
                _start(step, trigger)
            if on_started:
                on_started()
            _watch(served, stop, trigger, options, on_report)
        finally:
            stop_served(served, options.drain_s)
    return served


def _start(step: ServedStep, trigger: dict[str, Any]) -> None:
    io, query = step.run.query()
    if query.stream is None:  # nothing to stream (a Delta source read in place)
        return
    definitions.record(io, step.run.step)
    step.progress = RunProgress()
    step.started = True
    step.query = step.run.start(io, query, step.progress, trigger)


def stop_served(served: list[ServedStep], drain_s: float) -> None:
    """Stop the served steps' queries between micro-batches, within
    ``drain_s`` for all of them; a step cut inside one says so."""
    live = [(step, step.query) for step in served if step.query is not None]
    cut = stop_between_batches([query for _, query in live], drain_s)
    for step, query in live:
        step.cut = query in cut  # a query equals only itself
        step.absorb()
        step.progress.finish(query)
        step.query = None
        if step.reads_in_place:
            _settle(step)


def stop_between_batches(queries: list[StreamingQuery], within_s: float,
                         poll_s: float = 0.05) -> list[StreamingQuery]:
    """Stop every query in ``queries``, each as soon as it is between
    micro-batches, all within one ``within_s``; the queries still inside a
    micro-batch at the deadline, stopped all the same (cut).

    Spark's ``stop()`` interrupts a micro-batch in flight: nothing is lost
    or written twice (the next run replays it; engine/marks.py), but the
    work is done again and a cut Delta write leaves files for VACUUM.
    Stopping between batches spares that. A trigger that starts between
    the look and the stop is interrupted all the same: the interval
    between triggers makes that rare, not impossible. One deadline for
    all, so a pipeline of many steps stops within ``within_s``, not that
    many times over. A query whose look or stop raises (a Spark Connect
    server gone) does not keep the others running: they are stopped, then
    the first such error is raised."""
    deadline = time.monotonic() + within_s
    waiting, cut = list(queries), []
    failure: Exception | None = None
    while waiting:
        late = time.monotonic() >= deadline
        for query in list(waiting):
            try:
                busy = query.isActive and query.status["isTriggerActive"]
                if busy and not late:
                    continue
                if busy:
                    cut.append(query)
                query.stop()
            except Exception as err:  # raised once the others are stopped
                failure = failure or err
            waiting.remove(query)
        if waiting:
            time.sleep(poll_s)
    if failure is not None:
        raise failure
    return cut


def _watch(served: list[ServedStep], stop: threading.Event, trigger: dict[str, Any],
           options: ServeOptions, on_report: Callable[[list[str]], None] | None) -> None:
    next_report = time.monotonic() + options.report_every_s
    while not stop.wait(options.poll_s):
        if served:  # a lost lock stops serving (its queries are stopped already)
            check_held(served[0].io.warehouse, served[0].io.pipeline.name)
        now = time.monotonic()
        for step in served:
            if step.query is not None and step.reads_in_place:
                _settle(step)
            if step.query is not None and not step.query.isActive:
                _failed(step, options, now)
            elif step.query is None and step.restart_at and now >= step.restart_at:
                step.restart_at = 0.0
                try:
                    _start(step, trigger)
                except Exception as err:  # any cause is reported, then retried
                    _count_failure(step, options, now, _reason(step, err))
        if on_report and now >= next_report:
            for step in served:
                step.absorb()
            on_report([step.line() for step in served])
            next_report = now + options.report_every_s


def _settle(step: ServedStep) -> None:
    """Write the dead letters of the topics ``step`` reads in place for its
    micro-batches committed since the last look. A failure (a broker away
    for a moment) is logged and tried again at the next look (or the next
    run, after a stop): the micro-batches stay unsettled until then."""
    try:
        if step.query is not None:
            step.progress.observe([step.query.lastProgress])
        step.run.settle(step.progress.observed)
    except Exception as err:  # any cause: reported, tried again
        logging.getLogger("splice.serve").warning(
            "step '%s': dead letters of a topic read in place not written yet, tried again "
            "at the next look: %s", step.step_id, err)


def _failed(step: ServedStep, options: ServeOptions, now: float) -> None:
    """A query that stopped by itself failed: say why, and restart it later."""
    query = step.query
    assert query is not None
    step.absorb()
    error = query.exception()
    step.progress.finish(query)
    step.query = None
    _count_failure(step, options, now, _reason(step, error))


def _reason(step: ServedStep, error: BaseException | None) -> str:
    """A failure in the words ``splice run`` uses for it."""
    if isinstance(error, PySparkException):
        return step.run.failure_cause(error).summary
    if isinstance(error, SourceError):
        return str(error)
    return str(error) if error is not None else "the query stopped"


def _count_failure(step: ServedStep, options: ServeOptions, now: float, reason: str) -> None:
    step.failures += 1
    step.last_error = f"step '{step.step_id}': {reason}"
    delay = min(options.max_backoff_s, options.backoff_s * 2 ** (step.failures - 1))
    step.restart_at = now + delay
