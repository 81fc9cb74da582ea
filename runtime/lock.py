"""One run of a pipeline at a time, on one warehouse.

Two runs of one pipeline that overlap share its checkpoints and tables and
both fail (``CONCURRENT_STREAM_LOG_UPDATE``, ``DELTA_PROTOCOL_CHANGED``).
Whoever runs a pipeline's steps (``splice run``, a Dagster step, maintenance)
holds its lock, which is freed when the holder dies:

- on a local folder, an OS lock (``fcntl.flock``) on
  ``<warehouse>/_splice/<pipeline>/run.lock``, which the kernel drops when
  the holding process ends, ``kill -9`` included;
- on a URI (``s3a://``, ``file://``, ...), a lease under
  ``_splice/<pipeline>/run.lease/`` (``splice.runtime.lease``) that its holder renews
  from a background thread and that others take over once it expired.

Either way the lock names its holder (host, pid, since when, the command or
the Dagster run), and a run that finds it taken says who has it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from typing import Protocol

from splice.engine.settings import SettingsError, Warehouse, parse_number
from splice.runtime.holder import Holder, this_process
from splice.runtime.lease import Lease

POLL_SECONDS = 0.5
LEASE_SECONDS = 60.0
LEASE_ENV = "SPLICE_LOCK_LEASE_SECONDS"


def dagster_lock_wait() -> float:
    """How long a Dagster step waits for a run that holds its pipeline's lock:
    ``SPLICE_DAGSTER_LOCK_WAIT`` seconds, an hour by default (a sensor's or a
    schedule's run should queue behind a ``splice run``, not fail)."""
    return float(os.environ.get("SPLICE_DAGSTER_LOCK_WAIT", "3600"))


class LockBusy(Exception):
    """The pipeline is being run by someone else; the message names them."""

    def __init__(self, pipeline: str, where: str, holder: Holder | None, waited: float) -> None:
        self.holder = holder
        who = holder.describe() if holder else "another run (it has not said who yet)"
        after = f" after waiting {waited:.0f}s" if waited >= 1 else ""
        super().__init__(
            f"pipeline '{pipeline}' is being run by {who}; lock {where}. Not started{after}: "
            f"run again when it ends, or wait for it with --wait SECONDS")


class Lock(Protocol):
    def try_acquire(self, holder: Holder) -> bool: ...
    def holder(self) -> Holder | None: ...
    def release(self) -> None: ...

    def lost(self) -> str | None:
        """Why this holder can no longer be sure it holds the lock (None
        while it can): checked before every write (runtime/tenure.py)."""
        ...


class FileLock:
    """An OS lock on a local file; the file's content names the holder."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def try_acquire(self, holder: Holder) -> bool:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.to_json().encode(), 0)
        self._fd = fd
        return True

    def holder(self) -> Holder | None:
        try:
            with open(self.path) as fh:
                return Holder.parse(fh.read())
        except OSError:
            return None

    def lost(self) -> str | None:
        """The kernel keeps the lock for as long as the file is open; but a
        lock file removed or replaced (someone cleaning ``_splice/``) lets a
        second run lock a new file of the same name while this one writes."""
        if self._fd is None:
            return None
        try:
            same = os.stat(self.path).st_ino == os.fstat(self._fd).st_ino
        except OSError:
            same = False
        return None if same else f"its lock file {self.path} was removed or replaced"

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)  # the file stays (removing it races the next locker)
        finally:
            os.close(fd)  # closing drops the lock


def is_local(path: str) -> bool:
    """A plain path (no scheme) gets the OS lock; any URI gets the lease."""
    return "://" not in path and not path.startswith("file:")


def lease_seconds_from_env() -> float:
    """How long a lease on a URI warehouse lasts without a renewal:
    ``SPLICE_LOCK_LEASE_SECONDS`` (the CLI's and Dagster's processes read it
    alike), 60 by default. It is how long a run killed while holding the
    lock blocks the next one; the holder renews every third of it, so a
    holder stalled longer than that (a long garbage collection, a frozen
    host) would lose its lease."""
    text = os.environ.get(LEASE_ENV, "").strip()
    if not text:
        return LEASE_SECONDS
    try:
        return float(parse_number(text, float, least=0, above=True))
    except ValueError:
        raise SettingsError(f"{LEASE_ENV} must be a number of seconds above 0, "
                            f"not {text!r}") from None


def lock_for(warehouse: Warehouse, pipeline: str, lease_seconds: float) -> tuple[Lock, str]:
    folder = warehouse.pipeline_path(pipeline)
    if is_local(folder):
        path = f"{folder}/run.lock"
        return FileLock(path), path
    path = f"{folder}/run.lease"
    return Lease(path, lease_seconds), path


def acquire(lock: Lock, where: str, pipeline: str, wait: float | None,
            owner: str | None = None) -> Holder:
    """Take ``lock`` as this process (``owner`` says what it runs), waiting
    ``wait`` seconds for a holder to finish (None: as long as it takes, 0:
    not at all); past that, :class:`LockBusy` names the holder."""
    me = this_process(owner)
    start = time.monotonic()
    while not lock.try_acquire(me):
        waited = time.monotonic() - start
        if wait is not None and waited >= wait:
            raise LockBusy(pipeline, where, lock.holder(), waited)
        remaining = POLL_SECONDS if wait is None else max(0.0, min(POLL_SECONDS, wait - waited))
        time.sleep(remaining)
    return me


@contextlib.contextmanager
def pipeline_lock(warehouse: Warehouse, pipeline: str, wait: float | None = None,
                  owner: str | None = None,
                  lease_seconds: float | None = None) -> Iterator[Holder]:
    """Hold pipeline ``pipeline``'s lock for the block (:func:`acquire`).
    ``lease_seconds`` (a URI warehouse's lease) defaults to
    :func:`lease_seconds_from_env`, read on every warehouse so a bad value
    is found wherever it is set. A writer holds it through
    ``splice.runtime.tenure.hold``, which also claims the pipeline's names and
    checks the lock before every write."""
    if lease_seconds is None:
        lease_seconds = lease_seconds_from_env()
    lock, where = lock_for(warehouse, pipeline, lease_seconds)
    with held_lock(lock, where, pipeline, wait, owner) as me:
        yield me


@contextlib.contextmanager
def held_lock(lock: Lock, where: str, pipeline: str, wait: float | None = None,
              owner: str | None = None) -> Iterator[Holder]:
    """Hold ``lock`` (pipeline ``pipeline``'s, at ``where``) for the block."""
    me = acquire(lock, where, pipeline, wait, owner)
    try:
        yield me
    finally:
        lock.release()
