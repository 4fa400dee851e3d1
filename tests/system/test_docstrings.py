"""Every public name, and every public method or property of a public class, has a
docstring: the API reference (docs/api.md, mkdocstrings) is generated from them."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import dynaorm
import pytest_dynaorm
from dynaorm import testing


def _own_doc(obj: Any) -> str:
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    return (doc or "").strip()


def _members(module: Any, names: list[str]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name in names:
        obj = getattr(module, name)
        out.append((name, obj))
        if not inspect.isclass(obj):
            continue
        for attr, value in vars(obj).items():
            if attr.startswith("_"):
                continue
            member = value.fget if isinstance(value, property) else getattr(
                value, "__func__", value)
            if inspect.isfunction(member):
                out.append((f"{name}.{attr}", member))
    return out


PUBLIC = (_members(dynaorm, list(dynaorm.__all__))
          + _members(testing, list(testing.__all__))
          + [(f"pytest_dynaorm.{n}", getattr(pytest_dynaorm, n)) for n in (
              "pytest_addoption", "endpoint_of")])


@pytest.mark.parametrize(("name", "obj"), PUBLIC, ids=[n for n, _ in PUBLIC])
def test_public_name_has_a_docstring(name: str, obj: Any) -> None:
    assert _own_doc(obj), f"{name} has no docstring"


def test_every_public_name_is_in_the_api_reference() -> None:
    from pathlib import Path

    api = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    missing = [n for n in dynaorm.__all__ if f"::: dynaorm.{n}\n" not in api]
    assert not missing, f"add to docs/api.md: {missing}"


def test_every_attribute_of_a_public_class_is_documented() -> None:
    """The reference shows each attribute of a public class with the string after it (a
    ``#:`` comment does not reach mkdocstrings)."""
    griffe = pytest.importorskip("griffe")
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    missing = []
    package = griffe.load("dynaorm", search_paths=[root])  # (parsed once, not imported)
    for module, names in ((dynaorm, dynaorm.__all__), (testing, testing.__all__)):
        for name in names:
            obj = getattr(module, name)
            if not inspect.isclass(obj):
                continue
            found = package[f"{obj.__module__.removeprefix('dynaorm.')}.{obj.__qualname__}"]
            missing += [f"{name}.{attr}" for attr, member in found.members.items()
                        if not attr.startswith("_") and not member.is_alias
                        and member.kind.value == "attribute" and not member.docstring]
    assert not missing, f"attributes without a docstring: {missing}"
