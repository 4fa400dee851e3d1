"""The receipt digest is pinned (issue 60): a receipt written by an earlier release within
its TTL must still match a replay of the same writes, so the canonical text of staged
writes -- and so the digest -- never changes for the same writes, however it is computed."""

from __future__ import annotations

import enum
import json
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from dynaorm import Entity, F, Table
from dynaorm.schema.rules import receipts
from dynaorm.schema.rules.receipts import _canon, digest, made, made_paths
from dynaorm.values.state import DELETED, InstanceState
from dynaorm.write.delete import DeleteEntry
from dynaorm.write.save import SaveEntry
from tests.support.examples import examples
from tests.support.models import Audit, Note, User
from tests.support.receipt_models import Count, Order, Part, Size, Sku

_pinned = Table("dynaorm-digest-pin")


class Colour(enum.Enum):
    RED = "red"


class Inner(BaseModel):
    n: int = 1
    s: str = "x"


class Rich(Entity):
    class Meta:
        table = _pinned
        pk = "RICH#{rich_id}"
        sk = "RICH"

    rich_id: str
    amount: Decimal = Decimal("1.50")
    ratio: float = 0.25
    flag: bool = True
    count: int = 7
    at: datetime = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    day: date = date(2026, 1, 2)
    blob: bytes = b"\x00\x01"
    tags: set[str] = {"b", "a"}
    colour: Colour = Colour.RED
    inner: Inner = Inner()
    extra: dict[str, Any] = {"z": [1, 2], "a": {"k": None}}
    maybe: str | None = None


def _loaded() -> Note:
    note = Note(note_id="n3", body="loaded")
    note._dynaorm_state = InstanceState({"pk": "NOTE#n3", "sk": "NOTE"}, {}, 2)
    return note


def _staged() -> list[Any]:
    return [
        SaveEntry(_loaded()),
        SaveEntry(User(user_id="u1", username="ada", email="ada@example.com",
                       full_name="Ada Lovelace")),
        SaveEntry(Note(note_id="n1", body="x", tags=["b", "a"]), overwrite=True),
        DeleteEntry(Note(note_id="n2")),
        SaveEntry(Audit(equipment_id="e1", part="p1", auditor="me"),
                  condition=F("auditor") == "x"),
        SaveEntry(Rich(rich_id="r1")),
    ]


def test_the_digest_of_a_fixed_commit_is_pinned() -> None:
    # (0.8, issue 68: a new object's fields a default factory made do not count -- the
    # deleted Note's ``tags``; 0.7's pin was b45011fe...: its receipts are not replayed)
    assert digest(_staged()) == (
        "09fc2a086891e6aff5990f0bc02a8c5b88b552dc0ee0841b745d556b2bae8ecf")
    assert digest(_staged()[:2]) == (
        "31ccdc1d71e280a8fdcd0e83de1c104c7d8e2a23debd0e3cb68d4c13fcc478e4")


def test_the_canonical_text_of_values_is_pinned() -> None:
    values: list[Any] = [
        "s'q\"", 3, -0, True, False, None, 1.5, float("nan"), [1, "a"], (2,),
        {"b": 1, "a": 2}, {2: "x", 1: "y"}, {"x", "y"}, frozenset({3, 1}), Decimal("1.500"),
        Decimal("NaN"), b"\xff", bytearray(b"a"), datetime(2026, 1, 2, tzinfo=UTC),
        date(2026, 1, 2), timedelta(seconds=1.5), Colour.RED, int, Inner(),
    ]
    assert [_canon(v) for v in values] == [
        "'s\\'q\"'", "i3", "i0", "T", "F", "N", "f1.5", "fnan", "[i1,'a']", "[i2]",
        "{'a':i2,'b':i1}", "{i1:'y',i2:'x'}", "<'x','y'>", "<i1,i3>", "d1.5", "dNaN", "bff",
        "b61", "t2026-01-02T00:00:00+00:00", "t2026-01-02", "D1.5", "eColour.'red'", "cint",
        "pInner{'n':i1,'s':'x'}"]


@settings(max_examples=examples(50), deadline=None)
@given(st.text(max_size=8), st.text(max_size=8), st.text(min_size=1, max_size=8))
def test_values_default_factories_made_never_count_and_given_ones_always_do(
        name: str, email: str, other: str) -> None:
    """Two new objects given the same values digest alike whatever ids their default
    factory made; a value given otherwise (the id itself included) digests otherwise."""
    first = User(username=name, email=email)
    again = User(username=name, email=email)
    assert first.user_id != again.user_id
    assert digest([SaveEntry(first)]) == digest([SaveEntry(again)])
    assert digest([SaveEntry(first)]) != digest([SaveEntry(User(username=name + other,
                                                                email=email))])
    assert digest([SaveEntry(first)]) != digest([SaveEntry(User(
        user_id=first.user_id, username=name, email=email))])


