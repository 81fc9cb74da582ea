"""Waiting for a server process this project started to end."""

from __future__ import annotations

import contextlib
import os
import time


def gone(pid: int) -> bool:
    """Whether ``pid`` has ended. Our own child is reaped first: until its
    exit status is collected it stays a zombie, which ``kill 0`` still
    finds (a stop then waited its whole timeout for nothing)."""
    with contextlib.suppress(ChildProcessError):  # not our child: its parent reaps it
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_gone(pid: int, seconds: float, step: float = 0.25) -> bool:
    """Wait up to ``seconds`` for ``pid`` to end; whether it did."""
    deadline = time.monotonic() + seconds
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True
