"""Maintenance of a pipeline's own tables: compaction, VACUUM, log retention.

Every run appends a few small files to each table it writes and a commit to
its ``_delta_log``; nothing else ever removes them. Maintenance, for the
tables the pipeline owns (its outputs, intermediate step tables, ingested
JSON sources, dead-letter tables; never a user's Delta source read in place):

- ``OPTIMIZE`` (bin-packing compaction): its commit has ``dataChange=false``,
  which streaming readers and change-feed readers skip;
- ``VACUUM`` after ``retain_hours``: removes only files no table version
  within the retention references (and the compacted small files once old
  enough);
- the log: Delta deletes ``_delta_log`` entries older than the table's
  ``delta.logRetentionDuration`` (30 days unless set; ``log_retain_hours``
  sets it, never below the VACUUM retention, as Delta requires), from the
  start of the day the retention ends, each time it writes a checkpoint.

The log is cleaned here only, never by a run. A stream resumes from the
last version it read, whose log file must still be there; Delta's clean-up,
run by whichever commit writes a checkpoint, deletes every expired file
below that checkpoint, readers or not. A run's first write to an input,
after an idle day past the retention, would delete the version its readers
stopped at (DELTA_MISSING_FILES_UNEXPECTED_VERSION). So maintenance turns
the clean-up off on each table (``delta.enableExpiredLogCleanup``), and
cleans only once every reader has read the table's latest version (the
caller's ``catch_up``, a run of every step): one metadata commit with a
checkpoint and the clean-up on (it deletes expired files below it, never
the latest version the readers stopped at, which maintenance just wrote),
one that turns the clean-up off again.

It runs under the pipeline's lock and after a complete run, so every reader
has read every data commit before files go. The caller holds the lock.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from splice.engine import fs
from splice.engine.delta_sql import detail, table_ref
from splice.engine.io import StepIO, delta_exists
from splice.engine.session import own_session
from splice.engine.settings import SettingsError, parse_number
from splice.sql.plan import SourceStep

RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
DELTA_MIN_RETAIN_HOURS = 168.0  # below it Delta's VACUUM refuses unless the check is off
LOG_RETENTION = "delta.logRetentionDuration"
FILE_RETENTION = "delta.deletedFileRetentionDuration"
LOG_CLEANUP = "delta.enableExpiredLogCleanup"
CHECKPOINT_INTERVAL = "delta.checkpointInterval"


@dataclass(frozen=True)
class MaintenancePolicy:
    """When and how much to clean. ``every_runs``: maintain after every n-th
    complete ``run_pipeline`` (0: never automatically). ``retain_hours``:
    VACUUM's retention. ``log_retain_hours``: the tables' log retention (None
    leaves Delta's 30 days)."""

    every_runs: int = 10
    retain_hours: float = DELTA_MIN_RETAIN_HOURS
    log_retain_hours: float | None = None

    @classmethod
    def from_env(cls) -> MaintenancePolicy:
        """``SPLICE_MAINTAIN_EVERY``, ``SPLICE_RETAIN_HOURS``,
        ``SPLICE_LOG_RETAIN_HOURS``, each defaulting as above."""
        log = _number("SPLICE_LOG_RETAIN_HOURS", float)
        every = _number("SPLICE_MAINTAIN_EVERY", int)
        retain = _number("SPLICE_RETAIN_HOURS", float)
        return cls(every_runs=cls.every_runs if every is None else int(every),
                   retain_hours=cls.retain_hours if retain is None else retain,
                   log_retain_hours=log)


def _number(variable: str, kind: type[int] | type[float]) -> float | None:
    """An environment variable's number (None when unset), never negative:
    a word or a sign there is a settings error naming it, not a traceback."""
    text = os.environ.get(variable, "").strip()
    if not text:
        return None
    try:
        return parse_number(text, kind)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise SettingsError(f"{variable} must be {what}, 0 or more, not {text!r}") from None


@dataclass(frozen=True)
class TableMaintenance:
    """What maintenance did to one table."""

    path: str
    files_compacted: int  # small files OPTIMIZE replaced
    files_written: int  # the files it wrote in their place


class MaintenanceFailed(Exception):
    """Maintaining one table failed; the message says which and why."""


def maintained_tables(io: StepIO) -> list[str]:
    """The Delta tables the pipeline owns and that exist."""
    pipeline = io.pipeline
    paths: list[str] = []
    for step in pipeline.steps:
        if step.id in pipeline.explain:
            continue
        if isinstance(step, SourceStep):
            paths.append(io.warehouse.dead_letter_path(pipeline.name, step.name))
            if step.format == "delta":  # the user's table, read in place
                continue
        paths.append(io.table_path(step))
    return [p for p in dict.fromkeys(paths) if delta_exists(io.spark, p)]


def maintain(io: StepIO, policy: MaintenancePolicy,
             catch_up: Callable[[], object]) -> list[TableMaintenance]:
    """Compact and vacuum every table the pipeline owns, let every reader
    read past that (``catch_up``: a run of the pipeline's steps), then clean
    the tables' logs. Runs in a session of its own: the retention check is
    switched off there only, and only when the retention is below Delta's
    minimum."""
    session = own_session(io.spark)
    if policy.retain_hours < DELTA_MIN_RETAIN_HOURS:
        session.conf.set(RETENTION_CHECK, "false")
    reports = []
    tables = maintained_tables(io)
    try:
        for path in tables:
            with _failing(path):
                _set_properties(session, path, _wanted(policy))
                metrics = session.sql(f"OPTIMIZE {table_ref(path)}").collect()[0]["metrics"]
                session.sql(f"VACUUM {table_ref(path)} RETAIN {policy.retain_hours} HOURS")
            reports.append(TableMaintenance(path, int(metrics["numFilesRemoved"]),
                                            int(metrics["numFilesAdded"])))
    finally:
        if policy.retain_hours < DELTA_MIN_RETAIN_HOURS:
            session.conf.unset(RETENTION_CHECK)  # the session may be shared (Connect)
    catch_up()
    for path in tables:
        with _failing(path):
            _clean_log(session, path)
    return reports


@contextlib.contextmanager
def _failing(path: str) -> Iterator[None]:
    """A Spark error maintaining one table as :class:`MaintenanceFailed`."""
    try:
        yield
    except (PySparkException, Py4JJavaError) as err:
        text = str(err.java_exception) if isinstance(err, Py4JJavaError) else str(err)
        first = (text.strip().splitlines() or [type(err).__name__])[0]
        raise MaintenanceFailed(f"maintenance of table {path} failed: {first[:500]}") from err


def _wanted(policy: MaintenancePolicy) -> dict[str, str]:
    """The table properties maintenance keeps: the log clean-up off (it runs
    here only) and the policy's retentions, if it sets them (the log's at
    least as long as the files', as Delta requires)."""
    wanted = {LOG_CLEANUP: "false"}
    if policy.log_retain_hours is not None:
        wanted[LOG_RETENTION] = _interval(max(policy.log_retain_hours, policy.retain_hours))
        wanted[FILE_RETENTION] = _interval(policy.retain_hours)
    return wanted


def _set_properties(session: SparkSession, path: str, wanted: dict[str, str]) -> None:
    """Set table properties unless the table has them already: a metadata
    commit, without data change, only when the policy changed."""
    properties = detail(session, path)["properties"] or {}
    if all(properties.get(k) == v for k, v in wanted.items()):
        return
    _alter(session, path, wanted)


def _alter(session: SparkSession, path: str, properties: dict[str, str]) -> None:
    settings = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    session.sql(f"ALTER TABLE {table_ref(path)} SET TBLPROPERTIES ({settings})")


def _clean_log(session: SparkSession, path: str) -> None:
    """Delta's own log clean-up, once: a commit that turns it on with a
    checkpoint at every commit (so this one writes one, and cleans expired
    files below it), then one that turns it off again."""
    _alter(session, path, {LOG_CLEANUP: "true", CHECKPOINT_INTERVAL: "1"})
    _alter(session, path, {LOG_CLEANUP: "false", CHECKPOINT_INTERVAL: "10"})


def _interval(hours: float) -> str:
    return f"interval {round(hours * 3600)} seconds"


def _counter(io: StepIO) -> str:
    return f"{io.warehouse.pipeline_path(io.pipeline.name)}/maintenance.json"


def runs_since_maintenance(io: StepIO) -> int:
    path = _counter(io)
    try:
        return int(json.loads(fs.read_text(io.spark, path))["runs_since_maintenance"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0  # none yet, or unreadable: count from here


def after_run(io: StepIO, policy: MaintenancePolicy,
              catch_up: Callable[[], object]) -> list[TableMaintenance] | None:
    """Count one complete run; maintain when it is the policy's n-th since
    the last maintenance. The caller holds the pipeline's lock."""
    if policy.every_runs <= 0:
        return None
    runs = runs_since_maintenance(io) + 1
    reports = maintain(io, policy, catch_up) if runs >= policy.every_runs else None
    fs.write_text(io.spark, _counter(io),
                  json.dumps({"runs_since_maintenance": 0 if reports is not None else runs}))
    return reports
