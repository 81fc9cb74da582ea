"""splice run's line for a step that runs long (splice/cli/heartbeat.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from splice.engine.progress import RunProgress, live

from splice.cli import heartbeat
from tests.conftest import ROOT


def test_a_long_step_says_its_time_rows_and_rate(monkeypatch) -> None:
    """The heartbeat reads the step's query progress as the registry lists
    it: the input rows of its micro-batches so far, and their rate."""
    monkeypatch.setattr(heartbeat, "FIRST", 0.0)
    progress = RunProgress()
    progress.watch("p", "big", query=None)  # type: ignore[arg-type]
    progress.observe([{"batchId": 0, "numInputRows": 1500},
                      {"batchId": 1, "numInputRows": 500}, {"batchId": 1, "numInputRows": 500}])
    lines: list[str] = []
    heart = heartbeat.Heartbeat("p", lines.append)
    heart.started("big", "[3/5] join        big")
    heart.running["big"] = ("[3/5] join        big", time.monotonic() - 4.0, 0.0)
    heart.beat()
    assert len(lines) == 1 and lines[0].startswith("[3/5] join        big: running 4s, 2,000 rows")
    assert "rows/s)" in lines[0]
    heart.beat()  # the next line is EVERY seconds later
    assert len(lines) == 1
    progress.finish(type("Done", (), {"recentProgress": []})())  # type: ignore[arg-type]
    assert live("p", "big") is None
    heart.ended("big")
    assert heart.running == {}


@pytest.mark.spark
def test_splice_run_prints_a_line_while_a_step_runs(tmp_path: Path, spark, capsys,
                                                     monkeypatch) -> None:
    """A real run whose join is held mid-write: its 'running' line comes
    while it runs, after its start line and before its end line."""
    from splice.engine.faults import PAUSE_ENV, PAUSE_FILE_ENV

    from splice.cli import main

    monkeypatch.setattr(heartbeat, "FIRST", 0.5)
    flag = tmp_path / "go"
    monkeypatch.setenv(PAUSE_ENV, "output-committed@orders_enriched")
    monkeypatch.setenv(PAUSE_FILE_ENV, str(flag))
    done: list[int] = []
    run = threading.Thread(target=lambda: done.append(main([
        "demo", "--warehouse", str(tmp_path / "wh"),
        "--pipeline", str(ROOT / "pipelines" / "demo")])))
    run.start()
    deadline = time.monotonic() + 300
    while not Path(f"{flag}.reached").exists():
        assert run.is_alive() and time.monotonic() < deadline, "never paused"
        time.sleep(0.1)
    time.sleep(1.5)
    flag.write_text("go")
    run.join(300)
    assert done == [0]
    lines = capsys.readouterr().out.splitlines()
    label = "[6/7] join        orders_enriched"
    start = lines.index(f"{label} ...")
    running = [n for n, line in enumerate(lines) if line.startswith(f"{label}: running ")]
    end = next(n for n, line in enumerate(lines) if line.startswith(f"{label}: 3 rows written"))
    assert running and start < running[0] < end, lines
