"""A local session puts the jars an earlier start resolved on its JVM's
classpath instead of having Ivy resolve Delta's package again, and copies
none of them (engine/jars.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
from splice.engine import jars

from tests.conftest import ROOT

CHILD = """
import json, os, sys
from splice.engine.session import start_session
from splice.engine import jars
spark = start_session()
conf = spark.sparkContext.getConf()
spark.range(3).write.format("delta").save(sys.argv[1])
rows = sorted(r.id for r in spark.read.format("delta").load(sys.argv[1]).collect())
jvm = spark.sparkContext._jvm
files = jvm.org.apache.spark.SparkFiles.getRootDirectory()
print(json.dumps({"packages": conf.get("spark.jars.packages"), "jars": conf.get("spark.jars"),
                  "class_path": jvm.System.getProperty("java.class.path").split(os.pathsep),
                  "copied": sorted(os.listdir(files)), "recorded": jars.recorded([]),
                  "rows": rows}))
"""


def _start(tmp_path: Path, name: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SPLICE_") and k != "PYSPARK_SUBMIT_ARGS"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / name)], cwd=ROOT,
                          env={**env, "SPLICE_WAREHOUSE": str(tmp_path / "wh")},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.spark
def test_a_second_local_start_takes_the_recorded_jars(tmp_path: Path) -> None:
    # The setup's first session (the class-data archive's) usually recorded
    # Delta's jars already: a start that resolves them is needed only when
    # it did not (a child JVM saved).
    recorded = jars.recorded([])
    if recorded is None:
        first = _start(tmp_path, "a")
        assert first["rows"] == [0, 1, 2]
        recorded = first["recorded"]
    assert recorded and any("delta-spark" in j for j in recorded)
    second = _start(tmp_path, "b")
    # No resolution: Delta's jars came as files, after Spark's own on the
    # JVM's classpath, none copied into the session's folder (where a jar of
    # spark.jars goes), and Delta works.
    assert second["packages"] is None and second["jars"] is None
    paths = [urlparse(j).path for j in recorded]
    assert second["class_path"][-len(paths):] == paths
    assert any("/pyspark/jars/" in p for p in second["class_path"][:-len(paths)])
    assert not [name for name in second["copied"] if name.endswith(".jar")]
    assert second["rows"] == [0, 1, 2]


def test_the_jars_of_more_packages_follow_delta_s_own(monkeypatch, tmp_path: Path) -> None:
    """The class-data archive is written by a session of Delta's jars alone:
    those come first in every larger set, so that its classpath is a prefix
    of the others' (as the JVM requires of an archive)."""
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    delta, kafka, shared = (tmp_path / f"{n}.jar" for n in ("delta", "kafka", "shared"))
    for jar in (delta, kafka, shared):
        jar.write_bytes(b"")
    assert jars.class_path([]) is None
    jars.remember([], f"file://{delta},file://{shared}")
    jars.remember(["org.x:kafka:1"], f"file://{kafka},file://{shared},file://{delta}")
    assert jars.class_path([]) == os.pathsep.join([str(delta), str(shared)])
    assert jars.class_path(["org.x:kafka:1"]) == os.pathsep.join(
        [str(delta), str(shared), str(kafka)])


def test_only_a_local_session_that_names_no_jars_takes_recorded_ones(monkeypatch) -> None:
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    assert jars.usable("local[2]", {"spark.sql.shuffle.partitions": "2"})
    assert not jars.usable("spark://127.0.0.1:7077", {})
    assert not jars.usable("local[2]", {"spark.jars.packages": "org.x:y:1"})
    assert not jars.usable("local[2]", {"spark.jars.ivy": "/tmp/ivy"})
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--packages org.x:y:1 pyspark-shell")
    assert not jars.usable("local[2]", {})


def test_a_record_with_a_missing_jar_is_not_used(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    jar = tmp_path / "a.jar"
    jar.write_bytes(b"")
    jars.remember(["org.x:y:1"], f"file://{jar}")
    assert jars.recorded(["org.x:y:1"]) == [f"file://{jar}"]
    assert jars.recorded([]) is None  # another set of packages
    jars.remember(["org.x:y:2"], f"file://{jar},https://example.com/b.jar")  # not all local
    assert jars.recorded(["org.x:y:2"]) is None
    jar.unlink()
    assert jars.recorded(["org.x:y:1"]) is None