# -- made_paths' shortcuts hold to the plain walk (issue 70) ---------------------------------
class _Part(BaseModel):
    part_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    qty: int = 0
    tags: list[str] = Field(default_factory=list)


class _Order(Entity):
    class Meta:
        table = _pinned
        pk = "ORDER#{order_id}"
        sk = "ORDER"

    order_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    note: str = ""
    amount: Decimal = Decimal("0")
    parts: list[_Part] = Field(default_factory=list)
    by_name: dict[str, _Part] = Field(default_factory=dict)
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class _Flat(Entity):  # (text and numbers only: made_paths' shortcut)
    class Meta:
        table = _pinned
        pk = "FLAT#{flat_id}"
        sk = "FLAT"

    flat_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    name: str = ""
    n: int = 0


def _plain_paths(value: Any, path: tuple[str | int, ...]) -> list[tuple[str | int, ...]]:
    """made_paths as 0.8 first walked it: every field of every model, nothing skipped."""
    if isinstance(value, list | tuple):
        return [p for i, v in enumerate(value) for p in _plain_paths(v, (*path, i))]
    if isinstance(value, dict):
        return [p for k, v in value.items() if type(k) is str
                for p in _plain_paths(v, (*path, k))]
    if not hasattr(type(value), "model_fields") or isinstance(value, type):
        return []
    names = made(value)
    found: list[tuple[str | int, ...]] = []
    for name in type(value).model_fields:
        field = getattr(value, name, None)
        if name in names:
            if not isinstance(field, list | tuple | dict | set | bytearray):
                found.append((*path, name))
        elif isinstance(field, list | tuple | dict) or hasattr(type(field), "model_fields"):
            found.extend(_plain_paths(field, (*path, name)))
    return found


_PARTS = st.builds(lambda given, qty, tags: _Part(**given, qty=qty, tags=tags),
                   st.one_of(st.just({}), st.text(max_size=4).map(lambda t: {"part_id": t})),
                   st.integers(0, 3), st.lists(st.text(max_size=3), max_size=2))


@settings(max_examples=examples(100), deadline=None)
@given(st.fixed_dictionaries({}, optional={
    "order_id": st.text(min_size=1, max_size=4), "note": st.text(max_size=4),
    "parts": st.lists(_PARTS, max_size=3),
    "by_name": st.dictionaries(st.text(max_size=3), _PARTS, max_size=2),
    "at": st.just(datetime(2026, 1, 2, tzinfo=UTC))}), st.booleans())
def test_made_paths_are_the_plain_walks(given: dict[str, Any], loaded: bool) -> None:
    """Whatever was given or made (ids, times, nested models' ids, empty lists), new or
    loaded, made_paths finds what walking every field finds, and the digest does not
    depend on made values."""
    order = _Order(**given)
    if loaded:
        order._dynaorm_state = InstanceState({"pk": "ORDER#x", "sk": "ORDER"}, {}, 1)
    assert made_paths(order) == _plain_paths(order, ())
    flat = _Flat(**{{"note": "name", "order_id": "flat_id"}[k]: v for k, v in given.items()
                    if k in ("note", "order_id")})
    if loaded:
        flat._dynaorm_state = InstanceState({"pk": "FLAT#x", "sk": "FLAT"}, {}, 1)
    assert made_paths(flat) == _plain_paths(flat, ())
    again = _Order(**given)
    if not loaded:
        assert digest([SaveEntry(order)]) == digest([SaveEntry(again)])


@settings(max_examples=examples(60), deadline=None)
@given(given=st.fixed_dictionaries({}, optional={
    "order_id": st.text(min_size=1, max_size=4), "note": st.text(max_size=4),
    "parts": st.lists(_PARTS, max_size=3)}), state=st.sampled_from(["new", "loaded", "deleted"]))
