"""Whatever a client sends as a cursor, a read never returns items outside its partitions,
key condition and filter, nor more than its limit; anything malformed, edited, foreign or
signed with another key is InvalidCursorError (and nothing is sent), never another error.

Forged cursors signed with the right key simulate a leaked key: built with the module's
own encoder, their positions and counts are still checked against the read.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import logging
import string
from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import Entity, F, InvalidCursorError, Query, RequestError, Scan, Session
from dynaorm.read import cursor as cursor_module
from dynaorm.read.cursor import check_positions, encode_cursor, read_secret, seal, secret_of
from dynaorm.testing import TestBackend
from tests.support.models import app, unsaved
from tests.support.recording import Requests

#: a query or a scan of a sync session
Read = Query[Any] | Scan[Any]


class KPost(Entity):
    """Posts of a blog; notes share the partition, before and after the posts' range."""

    class Meta:
        table = app
        pk = "KBLOG#{blog}"
        sk = "POST#{n}"

    blog: str
    n: str
    likes: int = 0


class KNote(Entity):
    class Meta:
        table = app
        pk = "KBLOG#{blog}"
        sk = "{tag}"

    blog: str
    tag: str


class KEvent(Entity):
    """Events of a day, the table key spread over three shards."""

    class Meta:
        table = app
        pk = "KDAY#{day}#{shard}"
        sk = "E#{at}"
        shards = {"primary": 3}

    day: str
    at: str


POSTS = [KPost(blog="b1", n=f"{i:02d}", likes=i % 4) for i in range(20)]
EVENTS = [KEvent(day="d1", at=f"{i:02d}") for i in range(18)]


@pytest.fixture
def s(db: TestBackend) -> Session:
    session = db.session()
    session.save_many([*unsaved(POSTS, EVENTS), KPost(blog="b2", n="99"),
                       KNote(blog="b1", tag="A-before"), KNote(blog="b1", tag="Z-after"),
                       KEvent(day="d2", at="00")])
    return session


def chain(q: Read, first: str | None = None, pages: int = 60) -> Iterator[Any]:
    cursor = first
    for _ in range(pages):
        page = q.page(cursor)
        yield from page.items
        cursor = page.cursor
        if cursor is None:
            return
    raise AssertionError("pages never end")


def reads(s: Session) -> dict[str, Read]:
    """Queries and scans, sharded and unsharded, with limits."""
    return {
        "query": s.query(KPost, blog="b1").limit(6).page_size(2),
        "filtered": s.query(KPost, blog="b1").filter(F("likes") == 1).limit(4).page_size(1),
        "range": s.query(KPost, blog="b1").between({"n": "05"}, {"n": "12"}).page_size(3),
        "sharded": s.query(KEvent, day="d1").limit(9).page_size(4),
        "scan": s.scan(KPost).limit(8).page_size(3),
        "segments": s.scan(KEvent, segments=2).page_size(2),
    }


def contained(q: Read, cursor: str, allowed: list[Any], limit: int | None) -> None:
    """``cursor`` is refused, or the chain it starts stays inside the read's results and
    its limit."""
    try:
        got = list(chain(q, cursor))
    except InvalidCursorError:
        return
    except RequestError as exc:
        # a parallel scan's start key must hash into its segment, which only DynamoDB can
        # tell: a leaked-key position in another segment is refused by DynamoDB itself
        assert q._operation == "Scan" and "segment" in exc.message
        return
    assert all(item in allowed for item in got), "a cursor widened the read"
    if limit is not None:
        assert len(got) <= limit, "a cursor read past the limit"


def first_cursor(q: Read) -> str:
    cursor = q.page().cursor
    assert cursor is not None
    return cursor


def refused(q: Read, s: Session, cursor: Any) -> None:
    rec = Requests(s.table)
    with pytest.raises(InvalidCursorError):
        q.page(cursor)
    assert rec.calls == []


# -- edits ---------------------------------------------------------------------------------
ALPHABET = string.ascii_letters + string.digits + "-_.=+/ é\x00"
#: an edited cursor is refused by its checksum or seal before anything is sent (each test
#: asserts no request): the same on every engine. Thousands of edits a variant (16-27 s an
#: engine in CI): moto, and the AsyncSession on the moto server; forged cursors that do reach the
#: engine (``contained``) run on every engine.
EDITS = pytest.mark.engines("moto")


