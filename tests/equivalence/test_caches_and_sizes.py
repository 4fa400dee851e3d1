"""dynaorm's caches are memos only, and its one sizing rule is the gate's.

- :func:`dynaorm.caches.clear_caches` empties every registered cache, and the same
  saves, queries and updates send the same requests and decode the same objects with
  the caches cold (just cleared) and warm.
- The write gate sizes what it checks with :mod:`dynaorm.values.limits`' own rules: a
  Put is its item's :func:`item_size`, an action by key its key's, an update adds its
  values' sizes; generated items are sized and refused as the rules say.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm import F, InvalidValueError, ItemTooLargeError, KeyTemplateError, Session
from dynaorm.caches import cache, caches, clear_caches
from dynaorm.keys import OWN_PREFIX
from dynaorm.schema.entity import spec_of
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from dynaorm.values.keys import wire_key
from dynaorm.values.limits import (
    MAX_ITEM_BYTES,
    MAX_PARTITION_KEY_BYTES,
    MAX_SORT_KEY_BYTES,
    check_item,
    check_key_value,
    check_size,
    describe_key,
    item_size,
    number_size,
    text_size,
    value_problem,
    value_size,
)
from dynaorm.values.records import Delete, Fail, Origin, Put, Role, Update
from dynaorm.write.render import check_write, compile_commit
from dynaorm.write.save import SaveEntry
from tests.support.exactly_once import no_waits, receipts_home
from tests.support.examples import examples
from tests.support.models import Note, User
from tests.support.recording import Requests
from tests.support.vector_models import Doc, docs

LONE = json.loads('"\\ud800"')  # a lone surrogate, as JSON from a client can carry


# -- caches -----------------------------------------------------------------------------------
def _scenario(db: TestBackend) -> tuple[list[tuple[str, dict[str, Any]]], list[Any]]:
    """Save, query, read values, update and delete (the table is empty again after):
    the requests sent (tokens left out) and what came back."""
    rec = Requests(db.table)
    s = db.session()
    s.save(User(user_id="u1", username="ann", email="Ann@x.io", full_name="Ann"))
    s.save(Note(note_id="n1", body="first", tags=["a", "b"]))
    s.commit()
    got: list[Any] = [s.get(User, user_id="u1")]
    got.append(s.query(Note, note_id="n1").all())
    got.append(s.query(Note, note_id="n1").values("body", "tags"))
    got.append(Session(db.table, scope={"note_id": "n1"}).query(Note, note_id="n1").all())
    user = got[0]
    user.full_name = "Ann B"
    s.save(user)
    s.commit()
    update = s.update(Note, note_id="n1").append(tags=["c"]).set(body="second")
    s.commit()
    got.append(update.result)
    got.append(s.get(User, user_id="u1"))
    s.delete(got[-1])
    s.delete(update.result)
    s.commit()
    assert [i for i in db.scan_raw() if not i["pk"]["S"].startswith(OWN_PREFIX)] == []
    # (random per request: the token, and the revision a row's write stamps (0.5))
    calls = [(name, re.sub(r'"[0-9a-f]{16}"', '"REV"', json.dumps(
        {k: v for k, v in params.items() if k != "ClientRequestToken"}, default=str)))
        for name, params in rec.calls]
    s.save(Note(note_id="k1", body="keyed"))  # (a keyed commit: the receipts' caches; its
    s.commit(idempotency_key=os.urandom(8).hex())  # key and receipt are new each time)
    got.append(s.get(Note, note_id="k1"))
    s.delete(got[-1])
    s.commit()
    with no_waits(), receipts_home(db) as home:  # (a receipt in the client's receipts table)
        homed = db.session()
        homed.save(Note(note_id="k2", body="homed"))
        homed.commit(idempotency_key=os.urandom(8).hex())
        got.append([homed.get(Note, note_id="k2"), len(db.scan(home))])
        homed.delete(got[-1][0])
        homed.commit()
    with use_tables(docs, endpoint_url=db.endpoint_url, name_suffix=worker_suffix()):
        vectors = Session(docs)  # (a vector search: what it asks for)
        vectors.save(Doc(doc_id="d1", tenant_id="t1", category="news", year=2026,
                         embedding=[1, 0, 0, 0]))
        vectors.commit()
        got.append(vectors.search(Doc, "by_meaning", vector=[1, 0.5, 0, 0],
                                  tenant_id="t1").all())
    return calls, [repr(g) for g in got]


@pytest.mark.sync_only
@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_clear_caches_empties_every_cache_and_changes_no_result(db: TestBackend) -> None:
    clear_caches()
    cold = _scenario(db)
    filled = {name: len(memo) for name, memo in caches().items()}
    assert filled and all(filled.values()), filled  # a query, a save and an update fill each
    warm = _scenario(db)
    clear_caches()
    assert {name: len(memo) for name, memo in caches().items()} == dict.fromkeys(filled, 0)
    again = _scenario(db)
    assert cold == warm == again


def test_a_reads_selection_is_kept_per_kind_of_read_and_sees_later_classes_where_it_must(
        ) -> None:
    """A read's Selection is one per kind of read (types, source), equal to a new one;
    one holding a key value is made per read; on a table without a type attribute it is
    made per read, so a class defined after a first read owns its items in later reads."""
    from dynaorm import Entity, Table
    from dynaorm.read.selection import _selection, selection

    kept = selection((User,), None, sk_attr="sk")
    assert selection((User,), None, sk_attr="sk") is kept
    assert kept == _selection((User,), None, "sk", None, None, frozenset())
    assert selection((User,), None, sk_attr="sk", exclude="PROFILE") is not selection(
        (User,), None, sk_attr="sk", exclude="PROFILE")

    loose = Table("dynaorm-selections-shapeless", type_attribute=None)

    class SelLooseA(Entity):
        a: str
        b: str

        class Meta:
            table = loose
            pk = "SELA#{a}"
            sk = "{b}"

    item = {"pk": {"S": "SELB#1"}, "sk": {"S": "x"}}
    assert selection((SelLooseA,), None, sk_attr="sk").foreign(item)  # no class owns it

    class SelLooseB(Entity):
        o: str
        x: str

        class Meta:
            table = loose
            pk = "SELB#{o}"
            sk = "{x}"

    assert not selection((SelLooseA,), None, sk_attr="sk").foreign(item)  # SelLooseB's now
    assert selection((SelLooseB,), None, sk_attr="sk").type_of(item) == "SelLooseB"


def test_a_cache_name_is_declared_once() -> None:
    name = next(iter(caches()))
    with pytest.raises(ValueError, match=name):
        cache(name)


# -- the one sizing rule ------------------------------------------------------------------------
def _number_size_by_decimal(text: str) -> int:
    """DynamoDB's number size the long way: normalized significant digits in pairs."""
    from decimal import Context
    number = Decimal(text)
    if number.is_zero():
        return 1
    sign, digits, exponent = number.normalize(Context(prec=400)).as_tuple()
    assert isinstance(exponent, int)
    top = exponent + len(digits) - 1
    return top // 2 - exponent // 2 + 2 + sign


