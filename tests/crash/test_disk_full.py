"""A full disk under ``splice run``: already full when the run starts, and
filling while its steps run. Either is one message naming the folder whose
file system is full and what to do, exit 1, no traceback; once there is
room again a rerun completes the pipeline, and every output and dead
letter equals an uninterrupted run's (tests/helpers/crash_harness.py compares).

The warehouse is on a small tmpfs mounted for the test (root only: the
test skips elsewhere, saying so); a filler file takes all its room.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from splice.resources.warehouse import WarehouseResource
from splice.runtime.runner import run_pipeline

from tests.conftest import child_env
from tests.helpers.crash_harness import differences
from tests.helpers.faults import SQL, Child, add_round, every_row
from tests.helpers.pipeline import make_io

pytestmark = [pytest.mark.spark, pytest.mark.faults]


@contextlib.contextmanager
def small_disk(folder: Path, size: str = "64m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``folder``, unmounted after."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                              str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): the full-disk "
                    f"tests need root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> Path:
    """Take every byte left on ``folder``'s file system; the filler file."""
    filler = folder / "filler"
    chunk = b"\0" * (1 << 20)
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as err:
            assert err.errno == errno.ENOSPC, err
        with contextlib.suppress(OSError):
            while True:
                out.write(b"\0" * 4096)
    return filler


@pytest.mark.parametrize("when", ["at the start", "mid-run"])
def test_a_full_disk_is_one_message_and_a_rerun_completes(spark, tmp_path: Path,
                                                         when: str) -> None:
    reference = make_io(spark, WarehouseResource(root=str(tmp_path / "reference")), SQL,
                        name="faults")
    add_round(reference, 0)
    run_pipeline(reference.pipeline, reference)
    sql = tmp_path / "faults.sql"
    sql.write_text(SQL)
    with small_disk(tmp_path / "disk") as disk:
        full = make_io(spark, WarehouseResource(root=str(disk / "wh")), SQL, name="faults")
        add_round(full, 0)
        if when == "at the start":
            filler = fill(disk)
        run = Child(["run", str(sql), "--warehouse", full.warehouse.root,
                     "--parallel", "2"], child_env())
        if when == "mid-run":
            run.wait_for(lambda line: line.startswith("[3/") and line.rstrip().endswith("..."))
            filler = fill(disk)
        code = run.wait(300)
        assert code == 1, run.text[-4000:]
        run.assert_no_traceback()
        last = run.said()
        print(f"\n{when}: {last}")
        assert last.startswith("splice: no space left on device "), run.text[-3000:]
        assert f"the file system of {disk}" in last, last
        assert "is full. Free space there" in last
        assert "A rerun is safe" in last

        os.remove(filler)
        run_pipeline(full.pipeline, full, wait=0)  # the lock is free, and the rerun completes
        expected = every_row(reference)
        assert expected["result"] and expected["dead_letter:orders"]
        assert differences(expected, every_row(full)) == {}
