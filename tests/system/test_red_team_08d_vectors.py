"""Red team 08d, vector reads (bulk float32 through ``struct``, pydantic-core's float parse
with a plain fallback: :mod:`dynaorm.schema.rules.vectors`, :mod:`dynaorm.read.search`):
what must never happen when a server answers a search with hostile vectors.

- a hit's vector members as texts no number has (``NaN``, ``inf``, ``1e400``, unicode
  digits, underscores, spaces, hex), as JSON numbers or ``null`` instead of text, other
  member types, a vector of the wrong length, a list that is no list: the read either
  gives exactly the floats the plain way gives (``float()`` of each text, then
  ``array("f")``) or refuses with dynaorm's own error (:class:`~dynaorm.ItemDecodeError`
  or :class:`~dynaorm.BadAnswerError`), never a ``KeyError``/``TypeError``/pydantic
  ``ValidationError`` out of the decoder, never a non-finite float in a loaded object;
- a hit of an ENCRYPTED entity still stored in its previous layout (``moved_p`` prepares
  the rows' keys): it decrypts, equals ``get``, and a save of it moves it sealed anew.

The hostile answers are served on loopback (no engine); the previous-layout hit on moto's
embedded vector search only."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

import pytest

from dynaorm import (
    BadAnswerError,
    Client,
    DynaormError,
    Encrypted,
    Entity,
    ItemDecodeError,
    Previous,
    Session,
    StaticKeyring,
    Table,
    Vector,
    VectorIndex,
)
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.aio.session import AsyncSession
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from dynaorm.values.limits import float32 as float32_plain
from tests.support.hostile import Reply, answer, json_body, serving

pytestmark = [pytest.mark.sync_only]

DIMS = 3
hv = Table("red08d-vectors", vector_indexes=[
    VectorIndex("by_distance", attribute="embedding", dimensions=DIMS, distance="EUCLIDEAN")])


class Pt(Entity):
    class Meta:
        table = hv
        pk = "PT#{pt_id}"
        sk = "PT"

    pt_id: str
    embedding: Annotated[list[float], Vector(DIMS)]


def _hit(embedding: Any) -> dict[str, Any]:
    return {"Item": {"pk": {"S": "PT#p1"}, "sk": {"S": "PT"}, "_type": {"S": "Pt"},
                     "pt_id": {"S": "p1"}, "embedding": embedding}, "Score": 0.5}


@contextmanager
def _hostile(body: bytes, wire: str, rows: Sequence[dict[str, Any]] = ()) -> Iterator[None]:
    with serving(_script({"body": body, "rows": rows})) as server, _pointed(server.url, wire):
        yield


def _script(answers: dict[str, Any]) -> Any:
    """The server's script: a batch read answered with ``answers["rows"]``, any other
    request with ``answers["body"]`` (both read as each request comes)."""
    def script(n: int, request: bytes) -> Reply:
        if b"RequestItems" not in request:
            return Reply(answer(answers["body"]))
        return Reply(answer(json_body({"Responses": {hv.name: list(answers["rows"])}})))

    return script


@contextmanager
def _pointed(url: str, wire: str) -> Iterator[None]:
    bound = hv.binding()
    try:
        hv.connect(url)
        hv.wire, hv.max_attempts = wire, 1
        yield
    finally:
        hv.restore(bound)


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[str, dict[str, Any]]]:
    """One loopback server for every hostile case (a case sets what it answers: each
    request is one case's, the cases run one at a time): its URL and its answers."""
    answers: dict[str, Any] = {"body": b"", "rows": ()}
    with serving(_script(answers)) as server:
        yield server.url, answers


def _plain(embedding: Any) -> list[float] | None:
    """The plain way: ``float()`` of each member's value (a JSON number as ``float()``
    reads it, as the plain reader of ``tests/equivalence/test_vector_reads.py`` does),
    rounded as ``array("f")`` rounds; ``None``: the plain way refuses it."""
    try:
        texts = [m["N"] for m in embedding["L"]]
        values = float32_plain([float(t) for t in texts])
    except (KeyError, TypeError, ValueError):
        return None
    return values if len(values) == DIMS else None


TEXTS = ["1", "-0", "0.1", "3.4028235e38", "3.5e38", "1e-46", "1e400", "-1e400", "NaN", "nan",
         "inf", "-Infinity", "\u0661", "\uff11", "1_0", " 1", "1 ", "0x10", "1e", "", "+1",
         ".5", "5.", "1" + "0" * 400, "0." + "0" * 400 + "1", "1e-99999999999",
         "1e99999999999", "\u0661.\u0662", "\uff11e1", "1\x00", "--1", "1.5e+3"]
MEMBERS: dict[str, Any] = {
    **{f"text {t!r}": {"L": [{"N": t}, {"N": "0"}, {"N": "0"}]} for t in TEXTS},
    "a JSON number": {"L": [{"N": 1}, {"N": "0"}, {"N": "0"}]},
    "a JSON true": {"L": [{"N": True}, {"N": "0"}, {"N": "0"}]},
    "a null": {"L": [{"N": None}, {"N": "0"}, {"N": "0"}]},
    "a list": {"L": [{"N": ["1"]}, {"N": "0"}, {"N": "0"}]},
    "an S member": {"L": [{"S": "1"}, {"N": "0"}, {"N": "0"}]},
    "a member of two types": {"L": [{"N": "1", "S": "x"}, {"N": "0"}, {"N": "0"}]},
    "an empty member": {"L": [{}, {"N": "0"}, {"N": "0"}]},
    "a member not an object": {"L": ["1", {"N": "0"}, {"N": "0"}]},
    "two numbers": {"L": [{"N": "0"}, {"N": "0"}]},
    "four numbers": {"L": [{"N": "0"}] * 4},
    "no numbers": {"L": []},
    "L not a list": {"L": "123"},
    "L an object": {"L": {"N": "1"}},
    "an S": {"S": "1,0,0"},
    "an NS": {"NS": ["1", "0", "2"]},
    "a NULL": {"NULL": True},
    "a NULL false": {"NULL": False},
    "an empty value": {},
    "a number": {"N": "1"},
}


@pytest.mark.engines("moto")
@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
@pytest.mark.parametrize("case", list(MEMBERS))
def test_a_hostile_vector_is_the_plain_ways_floats_or_dynaorms_error(
        case: str, wire: str, kind: str, hostile: tuple[str, dict[str, Any]]) -> None:
    embedding = MEMBERS[case]
    url, answers = hostile
    answers["body"] = json.dumps({"SearchResults": [_hit(embedding)]}).encode()
    answers["rows"] = [_hit(embedding)["Item"]]
    expected = _plain(embedding)
    with _pointed(url, wire):
        s: Any = Session(hv) if kind == "sync" else BlockingAsyncSession(AsyncSession(hv))
        try:
            hits = s.search(Pt, "by_distance", vector=[1, 0, 0], top=1).all()
        except (ItemDecodeError, BadAnswerError) as exc:
            assert expected is None, f"the plain way reads {expected}, the search: {exc!r}"
            return
        except DynaormError as exc:
            pytest.fail(f"not a decode error: {exc!r}")
    got = [h.item.embedding for h in hits]
    assert got == [expected], (got, expected)
    assert all(math.isfinite(v) for v in got[0])


# == an encrypted entity's hit in its previous layout ======================================
KEYRING = StaticKeyring(b"k" * 32)
ev = Table("red08d-enc-vectors", keyring=KEYRING, vector_indexes=[
    VectorIndex("by_distance", attribute="embedding", dimensions=DIMS, distance="EUCLIDEAN")])
ev_old = Table("red08d-enc-vectors", keyring=KEYRING)


class OldSecretPt(Entity):
    class Meta:
        table = ev_old
        pk = "OLDPT#{pt_id}"
        sk = "PT"
        type_name = "oldpt"

    pt_id: str
    code: Encrypted[str]
    embedding: list[float]


class SecretPt(Entity):
    class Meta:
        table = ev
        pk = "PT#{pt_id}"
        sk = "PT"
        previous = Previous(pk="OLDPT#{pt_id}", type_name="oldpt",
                            stored_names={"secret": "code"})

    pt_id: str
    secret: Encrypted[str]
    embedding: Annotated[list[float], Vector(DIMS)]


@pytest.fixture
def enc(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(ev, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        saved = (ev_old.name, ev_old.binding())
        ev_old.name = ev.name
        ev_old.restore((None, {}, Client(ev.endpoint_url, wire="dynaorm")))
        try:
            yield tb
        finally:
            ev_old.name = saved[0]
            ev_old.restore(saved[1])


@pytest.mark.engines("moto")
@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_an_encrypted_hit_in_its_previous_layout_opens_and_moves_sealed(
        enc: TestBackend) -> None:
    with Session(ev_old) as o:
        o.save(OldSecretPt(pt_id="p1", code="hush-1", embedding=[0, 0, 1]))
    with Session(ev) as s:
        s.save(SecretPt(pt_id="p2", secret="hush-2", embedding=[0, 0.5, 1]))
    assert "hush" not in str(enc.scan_raw())
    hits = Session(ev).search(SecretPt, "by_distance", vector=[0, 0, 1]).all()
    assert [(h.item.pt_id, h.item.secret) for h in hits] == [("p1", "hush-1"),
                                                              ("p2", "hush-2")]
    moved = hits[0].item
    assert moved == Session(ev).get(SecretPt, pt_id="p1")
    moved.secret = "hush-3"
    with Session(ev) as s:
        s.save(moved)
    rows = {i["pk"]["S"]: i for i in enc.scan_raw()}
    assert "OLDPT#p1" not in rows and set(rows["PT#p1"]["secret"]) == {"B"}
    assert "hush" not in str(rows)
    again = Session(ev).search(SecretPt, "by_distance", vector=[0, 0, 1]).all()
    assert [(h.item.pt_id, h.item.secret) for h in again] == [("p1", "hush-3"),
                                                               ("p2", "hush-2")]


@pytest.mark.engines("moto")
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_item_botocore_cannot_parse_is_a_bad_answer_on_any_read(kind: str) -> None:
    """Not only a search: a GetItem answered with an attribute of another shape than
    DynamoDB's (``L`` holding text) is a :class:`~dynaorm.BadAnswerError` on botocore's
    wire too (it raised botocore's parser's ``AttributeError``), as on dynaorm's."""
    item = _hit({"L": "123"})["Item"]
    for wire in ("dynaorm", "botocore"):
        with _hostile(json.dumps({"Item": item}).encode(), wire):
            s: Any = Session(hv) if kind == "sync" else BlockingAsyncSession(AsyncSession(hv))
            with pytest.raises((BadAnswerError, ItemDecodeError)) as caught:
                s.get(Pt, pt_id="p1")
            if wire == "botocore":
                assert isinstance(caught.value, BadAnswerError)
                assert "botocore cannot parse" in str(caught.value)
