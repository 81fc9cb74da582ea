"""Hadoop's local file system without a child process per file
(engine/local_fs.py, engine/java/splice/hadoop).

Two ``splice run`` children write the same pipeline, one on the forkless
file systems (the default once the jar is built), one on Hadoop's own
(``SPLICE_LOCAL_FS=off``), with ``chmod`` and ``readlink`` on their PATH
replaced by scripts that log each call and run the real command. Hadoop's
own starts both for the warehouse's files (which shows the scripts see its
calls); the forkless one starts neither; the rows and every file's and
folder's permission bits are the same.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from splice.engine import class_data, local_fs

from tests.conftest import ROOT, child_env

SQL = ("CREATE STREAM e (id INT, v STRING) WITH (location='e', format='json', key='id');\n"
       "INSERT INTO out SELECT STREAM e.id, e.v FROM e;\n")


def _logging_path(folder: Path, log: Path) -> str:
    """A PATH whose ``chmod`` and ``readlink`` log their arguments to ``log``
    and run the real command."""
    folder.mkdir()
    for command in ("chmod", "readlink"):
        real = shutil.which(command)
        assert real, command
        script = folder / command
        script.write_text(f'#!/bin/sh\necho "{command} $*" >> "{log}"\nexec "{real}" "$@"\n')
        script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def _start(tmp_path: Path, name: str, **env: str) -> tuple[subprocess.Popen[str], Path, Path]:
    root = tmp_path / name
    warehouse, log = root / "wh", root / "calls.log"
    (warehouse / "e").mkdir(parents=True)
    (warehouse / "e" / "part-0.json").write_text(
        "".join(json.dumps({"id": i, "v": f"r{i}"}) + "\n" for i in range(3)))
    sql = root / "m.sql"
    sql.write_text(SQL)
    run = subprocess.Popen(
        [sys.executable, "-m", "splice.cli", "run", str(sql), "--parallel", "1"], cwd=ROOT,
        env=child_env(SPLICE_WAREHOUSE=str(warehouse), SPLICE_MAINTAIN_EVERY="0",
                      PYTHONPATH=str(ROOT), PATH=_logging_path(root / "bin", log), **env),
        text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return run, warehouse, log


def _modes(folder: Path) -> set[tuple[str, str]]:
    """(kind, permission bits) of every file and folder under ``folder``."""
    found = set()
    for path in folder.rglob("*"):
        kind = "dir" if path.is_dir() else "file"
        found.add((kind, oct(stat.S_IMODE(path.stat().st_mode))))
    return found


@pytest.mark.spark
def test_the_forkless_file_system_writes_what_hadoops_writes_without_a_process(
        tmp_path: Path, spark) -> None:
    assert local_fs.built_jar(), "scripts/setup.sh builds the jar (python -m splice.local_fs)"
    runs = {"forkless": _start(tmp_path, "forkless"),
            "hadoop": _start(tmp_path, "hadoop", **{local_fs.ENV: "off"})}
    for name, (run, _, _) in runs.items():
        out, err = run.communicate(timeout=900)
        assert run.returncode == 0, f"{name}: {err[-2000:]}"
        assert any(": 3 rows written" in line for line in out.splitlines()), out

    def calls(name: str) -> list[str]:
        _, warehouse, log = runs[name]
        lines = log.read_text().splitlines() if log.exists() else []
        return [line for line in lines if str(warehouse) in line]

    hadoop = calls("hadoop")
    assert any(c.startswith("chmod ") for c in hadoop), hadoop
    assert any(c.startswith("readlink ") for c in hadoop), hadoop
    assert calls("forkless") == []

    tables = {}
    for name, (_, warehouse, _) in runs.items():
        rows = spark.read.format("delta").load(str(warehouse / "out")).collect()
        tables[name] = sorted((r["id"], r["v"]) for r in rows)
    assert tables["forkless"] == tables["hadoop"] == [(0, "r0"), (1, "r1"), (2, "r2")]
    forkless, own = (_modes(runs[n][1]) for n in ("forkless", "hadoop"))
    assert forkless == own and {kind for kind, _ in own} == {"dir", "file"}


def test_only_a_local_session_takes_the_file_systems(monkeypatch, tmp_path: Path) -> None:
    jar = tmp_path / "local-fs.jar"
    monkeypatch.setattr(local_fs, "jar_path", lambda: str(jar))
    assert local_fs.session_options("local[2]", {}) == {}  # not built
    jar.write_bytes(b"")
    local = local_fs.session_options("local[2]", {})
    assert local == {local_fs.CLASS_PATH: str(jar), **local_fs.IMPLEMENTATIONS}
    # A cluster's executors have no jar: the driver's classpath only.
    assert local_fs.session_options("spark://h:7077", {}) == {local_fs.CLASS_PATH: str(jar)}
    # A session's own file system and classpath are kept.
    own = {"spark.hadoop.fs.file.impl": "x.Y", local_fs.CLASS_PATH: "/a.jar"}
    assert local_fs.session_options("local[2]", own) == {
        local_fs.CLASS_PATH: f"{jar}{os.pathsep}/a.jar"}


def test_off_keeps_hadoops_file_systems_and_the_class_archive(monkeypatch,
                                                               tmp_path: Path) -> None:
    """Off, a local session keeps Hadoop's own file systems, but the jar
    stays on the driver's classpath: the class-data archive records the
    classpath it was written with, and a JVM whose classpath differs
    started without the archive, silently (it was so until 2026-11-28)."""
    jar = tmp_path / "local-fs.jar"
    jar.write_bytes(b"")
    monkeypatch.setattr(local_fs, "jar_path", lambda: str(jar))
    monkeypatch.delenv(class_data.ENV, raising=False)
    on_options, on_archive = local_fs.session_options("local[2]", {}), class_data.archive_path()
    monkeypatch.setenv(local_fs.ENV, "off")
    assert local_fs.session_options("local[2]", {}) == {local_fs.CLASS_PATH: str(jar)}
    assert on_options[local_fs.CLASS_PATH] == str(jar)
    assert class_data.archive_path() == on_archive
