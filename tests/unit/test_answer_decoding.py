"""Red team of issue 70's answer decoding (de1ecdc, 68c3c99): :func:`dynaorm.wire.decode`
looks for binary tags only after a one-byte search for ``B``, and for ``null`` members
among the top level's values instead of in the bytes. A hostile server hides a binary
value or a null where the fast check does not look (escaped tags, tags at depth, nulls in
nested maps and lists, keys named like tags, odd spacing, a BOM, duplicate keys, very
large, truncated or non-JSON bodies, numbers past a float): whatever it sends, the result
is the old code's (0.7's :func:`old_decode`, kept here verbatim but for the fix of an
escaped binary tag): the same answer, or the same refusal. Checked on :func:`decode` itself
and through the real reads (a get, a query and a vector search against a canned hostile
endpoint, both wires, the old decoding swapped in for comparison). No engine: loopback
only."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from botocore.config import Config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynaorm.wire
from dynaorm import Client, Entity, Session, Table, inspect
from dynaorm import errors as dynaorm_errors
from dynaorm.errors import DynaormError
from dynaorm.wire import decode
from tests.support.decoding import old_decode
from tests.support.entities import entity_class
from tests.support.examples import examples
from tests.support.hostile import Reply, answer, serving
from tests.support.loaders import shared_loaders
from tests.support.vector_models import docs
from tests.unit.test_vectors import hostile as hostile_search
from tests.unit.test_vectors import searched


def client(url: str, wire: str) -> Client:
    """A client of the hostile endpoint, one attempt (timeouts long: a loaded machine
    must not make the old and the new decoding's runs differ)."""
    return Client(url, "us-east-1", wire=wire, max_attempts=1,
                  config=Config(read_timeout=20, connect_timeout=20))


def outcome(read: Callable[[], Any]) -> tuple[Any, ...]:
    """What ``read`` gives: its value, or its exception's class and message."""
    try:
        return ("value", read())
    except Exception as exc:  # (any: a raw exception must match the old code's too)
        return ("raised", type(exc).__name__, str(exc))


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


ROW = '"pk":{"S":"USER#1"},"sk":{"S":"PROFILE"},"_type":{"S":"H"},"user_id":{"S":"1"}'


def _item(members: str) -> bytes:
    return ('{"Item":{' + ROW + ("," + members if members else "") + "}}").encode()


def _deep(levels: int, leaf: str) -> str:
    return '{"M":{"m":' * levels + leaf + "}}" * levels


VECTOR = json.dumps({"L": [{"N": repr(0.001 * i)} for i in range(768)]})
LARGE = '{"Items":[' + ",".join(
    '{' + ROW.replace("USER#1", f"USER#{i}") + ',"v":' + VECTOR + '}' for i in range(60)) + "]"

#: what a hostile server answers (ids: what each hides)
BODIES: dict[str, bytes] = {
    "plain B": _item('"blob":{"B":"AAE="}'),
    "escaped B": _item('"blob":{"\\u0042":"AAE="}'),
    "escaped BS": _item('"tags":{"L":[{"\\u0042S":["AAE="]}]}'),
    "escaped B beside a plain B": _item('"blob":{"\\u0042":"AAE="},"c":{"B":"AAI="}'),
    "escaped B, lower-case hex": _item('"blob":{"\\u0042":"AAE="},"d":{"S":"\\u00e9"}'),
    "escaped B not base64": _item('"blob":{"\\u0042":"!!"}'),
    "B 60 maps deep": _item('"deep":' + _deep(60, '{"B":"AAE="}')),
    "BS in lists deep": _item('"deep":' + '{"L":[' * 40 + '{"BS":["AAE=","AAI="]}' + "]}" * 40),
    "B nested past the recursion limit": _item('"deep":' + _deep(3000, '{"B":"AAE="}')),
    "no B, nested past the recursion limit": b'{"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "B not base64 at depth": _item('"deep":' + _deep(5, '{"B":"A"}')),
    "null in an item": _item('"x":null'),
    "null in a nested map": _item('"m":{"M":{"a":null,"b":{"S":"x"}}}'),
    "null in a list": _item('"l":{"L":[null,{"S":"x"}]}'),
    "null as an attribute value's value": _item('"n":{"NULL":null}'),
    "null top-level beside an item": _item("")[:-1] + b',"LastEvaluatedKey":null}',
    "Item null": b'{"Item":null}',
    "Item null, its B elsewhere": b'{"Item":null,"Extra":{"B":"AAE="}}',
    "only nulls": b'{"a":null,"b":null}',
    "a key named B holding null": b'{"B":null}',
    "a key named B holding B": b'{"B":"B"}',
    "a key named B holding base64": b'{"B":"AAE="}',
    "a key named BS holding base64": b'{"BS":["AAE="]}',
    "a key named NULL": b'{"NULL":true,"Item":null}',
    "attributes named B, BS, NULL": _item('"B":{"S":"B"},"BS":{"N":"1"},"NULL":{"NULL":true}'),
    "a map member named B": _item('"m":{"M":{"B":{"S":"AAE="}}}'),
    "a map member named B holding text": _item('"m":{"M":{"B":"AAE="}}'),
    "a B tag beside another tag": _item('"x":{"S":"s","B":"AAE="}'),
    "a string that is \\\"B\\\"": _item('"s":{"S":"\\"B\\""}'),
    "a string B": _item('"s":{"S":"B"}'),
    "BOOL but no B tag": _item('"f":{"BOOL":true},"g":{"S":"Bob"}'),
    "whitespace and newlines": _item('"blob" :\r\n\t{ "B"\n :  "AAE=" } , "x"  :\n null'),
    "spaced inside the tag": _item('"blob":{ "B" : "AAE=" }'),
    "a UTF-8 BOM": b"\xef\xbb\xbf" + _item('"blob":{"B":"AAE="}'),
    "an escaped BOM key": b'{"\\ufeffItem":{"b":{"B":"AAE="}}}',
    "duplicate Item, null last": _item('"blob":{"B":"AAE="}')[:-1] + b',"Item":null}',
    "duplicate Item, null first": b'{"Item":null,' + _item('"blob":{"B":"AAE="}')[1:],
    "duplicate tag inside a value": _item('"blob":{"B":"AAE=","B":"AAI="}'),
    "duplicate tag, text then list": _item('"blob":{"B":"AAE=","B":["AAI="]}'),
    "a large page without B": (LARGE + "}").encode(),
    "a large page, one B at its end": (LARGE + ',"K":{"b":{"B":"AAE="}}}').encode(),
    "a large page, one null at its end": (LARGE + ',"LastEvaluatedKey":null}').encode(),
    "truncated in a tag": _item('"blob":{"B":"AAE="}')[:-9],
    "truncated after a null": _item('"x":null')[:-2],
    "truncated to one byte": b"{",
    "empty": b"",
    "a space": b" ",
    "non-JSON HTML": b"<html><body>B</body></html>",
    "a JSON null": b"null",
    "a JSON list with B": b'[{"B":"AAE="}]',
    "a JSON string B": b'"B"',
    "a JSON number": b"1e999",
    "Count 1e999": b'{"Count":1e999,"Items":[]}',
    "Score -1e999 and NaN": b'{"SearchResults":[{"Item":{"B":{"B":"AAE="}},"Score":NaN},'
                            b'{"Score":-1e999}]}',
    "an integer of 5000 digits": b'{"Count":' + b"9" * 5000 + b"}",
    "invalid UTF-8": b'{"Item":{"s":{"S":"\xff"}}}',
    "a lone surrogate": b'{"Item":{"s":{"S":"\\ud800"}}}',
    "a NUL byte": b'{"Item":\x00}',
}


@pytest.mark.parametrize("body", list(BODIES.values()), ids=list(BODIES))
def test_decode_gives_what_the_old_code_gave(body: bytes) -> None:
    assert outcome(lambda: decode(body)) == outcome(lambda: old_decode(body))


# -- generated: any JSON, keys escaped, spacing, bytes cut ---------------------------------
_KEYS = st.sampled_from(["B", "BS", "NULL", "S", "Item", "Items", "M", "L", "x", "Bb"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from(["AAE=", "B", "", "null"])
    | st.builds(lambda b: {"B": _b64(b)}, st.binary(max_size=4)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=12)


def _escaped(text: str, which: list[bool]) -> str:
    """``text`` (compact JSON) with the letters B and S of some keys and strings spelt as
    ``\\u`` escapes (``which``: which occurrences, cycled)."""
    out, n = [], 0
    for ch in text:
        if ch in "BS" and which and which[n % len(which)]:
            out.append(f"\\u{ord(ch):04x}" if n % 2 else f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
        n += ch in "BS"
    return "".join(out)


@settings(max_examples=examples(200), deadline=None)
@given(value=st.dictionaries(_KEYS, _JSON, max_size=4) | _JSON,
       which=st.lists(st.booleans(), max_size=4),
       space=st.sampled_from(["", " ", "\n", "\r\n\t"]), cut=st.integers(0, 3))
def test_any_json_decodes_as_the_old_code_decodes_it(value: Any, which: list[bool], space: str,
                                                     cut: int) -> None:
    text = _escaped(json.dumps(value, separators=(space + ",", ":" + space)), which)
    body = text.encode()[:len(text.encode()) - cut]
    assert outcome(lambda: decode(body)) == outcome(lambda: old_decode(body))


# -- through the real reads: a hostile endpoint, each wire, old and new decoding -----------
@contextmanager
def _decoding(old: bool) -> Iterator[None]:
    """The wire's decoding (``decode``, as :func:`dynaorm.wire.decoded_success` calls it)
    swapped for the old one while the block runs, when ``old``."""
    new = dynaorm.wire.decode
    dynaorm.wire.decode = old_decode if old else new
    try:
        yield
    finally:
        dynaorm.wire.decode = new


#: the fields of ``H`` read the plain way: by the old and new decoding, or by both wires
_PLAIN = {"blob": (bytes, b""), "tags": (list[Any], []), "m": (dict[str, Any], {})}
_AGREE = {"blob": (bytes, b""), "s": (str, ""), "x": (Any, None), "m": (dict[str, Any], {}),
          "tags": (set[str], set())}


def _entity(hostile: Table, fast: bool,
            fields: dict[str, tuple[Any, Any]] = _PLAIN) -> type[Entity]:
    """``H``: ``fields`` of every kind (read the plain way, decoded first), or (``fast``)
    only a string field, which pydantic-core reads straight from the answer's bytes
    (:func:`dynaorm.schema.entity.answer_reader`; its state decodes the page again later,
    :class:`dynaorm.values.state.LoadedPage`)."""
    meta = {"table": hostile, "pk": "USER#{user_id}", "sk": "PROFILE"}
    if fast:
        return entity_class("H", meta, __name__, user_id=(str, ...))
    return entity_class("Plain", {**meta, "type_name": "H"}, __name__, user_id=(str, ...),
                        **fields)


def _read(body: bytes, wire: str, how: str, fast: bool = False) -> tuple[Any, ...]:
    """What a get or a query of ``H`` makes of ``body`` (the answer to every request),
    each object's state realized too (:func:`dynaorm.inspect`)."""
    with serving(lambda n, request: Reply(answer(body))) as server:
        db = client(server.url, wire)
        try:
            cls = _entity(Table("hostile70d", client=db), fast)

            def go() -> Any:
                with Session(db) as session:
                    if how == "get":
                        got = session.get(cls, user_id="1")
                        found = [] if got is None else [got]
                    else:
                        found = session.query(cls, user_id="1").all()
                    return [(h.model_dump(), inspect(h).key, inspect(h).persisted)
                            for h in found]
            return outcome(go)
        finally:
            db.close()


def _query_body(body: bytes) -> bytes:
    """``body``'s ``Item`` made a page of one (the same bytes around it)."""
    if body.startswith(b'{"Item":{') and body.endswith(b"}}"):
        return b'{"Items":[' + body[len(b'{"Item":'):-1] + b'],"Count":1}'
    return body


_REAL = [k for k in BODIES if not k.startswith("a large") and "recursion" not in k
         and k not in ("a space", "a JSON number", "truncated to one byte", "a JSON string B",
                       "a NUL byte", "a lone surrogate")]  # (those: decode alone)
#: the botocore wire only checks an answer with ``decode`` (botocore's parser reads it):
#: the cases where that check may refuse, or where the wires might part
_BOTO = ["plain B", "escaped B", "B not base64 at depth", "a UTF-8 BOM", "truncated in a tag"]


@pytest.mark.parametrize(("name", "wire"), [(k, "dynaorm") for k in _REAL]
                         + [(k, "botocore") for k in _BOTO])
def test_a_get_and_a_query_read_what_the_old_code_read(name: str, wire: str) -> None:
    body = BODIES[name]
    for how, sent in (("get", body), ("query", _query_body(body))):
        for fast in (False, True) if wire == "dynaorm" else (False,):
            with _decoding(old=False):
                new = _read(sent, wire, how, fast)
            with _decoding(old=True):
                old = _read(sent, wire, how, fast)
            assert new == old, (how, fast)


@pytest.mark.parametrize("name", ["a large page without B", "a large page, one B at its end",
                                  "a large page, one null at its end",
                                  "B nested past the recursion limit"])
def test_a_large_or_deep_page_reads_what_the_old_code_read(name: str) -> None:
    with _decoding(old=False):
        new = _read(BODIES[name], "dynaorm", "query")
    with _decoding(old=True):
        old = _read(BODIES[name], "dynaorm", "query")
    assert new == old


_HIT = ('{"Item":{"pk":{"S":"DOC#d1"},"sk":{"S":"DOC"},"_type":{"S":"Doc"},"doc_id":{"S":"d1"},'
        '"tenant_id":{"S":"t1"},"category":{"S":"c"},"year":{"N":"2026"},'
        '"embedding":{"L":[{"N":"1"},{"N":"1"},{"N":"1"},{"N":"1"}]}%s},"Score":0.5}')
SEARCHES = {
    "plain": _HIT % "",
    "an escaped B": _HIT % ',"x":{"\\u0042":"AAE="}',
    "an escaped BS": _HIT % ',"x":{"\\u0042S":["AAE="]}',
    "a B deep": _HIT % (',"x":' + _deep(30, '{"B":"AAE="}')),
    "a null member": _HIT % ',"x":null',
    "a null in a list": _HIT % ',"x":{"L":[null]}',
    "a B not base64": _HIT % ',"x":{"B":"A"}',
    "spaced": (_HIT % ',"x" : { "B" :\n"AAE=" }').replace(",", " ,\r\n "),
}


def _searched(body: bytes, wire: str, kind: str = "sync") -> tuple[Any, ...]:
    def go() -> Any:
        with hostile_search(body, wire):
            return [(h.item.model_dump(), h.score) for h in searched(kind, top=3)]
    return outcome(go)


@pytest.mark.parametrize(("name", "wire", "kind"), [
    *((k, "dynaorm", kind) for k in SEARCHES for kind in ("sync", "async")),
    *((k, "botocore", "sync") for k in ("plain", "an escaped B", "a B not base64"))])
def test_a_search_reads_what_the_old_code_read(name: str, wire: str, kind: str) -> None:
    body = ('{"SearchResults":[' + SEARCHES[name] + "]}").encode()
    assert docs.name  # (the shared vector table of tests/support/vector_models.py)
    with _decoding(old=False):
        new = _searched(body, wire, kind)
    with _decoding(old=True):
        old = _searched(body, wire, kind)
    assert new == old


# -- defects found (older than issue 70: the old code had them too), fixed in 0.8.0 ----------
# a binary tag spelt with a JSON escape (u0042 for B, u0042S for BS) was found by no byte
# search, so dynaorm's wire handed back the base64 text where botocore's wire (shape-driven)
# hands back bytes: Client.send answers differed silently, and a get refused an item
# botocore's wire reads. Fixed: a body holding a backslash converts its binaries too.
@pytest.mark.parametrize("tag, value, raw", [("\\u0042", '"AAE="', b"\x00\x01"),
                                             ("\\u0042S", '["AAE="]', [b"\x00\x01"])])
def test_an_escaped_binary_tag_reads_as_botocores_wire_reads_it(tag: str, value: str,
                                                                raw: object) -> None:
    body = ('{"Item":{"pk":{"S":"a"},"b":{"' + tag + '":' + value + "}}}").encode()
    got: dict[str, dict[str, Any]] = {}
    for wire in ("botocore", "dynaorm"):
        with serving(lambda n, request: Reply(answer(body))) as server:
            db = client(server.url, wire)
            try:
                got[wire] = db.send("GetItem", {"TableName": "t", "Key": {"pk": {"S": "a"}}})
            finally:
                db.close()
        got[wire].pop("ResponseMetadata")
    assert list(got["botocore"]["Item"]["b"].values()) == [raw]  # (botocore: bytes)
    assert got["dynaorm"] == got["botocore"]


def test_an_escaped_binary_tag_is_bytes_in_a_fast_reads_state_too() -> None:
    """An object read the fast way (pydantic-core from the bytes; its state decodes the
    page later, :class:`dynaorm.values.state.LoadedPage`) keeps the escaped binary as bytes,
    as the botocore wire's read of it does."""
    body = BODIES["escaped B"]  # (alone: no plain tag beside it to set off the conversion)
    items = {}
    for wire in ("botocore", "dynaorm"):
        with serving(lambda n, request: Reply(answer(body))) as server:
            db = client(server.url, wire)
            try:
                with Session(db) as session:
                    got = session.get(_entity(Table("hostile70d", client=db), True), user_id="1")
                    assert got is not None
                    items[wire] = got._dynaorm_state.item  # (the stored item it keeps)
            finally:
                db.close()
    assert items["botocore"]["blob"] == {"B": b"\x00\x01"}
    assert items["dynaorm"] == items["botocore"]


# an item member that is JSON null (not top-level: decode drops only those, as botocore)
# raised a raw TypeError, not a DynaormError (InstanceState.loaded, `map(dict.get, ...)`),
# on both wires; read the fast way (pydantic-core from the bytes) the get succeeds and the
# state, made when first needed (inspect(), a write), refuses it. Fixed: ItemDecodeError.
@pytest.mark.parametrize("how, wire, fast", [
    ("get", "dynaorm", False), ("get", "botocore", False), ("query", "dynaorm", False),
    ("query", "botocore", False), ("search", "dynaorm", False), ("search", "botocore", False),
    ("get", "dynaorm", True), ("query", "dynaorm", True)])
def test_a_null_item_member_is_a_dynaorm_error(how: str, wire: str, fast: bool) -> None:
    body = BODIES["null in an item"]
    if how == "search":
        got = _searched(('{"SearchResults":[' + SEARCHES["a null member"] + "]}").encode(), wire)
    else:
        got = _read(body if how == "get" else _query_body(body), wire, how, fast)
    assert got[0] == "value" or issubclass(getattr(dynaorm_errors, got[1], TypeError),
                                           dynaorm_errors.DynaormError), got


# -- error answers: decoded the same way (a refused write's Item, a cancelled transaction's) --
_CCF = '{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",'
_TCE = '{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",'
ERRORS = {
    "a refused write's Item, B and null": _CCF + '"message":"no","Item":{"pk":{"S":"a"},'
                                          '"b":{"B":"AAE="},"n":null}}',
    "its Item, an escaped B alone": _CCF + '"message":"no","Item":{"c":{"\\u0042":"AAE="}}}',
    "its Item, a B not base64": _CCF + '"message":"no","Item":{"b":{"B":"A"}}}',
    "a null message": _CCF + '"message":null,"Message":"M"}',
    "cancellation reasons, null and B deep": _TCE + '"Message":"x","CancellationReasons":['
                                             '{"Code":"None","Message":null},{"Code":'
                                             '"ConditionalCheckFailed","Item":{"m":'
                                             + _deep(20, '{"BS":["AAE="]}') + '}}]}',
    "spaced, with a BOM": "\ufeff" + _CCF.replace(",", " ,\n") + '"message":"x"}',
    "a JSON list": '[{"B":"AAE="}]',
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_an_error_answer_reads_as_the_old_code_read_it(name: str) -> None:
    body = ERRORS[name].encode()

    def refused() -> tuple[Any, ...]:
        with serving(lambda n, request: Reply(answer(body, status="400 Bad Request"))) as server:
            db = client(server.url, "dynaorm")
            try:
                db.send("PutItem", {"TableName": "t", "Item": {"pk": {"S": "a"}}})
            except Exception as exc:  # (any: compared whole)
                seen = {k: v for k, v in vars(exc).items() if k != "response"}
                return type(exc).__name__, str(exc), seen
            finally:
                db.close()
        return ("answered",)
    with _decoding(old=False):
        new = refused()
    with _decoding(old=True):
        old = refused()
    assert new[0] != "answered" and new == old


# --- both wires alike
# (moved from unit/test_red_team_70e.py:
# Red team of fix70d (an escaped binary tag converts on dynaorm's wire; a member that is
# not an attribute value is an ItemDecodeError): a hostile server answers both wires
# (dynaorm's own, botocore's shape-driven parser) with every type tag and attribute name
# spelt with JSON escapes, in every answer that carries items or keys (GetItem, Query pages
# and their LastEvaluatedKey, BatchGetItem's Responses and UnprocessedKeys,
# TransactGetItems, an update's ReturnValues, ConsumedCapacity), and strings that hold a
# literal backslash sequence or base64 text under a non-binary tag. The property: both
# wires answer ``Client.send`` the same, and an entity read gives the same object on both.
#
# Then the members that are not attribute values, or attribute values botocore's parser
# empties (a tag holding ``null``), at top level, in maps and lists, in key and type
# attributes: where the wires part, a strict xfail says how. No engine: loopback only.)

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


def _read_agree(db: Client, how: str, fast: bool) -> list[Any]:
    """What a read of ``H`` (``how``: get, query, many, snapshot) makes of the answer,
    each object's stored key and state realized too."""
    cls = _entity(Table("hostile", client=db), fast, _AGREE)
    with Session(db) as session:
        if how == "get":
            found: list[Any] = [session.get(cls, user_id="1")]
        elif how == "query":
            found = session.query(cls, user_id="1").all()
        else:
            found = session.get_many(cls, [{"user_id": "1"}], snapshot=how == "snapshot")
    return [None if h is None else (h.model_dump(), dict(inspect(h).key), inspect(h).persisted)
            for h in found]


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
                got = {w: _outcome(lambda db=dbs[w], how=how, fast=fast: _read_agree(db, how, fast))
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
        got = _outcome(lambda: _read_agree(dbs["dynaorm"], "query", fast))
    assert got[0] != "raw", got
