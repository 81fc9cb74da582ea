"""A line for each step that runs long, while it runs.

``splice run`` prints a line when a step starts and when it ends; a step
that reads a large backlog may run minutes in between. Every
:data:`FIRST` seconds, then every :data:`EVERY`, the heartbeat prints, for
each step still running, how long it has run and the input rows its query
has reported so far with their rate (``engine/progress.live``: known after
each micro-batch; a step in its first micro-batch shows its time only).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from splice.engine.progress import live

FIRST = 5.0
EVERY = 10.0


def running_line(label: str, seconds: float, rows: int | None) -> str:
    line = f"{label}: running {seconds:.0f}s"
    if rows:
        line += f", {rows:,} rows read ({rows / max(seconds, 0.001):,.0f} rows/s)"
    return line


class Heartbeat:
    """The steps running now (by id, with their label and start time)."""

    def __init__(self, pipeline: str, say: Callable[[str], None]) -> None:
        self.pipeline = pipeline
        self.say = say
        self.running: dict[str, tuple[str, float, float]] = {}
        self._lock = threading.Lock()

    def started(self, step_id: str, label: str) -> None:
        now = time.monotonic()
        with self._lock:
            self.running[step_id] = (label, now, now + FIRST)

    def ended(self, step_id: str) -> None:
        with self._lock:
            self.running.pop(step_id, None)

    def beat(self) -> None:
        now = time.monotonic()
        with self._lock:
            due = [(i, v) for i, v in self.running.items() if v[2] <= now]
            for step_id, (label, since, _) in due:
                self.running[step_id] = (label, since, now + EVERY)
        for step_id, (label, since, _) in due:
            progress = live(self.pipeline, step_id)
            self.say(running_line(label, now - since,
                                  progress.rows_read if progress is not None else None))


@contextmanager
def beating(pipeline: str, say: Callable[[str], None]) -> Iterator[Heartbeat]:
    """A :class:`Heartbeat` that beats in a thread of its own for the block."""
    heart = Heartbeat(pipeline, say)
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.5):
            heart.beat()

    thread = threading.Thread(target=loop, name="splice-heartbeat", daemon=True)
    thread.start()
    try:
        yield heart
    finally:
        stop.set()
        thread.join()
