"""A lease cannot be lost silently (runtime/lease.py): a failed renewal is
tried again with back-off, and a holder that cannot renew in time knows it
before its lease expires, so no second holder ever writes while the first
still does. Renewals fail on purpose (``SPLICE_FAIL_LEASE_RENEWALS``,
engine/faults.py) on a real lease in a local folder through fsspec (the code
that runs on S3). No Spark."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from splice.engine.faults import RENEWAL_FAULT_ENV
from splice.runtime.holder import this_process
from splice.runtime.lease import Lease
from splice.runtime.lock import acquire


def _lease(tmp_path: Path, seconds: float) -> tuple[Lease, str]:
    where = f"file://{tmp_path}/_splice/p/run.lease"
    return Lease(where, seconds), where


def _expires(tmp_path: Path) -> float:
    (generation,) = (tmp_path / "_splice" / "p" / "run.lease").glob("*.json")
    return float(json.loads(generation.read_text())["expires"])


def test_failed_renewals_are_tried_again_until_one_goes_through(tmp_path: Path,
                                                              monkeypatch) -> None:
    monkeypatch.setenv(RENEWAL_FAULT_ENV, "3")  # the first three renewals fail
    lease, where = _lease(tmp_path, 3.0)
    acquire(lease, where, "p", wait=0)
    try:
        first = _expires(tmp_path)
        # Renewal 1 at 1 s fails, and is tried again after 0.25 s, then
        # after at most half of what is left before the deadline (2 s: a
        # third of the lease before its expiry): the 4th goes through at
        # about 1.8 s, and the holder never lost the lease.
        deadline = time.monotonic() + 6
        while _expires(tmp_path) == first:
            assert lease.lost() is None
            assert time.monotonic() < deadline, "never renewed"
            time.sleep(0.02)
        assert lease._renewals >= 4
        time.sleep(1.5)  # and renewed on schedule after that
        assert lease.lost() is None
        assert _expires(tmp_path) > time.time() + 1.0
    finally:
        lease.release()


def test_a_holder_that_cannot_renew_stops_before_anyone_takes_over(tmp_path: Path,
                                                                monkeypatch) -> None:
    """The first holder's renewals all fail. It may write while
    ``lost()`` is None; a second holder waits for the lease and takes it
    once it expired. Every moment the first could still write comes before
    the moment the second got the lease, a third of the lease earlier."""
    monkeypatch.setenv(RENEWAL_FAULT_ENV, "all")
    first, where = _lease(tmp_path, 3.0)
    acquire(first, where, "p", wait=0, owner="the first")
    taken: list[float] = []

    def second() -> None:
        rival, _ = _lease(tmp_path, 3.0)
        acquire(rival, where, "p", wait=30, owner="the second")
        taken.append(time.time())
        rival.release()

    thread = threading.Thread(target=second)
    thread.start()
    last_write = time.time()
    while first.lost() is None:  # the first "writes" while it holds
        last_write = time.time()
        time.sleep(0.01)
    reason = first.lost()
    thread.join()
    first.release()
    assert reason is not None and reason.startswith(
        "its lease could not be renewed before its deadline (")
    assert "renewal" in reason and "failed on purpose" in reason
    assert taken, "the second holder never got the lease"
    assert taken[0] - last_write >= 0.8, (taken[0], last_write)  # a third of 3 s, and more


def test_a_holder_whose_lease_was_taken_over_knows(tmp_path: Path) -> None:
    """A holder frozen past its expiry (its renewals late) finds another
    generation newest at its next renewal: lost, naming the new holder."""
    lease, where = _lease(tmp_path, 0.9)
    acquire(lease, where, "p", wait=0)
    lease._stop.set()  # frozen: no renewal from now on
    lease._thread.join()  # type: ignore[union-attr]
    time.sleep(1.0)  # expired
    other, _ = _lease(tmp_path, 30.0)
    assert other.try_acquire(this_process("the other"))
    try:
        assert "not renewed before its deadline" in (lease.lost() or "")
        with pytest.raises(Exception, match="another holder took its lease over"):
            lease._renew_once(lease._mine or 0, this_process())
    finally:
        other.release()
        lease.release()
