"""One SparkSession for the whole test run (real Spark, real Delta)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases"

# A test's micro-batches hold a few rows, so Spark would spend most of a test
# generating Java code for every query it plans, compiling it, and having the
# JVM's JIT compile that in turn (the JIT alone took a third of the CPU of an
# acceptance case). The tests evaluate expressions interpreted instead, which
# Spark's own test suites run as a mode of equal standing: the rows are the
# same. Everything else (the demo, the benchmarks, a user's session) keeps
# Spark's defaults. See docs/DECISIONS.md.
# Automatic maintenance (every 10th run compacts and vacuums every table of
# the pipeline) is off in the test session: the acceptance cases that run
# their pipeline once per record spent minutes compacting tables of a few
# rows. tests/test_maintenance.py runs it with an explicit policy, and the
# streams that read maintained tables are checked there.
os.environ.setdefault("SPLICE_MAINTAIN_EVERY", "0")

TEST_SPARK_CONF = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


@pytest.fixture(scope="session")
def spark():
    from engine.session import start_session
    from engine.settings import SpliceSettings

    session = start_session(SpliceSettings.from_env(conf=TEST_SPARK_CONF))
    yield session


@pytest.fixture
def warehouse(tmp_path: Path):
    """A WarehouseResource: an engine Warehouse that Dagster tests can also
    hand to their definitions as a resource."""
    from resources.warehouse import WarehouseResource

    return WarehouseResource(root=str(tmp_path / "warehouse"))
