"""engine/ has no import circles, counting imports made inside functions too, and every module imports.

A circle makes the import order matter (a module half-initialised when the other one reads it) and ties
concepts that should stand apart; the lazy imports that hide GPU libraries do not excuse one.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def module_files() -> dict[str, Path]:
    """Dotted name → file of every module under engine/."""
    out = {}
    for path in sorted(ENGINE.rglob("*.py")):
        parts = list(path.relative_to(ENGINE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported_modules(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """engine modules ``name`` imports anywhere in its file (top level, functions, TYPE_CHECKING).

    ``from . import x`` and ``from .x import y`` count as importing the module x, not the package that
    holds it (Python loads the package first, but a package may import its own modules).
    """
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target)
    return {m for m in found if m in known and m != name}


def import_cycles() -> list[list[str]]:
    """Every cycle of the import graph, as its strongly connected components of more than one module."""
    known = module_files()
    graph = {name: imported_modules(name, path, known) for name, path in known.items()}
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def test_engine_has_no_import_cycle():
    assert import_cycles() == []


def test_the_cycle_finder_sees_a_cycle(tmp_path, monkeypatch):
    """The check can fail: two modules importing each other inside functions are reported."""
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text("")
    (tmp_path / "engine" / "a.py").write_text("def f():\n    from .b import g\n")
    (tmp_path / "engine" / "b.py").write_text("from . import a\n\ndef g():\n    pass\n")
    monkeypatch.setattr(sys.modules[__name__], "ENGINE", tmp_path / "engine")
    assert import_cycles() == [["engine.a", "engine.b"]]


@pytest.mark.parametrize("name", sorted(module_files()))
def test_every_engine_module_imports(name):
    """Every module imports without a GPU library or bpy (engine/ never imports bpy at load time)."""
    importlib.import_module(name)
