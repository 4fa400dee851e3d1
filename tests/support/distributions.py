"""Installed distributions made for a test: a ``*.dist-info`` folder (``METADATA`` and
``entry_points.txt``) and the modules it names, in a folder that goes on ``sys.path``. That
is all ``importlib.metadata`` reads, so what dynaorm finds by entry point
(:mod:`dynaorm.plugins`) there is what it would find of a package installed with pip.

:func:`installed` puts one on this process's ``sys.path`` for a test (and forgets what
dynaorm found before and after it); a subprocess gets the folder on ``PYTHONPATH``. A
distribution named ``dynaorm`` put first stands in for dynaorm's own (the first of a name
on ``sys.path`` is the one read): dynaorm with other entry points, or none.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from dynaorm.plugins import forget

#: group -> {name: "module:attribute"}
EntryPoints = Mapping[str, Mapping[str, str]]


def distribution(root: Path, name: str, entry_points: EntryPoints,
                 modules: Mapping[str, str] = {}) -> Path:
    """``root`` holding the distribution ``name`` (version 1.0) with ``entry_points`` and
    the top-level ``modules`` (module name -> source, dedented); returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) + "\n"
        for group, points in entry_points.items()))
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))
    return root


@contextmanager
def installed(root: Path) -> Iterator[Path]:
    """The distributions under ``root`` installed for the block: first on ``sys.path``,
    and what dynaorm found by entry point forgotten on the way in and out."""
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    forget()
    try:
        yield root
    finally:
        sys.path.remove(str(root))
        importlib.invalidate_caches()
        forget()
