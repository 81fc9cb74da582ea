"""The CLI without Dagster, and with its settings from the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, child_env
from tests.helpers.packages import module_name

# Every package below Dagster's (tests/project/test_layers.py): the CLI stands on them.
DAGSTER_FREE = ("sql", "engine", "joins", "operators", "runtime", "splice")


def dagster_free_modules() -> list[str]:
    """Every module of the packages that must not import Dagster, found on
    disk (a hand list went stale: it named two modules that no longer
    existed and missed a dozen that did)."""
    found = []
    for package in DAGSTER_FREE:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "__main__.py":  # runs the command when imported
                continue
            found.append(module_name(path))
    return found


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, text=True,
                          capture_output=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def test_engine_and_cli_do_not_import_dagster() -> None:
    """The CLI and every layer under it stand alone: importing each of
    their modules, and running ``splice validate``, loads no Dagster
    module."""
    modules = dagster_free_modules()
    assert {"splice.engine.io", "splice.runtime.runner", "splice.cli",
            "splice.sql.parsing.joins"} <= set(modules)
    code = (f"import sys, {', '.join(modules)}\n"
            "from splice.cli import main\n"
            f"rc = main(['validate', {str(ROOT / 'pipelines' / 'demo')!r}])\n"
            "print('rc', rc, sorted(m for m in sys.modules if m.split('.')[0] == 'dagster'))\n")
    done = _python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == "rc 0 []"


@pytest.mark.spark
def test_run_honours_spark_master_from_the_environment(tmp_path: Path) -> None:
    sql = tmp_path / "m.sql"
    sql.write_text("CREATE STREAM e (id INT, v STRING) WITH (location='e', format='json', "
                   "key='id');\nINSERT INTO out SELECT STREAM e.id, e.v FROM e;\n")
    warehouse = tmp_path / "wh"
    (warehouse / "e").mkdir(parents=True)
    (warehouse / "e" / "part-0.json").write_text(
        "".join(json.dumps({"id": i, "v": f"r{i}"}) + "\n" for i in range(3)))
    env = child_env(SPLICE_SPARK_MASTER="local[1]", SPLICE_WAREHOUSE=str(warehouse),
                    SPLICE_MAINTAIN_EVERY="0", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "splice.cli", "run", str(sql), "--parallel",
                           "1"], cwd=ROOT, env=env, text=True, capture_output=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "starting Spark (local[1]) ...", done.stdout
    # The warehouse came from SPLICE_WAREHOUSE too: the output is there.
    assert any(line.startswith("[2/2] ") and ": 3 rows written" in line
               for line in lines), done.stdout
    assert (warehouse / "out" / "_delta_log").is_dir()


def test_a_jvm_that_exits_at_start_is_one_message_with_its_reason(tmp_path: Path) -> None:
    """The JVM refuses its options and exits before Spark starts (a stack
    too small; Spark has the JVM ignore unknown options): the run says what
    the JVM said (its output goes to the Spark log), not PySpark's
    JAVA_GATEWAY_EXITED traceback. No Spark starts: a fast test."""
    log = tmp_path / "spark.log"
    env = {**os.environ, "SPLICE_SPARK_LOG": str(log),
           "SPLICE_SPARK_CONF": json.dumps({"spark.driver.extraJavaOptions": "-Xss1k"})}
    done = subprocess.run([sys.executable, "-m", "splice.cli", "run",
                           str(ROOT / "pipelines" / "demo"), "--warehouse", str(tmp_path / "wh")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(
        "splice: Spark's JVM exited before it started: The Java thread stack size specified "
        "is too small")
    assert done.stderr.rstrip().endswith(f"the JVM's output is in {log})")
