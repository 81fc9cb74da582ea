"""``splice run`` stopped by SIGTERM or SIGINT (Ctrl-C), to the process or
to its whole group (systemd's stop).

The first such signal stops the run where it is: no further step starts,
and the Spark jobs of the steps running are cancelled (again every 0.2 s
until their queries have ended: a query between two micro-batches starts
another job), so each such step's query fails in its micro-batch in flight,
before its checkpoint's commit and before the run writes the step's input
markers. That is the state a crashed run leaves (the commit protocol the
kill-point tests prove, tests/crash/test_crash_safety.py), without the crash: the
lock is released on the way out, and the next run goes on from each step's
last commit, redoing the cut micro-batch once. The command then prints one
line and exits 128 + the signal's number (130 for SIGINT, 143 for
SIGTERM), the shell's convention for a command a signal stopped.

Spark's JVM ignores both signals (``stop_signals_ignored_by_children``), so
a signal to the group does not stop Spark under the run. Under Spark
Connect the steps running are not cut (the server's jobs are not this
process's to cancel): they finish, and no further step starts.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Any

from splice.processes import say_now, stopped_code


class Stopped(Exception):
    """The run was stopped by a signal before it was done."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped by {signal_name(signum)}")

    @property
    def code(self) -> int:
        return stopped_code(self.signum)


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


class RunStopper:
    """What a stop signal does to a run: :meth:`request` is the signal's
    handler, :meth:`check` raises :class:`Stopped` once one came (the run's
    progress calls it as each step starts), :meth:`attach` gives it the
    session whose jobs it cancels."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.running: set[str] = set()
        self._spark: Any = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._cancelling: threading.Thread | None = None

    def request(self, signum: int) -> None:
        if self.signum is not None:
            return  # already stopping
        self.signum = signum
        say_now(f"\n{signal_name(signum)}: stopping the run: no further step starts, and the "
                f"steps running stop where they are (their Spark jobs cancelled) ...\n")
        self._start_cancelling()

    def attach(self, spark: Any) -> None:
        self._spark = spark
        self._start_cancelling()
        self.check()

    def check(self) -> None:
        if self.signum is not None:
            raise Stopped(self.signum)

    def step_started(self, step_id: str) -> None:
        self.check()
        with self._lock:
            self.running.add(step_id)

    def step_ended(self, step_id: str) -> None:
        with self._lock:
            self.running.discard(step_id)

    def close(self) -> None:
        self._done.set()
        if self._cancelling is not None:
            self._cancelling.join(5)

    def _start_cancelling(self) -> None:
        if self.signum is None or self._spark is None or self._cancelling is not None:
            return
        context = _context(self._spark)
        if context is None:  # Spark Connect: the server's jobs
            return
        self._cancelling = threading.Thread(target=self._cancel, args=(context,),
                                            name="splice-stop", daemon=True)
        self._cancelling.start()

    def _cancel(self, context: Any) -> None:
        while True:
            with contextlib.suppress(Exception):  # the JVM on its way out: nothing to cancel
                context.cancelAllJobs()
            if self._done.wait(0.2):
                return

    def message(self, err: Stopped) -> str:
        cut = sorted(self.running)
        where = (f"step{'s' if len(cut) > 1 else ''} {', '.join(cut)} stopped where "
                 f"{'they were' if len(cut) > 1 else 'it was'}, before "
                 f"{'their' if len(cut) > 1 else 'its'} next commit"
                 if cut else "no step was running")
        return (f"splice: stopped by {signal_name(err.signum)} ({where}); the pipeline's "
                f"lock is released. A rerun is safe: it goes on from each step's last commit "
                f"(exit {err.code})")


def _context(spark: Any) -> Any:
    """The session's SparkContext; None under Spark Connect."""
    from splice.engine.session import is_connect

    return None if is_connect(spark) else spark.sparkContext
