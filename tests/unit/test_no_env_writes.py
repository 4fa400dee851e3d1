"""dynaorm never writes the environment (issue 21): no module of the library, the CLI, the
fixtures or the pytest plugin assigns, updates or deletes an environment variable."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*sorted((ROOT / "dynaorm").rglob("*.py")), ROOT / "pytest_dynaorm.py"]
WRITERS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ")


def env_writes(tree: ast.AST) -> list[int]:
    """Line numbers that write the environment."""
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [
                node.target]
        if any(isinstance(t, ast.Subscript) and _is_environ(t.value) for t in targets):
            lines.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method, owner = node.func.attr, node.func.value
            if (method in WRITERS and _is_environ(owner)) or method in (
                    "putenv", "unsetenv", "setenv", "delenv"):
                lines.append(node.lineno)
    return sorted(lines)


def test_the_checker_finds_every_kind_of_write() -> None:
    code = ("import os\nos.environ['A'] = '1'\nos.environ.setdefault('B', '2')\n"
            "os.environ.update(C='3')\ndel os.environ['A']\nos.putenv('D', '4')\n"
            "monkeypatch.setenv('E', '5')\nos.environ.get('F')\nx = os.environ['G']\n")
    assert env_writes(ast.parse(code)) == [2, 3, 4, 5, 6, 7]


def test_no_module_writes_the_environment() -> None:
    assert len(SOURCES) > 20
    found = {str(p.relative_to(ROOT)): lines for p in SOURCES
             if (lines := env_writes(ast.parse(p.read_text(encoding="utf-8"))))}
    assert found == {}
