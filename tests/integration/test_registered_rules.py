"""Rules an application registers (:func:`dynaorm.schema.rules.register`) are honoured by
every read path, as the built-in ones are:

- ``keeps`` (:meth:`~dynaorm.schema.rules.Rule.keeps`): a stored row a rule of its entity
  does not keep is no result of a get, a get_many, a query, a scan, ``values()`` or a
  count, as a row whose TTL has passed is not (``test_ttl.py``);
- ``decode``: a plain entity's rows read through its rule's decoder on every read path
  (0.6's fast way of loading read them as stored).

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


class Shouting(Rule):
    """Reads a ``Shouted*`` entity's ``text`` upper-cased (what it stores stays as is)."""

    __slots__ = ()
    name = "test-shouting"
    order = 96

    @classmethod
    def build(cls, decl: Declaration) -> Shouting | None:
        return cls() if decl.type_name.startswith("Shouted") else None

    def decode(self, item: Item) -> Item:
        return {**item, "text": {"S": item["text"]["S"].upper()}}


@pytest.fixture(scope="module")
def shouted() -> Iterator[type[Any]]:
    """A plain entity but for the shouting rule (registered for this module only)."""
    register(Shouting)
    try:
        class Shouted(Entity):
            class Meta:
                table = app
                pk = "SHOUT#{room}"
                sk = "NOTE#{n}"

            room: str
            n: int
            text: str

        yield Shouted
    finally:
        RULES.pop(Shouting.name, None)


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


def test_every_read_decodes_through_the_rule(db: TestBackend, shouted: type[Any]) -> None:
    s = db.session()
    s.save_many([shouted(room="r", n=i, text=f"note {i}") for i in range(3)])
    loud = [shouted(room="r", n=i, text=f"NOTE {i}") for i in range(3)]
    assert s.get(shouted, room="r", n=0) == loud[0]
    assert s.get_many(shouted, [{"room": "r", "n": i} for i in range(3)]) == loud
    assert s.query(shouted, room="r").all() == loud
    assert s.scan(shouted).all() == loud
    assert [v["text"] for v in s.query(shouted, room="r").values("text")] == [
        o.text for o in loud]