_NAMES = st.text(min_size=1, max_size=6)
_NUMBERS = st.decimals(allow_nan=False, allow_infinity=False, places=None).map(str)
_SCALARS = st.one_of(
    st.text(max_size=20).map(lambda s: {"S": s}),
    st.integers(min_value=-(10 ** 40), max_value=10 ** 40).map(lambda n: {"N": str(n)}),
    _NUMBERS.map(lambda n: {"N": n}),
    st.binary(max_size=10).map(lambda b: {"B": b}),
    st.booleans().map(lambda b: {"BOOL": b}),
    st.just({"NULL": True}),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3).map(lambda v: {"L": v}),
                            st.dictionaries(_NAMES, inner, max_size=3).map(lambda m: {"M": m})),
    max_leaves=8)


def _size_by_json(av: Any) -> int:
    """DynamoDB's value size, recursively, from its documented rules (the reference)."""
    (tag, raw), = av.items()
    if tag == "S":
        return len(raw.encode("utf-8", "surrogatepass"))
    if tag == "N":
        return _number_size_by_decimal(raw)
    if tag == "B":
        return len(raw)
    if tag in ("BOOL", "NULL"):
        return 1
    if tag == "L":
        return 3 + sum(1 + _size_by_json(v) for v in raw)
    return 3 + sum(len(k.encode("utf-8", "surrogatepass")) + 1 + _size_by_json(v)
                   for k, v in raw.items())


@settings(max_examples=examples(200), deadline=None)
@given(_VALUES)
def test_value_size_is_the_documented_rule(av: Any) -> None:
    assert value_size(av) == _size_by_json(av)


@settings(max_examples=examples(200), deadline=None)
@given(_NUMBERS)
def test_number_size_is_the_decimal_rule(text: str) -> None:
    assert number_size(text) == _number_size_by_decimal(text)


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.one_of(_NAMES, st.text(alphabet="abc_:#", min_size=1)),
                       st.one_of(_VALUES, st.text(max_size=30).map(lambda s: {"S": s}),
                                 st.integers(0, 10 ** 12).map(lambda n: {"N": str(n)})),
                       max_size=8))
