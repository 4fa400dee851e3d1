"""Red team of fix70d (an escaped binary tag converts on dynaorm's wire; a member that is
not an attribute value is an ItemDecodeError): a hostile server answers both wires
(dynaorm's own, botocore's shape-driven parser) with every type tag and attribute name
spelt with JSON escapes, in every answer that carries items or keys (GetItem, Query pages
and their LastEvaluatedKey, BatchGetItem's Responses and UnprocessedKeys,
TransactGetItems, an update's ReturnValues, ConsumedCapacity), and strings that hold a
literal backslash sequence or base64 text under a non-binary tag. The property: both
wires answer ``Client.send`` the same, and an entity read gives the same object on both.

Then the members that are not attribute values, or attribute values botocore's parser
empties (a tag holding ``null``), at top level, in maps and lists, in key and type
attributes: where the wires part, a strict xfail says how. No engine: loopback only."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.config import Config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import Client, Entity, Session, Table, inspect
from dynaorm.errors import DynaormError
from tests.support.examples import examples
from tests.support.hostile import Reply, answer, serving
from tests.support.loaders import shared_loaders


@pytest.fixture(scope="module", autouse=True)
def _parsed_once() -> Iterator[None]:
    """The module's botocore sessions share the parsed models (``shared_loaders``): each
    read still has fresh clients and sessions, which is its subject (a client that has
    read before parses some answers otherwise)."""
    with shared_loaders():
        yield


WIRES = ("dynaorm", "botocore")


@contextmanager
def _clients() -> Iterator[tuple[dict[str, bytes], dict[str, Client]]]:
    """One hostile endpoint answering every request with ``body["now"]``, and a client of
    it on each wire (one attempt)."""
    body = {"now": b"{}"}
    with serving(lambda n, request: Reply(answer(body["now"]))) as server:
        dbs = {w: Client(server.url, "us-east-1", wire=w, max_attempts=1,
                         config=Config(read_timeout=20, connect_timeout=20)) for w in WIRES}
        try:
            yield body, dbs
        finally:
            for db in dbs.values():
                db.close()


def _outcome(go: Callable[[], Any]) -> tuple[Any, ...]:
    """What ``go`` gives: its value, or a DynaormError (its class aside: the wires may
    name a refusal differently), or any other exception by class and message (a raw one:
    never equal to the other wire's DynaormError)."""
    try:
        return ("value", go())
    except DynaormError:
        return ("refused",)
    except Exception as exc:  # (any: a raw exception fails the comparison)
        return ("raw", type(exc).__name__, str(exc))


def _sent(db: Client, operation: str, request: dict[str, Any]) -> Any:
    out = db.send(operation, request)
    out.pop("ResponseMetadata", None)
    return out


# -- generated attribute values, every tag and name possibly spelt with escapes --------------
_TEXT = st.sampled_from(["AAE=", "\\u0042", "\\\\u0042AAE=", "B", "\\", "é", "", "x\"y", "AAI="])
_NUM = st.sampled_from(["1", "-0.5", "1E+2", "12345678901234567890"])
_B64 = st.sampled_from(["AAE=", "AAI=", "", "/w=="])
_NAME = st.sampled_from(["a", "B", "S", "BS", "NULL", "M", "pk", "x y", "\\u0042"])
_SCALAR = st.one_of(
    st.builds(lambda v: {"S": v}, _TEXT), st.builds(lambda v: {"N": v}, _NUM),
    st.builds(lambda v: {"B": v}, _B64), st.builds(lambda v: {"BOOL": v}, st.booleans()),
    st.just({"NULL": True}),
    st.builds(lambda v: {"SS": sorted(v)}, st.sets(_TEXT, min_size=1, max_size=3)),
    st.builds(lambda v: {"NS": sorted(v)}, st.sets(_NUM, min_size=1, max_size=3)),
    st.builds(lambda v: {"BS": sorted(v)}, st.sets(_B64, min_size=1, max_size=3)))
_VALUE = st.recursive(_SCALAR, lambda inner: st.one_of(
    st.builds(lambda v: {"M": v}, st.dictionaries(_NAME, inner, max_size=3)),
    st.builds(lambda v: {"L": v}, st.lists(inner, max_size=3))), max_leaves=8)
_ITEM = st.dictionaries(_NAME, _VALUE, max_size=4)


def _spelt(value: Any, escape: Callable[[], bool]) -> str:
    """``value`` as compact JSON, each object key (tags, attribute and answer member
    names) spelt with ``\\u`` escapes where ``escape()`` says (upper or lower hex)."""
    if isinstance(value, dict):
        return "{" + ",".join(_key(k, escape) + ":" + _spelt(v, escape)
                              for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_spelt(v, escape) for v in value) + "]"
    return json.dumps(value)


def _key(name: str, escape: Callable[[], bool]) -> str:
    text = json.dumps(name)[1:-1]
    if not escape():
        return '"' + text + '"'
    return '"' + "".join(f"\\u{ord(c):04X}" if c.isalpha() and escape() else c
                         for c in text) + '"'


_GET = ("GetItem", {"TableName": "hostile", "Key": {"pk": {"S": "a"}}})
_QUERY = ("Query", {"TableName": "hostile", "KeyConditionExpression": "pk = :p",
                    "ExpressionAttributeValues": {":p": {"S": "a"}}})
_BATCH = ("BatchGetItem", {"RequestItems": {"hostile": {"Keys": [{"pk": {"S": "a"}}]}}})
_TRANSACT = ("TransactGetItems", {"TransactItems": [{"Get": {"TableName": "hostile",
                                                             "Key": {"pk": {"S": "a"}}}}]})
_UPDATE = ("UpdateItem", {"TableName": "hostile", "Key": {"pk": {"S": "a"}},
                          "UpdateExpression": "SET a = :a", "ReturnValues": "ALL_NEW",
                          "ExpressionAttributeValues": {":a": {"S": "x"}}})
_CAPACITY = {"TableName": "hostile", "CapacityUnits": 1.5, "Table": {"CapacityUnits": 1.5}}


def _answers(item: dict[str, Any], key: dict[str, Any]) -> list[tuple[tuple[str, Any], Any]]:
    """Each operation and an answer of it carrying ``item`` (and ``key``, where an answer
    carries keys)."""
    return [
        (_GET, {"Item": item, "ConsumedCapacity": _CAPACITY}),
        (_QUERY, {"Items": [item, key], "Count": 2, "ScannedCount": 2,
                  "LastEvaluatedKey": key}),
        (_BATCH, {"Responses": {"hostile": [item]}, "ConsumedCapacity": [_CAPACITY],
                  "UnprocessedKeys": {"hostile": {"Keys": [key]}}}),
        (_TRANSACT, {"Responses": [{"Item": item}, {}]}),
        (_UPDATE, {"Attributes": item, "ConsumedCapacity": _CAPACITY})]


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(item=_ITEM, key=st.dictionaries(st.sampled_from(["pk", "sk", "B"]), _SCALAR,
                                       min_size=1, max_size=2),
       escapes=st.lists(st.booleans(), min_size=1, max_size=8))
def test_escaped_tags_and_names_answer_the_same_on_both_wires(
        item: dict[str, Any], key: dict[str, Any], escapes: list[bool]) -> None:
    turn = iter(range(10**9))

    def escape() -> bool:
        return escapes[next(turn) % len(escapes)]
    with _clients() as (body, dbs):
        for (operation, request), value in _answers(item, key):
            body["now"] = _spelt(value, escape).encode()
            got = {w: _outcome(lambda db=dbs[w], o=operation, r=request: _sent(db, o, r))
                   for w in WIRES}
            assert got["dynaorm"] == got["botocore"], (operation, body["now"])
            assert got["dynaorm"][0] == "value"  # (a well-formed answer, however spelt)


# -- entity reads ------------------------------------------------------------------------------
_ROW = {"pk": {"S": "USER#1"}, "sk": {"S": "PROFILE"}, "_type": {"S": "H"},
        "user_id": {"S": "1"}}


def _read(db: Client, how: str, fast: bool) -> list[Any]:
    """What a read of ``H`` (``how``: get, query, many, snapshot) makes of the answer,
    each object's stored key and state realized too."""
    cls = _entity(db, fast)
    with Session(db) as session:
        if how == "get":
            found: list[Any] = [session.get(cls, user_id="1")]
        elif how == "query":
            found = session.query(cls, user_id="1").all()
        else:
            found = session.get_many(cls, [{"user_id": "1"}], snapshot=how == "snapshot")
    return [None if h is None else (h.model_dump(), dict(inspect(h).key), inspect(h).persisted)
            for h in found]


def _entity(db: Client, fast: bool) -> type[Entity]:
    hostile = Table("hostile", client=db)
    if fast:
        class H(Entity):
            class Meta:
                table = hostile
                pk = "USER#{user_id}"
                sk = "PROFILE"

            user_id: str
        return H

    class Plain(Entity):
        class Meta:
            table = hostile
            pk = "USER#{user_id}"
            sk = "PROFILE"
            type_name = "H"

        user_id: str
        blob: bytes = b""
        s: str = ""
        x: Any = None
        m: dict[str, Any] = {}
        tags: set[str] = set()
    return Plain


def _bodies(item: str) -> dict[str, bytes]:
    """Each read's answer carrying the item ``item`` (JSON text)."""
    return {"get": ('{"Item":' + item + "}").encode(),
            "query": ('{"Items":[' + item + '],"Count":1}').encode(),
            "many": ('{"Responses":{"hostile":[' + item + "]}}").encode(),
            "snapshot": ('{"Responses":[{"Item":' + item + "}]}").encode()}


def _reads_agree(item: str) -> None:
    for how, sent in _bodies(item).items():
        for fast in (False, True):
            with _clients() as (body, dbs):  # (fresh clients: no read before this one)
                body["now"] = sent
                got = {w: _outcome(lambda db=dbs[w], how=how, fast=fast: _read(db, how, fast))
                       for w in WIRES}
            assert got["dynaorm"] == got["botocore"], (how, fast, got)


_FIELDS = st.fixed_dictionaries({}, optional={
    "blob": st.builds(lambda v: {"B": v}, _B64), "s": st.builds(lambda v: {"S": v}, _TEXT),
    "x": _VALUE, "m": st.builds(lambda v: {"M": v}, st.dictionaries(_NAME, _VALUE, max_size=3)),
    "tags": st.builds(lambda v: {"SS": sorted(v)}, st.sets(_TEXT, min_size=1, max_size=3))})


@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=_FIELDS, escapes=st.lists(st.booleans(), min_size=1, max_size=8))
def test_an_entity_read_of_escaped_tags_is_the_same_object_on_both_wires(
        fields: dict[str, Any], escapes: list[bool]) -> None:
    turn = iter(range(10**9))

    def escape() -> bool:
        return escapes[next(turn) % len(escapes)]
    _reads_agree(_spelt({**_ROW, **fields}, escape))


