"""How dynaorm finds what other packages add to it, as OpenTelemetry finds its
instrumentations: by the package's entry points (``[project.entry-points."GROUP"]`` in its
``pyproject.toml``), never by importing it. dynaorm's own surfaces are found the same way
(its ``pyproject.toml`` declares them), so the core imports none of them. The groups:

- ``dynaorm.commands``: a subcommand of the ``dynaorm`` command. The entry point names a
  function of the command line's subparsers (``argparse``'s ``add_subparsers()``) that
  adds its parser, whose defaults hold ``run``, a function ``run(args, out) -> int`` (the
  exit code; see :doc:`the CLI guide </guide/cli>`). ``dynaorm iam`` and ``dynaorm mcp``
  are found so.
- ``dynaorm.formats``: a model format (``dynaorm model --format NAME``,
  :func:`dynaorm.formats.export`): a module or object with ``to_format(model)`` (the
  document and what the format had no place for, one line each) and, if files of the
  format are read back, ``from_format(doc)`` (the models it holds).
- ``dynaorm.export_formats``: an export format (``dynaorm.jobs.export(format=NAME)``,
  ``dynaorm export --format NAME``): a :class:`dynaorm.jobs.ExportFormat`. The lake's
  ``iceberg`` is found so.
- ``dynaorm.tracers``: a tracer every :class:`~dynaorm.Client` attaches outermost of its
  hooks: a function of the client returning a :class:`~dynaorm.Hook` with ``active()``
  (asked once per operation; the hook is in the client's policy only while it says
  ``True``). OpenTelemetry's :class:`~dynaorm.Tracing` is found so: ``import dynaorm``
  loads no OpenTelemetry module, and a client made where none is registered loads none.
- ``dynaorm.surface_rows``: the rows a surface keeps in an application's table that no
  entity class claims where the surface is not declared in the process: an object with
  ``claims(item, pk, sk, type_name) -> bool`` (a stored item, the table's key attribute
  names, its type name or ``None``) and ``hint`` (what to do, as ``dynaorm check`` says
  it). ``dynaorm check`` and ``dynaorm model --infer`` ask them. LangGraph's adapter
  (``dynaorm-langgraph``) registers its checkpoints', writes', leases' and memories' so.

The entry points of every group are read once a process, when one is first asked for
(``import dynaorm`` reads none), and loaded once; :func:`forget` has them read again (a
package installed while the process runs). A name two distributions register is the first's on
``sys.path``, but dynaorm's own names (``iam``, ``json``, ``iceberg``, ``opentelemetry``...)
and ``parquet`` (the built-in export format) are never another package's: such an entry
point is left out with a ``RuntimeWarning`` naming it.
"""

import functools
import re
import warnings
from collections.abc import Mapping
from importlib.metadata import Distribution, EntryPoint, distributions
from types import MappingProxyType
from typing import Any, Final

__all__ = ["COMMANDS", "EXPORT_FORMATS", "FORMATS", "GROUPS", "SURFACE_ROWS", "TRACERS", "forget",
           "found", "loaded"]

COMMANDS: Final = "dynaorm.commands"
"""The group of the ``dynaorm`` command's subcommands."""
FORMATS: Final = "dynaorm.formats"
"""The group of the model formats."""
EXPORT_FORMATS: Final = "dynaorm.export_formats"
"""The group of the export formats."""
TRACERS: Final = "dynaorm.tracers"
"""The group of the tracers every client attaches."""
SURFACE_ROWS: Final = "dynaorm.surface_rows"
"""The group of the rows surfaces keep in an application's table."""
#: every group dynaorm reads
GROUPS: Final = (COMMANDS, FORMATS, EXPORT_FORMATS, TRACERS, SURFACE_ROWS)

def found(group: str) -> Mapping[str, EntryPoint]:
    """The entry points of ``group`` (one of :data:`GROUPS`) by name, in the order of
    their names, none loaded."""
    if group not in GROUPS:
        raise ValueError(f"dynaorm reads the entry-point groups {list(GROUPS)}, not {group!r}")
    return _every()[group]


@functools.cache
def _every() -> dict[str, Mapping[str, EntryPoint]]:
    """Every group's entry points by name, read once: of each distribution whose
    ``entry_points.txt`` names a group of dynaorm's, in ``sys.path``'s order. Only those
    are parsed: ``importlib.metadata.entry_points()`` parses every distribution's (a
    client's first request paid ~4 ms of CPU for it in a 180-distribution environment,
    ~2.5% of a cold start; reading them costs ~1.5). The answer is the same
    (``tests/system/test_plugins.py`` holds them equal), but where two installs of one
    distribution are on the path and the first declares none of these groups."""
    found: dict[str, dict[str, EntryPoint]] = {group: {} for group in GROUPS}
    theirs = []
    seen = set()
    for dist in distributions():
        text = dist.read_text("entry_points.txt")
        if text and "[dynaorm." in text and (name := _name(dist)) not in seen:
            seen.add(name)  # (an install shadowed by an earlier one of its name: not read)
            for point in dist.entry_points:
                if point.group in found and name == "dynaorm":
                    found[point.group][point.name] = point  # (dynaorm's own: never taken)
                elif point.group in found:
                    theirs.append(point)
    own = {group: (*points, *_BUILT_IN.get(group, ())) for group, points in found.items()}
    for point in theirs:
        if point.name in own[point.group]:
            warnings.warn(f"dynaorm: the {point.group} entry point {point.name!r} "
                          f"({point.value}) takes a name of dynaorm's own: left out",
                          RuntimeWarning, stacklevel=3)
        else:
            found[point.group].setdefault(point.name, point)
    return {group: MappingProxyType(dict(sorted(points.items())))
            for group, points in found.items()}


#: the names a group's built-ins hold without an entry point
_BUILT_IN: Final = {EXPORT_FORMATS: ("parquet",)}


def _name(dist: Distribution) -> str:
    """A distribution's name as PEP 503 compares it, from its metadata's ``Name:`` line
    (not parsed whole: ``dist.name`` runs the e-mail parser over it)."""
    meta = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    found = re.search(r"^Name:\s*(\S+)", meta, re.M)
    return re.sub(r"[-_.]+", "-", found.group(1) if found else "").lower()


def forget() -> None:
    """Read the entry points again when one is next asked for (a package installed, or
    put on ``sys.path``, while the process runs; a client made before keeps its tracers)."""
    _every.cache_clear()
    loaded.cache_clear()


@functools.cache
def loaded(group: str) -> dict[str, Any]:
    """The objects the entry points of ``group`` name, by name, loaded once (per
    :func:`forget`): the same dict each time, read only but by who leaves one out for the
    process (a surface whose ``claims()`` raised). One that cannot be loaded (its package
    broken, or an extra of it missing) is left out with a ``RuntimeWarning`` naming it and
    why."""
    out = {}
    for name, point in found(group).items():
        try:
            out[name] = point.load()
        except Exception as exc:  # (any error a third party's import raises)
            warnings.warn(f"dynaorm: the {group} entry point {name!r} ({point.value}) "
                          f"cannot be loaded: {type(exc).__name__}: {exc}",
                          RuntimeWarning, stacklevel=2)
    return out