@EDITS
@pytest.mark.parametrize("name", ["query", "sharded", "segments"])
def test_every_one_character_edit_is_refused(s: Session, name: str) -> None:
    q = reads(s)[name]
    cursor = first_cursor(q)
    assert q.page(cursor).items  # the real cursor works
    rec = Requests(s.table)
    edits = {cursor[:i] + cursor[i + 1:] for i in range(len(cursor))}  # deletions
    for i, c in itertools.product(range(len(cursor) + 1), ALPHABET):
        edits.add(cursor[:i] + c + cursor[i:])  # insertions
        if i < len(cursor) and c != cursor[i]:
            edits.add(cursor[:i] + c + cursor[i + 1:])  # substitutions
    edits.discard(cursor)
    for edited in edits:
        with pytest.raises(InvalidCursorError):
            q.page(edited)
    assert rec.calls == []
    assert len(edits) > 50 * len(cursor)


# -- foreign cursors -----------------------------------------------------------------------
def test_cursors_of_other_reads_are_refused(s: Session) -> None:
    all_reads = reads(s)
    cursors = {name: first_cursor(q) for name, q in all_reads.items()}
    for (name, cursor), (other, q) in itertools.product(cursors.items(), all_reads.items()):
        if name != other:
            refused(q, s, cursor)
    base = s.query(KPost, blog="b1").page_size(2)
    others: list[Read] = [
        s.query(KPost, blog="b2"), base.reverse(), base.filter(F("likes") > 0),
        s.query(KNote, blog="b1"), s.query(KEvent, day="d2")]
    for other_q in others:
        refused(other_q, s, cursors["query"])


