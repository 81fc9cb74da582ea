"""The packages' layering (docs/decisions/layers.md): each package
imports only packages below it, never one above, never its sibling; and no
package's modules import each other in a cycle at module level."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.packages import folder_of, module_name, package_of

ROOT = Path(__file__).resolve().parents[2]

# bottom -> top; packages on one level are siblings.
LAYERS: list[set[str]] = [
    {"sql"},
    {"physical"},
    {"engine"},
    {"joins", "operators"},
    {"runtime"},
    {"resources"},
    {"orchestration"},
    {"splice"},
]
LEVEL = {package: level for level, packages in enumerate(LAYERS) for package in packages}

# Imports that break the layering on purpose: none.
ALLOWED: set[tuple[str, str]] = set()


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def imported(path: Path) -> list[tuple[str, int]]:
    """Every module ``path`` imports (function-local imports and those under
    TYPE_CHECKING included), with its line."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, node.lineno))
            # `from engine import fs` imports the module engine.fs
            found += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names
                      if (folder_of(node.module) / f"{alias.name}.py").exists()]
    return found


def violations(package: str) -> list[str]:
    found = []
    for path in modules(package):
        for module, line in imported(path):
            target = package_of(module)
            if target is None or target == package:
                continue
            allowed = any(package == p and (module == m or module.startswith(m + "."))
                          for p, m in ALLOWED)
            if LEVEL[target] >= LEVEL[package] and not allowed:
                where = "beside" if LEVEL[target] == LEVEL[package] else "above"
                found.append(f"{path.relative_to(ROOT)}:{line}: imports {module}, "
                             f"{where} {package}")
    return found


@pytest.mark.parametrize("package", sorted(LEVEL))
def test_a_package_imports_only_packages_below_it(package: str) -> None:
    assert violations(package) == []


def test_the_check_sees_an_import_going_up(tmp_path: Path) -> None:
    """The walk finds a function-local import: the check can fail."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from splice.runtime.runner import run_step\n")
    assert [m for m, _ in imported(module)] == ["splice.runtime.runner"]


def module_level_imports(path: Path) -> set[str]:
    """The modules ``path`` imports when it is loaded (not those inside
    functions or under TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


@pytest.mark.parametrize("package", sorted(LEVEL))
def test_no_import_cycle_inside_a_package(package: str) -> None:
    names = {module_name(p): p
             for p in modules(package) if p.name != "__init__.py"}
    graph = {name: module_level_imports(path) & names.keys() for name, path in names.items()}
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def cycle_from(name: str, path: list[str]) -> list[str] | None:
        state[name] = 1
        for nxt in sorted(graph[name]):
            if state.get(nxt) == 1:
                return [*path, name, nxt]
            if nxt not in state and (found := cycle_from(nxt, [*path, name])):
                return found
        state[name] = 2
        return None

    cycles = [c for name in sorted(graph) if name not in state
              and (c := cycle_from(name, [])) is not None]
    assert cycles == []


def hidden_cycles() -> list[str]:
    """Imports inside a function whose module, loaded, imports (through
    module-level imports) the module the function is in: an import that
    only hides a cycle. Imports kept inside functions for load time (the
    CLI's, so that ``splice validate`` does not load Dagster) are fine."""
    paths = {module_name(p): p for package in LEVEL for p in modules(package)}
    graph = {name: module_level_imports(path) & paths.keys() for name, path in paths.items()}

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            name = todo.pop()
            if name == goal:
                return True
            if name not in seen:
                seen.add(name)
                todo += graph.get(name, ())
        return False

    found = []
    for name, path in sorted(paths.items()):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and inner.module and inner.level == 0:
                    targets = {inner.module} | {f"{inner.module}.{a.name}" for a in inner.names}
                    found += [f"{path.relative_to(ROOT)}:{inner.lineno}: {t}"
                              for t in sorted(targets & paths.keys()) if reaches(t, name)]
    return found


def test_no_import_inside_a_function_hides_a_cycle() -> None:
    assert hidden_cycles() == []
