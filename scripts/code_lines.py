#!/usr/bin/env python
"""Lines of code of the shipped package: lines holding code, not blank, not a comment,
not part of a docstring (of a module, class or function).

Usage::

    .venv/bin/python scripts/code_lines.py [PACKAGE_DIR] [-v]

``-v`` lists the 40 largest modules. ``tests/system/test_budgets.py`` holds the package
to :data:`BUDGET`, the count of release 0.4 (issue 39: 0.5 ends with no more).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

#: dynaorm/ at release 0.4 (18b1d39), counted by this script
BUDGET = 14464
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENDMARKER}


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(path: Path) -> int:
    """The lines of ``path`` that hold code."""
    source = path.read_text()
    docs = _docstring_lines(ast.parse(source))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in _SKIP:
            lines.update(n for n in range(token.start[0], token.end[0] + 1) if n not in docs)
    return len(lines)


def count(package: Path) -> dict[str, int]:
    """Code lines of every module under ``package``."""
    return {str(p): code_lines(p) for p in sorted(package.rglob("*.py"))}


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "-v"]
    modules = count(Path(args[0] if args else Path(__file__).parent.parent / "dynaorm"))
    if "-v" in sys.argv:
        for path, n in sorted(modules.items(), key=lambda kv: -kv[1])[:40]:
            print(f"{n:6d} {path}")
    total = sum(modules.values())
    print(f"{total} lines of code (budget {BUDGET}, {BUDGET - total} left)")


if __name__ == "__main__":
    main()
