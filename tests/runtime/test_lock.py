"""The pipeline lock: an OS lock on local folders, a lease on object stores
(tested here on a local folder through fsspec's ``file://``, the same code
that runs against an object store; tests/engine/test_s3.py runs it on S3). No
Spark: the lock is plain files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from splice.engine.settings import SettingsError
from splice.resources.warehouse import WarehouseResource
from splice.runtime.lease import Lease
from splice.runtime.lock import (
    LEASE_ENV,
    LockBusy,
    held_lock,
    lease_seconds_from_env,
    pipeline_lock,
)

from tests.conftest import ROOT

HOLD = """
import sys, time
sys.path.insert(0, {root!r})
from tests.runtime.test_lock import locker
with locker({root_wh!r}, wait=0, owner="the holder", lease_seconds=1.5):
    print("held", flush=True)
    time.sleep(600)
"""


def locker(root: str, wait: float | None = None, owner: str | None = None,
           lease_seconds: float | None = None):
    """Pipeline 'p''s lock on ``root``: the pipeline lock of a local folder
    (the OS lock), or, for a ``file://`` root, a lease in the folder the
    pipeline lock of an object store would use (every local spelling of a
    warehouse is one folder and takes the OS lock: tests/engine/test_identity.py)."""
    if not root.startswith("file://"):
        return pipeline_lock(WarehouseResource(root=root), "p", wait=wait, owner=owner,
                             lease_seconds=lease_seconds)
    where = f"{root}/_splice/p/run.lease"
    seconds = lease_seconds_from_env() if lease_seconds is None else lease_seconds
    return held_lock(Lease(where, seconds), where, "p", wait, owner)


def _hold_in_subprocess(root: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLD.format(root=str(ROOT), root_wh=root)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def _busy(root: str, wait: float = 0) -> LockBusy:
    with pytest.raises(LockBusy) as caught, locker(root, wait=wait):
        pass
    return caught.value


@pytest.mark.parametrize("scheme", ["", "file://"])
def test_a_second_holder_is_refused_with_the_holder_named(tmp_path: Path, scheme: str) -> None:
    warehouse = f"{scheme}{tmp_path}"
    # A 3 s lease renewed every second: a 1 s lease expired once when the
    # fast subset's other worker held both cores (a renewal came too late).
    with locker(warehouse, owner="dagster run 1234", lease_seconds=3.0) as me:
        time.sleep(4.0 if scheme else 0)  # past the lease's first expiry: it was renewed
        err = _busy(warehouse)
        assert err.holder == me
        lock = "run.lease" if scheme else "run.lock"
        assert str(err) == (
            f"pipeline 'p' is being run by pid {os.getpid()} on {me.host} since {me.since} "
            f"(dagster run 1234); lock {scheme}{tmp_path}/_splice/p/{lock}. Not started: "
            "run again when it ends, or wait for it with --wait SECONDS")
    with locker(warehouse, wait=0) as again:
        assert again.command != "dagster run 1234"


@pytest.mark.parametrize("scheme", ["", "file://"])
def test_a_waiting_run_starts_when_the_holder_ends(tmp_path: Path, scheme: str) -> None:
    warehouse = f"{scheme}{tmp_path}"
    order: list[str] = []
    held = threading.Event()

    def first() -> None:
        with locker(warehouse):
            held.set()
            time.sleep(1.0)
            order.append("first done")

    thread = threading.Thread(target=first)
    thread.start()
    held.wait()
    with locker(warehouse, wait=30):
        order.append("second started")
    thread.join()
    assert order == ["first done", "second started"]


def test_a_lock_held_by_a_killed_process_is_free(tmp_path: Path) -> None:
    warehouse = str(tmp_path)
    proc = _hold_in_subprocess(str(tmp_path))
    try:
        err = _busy(warehouse)
        assert err.holder is not None and err.holder.pid == proc.pid
        assert err.holder.command == "the holder"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with locker(warehouse, wait=0) as me:  # at once: the kernel freed it
        assert me.pid == os.getpid()


def test_a_lease_of_a_killed_process_is_taken_over_once_expired(tmp_path: Path) -> None:
    warehouse = f"file://{tmp_path}"
    proc = _hold_in_subprocess(f"file://{tmp_path}")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    err = _busy(warehouse)  # not renewed any more, but not expired yet
    assert err.holder is not None and err.holder.pid == proc.pid
    start = time.monotonic()
    with locker(warehouse, wait=30) as me:
        assert me.pid == os.getpid()
        assert time.monotonic() - start < 3.0  # the 1.5 s lease, and no longer
        names = sorted(os.listdir(tmp_path / "_splice" / "p" / "run.lease"))
        assert names == ["000000000001.json"]  # the dead holder's generation went
        content = json.loads((tmp_path / "_splice/p/run.lease" / names[0]).read_text())
        assert content["pid"] == os.getpid() and content["released"] is False


def test_an_expired_lease_is_taken_over_and_a_live_one_is_not(tmp_path: Path) -> None:
    warehouse = f"file://{tmp_path}"
    folder = tmp_path / "_splice" / "p" / "run.lease"
    folder.mkdir(parents=True)
    dead = {"host": "elsewhere", "pid": 424242, "since": "2026-01-01T00:00:00Z",
            "command": "splice run p", "released": False}
    (folder / "000000000007.json").write_text(json.dumps({**dead, "expires": time.time() + 60}))
    err = _busy(warehouse)
    assert err.holder is not None and err.holder.describe() == \
        "pid 424242 on elsewhere since 2026-01-01T00:00:00Z (splice run p)"
    (folder / "000000000007.json").write_text(json.dumps({**dead, "expires": time.time() - 1}))
    with locker(warehouse, wait=0):
        assert sorted(os.listdir(folder)) == ["000000000008.json"]
    released = json.loads((folder / "000000000008.json").read_text())
    assert released["released"] is True and released["pid"] == os.getpid()


def test_a_renewal_replaces_the_lease_whole(tmp_path: Path) -> None:
    """A renewal rewrote the lease's generation in place, and a contender
    that read it in that moment found it empty and named nobody ("it has
    not said who yet", seen once in a whole suite run). A renewal now
    replaces the file whole (a new file renamed over it): the file a reader
    opens is never the one being written."""
    warehouse = f"file://{tmp_path}"
    with locker(warehouse, owner="dagster run 1234", lease_seconds=0.3) as me:
        (generation,) = (tmp_path / "_splice" / "p" / "run.lease").glob("*.json")
        first = generation.stat().st_ino, json.loads(generation.read_text())["expires"]
        deadline = time.monotonic() + 10
        while json.loads(generation.read_text())["expires"] == first[1]:
            assert time.monotonic() < deadline, "the lease was not renewed"
            time.sleep(0.02)
        assert generation.stat().st_ino != first[0]
        assert _busy(warehouse).holder == me


def test_the_lease_lasts_what_the_environment_says(tmp_path: Path, monkeypatch) -> None:
    """SPLICE_LOCK_LEASE_SECONDS sets how long a URI warehouse's lease runs
    without a renewal (the time a killed holder blocks the next run); a bad
    value is one message naming the variable, on any warehouse."""
    folder = tmp_path / "_splice" / "p" / "run.lease"
    for text, seconds in (("", 60.0), ("7.5", 7.5)):
        monkeypatch.setenv(LEASE_ENV, text)
        with locker(f"file://{tmp_path}", wait=0):
            [name] = os.listdir(folder)
            lease = json.loads((folder / name).read_text())
            assert lease["expires"] - time.time() == pytest.approx(seconds, abs=1.0)
    for text in ("a minute", "0", "-5"):
        monkeypatch.setenv(LEASE_ENV, text)
        for root in (str(tmp_path / "local"), f"file://{tmp_path}"):
            with pytest.raises(SettingsError) as err, \
                    pipeline_lock(WarehouseResource(root=root), "p", wait=0):
                pass
            assert str(err.value) == \
                f"SPLICE_LOCK_LEASE_SECONDS must be a number of seconds above 0, not {text!r}"
