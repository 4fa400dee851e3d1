"""A rule's ``keeps`` hook (:meth:`dynaorm.schema.rules.Rule.keeps`) is asked by every
read path: a stored row a rule of its entity does not keep is no result of a get, a
get_many, a query, a scan, ``values()`` or a count, as a row whose TTL has passed is not
(``test_ttl.py``). The rule here is one a user registers: it hides the rows it marks.
The interaction matrix (``tests/system/test_rule_matrix.py``) runs the built-in rules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import Entity
from dynaorm._types import Item
from dynaorm.schema.rules import RULES, Declaration, Rule, register
from dynaorm.testing import TestBackend
from tests.support.models import app


class Hiding(Rule):
    """Keeps no row whose ``hidden`` attribute is true (entities named ``Shelved*``)."""

    __slots__ = ()
    name = "test-hiding"
    order = 95

    @classmethod
    def build(cls, decl: Declaration) -> Hiding | None:
        return cls() if decl.type_name.startswith("Shelved") else None

    def keeps(self, item: Item) -> bool:
        return item.get("hidden", {}).get("BOOL") is not True


@pytest.fixture(scope="module")
def shelved() -> Iterator[type[Any]]:
    """An entity with the hiding rule (registered for this module only)."""
    register(Hiding)
    try:
        class Shelved(Entity):
            class Meta:
                table = app
                pk = "SHELF#{shelf}"
                sk = "BOOK#{book}"

            shelf: str
            book: str
            hidden: bool = False

        yield Shelved
    finally:
        RULES.pop(Hiding.name, None)


@pytest.fixture
def books(db: TestBackend, shelved: type[Any]) -> list[Any]:
    s = db.session()
    out = [shelved(shelf="a", book=f"b{i}", hidden=i % 2 == 1) for i in range(4)]
    s.save_many(out)
    return out


def test_get_and_get_many_ask_keeps(db: TestBackend, shelved: type[Any],
                                    books: list[Any]) -> None:
    s = db.session()
    assert s.get(shelved, shelf="a", book="b0") == books[0]
    assert s.get(shelved, shelf="a", book="b1") is None
    keys = [{"shelf": "a", "book": f"b{i}"} for i in range(4)]
    assert s.get_many(shelved, keys) == [books[0], None, books[2], None]
    assert s.get_many(shelved, keys, snapshot=True) == [books[0], None, books[2], None]


def test_query_scan_values_and_count_ask_keeps(db: TestBackend, shelved: type[Any],
                                               books: list[Any]) -> None:
    s = db.session()
    kept = [books[0], books[2]]
    assert s.query(shelved, shelf="a").all() == kept
    assert s.query(shelved, shelf="a").reverse().all() == kept[::-1]
    assert s.scan(shelved).all() == kept
    assert [v["book"] for v in s.query(shelved, shelf="a").values("book")] == ["b0", "b2"]
    assert s.query(shelved, shelf="a").count() == 2
    assert s.scan(shelved).count() == 2
