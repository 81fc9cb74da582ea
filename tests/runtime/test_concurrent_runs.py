"""Two runs of one pipeline on one warehouse: the second waits for the first
(or, told not to wait, says who runs it), and nothing breaks or doubles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from splice.resources.warehouse import WarehouseResource
from splice.runtime.lock import pipeline_lock

from splice.cli import main
from tests.conftest import ROOT, child_env

pytestmark = pytest.mark.spark

SQL = """
CREATE STREAM events (id INT, v STRING) WITH (location='events', format='json', key='id');
INSERT INTO out SELECT STREAM events.id, events.v FROM events;
"""
ROWS = 300


def _pipeline(tmp_path: Path) -> tuple[Path, Path]:
    sql = tmp_path / "c.sql"
    sql.write_text(SQL)
    warehouse = tmp_path / "wh"
    events = warehouse / "events"
    events.mkdir(parents=True)
    with open(events / "part-0.json", "w") as fh:
        for i in range(ROWS):
            fh.write(json.dumps({"id": i, "v": f"r{i}"}) + "\n")
    return sql, warehouse


def test_two_overlapping_runs_end_well_and_write_once(tmp_path: Path, spark) -> None:
    sql, warehouse = _pipeline(tmp_path)
    env = child_env(SPLICE_MAINTAIN_EVERY="0", PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "splice.cli", "run", str(sql),
               "--warehouse", str(warehouse), "--wait", "900"]
    runs = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=1200) for p in runs]
    results = [(p.returncode, out, err) for p, (out, err) in zip(runs, outputs, strict=True)]
    for code, _, err in results:
        assert code == 0, err[-2000:]
        assert "Traceback" not in err and "CONCURRENT" not in err, err[-2000:]
    written = sorted(next(line for line in out.splitlines() if "[2/2]" in line and "rows" in line)
                     for _, out, _ in results)
    # One run wrote the rows; the other waited, then found nothing new.
    assert [w.split(": ")[1].split(" rows")[0] for w in written] == ["0", str(ROWS)]
    rows = spark.read.format("delta").load(str(warehouse / "out")).collect()
    assert sorted((r["id"], r["v"]) for r in rows) == [(i, f"r{i}") for i in range(ROWS)]


def test_a_run_told_not_to_wait_names_the_holder(tmp_path: Path, spark, capsys) -> None:
    sql, warehouse = _pipeline(tmp_path)
    held, done = threading.Event(), threading.Event()

    def holder() -> None:
        with pipeline_lock(WarehouseResource(root=str(warehouse)), "c", owner="splice run c.sql"):
            held.set()
            done.wait(60)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait()
    try:
        assert main(["run", str(sql), "--warehouse", str(warehouse)]) == 1
    finally:
        done.set()
        thread.join()
    err = capsys.readouterr().err
    assert f"splice: pipeline 'c' is being run by pid {os.getpid()} on " in err
    assert f"(splice run c.sql); lock {warehouse}/_splice/c/run.lock. Not started: " in err
    assert "Traceback" not in err
    assert not (warehouse / "out").exists()  # nothing ran
    assert main(["run", str(sql), "--warehouse", str(warehouse)]) == 0  # free again
    rows = spark.read.format("delta").load(str(warehouse / "out")).collect()
    assert sorted(r["id"] for r in rows) == list(range(ROWS))
