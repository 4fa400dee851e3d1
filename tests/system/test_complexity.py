"""Plain code: radon rates no function or method of dynaorm D or worse (a cyclomatic
complexity above 20), unless the line right above its ``def`` (or above its first
decorator) is a ``# complexity: <reason>`` comment saying why it stays that way."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from radon.complexity import cc_rank, cc_visit
from radon.visitors import Class, Function

PACKAGE = Path(__file__).resolve().parents[2] / "dynaorm"
#: the highest complexity radon rates C
LIMIT = 20
REASON = "# complexity:"


@dataclass(frozen=True)
class Rated:
    """One function or method of dynaorm, as radon rates it."""

    path: str  # under dynaorm/
    name: str  # qualified: Class.method, outer.inner
    lineno: int  # of its ``def``
    complexity: int
    reason: str | None  # its ``# complexity:`` comment's text, if it has one

    def __str__(self) -> str:
        return (f"dynaorm/{self.path}:{self.lineno} {self.name} - "
                f"{cc_rank(self.complexity)} ({self.complexity})")


def _functions(blocks: Iterable[Function | Class], prefix: str = "") -> Iterator[
        tuple[str, Function]]:
    """(qualified name, function) for every function, method and closure in ``blocks``
    (``cc_visit``'s list: top-level functions, classes and their methods)."""
    for block in blocks:
        if isinstance(block, Class):  # (its methods are in the list already)
            for inner in block.inner_classes:
                yield from _functions([*inner.methods, inner], f"{prefix}{block.name}.")
            continue
        name = f"{prefix}{block.fullname}"
        yield name, block
        yield from _functions(block.closures, f"{name}.")


def _tops(tree: ast.AST) -> dict[int, int]:
    """``def`` line -> the line the definition starts on (its first decorator's)."""
    return {node.lineno: min([node.lineno, *(d.lineno for d in node.decorator_list)])
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def _rated() -> list[Rated]:
    """Every function, method and closure of dynaorm/, rated, with its reason comment."""
    out = []
    for file in sorted(PACKAGE.rglob("*.py")):
        source = file.read_text()
        lines = source.splitlines()
        tops = _tops(ast.parse(source))
        for name, function in _functions(cc_visit(source)):
            above = tops[function.lineno] - 2  # (0-based index of the line above)
            comment = lines[above].strip() if above >= 0 else ""
            reason = comment[len(REASON):].strip() if comment.startswith(REASON) else None
            out.append(Rated(file.relative_to(PACKAGE).as_posix(), name, function.lineno,
                             function.complexity, reason))
    return out


RATED = _rated()


def test_the_package_is_rated() -> None:
    assert len(RATED) > 500, "radon found too few functions: is dynaorm/ where it was?"


def test_no_function_above_c_without_a_reason() -> None:
    too_complex = [r for r in RATED if r.complexity > LIMIT and not r.reason]
    assert not too_complex, (
        "rated D or worse (complexity above 20): split them into helpers, or put a "
        "'# complexity: <why>' comment on the line above the def:\n"
        + "\n".join(f"  {r}" for r in too_complex))


def test_reasons_are_on_functions_above_c() -> None:
    stale = [r for r in RATED if r.reason and r.complexity <= LIMIT]
    assert not stale, ("rated C or better: the '# complexity:' comment above it no longer "
                       "applies; remove it:\n" + "\n".join(f"  {r}" for r in stale))
