"""Maintenance keeps a pipeline's tables small however many runs it makes,
and the streams that read them lose and repeat nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from splice.runtime.maintenance import MaintenancePolicy, maintained_tables
from splice.runtime.runner import run_pipeline

from tests.helpers.pipeline import append, make_io, output_rows

pytestmark = pytest.mark.spark

SQL = """
CREATE STREAM events (id INT, v STRING) WITH (location='events', format='json', key='id');
INSERT INTO out SELECT STREAM events.id, events.v FROM events;
"""

# Three maintenance cycles: after the second a table holds what it holds
# after any later one, so more runs add minutes, not evidence; nor does a
# longer cycle (every 10 runs, 30 runs, took twice as long to prove the
# same). Without compaction, vacuum and log clean-up the bounds below fail
# (a data file and a commit or more per run).
EVERY = 5
RUNS = 3 * EVERY
TWO_DAYS = 2 * 24 * 3600


def _data_files(table: str) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(table):
        dirs[:] = [d for d in dirs if d != "_delta_log"]
        found += [os.path.join(folder, f) for f in files if f.endswith(".parquet")]
    return found


def _log_files(table: str) -> list[str]:
    log = os.path.join(table, "_delta_log")
    return [n for n in os.listdir(log) if not n.startswith(".") and n != "_staged_commits"]


def _age_logs(table: str, seconds: int) -> None:
    """Make a table's log look ``seconds`` older, as if the runs so far had
    happened days ago (Delta deletes log entries from before the day its log
    retention ends, never today's)."""
    log = os.path.join(table, "_delta_log")
    for name in os.listdir(log):
        path = os.path.join(log, name)
        stat = os.stat(path)
        os.utime(path, (stat.st_atime - seconds, stat.st_mtime - seconds))


def test_three_maintenance_cycles_leave_few_files_and_every_row_once(spark, warehouse) -> None:
    io = make_io(spark, warehouse, SQL, name="m")
    policy = MaintenancePolicy(every_runs=EVERY, retain_hours=0, log_retain_hours=0)
    expected: list[tuple] = []
    tables: list[str] = []
    start = time.monotonic()
    for i in range(RUNS):
        if i % EVERY == EVERY - 1:  # the run that ends with maintenance: the runs before are old
            for table in tables:
                _age_logs(table, TWO_DAYS)
        append(io, "events", [{"id": i, "v": f"r{i}"}])
        run_pipeline(io.pipeline, io, maintenance=policy)
        expected.append((i, f"r{i}"))
        tables = tables or maintained_tables(io)
        if i % EVERY == 0 and i:  # the first run after a maintenance read correctly
            assert output_rows(io, "out", "id", "v") == sorted(expected, key=repr)
    elapsed = time.monotonic() - start
    print(f"\n{RUNS} runs with maintenance every {EVERY}: {elapsed:.1f}s")

    assert output_rows(io, "out", "id", "v") == sorted(expected, key=repr)
    assert sorted(Path(t).name for t in tables) == ["events", "events", "out"]
    for table in tables:  # the ingested source, its dead letters, the output
        live = spark.sql(f"DESCRIBE DETAIL delta.`{table}`").collect()[0]["numFiles"]
        assert live <= 1, (table, live)  # compacted
        # On disk, besides: at most the empty file of the catch-up's empty
        # append (runtime/maintenance.py), which no version references and
        # the next VACUUM removes.
        data = _data_files(table)
        assert len(data) <= 2, (table, data)
        # Since the last maintenance's checkpoint: its own commits and the
        # runs' after it, a checkpoint or two, and a checksum file per commit
        # if Delta writes them. Delta's clean-up removed the other runs'
        # commits (15 of them, and maintenance's, without it).
        log = _log_files(table)
        commits = [n for n in log if n.endswith(".json")]
        assert len(commits) <= 12 and len(log) <= 30, (table, sorted(log))
    count = spark.read.format("delta").load(warehouse.output_path("out")).count()
    assert count == RUNS


def test_maintenance_leaves_user_delta_sources_alone(spark, warehouse) -> None:
    """A Delta source is the user's table, read in place: not compacted, not
    vacuumed."""
    io = make_io(spark, warehouse, """
        CREATE STREAM src (id INT) WITH (location='src', key='id');
        INSERT INTO copy SELECT STREAM src.id FROM src;
    """, name="d")
    for i in range(3):
        append(io, "src", [{"id": i}])
        run_pipeline(io.pipeline, io, maintenance=MaintenancePolicy(every_runs=3))
    src = warehouse.source_path("src")
    assert len(_data_files(src)) == 3
    assert sorted(Path(t).name for t in maintained_tables(io)) == ["copy", "src"]
    assert [p for p in maintained_tables(io) if p == src] == []
    assert len(_data_files(warehouse.output_path("copy"))) == 1 + 3  # compacted, kept 7 days
    assert output_rows(io, "copy", "id") == [(0,), (1,), (2,)]