def _row(**members: str) -> str:
    """The item of ``H`` with ``members`` (JSON text each) replacing or beside its own."""
    row = {k: json.dumps(v) for k, v in _ROW.items()}
    row.update(members)
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in row.items()) + "}"


#: odd members on which the wires agree (both read the same object, or both refuse)
AGREE = {
    "every tag escaped, nested": _row(x='{"\\u004d":{"a":{"\\u004e":"1"},"b":{"\\u004c":['
                                        '{"\\u004e\\u0055LL":true},{"B\\u004fOL":false},'
                                        '{"\\u0053S":["q"]},{"\\u004eS":["2"]},'
                                        '{"\\u0042S":["AAE="]}]}}}'),
    "escaped names and key tags": _row(**{"s\\u006b": '{"\\u0053":"PROFILE"}'}),
    "base64 text under S beside an escape": _row(s='"AA\\u0045="',
                                                 x='{"S":"\\\\u0042AAE="}'),
    "escaped binary and a backslash string": _row(blob='{"\\u0042":"AAE="}',
                                                  s='{"S":"\\\\"}'),
    "a null member": _row(x="null"),
    "a null key attribute": _row(sk="null"),
    "a null in a map": _row(m='{"M":{"a":null}}'),
    "a null in a list": _row(x='{"L":[null]}'),
    "a bare string member": _row(x='"str"'),
    "a bare string key attribute": _row(sk='"PROFILE"'),
    "an unknown tag": _row(x='{"X":"1"}'),
    "two tags": _row(x='{"S":"s","\\u0042":"AAE="}'),
    "an empty attribute value": _row(x="{}"),
}


