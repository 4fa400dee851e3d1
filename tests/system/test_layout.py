"""No import circle among dynaorm's modules (issue 39): no module imports, through any
chain of imports, a module that imports it back. Every import statement counts: those at
the top of a module, those inside a function (deferred), and those under
``if TYPE_CHECKING:`` (type-only). The layers contract of import-linter (``make lint``)
cannot say this: modules of one floor may import each other.

The graph is grimp's, import-linter's own graph library (``exclude_type_checking_imports``
is ``False``: type-only imports are edges). Imports made by name at run time
(``importlib.import_module``) are not statements and are not seen. A circle is a strongly
connected component of more than one module; the failure names its modules and one chain
of imports around it, with the line of each import.
"""

from __future__ import annotations

import importlib
import textwrap
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path

import grimp
import pytest

#: module -> the modules of the same package it imports directly
Graph = dict[str, set[str]]


def import_graph(package: str) -> tuple[Graph, grimp.ImportGraph]:
    """Every module of ``package`` (importable from ``sys.path``) and the modules of the
    package it imports, by any import statement; and grimp's graph (for import details)."""
    built = grimp.build_graph(package, cache_dir=None, exclude_type_checking_imports=False)
    ours = {m for m in built.modules if m == package or m.startswith(package + ".")}
    graph = {m: {i for i in built.find_modules_directly_imported_by(m) if i in ours}
             for m in ours}
    return graph, built


