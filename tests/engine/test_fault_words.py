"""engine.errors.fault's words for real faults, raised by the real parts
without Spark: s3fs against a port nothing listens on, a write to a full
tmpfs; and the CLI's help naming the exit codes of a stop."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest
from splice.engine import fs
from splice.engine.errors import fault
from splice.engine.settings import SpliceSettings
from splice.runtime.compile import compile_text

from splice.cli import main
from splice.processes import stopped_code

SQL = """CREATE STREAM orders (id INT, item STRING) WITH (location='orders', format='json',
  key='id');
INSERT INTO result SELECT STREAM id, item FROM orders;"""


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_object_store_that_does_not_answer_is_named(monkeypatch) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    for name, value in {"SPLICE_S3_ENDPOINT": endpoint, "AWS_ACCESS_KEY_ID": "k",
                        "AWS_SECRET_ACCESS_KEY": "s", "AWS_EC2_METADATA_DISABLED": "true"
                        }.items():
        monkeypatch.setenv(name, value)
    settings = SpliceSettings.from_env(warehouse="s3a://bucket/wh")
    fs.configure_files(settings)
    try:
        with pytest.raises(Exception) as raised:
            fs.list_names(None, "s3a://bucket/wh/_splice/p/steps/orders/_delta_log")
    finally:
        fs.configure_files(None)
    said = fault(raised.value, compile_text(SQL, file="p.sql", name="p"), settings)
    assert said is not None, raised.value
    assert said.startswith(f"the object store {endpoint} did not answer before any step ran "
                           f"(at s3a://bucket/wh"), said
    assert "Run again once it answers. A rerun is safe" in said


def test_a_full_disk_names_its_folder(tmp_path: Path) -> None:
    from tests.crash.test_disk_full import fill, small_disk

    with small_disk(tmp_path / "disk", "1m") as disk:
        (disk / "wh").mkdir()
        fill(disk)
        with pytest.raises(OSError) as raised:
            fs.write_text(None, str(disk / "wh" / "marker.json"), "{}" * 10_000)
        assert raised.value.errno == errno.ENOSPC
        settings = SpliceSettings.from_env(warehouse=str(disk / "wh"))
        said = fault(raised.value, compile_text(SQL, file="p.sql", name="p"), settings)
    assert said is not None
    assert said.startswith(f"no space left on device before any step ran: the file system of "
                           f"{disk / 'wh'} (0 bytes free of 1.0 MB) is full"), said


def test_an_error_that_is_no_fault_is_left_alone() -> None:
    settings = SpliceSettings.from_env(warehouse="wh")
    assert fault(ValueError("a bug"), compile_text(SQL, file="p.sql", name="p"),
                 settings) is None


def test_the_help_names_what_a_stop_signal_does(capsys) -> None:
    for command in ("run", "serve"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit 143 (SIGTERM) or 130 (SIGINT)" in text
    assert "the lock is released, exit 0 (1 when a step failed while serving)" in text
    assert (stopped_code(15), stopped_code(2)) == (143, 130)