def test_item_size_is_the_documented_rule(item: dict[str, Any]) -> None:
    """An item's size is the sum of its names and values by the documented rule."""
    assert item_size(item) == sum(len(k.encode("utf-8", "surrogatepass")) + _size_by_json(v)
                                  for k, v in item.items())


def _gate(op: Any) -> Any:
    try:
        return check_write(op)
    except Exception as exc:  # the refusal itself: type and message
        return type(exc), str(exc)


#: the revision every row's write stamps (0.5): 20 bytes the gate counts
REV = {"_rev": {"S": "0" * 16}}


@settings(max_examples=examples(200), deadline=None)
@given(st.dictionaries(_NAMES, _VALUES, max_size=5), st.text(max_size=30))
def test_the_gate_sizes_and_checks_a_put_by_the_item_rule(attrs: dict[str, Any],
                                                          pk: str) -> None:
    key = {"pk": pk, "sk": "NOTE"}
    item = {**attrs, **wire_key(key)}
    origin = Origin(Note, key, Role.ROW, Fail.EXISTS)
    roles = spec_of(Note).table.key_roles  # (every key attribute the gate knows)
    sent = {**item, **REV}  # (0.5: a row's put carries its revision)
    try:
        expected: Any = check_item(sent, entity="Note", key=key, key_roles=roles,
                                   key_item=wire_key(key))
    except Exception as exc:  # the gate's refusal names the action's table besides
        expected = type(exc), f"{exc} (table {spec_of(Note).table.name!r})"
    assert _gate(Put(key, item, None, origin)) == expected
    if not isinstance(expected, tuple):
        assert expected == item_size(sent) == sum(
            text_size(n) + _size_by_json(av) for n, av in sent.items())


@settings(max_examples=examples(100), deadline=None)
@given(st.dictionaries(_NAMES.filter(lambda n: n not in ("pk", "sk")), _VALUES,
                       min_size=1, max_size=4))
def test_an_update_adds_its_values_to_its_key(values: dict[str, Any]) -> None:
    key = {"pk": "NOTE#1", "sk": "NOTE"}
    origin = Origin(Note, key, Role.ROW, Fail.GONE)
    got = _gate(Update(key, values, (), None, origin))
    if not isinstance(got, tuple):
        assert got == item_size(wire_key(key)) + item_size(values)
    assert _gate(Delete(key, None, origin)) == item_size(wire_key(key))


@pytest.mark.parametrize(("item", "error"), [
    ({"body": {"S": LONE}}, InvalidValueError),
    ({"n": {"N": "1" * 39}}, InvalidValueError),
    ({"n": {"N": "1E+126"}}, InvalidValueError),
    ({"x": {"S": "y" * MAX_ITEM_BYTES}}, ItemTooLargeError),
    ({"gsi1pk": {"S": ""}}, KeyTemplateError),
    ({"gsi1sk": {"S": "s" * 1025}}, KeyTemplateError),
])
def test_the_gate_refuses_what_the_rules_refuse(item: dict[str, Any], error: type) -> None:
    key = {"pk": "USER#1", "sk": "PROFILE"}
    with pytest.raises(error):
        check_write(Put(key, {**wire_key(key), **item}, None,
                        Origin(User, key, Role.ROW, Fail.EXISTS)))


@pytest.mark.parametrize("note", [Note(note_id="d1", body="plain"), Note(note_id="d2", body="é"),
                                  Note(note_id="d3", tags=["x" * 10, "ü"])])
def test_a_planned_put_is_sized_as_its_item(note: Note) -> None:
    plan, _ = compile_commit([(SaveEntry(note), None)])
    (put,) = plan.ops
    assert isinstance(put, Put)
    assert check_write(put) == item_size({**put.item, **REV})  # (its revision counted)


def test_an_update_of_a_known_item_is_refused_when_the_item_it_makes_is_too_large() -> None:
    note = Note(note_id="n1", body="a" * 200_000)
    _, outcomes = compile_commit([(SaveEntry(note), None)])
    note._dynaorm_state = outcomes[0].state
    note.tags = ["t" * 150_000]
    compile_commit([(SaveEntry(note, condition=F("body") != "z"), note._dynaorm_state)])
    note.tags = ["t" * 250_000]  # with the stored body, the item after is too large
    with pytest.raises(ItemTooLargeError, match="item after the update"):
        compile_commit([(SaveEntry(note), note._dynaorm_state)])