def test_a_cursor_signed_with_another_table_secret_is_refused(
        s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    q = reads(s)["query"]
    monkeypatch.setattr(app, "cursor_secret", "secret-one")
    cursor = first_cursor(q)
    assert len(q.page(cursor).items) == 2
    monkeypatch.setattr(app, "cursor_secret", b"secret-two")
    refused(q, s, cursor)
    monkeypatch.setattr(app, "cursor_secret", None)
    monkeypatch.setenv("DYNAORM_CURSOR_SECRET", "secret-one")  # the env var, same key: fine
    assert len(q.page(cursor).items) == 2
    monkeypatch.setenv("DYNAORM_CURSOR_SECRET", "secret-three")
    refused(q, s, cursor)
    monkeypatch.delenv("DYNAORM_CURSOR_SECRET")
    refused(q, s, cursor)  # no secret: a sealed cursor does not open
    plain = first_cursor(q)
    assert len(q.page(plain).items) == 2
    monkeypatch.setattr(app, "cursor_secret", "secret-one")
    refused(q, s, plain)  # a secret configured: an unsealed cursor is refused


def test_a_sealed_cursor_is_opaque_and_an_unsealed_one_is_not(
        s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    q = reads(s)["query"]
    monkeypatch.delenv("DYNAORM_CURSOR_SECRET", raising=False)
    monkeypatch.setattr(app, "cursor_secret", None)
    plain = first_cursor(q)
    assert b"POST#01" in base64.urlsafe_b64decode(plain.split(".")[0] + "==")
    monkeypatch.setattr(app, "cursor_secret", "a shared secret")
    sealed = first_cursor(q)
    assert sealed == first_cursor(q)  # deterministic: the same page, the same cursor
    raw = base64.urlsafe_b64decode(sealed.split(".")[0] + "==")
    assert b"POST" not in raw and b'"q"' not in raw and b"b1" not in raw
    assert len(q.page(sealed).items) == 2


def _sign(body: Any, key: bytes | None) -> str:
    """``body`` as a cursor of the module's own form (checksummed without a key, sealed
    with one): what a client holding the key could forge."""
    raw = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    return seal(raw, key)


def _sign_v1(body: Any, key: bytes) -> str:
    """0.1's form: the JSON body and its HMAC, in clear."""
    raw = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    mac = hmac.new(key, raw, hashlib.sha256).digest()[:16]

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    return b64(raw) + "." + b64(mac)


def _fp(q: Read) -> str:
    return q._fingerprint(q._selection())


def test_cursors_forged_with_the_old_key_are_refused(s: Session) -> None:
    """0.1 signed every cursor with a key written in its source."""
    old = b"dynaorm-cursor-v1"
    for name, q in reads(s).items():
        streams = q._streams()
        for body in [{"q": _fp(q), "p": [None] * streams},
                     {"q": _fp(q), "p": [["POST#00"]] * streams, "n": -6},
                     {"q": _fp(q), "p": ["x"]}]:
            refused(q, s, _sign_v1(body, old))
        assert secret_of(app) != old, name


# -- forged with the right key (a leaked key) ------------------------------------------------
def test_leaked_key_positions_outside_the_read_are_refused(s: Session) -> None:
    q = reads(s)["query"]
    secret = read_secret(q)
    fp = _fp(q)
    for position in [["A-before"], ["Z-after"], ["POST"], [""], ["POST#00" + "x" * 2000],
                     [{"N": "5"}], [{"S": "\ud800"}], [{"B": "AA=="}]]:
        refused(q, s, encode_cursor(fp, [position], 0, secret=secret))
    for served in [-1, 7, 10**9, True]:
        refused(q, s, encode_cursor(fp, [["POST#03"]], served, secret=secret))
    r = reads(s)["range"]  # between 05 and 12: a start outside that range is refused
    for n in ["04", "13", "99"]:
        refused(r, s, encode_cursor(_fp(r), [[f"POST#{n}"]], 0, secret=read_secret(r)))
    sharded = reads(s)["sharded"]
    fp = _fp(sharded)
    refused(sharded, s, encode_cursor(fp, [["X#1"], None, None], 0, secret=secret))
    refused(sharded, s, encode_cursor(fp, [None, None], 0, secret=secret))  # shard count
    refused(sharded, s, encode_cursor(fp, [["E#01", "extra"], None, None], 0, secret=secret))


def test_leaked_key_positions_inside_never_widen(s: Session) -> None:
    for q in reads(s).values():
        allowed = list(chain(q.limit(10**6) if q._limit else q))
        limit = q._limit
        secret = read_secret(q)
        fp = _fp(q)
        streams = q._streams()
        candidates: list[list[Any]] = [[None] * streams, [False] * streams]
        for item in allowed[:3]:
            spec = type(item).__dynaorm_spec__
            key = spec.primary_key(item.__dict__)
            fixed = q._fixed(0)
            candidates.append([[v for a, v in key.items() if a not in fixed]] * streams)
        for positions, served in itertools.product(candidates, [0, 1, limit or 0]):
            contained(q, encode_cursor(fp, positions, served, secret=secret), allowed, limit)


# -- garbage -------------------------------------------------------------------------------
JSON_VALUES: list[Any] = [None, True, False, 0, -1, 1.5, 10**30, "", "x", "\ud800", [], {},
                          ["x"], [None], [[]], [[1]], [["x", "y", "z"]], [{"S": 1}],
                          [[{"N": "NaN"}]], [[{"S": "x", "N": "1"}]], [[{"M": {}}]],
                          {"S": "x"}, [[None, None]], [[[["deep"]]]]]


def test_garbage_of_every_json_type_in_every_field(s: Session) -> None:
    for name in ["query", "sharded", "scan"]:
        q = reads(s)[name]
        allowed = list(chain(q.limit(10**6)))
        secret = read_secret(q)
        fp = _fp(q)
        for field_name, value in itertools.product(["q", "p", "n"], JSON_VALUES):
            body: dict[str, Any] = {"q": fp, "p": [None] * q._streams(), field_name: value}
            for key in (secret, b"another key"):
                contained(q, _sign(body, key), allowed, q._limit)
            refused(q, s, _sign(body, b"another key"))
            refused(q, s, _sign_v1(body, b"another key"))
        for body_value in JSON_VALUES:  # a whole body that is not an object
            refused(q, s, _sign(body_value, secret))
            raw = json.dumps(body_value).encode("utf-8", "surrogatepass")
            refused(q, s, base64.urlsafe_b64encode(raw).decode().rstrip("=") + ".AAAA")
        for value in [1, 1.5, b"bytes", ["list"], {"d": 1}, "", "." * 70_000,
                      "é.é", "a" * 100_000 + ".b"]:
            refused(q, s, value)
    # the input that crashed inside botocore in 0.1, signed with the right key
    q = reads(s)["query"]
    refused(q, s, encode_cursor(_fp(q), ["x"], 0, secret=read_secret(q)))


# -- the key ---------------------------------------------------------------------------------
def test_no_secret_means_checksummed_cursors_and_no_warning(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("DYNAORM_CURSOR_SECRET", raising=False)
    monkeypatch.setattr(app, "cursor_secret", None)
    with caplog.at_level(logging.WARNING, logger="dynaorm"):
        assert secret_of(app) is None
    assert [r for r in caplog.records if r.name == "dynaorm"] == []
    monkeypatch.setenv("DYNAORM_CURSOR_SECRET", "shared")
    assert secret_of(app) == b"shared"
    monkeypatch.setattr(app, "cursor_secret", "mine")
    assert secret_of(app) == b"mine"


def test_the_source_holds_no_key() -> None:
    import inspect
    text = inspect.getsource(cursor_module)
    assert "dynaorm-cursor-v1" not in text


def test_check_positions_is_pure_and_exact() -> None:
    # the key condition as the read's plan states it (KeyPlan.conditions), not as text
    condition = [("pk", "=", ({"S": "P"},)), ("sk", "BETWEEN", ({"S": "b"}, {"S": "d"}))]
    ok = {"pk": {"S": "P"}, "sk": {"S": "c"}}
    kw: dict[str, Any] = {"limit": 5, "conditions": [condition], "key_attrs": ("pk", "sk"),
                          "roles": {"pk": "partition", "sk": "sort"}}
    check_positions([ok], 0, **kw)
    check_positions([None], 5, **kw)
    for bad, served in [({"pk": {"S": "Q"}, "sk": {"S": "c"}}, 0),
                        ({"pk": {"S": "P"}, "sk": {"S": "e"}}, 0),
                        ({"pk": {"S": "P"}}, 0), (ok, 6), (ok, -1), ("x", 0), (True, 0),
                        ({"pk": {"S": "P"}, "sk": {"N": "1"}}, 0)]:
        with pytest.raises(InvalidCursorError):
            check_positions([bad], served, **kw)


def test_real_chains_still_cover_every_result(s: Session) -> None:
    q: Query[Any] = s.query(KPost, blog="b1").page_size(3)
    assert list(chain(q)) == sorted(POSTS, key=lambda p: p.n)
    sharded = s.query(KEvent, day="d1").page_size(4)
    assert list(chain(sharded)) == sorted(EVENTS, key=lambda e: e.at)
    assert len(list(chain(reads(s)["query"]))) == 6


# -- sealed cursors (a secret configured) ------------------------------------------------------
@pytest.fixture
def sealed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("DYNAORM_CURSOR_SECRET", raising=False)
    monkeypatch.setattr(app, "cursor_secret", b"the service's secret")
    yield


@EDITS
@pytest.mark.parametrize("name", ["query", "sharded"])
def test_every_one_character_edit_of_a_sealed_cursor_is_refused(
        s: Session, sealed: None, name: str) -> None:
    q = reads(s)[name]
    cursor = first_cursor(q)
    assert q.page(cursor).items
    rec = Requests(s.table)
    alphabet = string.ascii_letters + string.digits + "-_."
    edits = {cursor[:i] + cursor[i + 1:] for i in range(len(cursor))}
    for i, c in itertools.product(range(len(cursor)), alphabet):
        if c != cursor[i]:
            edits.add(cursor[:i] + c + cursor[i + 1:])
    for edited in edits:
        with pytest.raises(InvalidCursorError):
            q.page(edited)
    assert rec.calls == []


def test_sealed_garbage_and_leaked_secret_positions_never_widen(
        s: Session, sealed: None) -> None:
    for name in ["query", "range", "sharded", "scan"]:
        q = reads(s)[name]
        allowed = list(chain(q.limit(10**6) if q._limit else q))
        secret = read_secret(q)
        assert secret == b"the service's secret"
        fp = _fp(q)
        streams = q._streams()
        for field_name, value in itertools.product(["q", "p", "n"], JSON_VALUES):
            body: dict[str, Any] = {"q": fp, "p": [None] * streams, field_name: value}
            contained(q, _sign(body, secret), allowed, q._limit)
            refused(q, s, _sign(body, None))  # unsealed, while a secret is configured
        for position in [["A-before"], ["Z-after"], ["POST#04"], ["E#99"]]:
            contained(q, encode_cursor(fp, [position] * streams, 0, secret=secret), allowed,
                      q._limit)