def test_the_state_read_is_the_plain_one(given: dict[str, Any], state: str) -> None:
    """The digest reads a new object's unset state slot past pydantic's ``__getattr__``
    (issue 70): what it reads is ``_dynaorm_state`` (an entity new, loaded or deleted, a
    nested model), and the digest and made values are what the plain read makes."""
    order = _Order(**given)
    if state == "loaded":
        order._dynaorm_state = InstanceState({"pk": "ORDER#x", "sk": "ORDER"}, {}, 1)
    elif state == "deleted":
        object.__setattr__(order, "_dynaorm_slot", DELETED)
    for obj in (order, *order.parts):
        assert receipts._state(obj) is getattr(obj, "_dynaorm_state", None)
    fast = digest([SaveEntry(order)]), made_paths(order), made(order)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(receipts, "_state", lambda obj: getattr(obj, "_dynaorm_state", None))
        assert (digest([SaveEntry(order)]), made_paths(order), made(order)) == fast


def test_each_table_builds_its_own_receipts_rule() -> None:
    """Issue 80: the receipts rule is built per table and typed (``TableSchema.receipts``),
    not a ``ClassVar[Any]`` of ``Rules`` set by an import at the bottom of a module; what a
    table can keep is asked of its own rule, once."""
    from dynaorm import Table
    from dynaorm.schema.rules import NO_RULES, Rules
    from dynaorm.schema.rules.receipts import Receipts

    words, numbers = Table("receipts-a"), Table("receipts-b", key_types={"pk": "N"})
    assert isinstance(words.receipts, Receipts) and words.receipts.table is words
    assert numbers.receipts is not words.receipts and numbers.receipts.table is numbers
    assert "receipts" not in vars(Rules) and not hasattr(NO_RULES, "receipts")
    assert words.receipts.keyed() == ("", True)
    assert numbers.receipts.keyed() == ("its keys are not strings", True)
    assert numbers.receipts.keyed() is numbers.receipts.keyed()


# --- the digest tells apart what is stored apart
# (moved from system/test_red_team_08b.py:
# Red team of four changes merged for 0.8, by someone who wrote none of them: the MCP
# get/find calls on the event loop (issue 70, :func:`dynaorm.mcp.tools.run` by an AsyncSession), the
# receipt digest's shortcuts (key70), the ranking of rule rows by template specificity
# (r73, :meth:`KeyTemplate.covers`) and the separator of an inferred model (``_separator``).
# Each test states what must never happen. Nothing here depends on the engine: moto only.)

_QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck))


# -- 2. receipts: the digest tells apart what is stored apart --------------------------------


_text = st.text(st.sampled_from("ab'\"\\é"), max_size=3)


_leaf = st.one_of(_text, st.builds(Sku, _text), st.integers(-3, 3),
                  st.builds(Count, st.integers(-3, 3)),
                  st.sampled_from(list(Size)), st.none(), st.booleans(),
                  st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-9,
                              max_value=9), st.binary(max_size=2))


_nested = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=2),
    st.frozensets(st.one_of(_text, st.integers(0, 3)), max_size=2)), max_leaves=6)


_order = st.builds(
    Order, order_id=st.just("o1"), note=_nested, size=st.sampled_from(list(Size)),
    price=st.decimals(allow_nan=False, allow_infinity=False, places=1, min_value=0,
                      max_value=3),
    blob=st.binary(max_size=2), tags=st.sets(_text, max_size=2),
    parts=st.lists(st.builds(Part, sku=_nested, size=st.sampled_from(["s", "l"]),
                             qty=_leaf), max_size=2))


def _stored(order: Order) -> str:
    """What a save of ``order`` stores, as comparable text."""
    from dynaorm.schema.entity import encode_entity

    spec = Order.__dynaorm_spec__
    item = encode_entity(order, spec, None, spec.primary_key(dict(order)))
    return json.dumps(item, sort_keys=True, default=repr)


@pytest.mark.sync_only
@settings(_QUICK, max_examples=examples(200))
@given(a=_order, b=_order)
@example(a=Order(order_id="o1", note=Sku("a")), b=Order(order_id="o1", note=Sku("b")))
@example(a=Order(order_id="o1", note={"k": [Sku("a")]}),
         b=Order(order_id="o1", note={"k": [Sku("b")]}))
@example(a=Order(order_id="o1", note=Count(1)), b=Order(order_id="o1", note=Count(2)))
def test_two_commits_digest_alike_only_when_they_store_alike(a: Order, b: Order) -> None:
    """Two saves whose digests are equal store the same item: a retry under an
    idempotency key is a replay only of the very same write (a ``str`` subclass in an
    ``Any`` field digested as its class name alone, ``?Sku``: any two values alike)."""
    if digest([a]) == digest([b]):
        assert _stored(a) == _stored(b)
    assert digest([a]) == digest([a.model_copy(deep=True)])
