"""What each surface of dynaorm takes from around the public API (issue 80, contract 24
"One public door"): the private dynaorm names it imports and the private attributes it
reads, found by an AST walk of its modules. ``python -m tests.support.public_door``
prints the table; ``tests/system/test_public_door.py`` holds the budgets.

The rules, precisely:

- **A public name** is one that ``dynaorm.__all__`` exports, or the ``__all__`` of a
  module the API reference documents: a module ``docs/api.md`` shows (``::: MODULE``) or
  shows a member of (``::: MODULE.NAME``), or a name ``docs/api.md`` shows itself. The
  import must name that module: ``from dynaorm.errors import ScopeError`` is private
  (``dynaorm.errors`` is no documented module) though ``from dynaorm import ScopeError``
  is public; a surface imports what a third party can import. Importing a documented
  module itself (``from dynaorm import jobs``, ``import dynaorm.lake``) is public;
  importing any other dynaorm module is one private name (the module).
- **A private attribute** is ``x._name`` (not a dunder) read or written on anything but
  ``self`` or ``cls``, or ``getattr``/``setattr``/``hasattr`` with a literal ``"_name"``,
  on a dynaorm object: a static walk cannot know whose object ``x`` is, so an attribute
  counts when a dynaorm module outside the surface defines that name (a method or class
  attribute of its classes, ``self._name = ...``, a module-level name). A dependency's
  private attribute (OpenTelemetry's ``_TRACER_PROVIDER``) is not the door's business
  (``dynaorm/private_apis.py`` keeps those; a surface's own ``private_apis.py``, those
  only it relies on: what it reads there is not counted). Each distinct ``_name`` counts
  once per surface.
- **A surface's own modules are its own**: what a surface imports from one of its own
  modules is not counted, nor an attribute its own classes define (a member of one of
  its classes, ``self._name = ...``: ``emulator._lock`` on its own emulator).
  A surface that is part of a module (Spark is ``jobs/job.py``'s ``run_spark``) is the
  top-level definitions it names: the imports they use count, the rest of the module is
  its host's.
- A dunder name (``from dynaorm import __version__``) is no private name.
- Each private name counts once per surface however many of its modules import it.
  Imports under ``if TYPE_CHECKING:`` count as any other (a type is part of the door).
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: surface -> its modules (``path`` or ``path::name,name`` for part of a module)
SURFACES: dict[str, tuple[str, ...]] = {
    "MCP": ("dynaorm/mcp/",),
    "LangGraph": ("libs/langgraph/dynaorm_langgraph/",),
    "IaC/IAM": ("dynaorm/formats/cloudformation.py", "dynaorm/formats/terraform.py",
                "dynaorm/formats/iam.py", "dynaorm/formats/tables.py", "dynaorm/cli/iam.py"),
    "chart": ("dynaorm/formats/chart.py",),
    "Powertools": ("dynaorm/powertools.py",),
    "PynamoDB bridge": ("dynaorm/pynamodb.py",),
    "lake": ("dynaorm/lake/",),
    "exports": ("dynaorm/jobs/exports.py", "dynaorm/jobs/export_files.py",
                "dynaorm/jobs/export_filter.py", "dynaorm/jobs/export_formats.py",
                "dynaorm/jobs/export_parts.py",
                "dynaorm/jobs/arrow.py", "dynaorm/jobs/stored.py",
                "dynaorm/jobs/vector.py"),
    "OpenTelemetry": ("dynaorm/protocol/tracing.py", "dynaorm/protocol/metrics.py"),
    "Spark": ("dynaorm/spark.py", "dynaorm/jobs/job.py::run_spark"),
    "inference": ("dynaorm/formats/infer/", "dynaorm/client/infer.py"),
    "testing": ("dynaorm/testing/", "pytest_dynaorm.py"),
}

#: the surfaces that take nothing private (an import-linter contract each, too)
NONE_PRIVATE = ("LangGraph", "IaC/IAM", "chart", "Powertools", "PynamoDB bridge", "lake")


@dataclass
class Use:
    """What one surface takes: private names (``module.name``) and attributes
    (``._name``), each with the places (``path:line``) it is taken at."""

    names: dict[str, list[str]] = field(default_factory=dict)
    attributes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """Names and attributes together."""
        return len(self.names) + len(self.attributes)


@cache
def documented() -> tuple[frozenset[str], frozenset[str]]:
    """The modules the API reference documents, and the dotted names it shows itself."""
    modules: set[str] = set()
    names: set[str] = set()
    for line in (ROOT / "docs" / "api.md").read_text().splitlines():
        if not line.startswith("::: "):
            continue
        target = line[4:].strip()
        if _source(target) is not None:
            modules.add(target)
        else:
            owner, _, _ = target.rpartition(".")
            modules.add(owner)
            names.add(target)
    return frozenset(modules), frozenset(names)


def _source(module: str) -> Path | None:
    """The file of a module of the project (``None``: no such module). Read, never
    imported: the count imports nothing of what it counts."""
    base = ROOT.joinpath(*module.split("."))
    for found in (base.with_suffix(".py"), base / "__init__.py"):
        if found.is_file():
            return found
    return None


@cache
def _bindings(module: str) -> tuple[frozenset[str], dict[str, tuple[str, str]]]:
    """A module's ``__all__`` (its literals, ``+=`` included) and the names it binds by
    importing them: name -> (module, name) (``dynaorm``'s lazy names too: ``_LAZY``)."""
    path = _source(module)
    if path is None:
        return frozenset(), {}
    tree = _parsed(path)
    exported: set[str] = set()
    imported: dict[str, tuple[str, str]] = {}
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if "__all__" in names and node.value is not None:
                exported |= {e.value for e in ast.walk(node.value)
                             if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if "_LAZY" in names and isinstance(node.value, ast.Dict):
                imported.update({k.value: (v.value, k.value) for k, v in zip(
                    node.value.keys, node.value.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)})
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(node.module or "", node.level, module, is_package)
            imported.update({a.asname or a.name: (source, a.name) for a in node.names})
    return frozenset(exported), imported


def exported(module: str) -> frozenset[str]:
    """The names a module's ``__all__`` exports (none when it has none)."""
    return _bindings(module)[0]


@cache
def origin(module: str, name: str) -> tuple[str, str]:
    """Where the ``name`` of ``module`` is defined: its imports followed through the
    project's modules (a submodule: ``(module.name, "")``)."""
    if _source(f"{module}.{name}") is not None:
        return f"{module}.{name}", ""
    found = _bindings(module)[1].get(name)
    if found is None or found[0] == module or _source(found[0]) is None:
        return module, name
    return origin(*found)


def public(module: str, name: str | None) -> bool:
    """Whether importing ``name`` from ``module`` (``None``: the module itself) goes
    through the door."""
    modules, names = documented()
    if name is None:
        return module in modules or module == "dynaorm"
    if name.startswith("__") and name.endswith("__"):  # (``__version__``: no private name)
        return True
    if f"{module}.{name}" in modules:  # (a documented submodule: ``from dynaorm import lake``)
        return True
    if (module == "dynaorm" or module in modules) and (
            name in exported(module) or f"{module}.{name}" in names):
        return True
    defined = origin(module, name)
    return any(origin(door, name) == defined
               for door in ("dynaorm", *modules) if name in exported(door))


def _files(spec: str) -> Iterator[tuple[Path, frozenset[str] | None]]:
    path, _, part = spec.partition("::")
    where = ROOT / path
    parts = frozenset(part.split(",")) if part else None
    if where.is_dir():
        for file in sorted(where.rglob("*.py")):
            yield file, None
    else:
        yield where, parts


def files_of(surface: str) -> list[Path]:
    """The files of ``surface`` (a name of :data:`SURFACES`)."""
    return [path for spec in SURFACES[surface] for path, _ in _files(spec)]


def module_name(path: Path) -> str:
    """The dotted module name of a file of the project (a file elsewhere: its name)."""
    if not path.is_relative_to(ROOT):
        return path.stem
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _own_modules(specs: Iterable[str]) -> set[str]:
    return {module_name(f) for spec in specs for f, part in _files(spec) if part is None}


def _defined(tree: ast.AST) -> set[str]:
    """The private names a module defines: its functions, classes and their members,
    module-level names, ``self._x`` assignments."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            found.add(node.attr)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    return {n for n in found if n.startswith("_")}


#: a private name a module defines: a function or class, an attribute of ``self``/``cls``
#: assigned, a name assigned or annotated (read from the text: no module need be parsed)
_DEFINES = re.compile(r"\b(?:def|class)\s+(_\w+)|\b(?:self|cls)\.(_\w+)\s*(?::[^=]|=[^=])"
                      r"|^\s*(_\w+)\s*(?::[^=]|=[^=])", re.MULTILINE)


@cache
def _defined_in(path: Path) -> frozenset[str]:
    return frozenset(n for m in _DEFINES.finditer(path.read_text()) for n in m.groups() if n)


def _members(tree: ast.AST) -> set[str]:
    """The private attribute names a tree's classes define: members, ``self._x = ...``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    found.add(member.name)
                elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
                    found.add(member.target.id)
                elif isinstance(member, ast.Assign):
                    found |= {t.id for t in member.targets if isinstance(t, ast.Name)}
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            found.add(node.attr)
    return {n for n in found if n.startswith("_")}


def _package_files() -> list[Path]:
    return [*sorted((ROOT / "dynaorm").rglob("*.py")), ROOT / "pytest_dynaorm.py"]


@cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _private_attribute(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _resolve(module: str, level: int, here: str, is_package: bool) -> str:
    if not level:
        return module
    base = here.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def measure(surface: str) -> Use:
    """What ``surface`` takes from around the door."""
    return measure_modules(SURFACES[surface])


def measure_modules(specs: Iterable[str]) -> Use:
    """What the modules ``specs`` (as :data:`SURFACES` names them) take from around the
    door, as one surface."""
    specs = tuple(specs)
    own = _own_modules(specs)
    trees: list[tuple[Path, ast.Module, frozenset[str] | None]] = []
    for spec in specs:
        for path, part in _files(spec):
            trees.append((path, _parsed(path), part))
    mine = {path for path, _, part in trees if part is None}
    parts = {path: part for path, _, part in trees if part is not None}
    defined: set[str] = set()  # the private names dynaorm defines outside the surface
    for path in _package_files():
        if path in mine:
            continue
        if path in parts:
            defined |= {name for node in _parsed(path).body
                        if getattr(node, "name", None) not in parts[path]
                        for name in _defined(node)}
        else:
            defined |= _defined_in(path)
    for _, tree, part in trees:  # (its own classes' members are its own)
        tops = tree.body if part is None else [
            n for n in tree.body if getattr(n, "name", None) in part]
        defined -= {name for top in tops for name in _members(top)}
    use = Use()
    for path, tree, part in trees:
        here = module_name(path)
        is_package = path.name == "__init__.py"
        nodes: list[ast.AST]
        if part is None:
            nodes = [tree]
            used: set[str] | None = None
        else:
            nodes = [n for n in tree.body if getattr(n, "name", None) in part]
            used = {n.id for top in nodes for n in ast.walk(top) if isinstance(n, ast.Name)}
            # the module-level imports its part uses
            nodes += [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        where = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
        for top in nodes:
            for node in ast.walk(top):
                _take(node, use, own, defined, here, is_package, used, where)
    return use


def _take(node: ast.AST, use: Use, own: set[str], defined: set[str], here: str,
          is_package: bool, used: set[str] | None, where: str) -> None:
    at = f"{where}:{getattr(node, 'lineno', 0)}"
    if isinstance(node, ast.ImportFrom):
        module = _resolve(node.module or "", node.level, here, is_package)
        if not (module == "dynaorm" or module.startswith("dynaorm.")):
            return
        for alias in node.names:
            if used is not None and (alias.asname or alias.name) not in used:
                continue
            sub = f"{module}.{alias.name}"
            if module in own or sub in own or public(module, alias.name):
                continue
            use.names.setdefault(sub, []).append(at)
    elif isinstance(node, ast.Import):
        for alias in node.names:
            name = alias.name
            if not name.startswith("dynaorm.") or name in own or public(name, None):
                continue
            if used is not None and (alias.asname or name.split(".")[0]) not in used:
                continue
            use.names.setdefault(name, []).append(at)
    elif where.endswith("private_apis.py"):  # (a dependency's, read where a surface keeps
        return  # them: its objects, not dynaorm's)
    elif isinstance(node, ast.Attribute):
        if (_private_attribute(node.attr) and node.attr in defined
                and not (isinstance(node.value, ast.Name)
                         and node.value.id in ("self", "cls"))):
            use.attributes.setdefault(node.attr, []).append(at)
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
          and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
          and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
          and isinstance(node.args[1].value, str) and _private_attribute(node.args[1].value)
          and node.args[1].value in defined):
        use.attributes.setdefault(node.args[1].value, []).append(at)


def table() -> dict[str, Use]:
    """Every surface's use."""
    return {surface: measure(surface) for surface in SURFACES}


def render(found: dict[str, Use], *, detail: bool = False) -> str:
    """The table as text (``detail``: each name and attribute with where it is taken)."""
    lines = [f"{'surface':<16} {'names':>5} {'attrs':>5} {'total':>5}"]
    for surface, use in found.items():
        lines.append(f"{surface:<16} {len(use.names):>5} {len(use.attributes):>5} "
                     f"{use.count:>5}")
        if detail:
            for name, places in sorted(use.names.items()):
                lines.append(f"    {name}  ({', '.join(places[:3])})")
            for name, places in sorted(use.attributes.items()):
                lines.append(f"    ._{name.lstrip('_')}  ({', '.join(places[:3])})")
    names = sum(len(u.names) for u in found.values())
    attrs = sum(len(u.attributes) for u in found.values())
    lines.append(f"{'all':<16} {names:>5} {attrs:>5} {names + attrs:>5}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    print(render(table(), detail="-v" in sys.argv))
