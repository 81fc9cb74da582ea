"""The dotted name a file of the repository imports as, and the folder a
dotted name lives in: every folder sits under the one root, ``splice.``
(``pyproject.toml``'s package-dir: ``sql/`` is ``splice.sql``, ``splice/``
is ``splice`` itself)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# dotted name -> folder, e.g. "splice.sql" -> "sql"
PACKAGE_DIR: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]
_FOLDER_PACKAGES = {folder: name for name, folder in PACKAGE_DIR.items()}


def module_name(path: Path) -> str:
    """``sql/parsing/joins.py`` -> ``splice.sql.parsing.joins`` (a package's
    ``__init__.py`` is the package's own name)."""
    top, *inner = path.resolve().relative_to(ROOT).with_suffix("").parts
    if inner and inner[-1] == "__init__":
        inner.pop()
    return ".".join((_FOLDER_PACKAGES[top], *inner))


def package_of(module: str) -> str | None:
    """The top folder a dotted name imports from (``splice.sql.plan`` ->
    ``sql``, ``splice.cli`` -> ``splice``), or None for a name not Splice's."""
    parts = module.split(".")
    if parts[0] != "splice":
        return None
    if len(parts) > 1 and f"splice.{parts[1]}" in PACKAGE_DIR:
        return PACKAGE_DIR[f"splice.{parts[1]}"]
    return PACKAGE_DIR["splice"]


def folder_of(module: str) -> Path:
    """Where a dotted name under ``splice.`` is on disk (without ``.py``)."""
    parts = module.split(".")
    top = package_of(module)
    inner = parts[2:] if top != PACKAGE_DIR["splice"] else parts[1:]
    return ROOT.joinpath(top or parts[0], *inner)
