"""A keyed commit's receipt rows are built directly (issue 70: the receipt's action skipped
the generic rendering and sizing, which cost a keyed commit more than its budget): each
receipt Put's built body is exactly what rendering the same Put makes, and its built size
exactly what the write gate counts (the item's size, which over 400 KB is refused, plus
its condition's values), on every table shape a receipt is kept in -- with or without a
sort key, a TTL attribute, a type attribute, scoped or not, any receipts TTL, and any keys
the commit writes and reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from dynaorm import Entity, Session, Table, TransactionTooLargeError
from dynaorm.schema.rules.receipts import Receipting, _whole_size, digest
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
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


# --- the receipt's Put built directly is the generic render
# (moved from system/test_red_team_08d_receipts.py:
# Red team 08d, receipts' Put built directly (:func:`dynaorm.schema.rules.receipts._built`):
# what must never happen to a keyed commit's receipt whatever the entity and its values.
#
# - the built body or size differs from the generic render and the gate's count, for a real
#   keyed commit of entities holding odd numbers, huge ints, Decimals, sets, nested models,
#   binary and unicode, whose default factories made such values (``dynaorm:made``);
# - the receipt's 400 KB refusal disagrees with the gate's item limit at the boundary;
# - the digest of the same staged writes differs between processes (hash seeds: sets and
#   mappings iterate in another order) or between two loads of the same item;
# - a keyed commit whose answers are lost (a second writer acting in the window) applies
#   twice, or a replay puts back other values than the first commit made.
#
# moto only: the receipt's build is pure; the lost answers are settled by reading receipts
# (no ClientRequestToken needed).)

kept = Table("red08d-receipts", ttl="expires")


class Inner(BaseModel):
    label: str
    amount: Decimal
    tags: set[str] = set()


_MADE: list[Any] = []


def _factory() -> Any:
    return _MADE[0] if _MADE else "x"


class Odd(Entity):
    class Meta:
        table = kept
        pk = "ODD#{odd_id}"
        sk = "ODD"

    odd_id: str
    n: int = 0
    d: Decimal = Decimal(0)
    f: float = 0.0
    words: set[str] = set()
    nums: set[int] = set()
    blob: bytes = b""
    inner: Inner | None = None
    nested: dict[str, Any] = {}
    made_text: str = Field(default_factory=lambda: str(_factory()))
    made_num: Decimal = Field(default_factory=lambda: Decimal("1e-30"))


@pytest.fixture
def tb(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(kept, endpoint_url=backend, name_suffix=worker_suffix()) as b:
        kept.max_wait = 0
        yield b


def _generic(row: Put) -> tuple[dict[str, Any], int]:
    put = Put(row.key, row.item, row.condition, row.origin)
    _, body = render_op(put)
    assert row.condition is not None
    return body, item_size(put.item) + sum(map(value_size, condition_values(row.condition)))


_texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_key_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1,
                max_size=20)
_decimals = st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(
    lambda d: d == 0 or -130 < d.adjusted() < 125).map(lambda d: Decimal(f"{d:.30g}"))
_values = st.fixed_dictionaries({
    "n": st.integers(-(10**37), 10**37),
    "d": _decimals,
    "f": st.floats(allow_nan=False, allow_infinity=False, width=64).filter(
        lambda x: x == 0 or 1e-120 < abs(x) < 1e120),
    "words": st.sets(_key_text, max_size=4),
    "nums": st.sets(st.integers(-(10**30), 10**30), max_size=4),
    "blob": st.binary(max_size=40),
    "inner": st.none() | st.builds(Inner, label=_texts, amount=_decimals,
                                   tags=st.sets(_key_text, max_size=3)),
    "nested": st.dictionaries(_key_text, st.integers() | _texts | st.lists(_texts, max_size=2),
                              max_size=3),
})


@pytest.mark.sync_only
@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(ids=st.lists(_key_text.filter(lambda k: "#" not in k), min_size=1, max_size=3, unique=True),
       values=_values,
       made=_texts | st.integers(-(10**40), 10**40), key=_key_text)
def test_the_built_receipt_is_the_generic_render_for_any_values(
        ids: list[str], values: dict[str, Any], made: Any, key: str) -> None:
    """The receipt Put of a keyed commit of entities holding any values (and values a
    default factory made, kept in the receipt) is built as rendering and the gate make it:
    body in order, size exactly."""
    _MADE[:] = [made]
    try:
        objs = [Odd(odd_id=i, **values) for i in ids]
    finally:
        _MADE.clear()
    receipting = Receipting([(Odd, Odd.__dynaorm_spec__.table)], key, digest(objs))
    receipting.made.extend((f"h{n}", o, [("made_text",), ("made_num",)])
                           for n, o in enumerate(objs))
    (row,) = receipting.rows([Put(o.__dynaorm_spec__.primary_key(o.__dict__), {}, None,
                                  None) for o in objs])  # type: ignore[arg-type]
    assert isinstance(row, Put) and row.built is not None
    body, size = _generic(row)
    assert json.dumps(row.built.body, ensure_ascii=False) == json.dumps(body,
                                                                        ensure_ascii=False)
    assert row.built.size == size


@pytest.mark.sync_only
@pytest.mark.parametrize("over", [-1, 0, 1])
def test_the_receipts_400_kb_refusal_is_the_gates_at_the_boundary(over: int) -> None:
    """A receipt whose item is exactly 400 KB is sent; one byte more is refused; the built
    size and the generic item size agree on either side."""
    receipting = Receipting([(Odd, Odd.__dynaorm_spec__.table)], "k", "0" * 64)
    probe = [_Op({"pk": "x" * 1000, "sk": "S"}) for _ in range(300)]
    (row,) = receipting.rows(probe)  # type: ignore[arg-type]
    assert row.built is not None
    base = item_size(row.item)
    pad = MAX_ITEM_BYTES - base + over
    assert pad >= 0
    padded = [*probe[:-1], _Op({"pk": "x" * (1000 + pad), "sk": "S"})]
    if over > 0:
        with pytest.raises(TransactionTooLargeError):
            receipting.rows(padded)  # type: ignore[arg-type]
        return
    (row,) = receipting.rows(padded)  # type: ignore[arg-type]
    assert row.built is not None
    assert item_size(row.item) == MAX_ITEM_BYTES + over
    assert row.built.size == _generic(row)[1]


_DIGEST = """
import sys, json
from decimal import Decimal
sys.path.insert(0, {root!r})
from tests.equivalence.test_receipt_rows import Odd, Inner
from dynaorm.schema.rules.receipts import digest
objs = [Odd(odd_id="o" + str(n), words={{"a", "b", "zz", "é", "Q" * n}},
            nums={{-1, 10**30, n}}, d=Decimal("1.50"),
            inner=Inner(label="l", amount=Decimal("2"), tags={{"t1", "t2", "t3"}}),
            nested={{"k": [1, 2], "j": {{"x": 1}}, "é": "v"}}, made_text="m", made_num=1)
        for n in range(5)]
