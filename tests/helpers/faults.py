"""A ``splice`` command in a child process of its own process group (as
systemd runs a service), read line by line as it prints, for the fault
tests: signals to its group, outages of its store or broker, a full disk."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from splice.engine import fs
from splice.engine.io import StepIO

from tests.conftest import ROOT
from tests.helpers.crash_harness import BASE, table_rows
from tests.helpers.pipeline import append

# The fault tests' pipeline: a JSON source (a bad record a round goes to its
# dead letter), a Delta source read as a table, and a stream-table join:
# five steps, so a child run of it is short and a signal finds steps running.
# Event times are the records' own (ROWTIME is then the same in every
# warehouse).
SQL = """
CREATE STREAM customers (id INT, name STRING, ts TIMESTAMP)
  WITH (location='customers', key='id', timestamp='ts');
CREATE STREAM orders (id INT, customer_id INT, item STRING, ts TIMESTAMP)
  WITH (location='orders', format='json', key='id', timestamp='ts');
WITH customersTable AS (SELECT TABLE * FROM customers);
INSERT INTO result
SELECT STREAM customersTable.name, orders.item
FROM orders LEFT JOIN customersTable ON customersTable.id = orders.customer_id;
"""


def add_round(io: StepIO, n: int) -> None:
    """Round ``n``: two new customers, four orders of round 0's customers 1
    and 2 and of customer 3, who never comes (a null name), and a bad order.
    No order names a customer of its own round: served, the two could meet
    in either order, and the rows would depend on it."""
    def ts(seconds: int) -> str:
        return (BASE + dt.timedelta(minutes=15 * n, seconds=seconds)).isoformat()

    append(io, "customers", [{"id": 100 * n + c, "name": f"c{c}-r{n}", "ts": ts(c)}
                             for c in (1, 2)])
    append(io, "orders", [*({"id": 10 * n + i, "customer_id": 1 + i % 3, "item": f"i{n}-{i}",
                             "ts": ts(10 + i)} for i in range(4)),
                          {"id": 10 * n + 9, "customer_id": "x", "item": "bad", "ts": ts(5)}])


def every_row(io: StepIO) -> dict[str, Counter]:
    """tests/helpers/crash_harness.py's rows of every output and dead letter, the
    dead letters of an object store's warehouse included."""
    rows = table_rows(io)
    for name in io.pipeline.sources:
        path = io.warehouse.dead_letter_path(io.pipeline.name, name)
        if f"dead_letter:{name}" not in rows and fs.exists(io.spark, f"{path}/_delta_log"):
            df = io.spark.read.format("delta").load(path).drop("rejected_at", "batch_id")
            rows[f"dead_letter:{name}"] = Counter(tuple(sorted(r.asDict().items()))
                                                  for r in df.collect())
    return rows

TRACEBACKS = ("Traceback (most recent call last)", "py4j.protocol", "Py4JError",
              "Py4JJavaError", "botocore.exceptions", "\tat org.apache")


class Child:
    """``python -m splice.cli ARGS`` as the leader of a new process group."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path = ROOT) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "splice.cli", *args], cwd=cwd, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, ""):
            self.lines.append(line)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def wait_for(self, predicate: Callable[[str], bool], seconds: float = 300) -> None:
        """Wait until a line printed so far satisfies ``predicate``."""
        deadline = time.monotonic() + seconds
        while not any(predicate(line) for line in list(self.lines)):
            assert self.proc.poll() is None or any(predicate(line) for line in self.lines), (
                f"the command ended (exit {self.proc.returncode}):\n{self.text[-4000:]}")
            assert time.monotonic() < deadline, f"not printed in time:\n{self.text[-4000:]}"
            time.sleep(0.05)

    def signal_group(self, signum: int) -> None:
        """``kill -SIG -PGID``: every process of the group, the JVM included."""
        os.killpg(self.proc.pid, signum)

    def wait(self, seconds: float = 300) -> int:
        try:
            code = self.proc.wait(seconds)
        finally:
            if self.proc.poll() is None:
                self.signal_group(9)
                self.proc.wait(30)
        self._reader.join(10)
        return code

    def assert_no_traceback(self) -> None:
        shown = [t for t in TRACEBACKS if t in self.text]
        assert not shown, f"{shown} in the output:\n{self.text[-4000:]}"

    def said(self) -> str:
        """The command's message: its first line starting with ``splice: ``."""
        found = [line.rstrip("\n") for line in self.lines if line.startswith("splice: ")]
        assert found, f"no message:\n{self.text[-4000:]}"
        return found[0]

    def last_line(self) -> str:
        """The last line printed that is not empty."""
        return next(line for line in reversed(self.lines) if line.strip()).rstrip("\n")


def jvm_in_group(pgid: int) -> bool:
    """Whether a Java process (Spark's JVM, its launcher) runs in group ``pgid``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (entry / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        if int(stat[2]) == pgid and cmd.endswith(b"java"):
            return True
    return False


def group_ended(pgid: int, seconds: float = 30) -> bool:
    """Whether every process of group ``pgid`` ends within ``seconds``: the
    JVM exits once the command's end closes its standard input."""
    from splice.processes import group_alive, wait_until

    return wait_until(lambda: not group_alive(pgid), seconds)
