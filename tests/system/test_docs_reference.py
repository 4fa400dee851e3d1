"""The API reference (docs/api.md, rendered by mkdocstrings) lists every public name of
``dynaorm`` and every public method and attribute of each, inherited ones included
(``Session.save`` lives on a shared base class): the site is built as ``make docs`` builds
it and the anchors mkdocstrings writes (``id="dynaorm.Session.save"``) are checked against
what ``dir()`` finds on the live objects.

What a class inherits from outside dynaorm (``object``, ``Exception``, pydantic's
``BaseModel`` API, ``typing`` generics) is documented by its owner and not expected here.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dynaorm

ROOT = Path(__file__).resolve().parents[2]


def _foreign(owner: type) -> bool:
    return not owner.__module__.startswith("dynaorm")


def expected_names() -> list[str]:
    """``dynaorm.X`` for each public name and ``dynaorm.X.member`` for each public member
    a class has (by ``dir()``, plus dataclass fields), minus what foreign bases provide."""
    out: list[str] = []
    for name in dynaorm.__all__:
        obj = getattr(dynaorm, name)
        out.append(f"dynaorm.{name}")
        if not inspect.isclass(obj):
            continue
        foreign: set[str] = set()
        for base in obj.__mro__[1:]:
            if _foreign(base):
                foreign.update(dir(base))
        members = set(dir(obj))
        if dataclasses.is_dataclass(obj):
            members.update(f.name for f in dataclasses.fields(obj))
        out.extend(f"dynaorm.{name}.{m}" for m in sorted(members - foreign)
                   if not m.startswith("_"))
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> str:
    site = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir",
         str(site)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr}"
    return (site / "api" / "index.html").read_text()


def _anchors(html: str) -> set[str]:
    return set(re.findall(r'id="(dynaorm\.[A-Za-z0-9_.]+)"', html))


def test_every_public_name_and_member_is_in_the_reference(reference: str) -> None:
    wanted = expected_names()
    assert "dynaorm.Session.save" in wanted and "dynaorm.Query.all" in wanted
    missing = [n for n in wanted if n not in _anchors(reference)]
    assert missing == [], f"not in the API reference: {missing}"


def test_the_check_sees_an_omission(reference: str) -> None:
    """Dropping a member's anchor from the page is reported (the check is not vacuous)."""
    html = reference.replace('id="dynaorm.Query.first"', 'id="gone"')
    assert "dynaorm.Query.first" not in _anchors(html)
    assert "dynaorm.Query.first" in expected_names()


def test_pydantic_internals_are_not_expected() -> None:
    wanted = set(expected_names())
    assert "dynaorm.Entity" in wanted
    assert not {n for n in wanted if n.startswith("dynaorm.Entity.model_")}
