"""A local session's JVM maps the class-data archive the setup wrote
(engine/class_data.py, splice/class_data.py), and starts as well without
one or with a broken one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from splice.engine import class_data

from tests.conftest import ROOT

# The child reports whether its JVM (a child process of it) maps the archive.
CHILD = """
import json, os, sys
from splice.engine.session import start_session
spark = start_session()
count = spark.range(3).count()
me, mapped = str(os.getpid()), []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[1] != me:
                continue
        with open(f"/proc/{pid}/maps") as fh:
            mapped += [line.split()[-1] for line in fh if line.rstrip().endswith(".jsa")]
    except OSError:
        continue
print(json.dumps({"count": count, "mapped": sorted(set(mapped))}))
"""


def _start(archive: str) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPLICE_")}
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT,
                          env={**env, class_data.ENV: archive},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stdout + proc.stderr


@pytest.mark.spark
def test_a_local_session_maps_the_setup_s_archive() -> None:
    archive = os.environ.get(class_data.ENV) or class_data.archive_path()
    assert archive and os.path.isfile(archive), (
        f"no class-data archive at {archive}: scripts/setup.sh writes it")
    report, _ = _start(archive)
    assert report["count"] == 3
    assert os.path.realpath(archive) in report["mapped"]


@pytest.mark.spark
def test_a_broken_archive_is_ignored_without_a_word(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsa"
    broken.write_bytes(b"not an archive" * 100)
    report, output = _start(str(broken))
    assert report["count"] == 3
    assert os.path.realpath(broken) not in report["mapped"]  # (the JDK's own archive may be)
    assert "cds" not in output.lower() and "shared archive" not in output.lower()


def test_a_session_without_its_own_sharing_options_takes_the_archive(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "classes.jsa"
    monkeypatch.setenv(class_data.ENV, str(archive))
    options = {class_data.JAVA_OPTIONS: "-Duser.timezone=UTC"}
    assert class_data.sharing_options(options) is None  # not written yet
    archive.write_bytes(b"x")
    assert class_data.sharing_options(options) == (
        f"-Duser.timezone=UTC -XX:SharedArchiveFile={archive} "
        "-Xlog:cds=off -Xlog:cds+dynamic=off")
    assert class_data.sharing_options({}) == (
        f"-XX:SharedArchiveFile={archive} -Xlog:cds=off -Xlog:cds+dynamic=off")
    assert class_data.sharing_options({class_data.JAVA_OPTIONS: "-Xshare:off"}) is None
    monkeypatch.setenv(class_data.ENV, "off")
    assert class_data.archive_path() is None
    assert class_data.sharing_options(options) is None


def test_the_archive_is_keyed_by_pyspark_and_delta(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(class_data.ENV, raising=False)
    path = class_data.archive_path()
    assert path is not None
    assert Path(path).parent == Path(sys.prefix) / "var" / "splice"
    assert Path(path).name.startswith("classes-") and path.endswith(".jsa")
