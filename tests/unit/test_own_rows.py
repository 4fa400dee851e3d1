"""dynaorm's own rows (receipts, Powertools records) are never an entity's, as properties
of the pure classification (contract 23): whatever follows an own row's key prefix, no
entity of a table without a type attribute owns the item, no read keeps it or counts it
as foreign, no stream record of it is a change; and no entity's key renders such a key.
On the engines: ``tests/integration/test_own_rows.py``."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dynaorm import Entity, KeyTemplateError, Table
from dynaorm.read.selection import selection
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules.receipts import RECEIPT_TYPE
from dynaorm.schema.streams import classify

shapeless = Table("unit-own-rows", pk="pk", sk="sk", type_attribute=None)
typed = Table("unit-own-rows-typed", pk="pk", sk="sk")


class Any1(Entity):
    class Meta:
        table = shapeless
        pk = "{id}"
        sk = "{kind}"

    id: str
    kind: str


class Pair(Entity):
    class Meta:
        table = shapeless
        pk = "{a}#{b}"
        sk = "P"

    a: str
    b: str


class Typed(Entity):
    class Meta:
        table = typed
        pk = "{id}"
        sk = "{kind}"

    id: str
    kind: str


#: an own row's key prefix: a receipt's, Powertools' records', any kind's in dynaorm's
#: namespace (a surface's row kind, registered by this process or not: contract 24)
PREFIXES = st.one_of(st.sampled_from([f"{RECEIPT_TYPE}#", "dynaorm:idempotency#"]),
                     st.from_regex(r"dynaorm:[a-z_]*#?", fullmatch=True))


def _item(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


@given(PREFIXES, st.text(min_size=1), st.booleans())
def test_an_own_row_s_key_is_no_entity_s_whatever_follows_its_prefix(
        prefix: str, rest: str, same: bool) -> None:
    key = prefix + rest
    item = _item(key, key if same else rest)
    spec = spec_of(Any1)
    assert not spec.owns(item) and not spec.fits(item) and spec.outranked(item)
    sel = selection([Any1, Pair], None)
    assert sel.type_of(item) is None and not sel.keep(item) and not sel.owns(item)
    assert not sel.foreign(item)  # (claimed, by dynaorm: never counted as skipped)
    assert classify(shapeless, item)[0] is None
    assert classify(typed, item)[0] is None  # (a keys-only record: no type name)
    try:
        spec.primary_key({"id": key, "kind": "k"})
    except KeyTemplateError as exc:
        assert exc.field == "id"
    else:
        raise AssertionError(f"{key!r} rendered")


@given(st.text(min_size=1).filter(lambda t: not t.startswith("dynaorm:")),
       st.text(min_size=1).filter(lambda t: t != "P"))  # (not Pair's sort key)
def test_any_other_key_stays_the_entity_s(pk: str, sk: str) -> None:
    """(the property above is not vacuous: the same templates own every other key)"""
    item = _item(pk, sk)
    assert spec_of(Any1).owns(item) and classify(shapeless, item)[0] is Any1
    assert selection([Any1], None).type_of(item) == "Any1"
    assert spec_of(Any1).primary_key({"id": pk, "kind": sk}) == {"pk": pk, "sk": sk}


@given(st.sampled_from([RECEIPT_TYPE, "dynaorm:idempotency", "dynaorm:note", "dynaorm:"]),
       st.text(min_size=1).filter(lambda t: "#" not in t))
def test_a_key_of_several_fields_never_renders_an_own_row_s_key(own: str, b: str) -> None:
    try:
        spec_of(Pair).primary_key({"a": own, "b": b})
    except KeyTemplateError as exc:
        assert exc.field == "a" and "reserved" in str(exc)
    else:
        raise AssertionError(f"{own}#{b} rendered")
    near = own.replace("dynaorm:", "dynaorm-")  # (outside the namespace: a key like any)
    assert spec_of(Pair).primary_key({"a": near, "b": b})["pk"] == f"{near}#{b}"
