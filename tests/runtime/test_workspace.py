"""The README's Python example, run as written: a Workspace compiles the
demo, runs it and shows an output's rows (real Spark and Delta)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from splice.runtime.compile import compile_path

from splice.cli.demo import write_demo_data

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.spark


def readme_python() -> str:
    """The README's one ```python block."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) == 1, "the README holds one Python example"
    return blocks[0]


def test_the_readme_python_example_runs_the_demo(spark, tmp_path, monkeypatch, capsys) -> None:
    warehouse = tmp_path / "warehouse"
    monkeypatch.setenv("SPLICE_WAREHOUSE", str(warehouse))
    monkeypatch.chdir(ROOT)  # the example names pipelines/demo
    write_demo_data(compile_path("pipelines/demo"), str(warehouse))
    capsys.readouterr()
    scope: dict[str, object] = {}
    exec(compile(readme_python(), "README.md", "exec"), scope)
    rows = [[c.strip() for c in line.split("|")[1:-1]]
            for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert rows[0] == ["_key", "name", "item", "ROWTIME"]
    assert sorted(row[1:3] for row in rows[1:]) == [
        ["John", "Computer"], ["John", "Mouse"], ["NULL", "Keyboard"]]
    ws = scope["ws"]
    assert sorted(((r["name"], r["item"]) for r in ws.table("orders_enriched").collect()),
                  key=repr) == [("John", "Computer"), ("John", "Mouse"), (None, "Keyboard")]
    assert ws.warehouse.root == str(warehouse)