print(digest(objs))
print(digest(list(reversed(objs))))
"""


@pytest.mark.sync_only
def test_the_digest_is_the_same_in_every_process() -> None:
    """The same staged writes (sets of text, mappings) digest alike under any hash seed,
    in any staging order."""
    root = os.getcwd()
    seen = set()
    for seed in ("0", "1", "12345", "random"):
        out = subprocess.run([sys.executable, "-c", _DIGEST.format(root=root)], check=True,
                             capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}).stdout.split()
        assert len(out) == 2 and out[0] == out[1]
        seen.add(out[0])
    assert len(seen) == 1


@pytest.mark.sync_only
def test_a_lost_keyed_commit_then_another_writer_applies_once(tb: TestBackend) -> None:
    """A keyed commit of odd values applied, its answer lost; a second writer changes the
    item in the window. The commit is never applied twice (the second writer's change
    stays), and its retry under the same key is a replay that puts back the values the
    first commit's factories made."""
    key = uuid.uuid4().hex
    obj = Odd(odd_id="o1", n=10**37, d=Decimal("-1.5e-100"), words={"é", "a"},
              blob=b"\x00\xff", nested={"k": [1, "é"]})
    made = obj.made_text

    def window() -> None:
        with Session(kept) as b:
            theirs = b.get(Odd, odd_id="o1")
            assert theirs is not None
            theirs.n = 7
            b.save(theirs)

    with inject_faults(kept) as faults:
        faults.lose_answer("TransactWriteItems", after=window)
        s = Session(kept)
        s.save(obj)
        try:
            s.commit(idempotency_key=key)
        except Exception as exc:  # (unknown is allowed; never a second apply)
            assert "Conflict" not in type(exc).__name__, exc
    again = Odd(odd_id="o1", n=10**37, d=Decimal("-1.5e-100"), words={"a", "é"},
                blob=b"\x00\xff", nested={"k": [1, "é"]})
    s2 = Session(kept)
    s2.save(again)
    result = s2.commit(idempotency_key=key)
    assert result.replayed
    assert again.made_text == made
    stored = Session(kept).get(Odd, odd_id="o1")
    assert stored is not None and stored.n == 7 and stored.made_text == made
