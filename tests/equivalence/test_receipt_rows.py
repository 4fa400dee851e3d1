"""A keyed commit's receipt rows are built directly (issue 70: the receipt's action skipped
the generic rendering and sizing, which cost a keyed commit more than its budget): each
receipt Put's built body is exactly what rendering the same Put makes, and its built size
exactly what the write gate counts (the item's size, which over 400 KB is refused, plus
its condition's values), on every table shape a receipt is kept in -- with or without a
sort key, a TTL attribute, a type attribute, scoped or not, any receipts TTL, and any keys
the commit writes and reads."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm import Entity, Table, TransactionTooLargeError
from dynaorm.schema.rules.receipts import Receipting, _whole_size
from dynaorm.values.expressions import condition_values
from dynaorm.values.limits import MAX_ITEM_BYTES, item_size, number_size, value_size
from dynaorm.values.records import Fail, Origin, Put, Role
from dynaorm.write.render import render_op
from tests.support.examples import examples

pytestmark = pytest.mark.engines("moto")


class ThingA(Entity):
    class Meta:
        table = Table("rcpt-a")
        pk = "THING#{thing_id}"
        sk = "THING"

    thing_id: str


class ThingB(Entity):
    class Meta:
        table = Table("rcpt-b", pk="id", sk=None, ttl="expires_at",
                      receipts_ttl=timedelta(milliseconds=1500))
        pk = "THING#{thing_id}"

    thing_id: str


class ThingC(Entity):
    class Meta:
        table = Table("rcpt-c", pk="PK", sk="SK", type_attribute=None, ttl="ttl")
        pk = "THING#{thing_id}"
        sk = "THING"

    thing_id: str


class ThingD(Entity):
    class Meta:
        table = Table("rcpt-d", pk="clé", sk="tri", type_attribute="typ")
        pk = "THING#{thing_id}"
        sk = "THING"

    thing_id: str


#: every shape of table a receipt is kept in
SHAPES: dict[str, type[Any]] = {"pk and sk, no TTL": ThingA, "pk only, TTL": ThingB,
                                "no type attribute": ThingC, "non-ASCII names": ThingD}

_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                max_size=12)
_keys = st.lists(st.dictionaries(st.sampled_from(["pk", "sk", "PK", "clé"]), _text,
                                 min_size=1, max_size=2), max_size=4)


class _Op:
    def __init__(self, key: dict[str, str]) -> None:
        self.key = key


def _plain(row: Put) -> tuple[str, int]:
    """The receipt Put ``row`` through the generic path: rendered as any Put, sized as the
    gate sizes one (its item, then its condition's values)."""
    put = Put(row.key, row.item, row.condition, row.origin)
    assert put.built is None
    _, body = render_op(put)
    assert row.condition is not None
    size = item_size(put.item) + sum(map(value_size, condition_values(row.condition)))
    return json.dumps(body, ensure_ascii=False), size


@settings(max_examples=examples(60), deadline=None)
@given(shape=st.sampled_from(sorted(SHAPES)), key=_text,
       scope=st.none() | st.dictionaries(st.sampled_from(["tenant", "org"]), _text,
                                         min_size=1, max_size=2),
       written=_keys, read=_keys, made=st.booleans())
def test_a_receipt_put_is_built_as_rendering_and_the_gate_make_it(
        shape: str, key: str, scope: dict[str, str] | None, written: list[dict[str, str]],
        read: list[dict[str, str]], made: bool) -> None:
    entity = SHAPES[shape]
    receipting = Receipting([(entity, entity.__dynaorm_spec__.table)], key, "0" * 64, scope)
    receipting.sent = [("GetItem", {"Key": k}) for k in read]
    if made:
        receipting.made.append(("abc", entity(thing_id="t"), [("thing_id",)]))
    (row,) = receipting.rows([_Op(k) for k in written])  # type: ignore[list-item]
    assert isinstance(row, Put) and row.built is not None
    assert row.origin == Origin(entity, row.key, Role.RECEIPT, Fail.EXISTS)
    body, size = _plain(row)
    assert json.dumps(row.built.body, ensure_ascii=False) == body  # (in order, too)
    assert row.built.size == size
    assert render_op(row) == ("PutItem", row.built.body)


def test_a_receipt_over_400_kb_is_refused_as_before() -> None:
    entity = SHAPES["pk and sk, no TTL"]
    receipting = Receipting([(entity, entity.__dynaorm_spec__.table)], "k", "0" * 64)
    small = [_Op({"pk": "x" * 1000, "sk": "y"}) for _ in range(50)]
    (row,) = receipting.rows(small)  # type: ignore[arg-type]
    assert row.built is not None and row.built.size < MAX_ITEM_BYTES
    big = [_Op({"pk": "x" * 2000, "sk": "y" * 1024}) for _ in range(150)]
    with pytest.raises(TransactionTooLargeError, match=r"receipt of this keyed commit .* "
                       r"table 'rcpt-a' would be \d+ bytes, over DynamoDB's 409600 byte"):
        receipting.rows(big)  # type: ignore[arg-type]


@given(st.integers(1, 10**45))
def test_a_whole_numbers_size_is_the_number_rules(n: int) -> None:
    assert _whole_size(str(n)) == number_size(str(n))
