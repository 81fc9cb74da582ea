"""A ``splice`` command in a child process of its own process group (as
systemd runs a service), read line by line as it prints, for the fault
tests: signals to its group, outages of its store or broker, a full disk."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import ROOT

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

    def last_line(self) -> str:
        """The last line printed that is not empty."""
        return next(line for line in reversed(self.lines) if line.strip()).rstrip("\n")


def group_ended(pgid: int, seconds: float = 30) -> bool:
    """Whether every process of group ``pgid`` ends within ``seconds``: the
    JVM exits once the command's end closes its standard input."""
    from splice.processes import group_alive, wait_until

    return wait_until(lambda: not group_alive(pgid), seconds)
