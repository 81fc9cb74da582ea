"""The suite's worker groups hold: a small session of its own, run with the
suite's grouping hook (tests/conftest.py) on two workers, keeps every test
of a server's group on one worker and spreads the rest.

pytest 9.2 made node ids structured, and pytest-xdist 3.8's loadgroup,
which appends the group to the id, then grouped nothing, without a word:
each worker started its own broker, Connect server, cluster and moto. This
test fails again if an upgrade does that."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.conftest import ROOT, SERVER_GROUPS

TESTS = '''
import os
import pytest

def _note(name):
    with open(os.environ["GROUPS_OUT"], "a") as fh:
        fh.write(f"{os.environ['PYTEST_XDIST_WORKER']} {name}\\n")

@pytest.mark.parametrize("i", range(4))
@pytest.mark.kafka
def test_kafka(i):
    _note(f"kafka{i}")

@pytest.mark.parametrize("i", range(3))
@pytest.mark.connect
def test_connect(i):
    _note(f"connect{i}")

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    _note(f"free{i}")
'''


def test_server_groups_stay_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_groups.py").write_text(TESTS)
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_collection_modifyitems  # noqa: F401\n")
    markers = "".join(f"    {name}: a server\n" for name in (*SERVER_GROUPS, "spark"))
    (tmp_path / "pytest.ini").write_text(f"[pytest]\nmarkers =\n{markers}")
    out = tmp_path / "workers.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GROUPS_OUT": str(out)}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "-c", str(tmp_path / "pytest.ini"), str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers: dict[str, set[str]] = defaultdict(set)
    for line in out.read_text().splitlines():
        worker, name = line.split()
        workers[name.rstrip("0123456789")].add(worker)
    assert workers["kafka"] and len(workers["kafka"]) == 1, dict(workers)
    assert workers["connect"] and len(workers["connect"]) == 1, dict(workers)
    assert len(out.read_text().splitlines()) == 13
