"""The server processes this project starts (the Kafka broker, the schema
registry, the Spark cluster, the Spark Connect server): waiting for one to end, ending one, and
their scripts' ``start|stop [FOLDER]`` command line; and how a Splice
command that starts Spark takes SIGTERM and SIGINT."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path


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


def wait_until(done: Callable[[], bool], seconds: float, step: float = 0.25) -> bool:
    """Wait up to ``seconds`` for ``done()``; whether it came."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


def wait_gone(pid: int, seconds: float, step: float = 0.25) -> bool:
    """Wait up to ``seconds`` for ``pid`` to end; whether it did."""
    return wait_until(lambda: gone(pid), seconds, step)


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is still running (zombies, dead
    and waiting to be reaped, do not count). Read from /proc where there is
    one; elsewhere, whether the group takes a signal at all."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while we looked
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def end(pid: int, seconds: float, group: bool = False) -> bool:
    """SIGTERM ``pid`` (its whole process group with ``group``), and SIGKILL
    it if it has not ended after ``seconds``; False when it was not running
    (a zombie, dead but not yet reaped, is not running).
    With ``group`` it returns once every process of the group has ended, not
    only its leader: a signal to a group reaches its processes one by one,
    and a server's JVM under its script could outlive the script by a
    moment (seen once under load: the leader gone, its child not yet)."""
    kill = os.killpg if group else os.kill

    def ended() -> bool:  # the leader first: our own child is reaped there
        return gone(pid) and not (group and group_alive(pid))

    if ended():  # a zombie takes a signal, but nothing was running
        return False
    try:
        kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    if not wait_until(ended, seconds):
        with contextlib.suppress(ProcessLookupError):
            kill(pid, signal.SIGKILL)
        wait_until(ended, 5)
    return True


def server_main(argv: list[str] | None, *, script: str, what: str, default_folder: Path,
                start: Callable[[Path], str], stop: Callable[[Path], bool],
                error: type[Exception], more: dict[str, Callable[[], str]] | None = None
                ) -> int:
    """``script start|stop [FOLDER]``: start prints where the server
    listens, stop whether one was running; ``more`` adds commands of no
    folder (their result printed). A failure is one line, exit 1."""
    args = list(sys.argv[1:] if argv is None else argv)
    commands = ("start", "stop", *(more or {}))
    if not args or args[0] not in commands:
        print(f"usage: {script} {'|'.join(commands)} [FOLDER]", file=sys.stderr)
        return 2
    folder = Path(args[1]) if len(args) > 1 else default_folder
    try:
        if args[0] == "start":
            print(start(folder))
        elif args[0] == "stop":
            print("stopped" if stop(folder) else f"no {what} running in {folder.resolve()}")
        else:
            print((more or {})[args[0]]())
    except error as err:
        print(f"splice: {err}", file=sys.stderr)
        return 1
    return 0


# -- a Splice command stopped by SIGTERM or Ctrl-C ------------------------------
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stopped_code(signum: int) -> int:
    """The exit code of a command a signal stopped before it was done: the
    shell's 128 + the signal's number (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + signum


@contextlib.contextmanager
def stop_signals_ignored_by_children() -> Iterator[None]:
    """Processes started inside (Spark's JVM) ignore SIGTERM and SIGINT.

    systemd's stop, and a ``kill -TERM -PGID``, signal every process of the
    group: the JVM's shutdown hook then stopped Spark under the Python
    side, whose own clean stop failed with a Py4J traceback. A signal a
    process ignores when it starts a program stays ignored in the program
    (the JVM leaves an ignored SIGTERM, SIGINT or SIGHUP alone, as ``nohup``
    relies on; PySpark has its JVM ignore SIGINT so), so the JVM outlives
    the signal, and this process stops Spark cleanly. The JVM still ends
    with this process: it exits when its standard input, a pipe from here,
    closes. Handlers a signal had are restored after. A signal that comes
    while the JVM is being launched (a few seconds) is ignored too."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers; nothing to do
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def on_stop_signals(handler: Callable[[int], None]) -> Iterator[None]:
    """``handler(signum)`` on SIGTERM or SIGINT inside (in the main thread,
    between two Python instructions); the handlers before, after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, lambda signum, _frame: handler(signum))
                for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def say_now(text: str) -> None:
    """Print ``text`` from a signal handler: straight to the file, since the
    handler may have interrupted a ``print`` of the main thread (a buffered
    stream refuses a reentrant write)."""
    with contextlib.suppress(OSError, ValueError):
        os.write(sys.stdout.fileno(), text.encode())