def components(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` (Tarjan's algorithm, iterative: no
    recursion limit), each sorted, in sorted order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return sorted(found)


def circle_through(built: grimp.ImportGraph, members: Sequence[str]) -> list[str]:
    """One chain of imports around a circle: from its first module back to it (a shortest
    one, by grimp). A chain back to the first module cannot leave the circle's members:
    every module on it would belong to the circle."""
    start = members[0]
    back = [built.find_shortest_chain(importer=first, imported=start)
            for first in sorted(built.find_modules_directly_imported_by(start) & set(members))]
    return [start, *min((chain for chain in back if chain), key=len)]


def _link(built: grimp.ImportGraph, importer: str, imported: str) -> str:
    details = built.get_import_details(importer=importer, imported=imported)
    if not details:
        return f"{importer} -> {imported}"
    first = details[0]
    return (f"{importer} -> {imported} (line {first['line_number']}: "
            f"{first['line_contents'].strip()})")


def circles(package: str) -> list[str]:
    """Every import circle among ``package``'s modules, each said as its modules and one
    chain of imports around it ([]: none)."""
    graph, built = import_graph(package)
    out = []
    for members in components(graph):
        if len(members) < 2:
            continue
        chain = circle_through(built, members)
        links = "\n    ".join(_link(built, a, b) for a, b in pairwise(chain))
        out.append(f"a circle of {len(members)} modules: {', '.join(members)}\n"
                   f"  one chain around it:\n    {links}")
    return out


def test_no_import_circle_in_dynaorm() -> None:
    graph, _ = import_graph("dynaorm")
    assert "dynaorm.client.client" in graph and "dynaorm.values.codec" in graph, (
        "grimp found too few modules: is dynaorm importable from here?")
    found = circles("dynaorm")
    assert not found, ("import circles (deferred and TYPE_CHECKING imports count; break "
                       "each by moving code to the floor it belongs on):\n"
                       + "\n".join(found))


def _package(root: Path, name: str, modules: Mapping[str, str]) -> None:
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    for module, source in modules.items():
        (root / name / f"{module}.py").write_text(textwrap.dedent(source))


def test_the_check_sees_circles_made_by_deferred_and_type_only_imports(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A throwaway package whose modules would import fine (no import at the top of a
    module goes round): ``a`` imports ``b`` inside a function, ``b`` imports ``a`` under
    ``if TYPE_CHECKING:``; ``c`` -> ``d`` -> ``e`` -> ``c``, ``e``'s import deferred;
    ``f`` imports ``a`` and is on no circle. Both circles are found, with their chains."""
    _package(tmp_path, "circled_probe", {
        "a": """
            def b_module():
                from circled_probe import b
                return b
            """,
        "b": """
            from __future__ import annotations
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from circled_probe.a import b_module
            """,
        "c": "import circled_probe.d\n",
        "d": "from circled_probe import e\n",
        "e": """
            def later():
                import circled_probe.c
                return circled_probe.c
            """,
        "f": "from circled_probe.a import b_module\n",
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    graph, built = import_graph("circled_probe")
    assert components(graph) == [
        ["circled_probe"], ["circled_probe.a", "circled_probe.b"],
        ["circled_probe.c", "circled_probe.d", "circled_probe.e"], ["circled_probe.f"]]
    found = circles("circled_probe")
    assert len(found) == 2
    assert found[0].startswith("a circle of 2 modules: circled_probe.a, circled_probe.b")
    assert ("circled_probe.a -> circled_probe.b (line 3: from circled_probe import b)"
            in found[0])
    assert ("circled_probe.b -> circled_probe.a (line 5: from circled_probe.a import "
            "b_module)" in found[0])
    assert found[1].startswith("a circle of 3 modules: circled_probe.c, circled_probe.d, "
                               "circled_probe.e")
    assert circle_through(built, ["circled_probe.c", "circled_probe.d", "circled_probe.e"]
                          ) == ["circled_probe.c", "circled_probe.d", "circled_probe.e",
                                "circled_probe.c"]


def test_the_check_passes_a_package_without_circles(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Imports that only run one way, deferred and type-only included: no circle."""
    _package(tmp_path, "uncircled_probe", {
        "top": """
            from __future__ import annotations
            from typing import TYPE_CHECKING
            import uncircled_probe.low
            if TYPE_CHECKING:
                from uncircled_probe.mid import thing
            """,
        "mid": """
            def thing():
                from uncircled_probe import low
                return low
            """,
        "low": "VALUE = 1\n",
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    graph, _ = import_graph("uncircled_probe")
    assert graph["uncircled_probe.top"] == {"uncircled_probe.low", "uncircled_probe.mid"}
    assert graph["uncircled_probe.mid"] == {"uncircled_probe.low"}
    assert circles("uncircled_probe") == []


def _floors() -> list[set[str]]:
    """The floors of the layers contract (pyproject.toml), top first: each a set of the
    names of ``dynaorm``'s packages and modules on it."""
    import tomllib

    config = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    layers = next(c for c in config["tool"]["importlinter"]["contracts"]
                  if c["type"] == "layers")["layers"]
    return [{n.strip(" ()") for n in floor.split("|")} for floor in layers]


def imports_by_name_up(package: Path, floors: list[set[str]]) -> list[str]:
    """Each ``importlib.import_module("dynaorm.X")`` of a module of ``package`` that loads
    a module of a floor above its own (``file name``): an edge no import statement
    shows, which the layers contract cannot see."""
    import ast

    def floor(name: str) -> int | None:
        head = name.split(".")[1] if name.count(".") else ""
        return next((at for at, names in enumerate(floors) if head in names), None)

    found = []
    for path in sorted(package.rglob("*.py")):
        own = floor(".".join(("dynaorm", *path.relative_to(package).with_suffix("").parts)))
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module"
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).startswith("dynaorm.")):
                target = floor(str(node.args[0].value))
                if own is not None and target is not None and target < own:
                    found.append(f"{path.name} {node.args[0].value}")
    return found


def test_no_import_by_name_runs_up_the_floors() -> None:
    """Issue 69: a module loads a module of a floor above its own by no name either
    (0.8's ``tools/`` loaded ``dynaorm.jobs`` so; a sideways load, an optional extra beside the
    floor, is allowed). Issue 80: none is left (``dynaorm mcp`` loaded the MCP edge by name;
    the edge now adds its own command, found by its entry point)."""
    package = Path(__file__).resolve().parents[2] / "dynaorm"
    assert imports_by_name_up(package, _floors()) == []


def test_the_check_sees_an_import_by_name_up(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "x.py").write_text(
        'import importlib\nimportlib.import_module("dynaorm.cli")\n'
        'importlib.import_module("dynaorm.lake")\n')
    assert imports_by_name_up(tmp_path, _floors()) == ["x.py dynaorm.cli", "x.py dynaorm.lake"]


def _found_surfaces() -> set[str]:
    """The modules dynaorm's own entry points name (``pyproject.toml``): what the core finds
    (:mod:`dynaorm.plugins`), and a package named by one (the lake's, the MCP edge's)."""
    import tomllib

    config = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    groups = config["project"]["entry-points"]
    named = {value.partition(":")[0] for group, points in groups.items()
             if group.startswith("dynaorm.") for value in points.values()}
    return named | {m.rsplit(".", 1)[0] for m in named if m.count(".") == 2
                    and m.split(".")[1] in ("lake", "mcp")}


def imports_by_name(package: Path) -> list[tuple[str, str]]:
    """Each ``importlib.import_module("dynaorm.X")`` of a module of ``package``: its file
    (relative) and the module it loads."""
    import ast

    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module"
                    and node.args and isinstance(node.args[0], ast.Constant)
                    and str(node.args[0].value).startswith("dynaorm.")):
                found.append((path.relative_to(package).as_posix(), str(node.args[0].value)))
    return found


def test_the_core_finds_its_surfaces_and_imports_none() -> None:
    """Issue 80: no module but a surface's own imports a module dynaorm finds by entry
    point (a command, a model format, the lake's export format, the tracer): by no import
    statement (deferred and type-only ones count; the package's face names
    ``dynaorm.Tracing`` for type checkers and loads it on first use), and by no name."""
    surfaces = _found_surfaces()
    assert {"dynaorm.lake", "dynaorm.mcp.command", "dynaorm.cli.iam",
            "dynaorm.protocol.tracing", "dynaorm.formats.cloudformation"} <= surfaces
    graph, built = import_graph("dynaorm")

    def own(importer: str, surface: str) -> bool:  # (a surface's own modules)
        return any(importer == s or importer.startswith(s + ".") for s in surfaces
                   if surface == s or surface.startswith(s + "."))
    arrows = sorted(_link(built, importer, target) for importer, imported in graph.items()
                    for target in imported if any(
                        target == s or target.startswith(s + ".") for s in surfaces)
                    and not own(importer, target) and importer != "dynaorm")
    assert not arrows, "the core imports a surface it should find:\n" + "\n".join(arrows)
    package = Path(__file__).resolve().parents[2] / "dynaorm"
    assert not [(f, m) for f, m in imports_by_name(package) if m in surfaces]