# -- the gate's shortcuts against the plain path --------------------------------------------------
# check_item sizes an ASCII string under an ASCII non-key name without walking it, and
# check_key_value passes an ASCII key string within its limit at once; both are held here
# to the plain path (every attribute sized and walked) on generated items.
_ROLES = {"pk": "partition", "sk": "sort", "gsi1pk": "partition", "gsi1sk": "sort"}
_ASCII = st.text(alphabet=st.characters(max_codepoint=127), max_size=12)
_ITEM_NAMES = st.one_of(st.sampled_from([*_ROLES, "a", "body", ""]), _NAMES, _ASCII)
_ITEM_VALUES = st.one_of(
    _VALUES, _ASCII.map(lambda s: {"S": s}), st.just({"S": LONE}), st.just({"S": ""}),
    st.sampled_from([MAX_SORT_KEY_BYTES, MAX_SORT_KEY_BYTES + 1, MAX_PARTITION_KEY_BYTES,
                     MAX_PARTITION_KEY_BYTES + 1]).map(lambda n: {"S": "k" * n}),
    st.just({"S": "é" * 600}), st.just({"S": "a", "N": "1"}), st.just({"N": "1" * 39}),
    # (plain integers take a shortcut too: held to the long way, with their neighbours)
    st.integers(-10**40, 10**40).map(lambda n: {"N": str(n)}),
    st.sampled_from(["0", "-0", "00", "-", "", "007", "-007", "1" * 38, "1" * 38 + "0" * 5,
                     "9" * 39, "1E5", "1.0", " 1", "\u0661", "1_0", "+1"]).map(lambda t: {"N": t}))


def _outcome(fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # the refusal itself: type and message
        return type(exc), str(exc)


def _plain_key_check(name: str, av: Any, role: str, key: dict[str, Any]) -> None:
    """check_key_value the plain way: walked, sized, held to the limit."""
    limit = MAX_PARTITION_KEY_BYTES if role == "partition" else MAX_SORT_KEY_BYTES
    found = value_problem(av)
    where = f"E {describe_key(key)}: field {name!r}"
    if found is not None:
        raise KeyTemplateError(f"{where}: key value refused: {found[1]}")
    size = _size_by_json(av)
    if size == 0:
        raise KeyTemplateError(f"{where}: a key attribute cannot be empty")
    if size > limit:
        raise KeyTemplateError(f"{where}: {role} key value of {size} bytes exceeds "
                               f"DynamoDB's {limit} byte limit")


def _plain_check_item(item: dict[str, Any], key: dict[str, Any],
                      key_item: dict[str, Any]) -> int:
    """check_item the plain way: every attribute sized, then the key's values and every
    attribute's checked, in order."""
    size = 0
    for name, av in item.items():
        with contextlib.suppress(AttributeError, TypeError, ValueError, KeyError,
                                 ArithmeticError):  # (a malformed number: no size)
            size += len(name.encode("utf-8", "surrogatepass")) + _size_by_json(av)
    check_size(size, entity="E", key=key)
    for name, av in [*key_item.items(), *item.items()]:
        if not name:
            raise InvalidValueError(f"E {describe_key(key)}: attribute {name!r}: empty "
                                    "attribute name (DynamoDB refuses empty names, also as "
                                    "map keys)")
        if name in _ROLES:
            _plain_key_check(name, av, _ROLES[name], key)
            continue
        found = value_problem(av)
        if found is not None:
            path, reason = found
            where = f" at {path.lstrip('.')!r}" if path else ""
            raise InvalidValueError(f"E {describe_key(key)}: field {name!r}{where}: "
                                    f"{reason}")
    return size


@settings(max_examples=examples(400), deadline=None)
@given(st.dictionaries(_ITEM_NAMES, _ITEM_VALUES, max_size=6), st.sampled_from(
    ["P#1", "", "p" * 2048, "p" * 2049, "é"]))
def test_check_item_answers_as_the_plain_path(item: dict[str, Any], pk: str) -> None:
    key = {"pk": pk}
    key_item = {"pk": {"S": pk}}
    item = {**key_item, **item}
    got = _outcome(lambda: check_item(item, entity="E", key=key, key_roles=_ROLES,
                                      key_item=key_item))
    assert got == _outcome(lambda: _plain_check_item(item, key, key_item))


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(_ITEM_VALUES, st.integers(0, 2100).map(lambda n: {"S": "k" * n})),
       st.sampled_from(["partition", "sort"]))
def test_check_key_value_answers_as_the_plain_path(av: Any, role: str) -> None:
    key = {"pk": "P"}
    got = _outcome(lambda: check_key_value("pk", av, role, entity="E", key=key))
    assert got == _outcome(lambda: _plain_key_check("pk", av, role, key))
