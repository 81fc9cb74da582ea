"""One SparkSession for the whole test run (real Spark, real Delta)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases"


@pytest.fixture(scope="session")
def spark():
    from resources.spark import SparkResource

    session = SparkResource().session()
    yield session


@pytest.fixture
def warehouse(tmp_path: Path):
    from resources.warehouse import WarehouseResource

    return WarehouseResource(root=str(tmp_path / "warehouse"))
