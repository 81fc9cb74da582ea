"""Splice installs under one import root, ``splice.``: the folders at the top
of the repository (sql/, joins/, resources/, orchestration/, ...) import as
``splice.sql``, ``splice.joins``, ...; a built wheel, installed in a fresh
virtual environment, validates and runs a pipeline from another folder with
no top-level ``sql`` or ``orchestration`` to shadow a user's own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.packages import PACKAGE_DIR, PYPROJECT


def _package_folders() -> set[str]:
    """Every package of the mapped folders, as its dotted name."""
    found = set()
    for name, folder in PACKAGE_DIR.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            inner = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *inner)))
    return found


def test_the_package_list_names_every_package_folder() -> None:
    assert set(PYPROJECT["tool"]["setuptools"]["packages"]) == _package_folders()


def _python(code: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=300)


def test_import_splice_loads_neither_spark_nor_dagster_until_a_name_is_used(tmp_path) -> None:
    done = _python("import sys, splice\n"
                   "print([m for m in ('pyspark', 'dagster', 'sqlglot') if m in sys.modules])\n"
                   "splice.SpliceTranslator\n"
                   "print([m for m in ('pyspark', 'dagster') if m in sys.modules])\n",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "[]"
    assert "dagster" in done.stdout.splitlines()[1]


def test_every_public_name_resolves_and_nothing_else_is_offered(tmp_path) -> None:
    done = _python("import splice\n"
                   "for name in splice.__all__:\n"
                   "    assert getattr(splice, name).__name__ == name, name\n"
                   "try:\n"
                   "    splice.run_stepz\n"
                   "except AttributeError as err:\n"
                   "    print(err)\n", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "module 'splice' has no attribute 'run_stepz'\n"


def test_outside_the_repository_only_splice_is_importable(tmp_path) -> None:
    done = _python("import importlib.util as u\n"
                   "print([n for n in ('sql', 'engine', 'joins', 'operators', 'runtime', "
                   "'resources', 'orchestration') if u.find_spec(n) is not None])\n"
                   "import splice.sql.plan, splice.orchestration.factory\n", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # a site-packages distribution of one of those names would show here;
    # none of them is Splice's
    assert done.stdout == "[]\n"


def test_the_linter_refuses_the_old_top_level_names(tmp_path) -> None:
    module = tmp_path / "old.py"
    module.write_text("from sql.plan import Pipeline\nimport orchestration.factory\n\n"
                      "print(Pipeline, orchestration)\n")
    done = subprocess.run([str(Path(sys.executable).with_name("ruff")), "check",
                           "--config", str(ROOT / "pyproject.toml"), "--select", "TID251",
                           "--no-cache", str(module)],
                          text=True, capture_output=True, timeout=60)
    assert done.returncode == 1
    assert "`sql` is banned: import splice.sql" in done.stdout
    assert "`orchestration` is banned: import splice.orchestration" in done.stdout


@pytest.mark.spark
def test_the_wheel_installs_alone_and_runs_a_pipeline_from_another_folder(tmp_path) -> None:
    """Built and installed as a user would (pip wheel, a fresh venv, pip
    install). The fresh environment borrows the dependencies of this one
    (a .pth line, so nothing is downloaded), not Splice: that comes from
    the wheel alone, its Java sources with it (the jar is built from them)."""
    dist, source = tmp_path / "dist", tmp_path / "source"
    # built from a copy: setuptools leaves build/ beside the sources it builds
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".kafka", ".registry", "build", "*.egg-info", "warehouse",
        "spark-warehouse", "__pycache__", "tests"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                            "--disable-pip-version-check", "-w", str(dist), str(source)],
                           text=True, capture_output=True, timeout=600)
    assert build.returncode == 0, build.stderr
    (wheel,) = dist.glob("splice-*.whl")
    fresh = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(fresh)], check=True, timeout=300)
    python = fresh / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                    "--disable-pip-version-check", str(wheel)], check=True, timeout=300)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; "
                                "print(sysconfig.get_paths()['purelib'])"],
                               text=True, capture_output=True, check=True).stdout.strip())
    (site / "_splice_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(ROOT / "pipelines" / "demo", elsewhere / "demo")
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith("SPLICE_")}

    def splice(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(fresh / "bin" / "splice"), *args], cwd=elsewhere, env=env,
                              text=True, capture_output=True, timeout=timeout)

    where = subprocess.run([str(python), "-c", "import splice.engine.local_fs as f; "
                            "print(f.__file__); print(len(f._sources()))"],
                           cwd=elsewhere, env=env, text=True, capture_output=True)
    assert where.returncode == 0, where.stderr
    module, sources = where.stdout.split()
    assert module.startswith(str(site)) and int(sources) >= 6
    jar = subprocess.run([str(python), "-m", "splice.local_fs"], cwd=elsewhere, env=env,
                         text=True, capture_output=True, timeout=300)
    assert jar.returncode == 0 and str(fresh) in jar.stdout, jar.stdout + jar.stderr

    done = splice("validate", "demo")
    assert done.returncode == 0 and "demo: ok, pipeline 'demo' with 7 steps" in done.stdout, \
        done.stdout + done.stderr
    done = splice("demo", "--pipeline", "demo", "--warehouse", "wh")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "orders_matched: 2 rows written" in done.stdout
    done = splice("show", "demo", "orders_matched", "--warehouse", "wh")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"output orders_matched at {elsewhere}/wh/orders_matched: "
                                  "2 rows\n"), done.stdout
    assert "|John|Computer|" in done.stdout.replace(" ", "")