@pytest.mark.parametrize("name", list(AGREE))
def test_an_odd_item_reads_alike_on_both_wires(name: str) -> None:
    _reads_agree(AGREE[name])


# -- defects found: the wires part (not fixed here; see each reason) ---------------------------
# botocore's parser is shape-driven: a member where an attribute value (a structure) is
# expected that is a string, a list or a number makes it raise (BadAnswerError: the whole
# answer refused), and a tag holding null is dropped (an empty attribute value, refused by
# dynaorm's decoding). dynaorm's wire hands both on as JSON: a tag holding null reads as
# the value None, a bare string in a map or list is never looked at by a fast read, a type
# attribute that is a bare string is a miss for a get and a raw AttributeError for a query
# (selection.type_of: item.get(type_attr).get("S")).
PART = {
    "a tag holding null": _row(x='{"S":null}'),
    "NULL holding null": _row(x='{"NULL":null}'),
    "a key tag holding null": _row(sk='{"S":null}'),
    "a bare string in a map": _row(m='{"M":{"a":"x"}}'),
    "a bare string in a list": _row(x='{"L":["x"]}'),
    "a map member named B holding text": _row(m='{"M":{"B":"AAE="}}'),
    "a bare string type attribute": _row(_type='"H"'),
}


@pytest.mark.xfail(strict=True, reason="the wires part on attribute values botocore's "
                   "parser refuses or empties: see the comment above PART")
@pytest.mark.parametrize("name", list(PART))
def test_a_malformed_attribute_value_reads_alike_on_both_wires(name: str) -> None:
    _reads_agree(PART[name])


@pytest.mark.parametrize("fast", [False, True])
def test_a_bare_string_type_attribute_is_never_a_raw_error(fast: bool) -> None:
    with _clients() as (body, dbs):
        body["now"] = _bodies(PART["a bare string type attribute"])["query"]
        got = _outcome(lambda: _read(dbs["dynaorm"], "query", fast))
    assert got[0] != "raw", got
