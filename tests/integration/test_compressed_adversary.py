"""Red team of ``Compressed[T]`` (contract 22; the plain cases are in
``test_compressed.py``): generated values of many types around ``min_size`` (unicode text,
bytes, numbers, lists, sets, maps, nested models, ``None``), alone and inside
``Encrypted``, read back by every read path (get, query, scan, get_many, ``values()``,
a stream image, an object pickled and unpickled) and stored compressed exactly when the
threshold says; a value that compresses under DynamoDB's 400 KB item limit is stored
(the size checked is the stored one) and one whose stored form is over it is refused
before sending; values DynamoDB or another rule compare as stored (the table's TTL
attribute, a versioned entity's ``version``) cannot be ``Compressed``."""

from __future__ import annotations

import itertools
import pickle
import random
import zlib
from collections.abc import Iterator
from decimal import Decimal
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from dynaorm import (
    Compressed,
    DynaormError,
    Encrypted,
    Entity,
    F,
    ItemTooLargeError,
    Session,
    StaticKeyring,
    Table,
)
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.examples import examples
from tests.support.recording import recording

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

MIN = 40
C = Compressed(min_size=MIN)

red = Table("cmp_red", keyring=StaticKeyring(b"r" * 32), ttl="expires")


class Inner(BaseModel):
    name: str
    tags: list[str] = []
    amount: Decimal = Decimal(0)
    raw: bytes = b""


class Many(Entity):
    class Meta:
        table = red
        pk = "MANY#{slug}"
        sk = "MANY"

    slug: str
    text: Annotated[str, C] = ""
    blob: Annotated[bytes, C] = b""
    num: Annotated[Decimal, C] = Decimal(0)
    words: Annotated[list[str], C] = []
    tags: Annotated[set[str], C] | None = None
    nums: Annotated[set[int], C] | None = None
    doc: Annotated[dict[str, Any], C] = {}
    inner: Annotated[Inner, C] | None = None
    maybe: Annotated[str | None, C] = None
    sealed: Encrypted[Annotated[str, C]] = ""
    sealed_blob: Encrypted[Annotated[bytes, C]] = b""
    sealed_inner: Encrypted[Annotated[Inner, C]] | None = None
    expires: int | None = None


class Big(Entity):
    class Meta:
        table = red
        pk = "BIG#{slug}"
        sk = "BIG"

    slug: str
    body: Compressed[str] = ""
    blob: Compressed[bytes] = b""


SETTINGS = settings(max_examples=examples(30), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])
_slugs = itertools.count()

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=70)
small_text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12)
numbers = st.one_of(st.integers(-10**20, 10**20).map(Decimal),
                    st.decimals(allow_nan=False, allow_infinity=False, places=4,
                                min_value=-10**9, max_value=10**9))
inners = st.builds(Inner, name=text, tags=st.lists(small_text, max_size=6), amount=numbers,
                   raw=st.binary(max_size=40))
json_leaf = st.one_of(st.none(), st.booleans(), text, st.integers(-10**9, 10**9),
                      st.binary(max_size=20))
docs = st.dictionaries(small_text, st.recursive(
    json_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(small_text, c, max_size=3),
    max_leaves=6), max_size=5)
values = st.fixed_dictionaries({
    "text": text, "blob": st.binary(max_size=80), "num": numbers,
    "words": st.lists(text, max_size=6),
    "tags": st.none() | st.frozensets(small_text, min_size=1, max_size=6).map(set),
    "nums": st.none() | st.frozensets(st.integers(-10**6, 10**6), min_size=1,
                                      max_size=6).map(set),
    "doc": docs, "inner": st.none() | inners, "maybe": st.none() | text, "sealed": text,
    "sealed_blob": st.binary(max_size=80), "sealed_inner": st.none() | inners})


@pytest.fixture
def rb(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(red, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        yield tb


def _raw(tb: TestBackend, pk: str, sk: str) -> dict[str, Any]:
    return next(i for i in tb.scan_raw() if (i["pk"]["S"], i["sk"]["S"]) == (pk, sk))


@pytest.mark.sync_only
@SETTINGS
@given(data=values)
def test_every_value_reads_back_on_every_path(rb: TestBackend, data: dict[str, Any]) -> None:
    slug = f"m{next(_slugs)}"
    obj = Many(slug=slug, **data)
    with Session(red) as s:
        s.save(obj)
    raw = _raw(rb, f"MANY#{slug}", "MANY")
    # stored as the threshold says: text by its UTF-8 bytes, bytes always compressed
    assert set(raw["text"]) == ({"B"} if len(obj.text.encode()) >= MIN else {"S"})
    assert set(raw["blob"]) == {"B"}
    if obj.maybe is None:
        assert "maybe" not in raw or raw["maybe"] == {"NULL": True}
    for attr in ("sealed", "sealed_blob"):  # (sealed: no plaintext in the stored bytes)
        assert set(raw[attr]) == {"B"}
    s = Session(red)
    assert s.get(Many, slug=slug) == obj
    assert s.get(Many, slug=slug, consistent=True) == obj
    assert s.query(Many, slug=slug).all() == [obj]
    assert s.get_many(Many, [{"slug": slug}]) == [obj]
    names = tuple(data)
    assert s.query(Many, slug=slug).values(*names) == [{n: getattr(obj, n) for n in names}]
    assert [m for m in s.scan(Many).consistent() if m.slug == slug] == [obj]
    (change,) = red.changes([{"eventName": "MODIFY", "dynamodb": {
        "NewImage": raw, "OldImage": raw}}])
    assert change.new == obj and change.old == obj
    loaded = s.get(Many, slug=slug)
    again = pickle.loads(pickle.dumps(loaded))
    assert again == obj
    s.save(again)  # (unpickled and unchanged: still no write)
    assert s.commit().requests == []


@pytest.mark.sync_only
@SETTINGS
@given(data=values, update=st.sampled_from(["text", "blob", "words", "doc", "sealed"]))
def test_set_of_an_update_stores_what_a_save_stores(rb: TestBackend, data: dict[str, Any],
                                                   update: str) -> None:
    """``set()`` of a compressed (or sealed and compressed) field is read back as the
    value set; the rest of the item is untouched."""
    slug = f"u{next(_slugs)}"
    obj = Many(slug=slug)
    with Session(red) as s:
        s.save(obj)
    with Session(red) as s:
        s.update(Many, slug=slug).set(**{update: data[update]})
    got = Session(red).get(Many, slug=slug)
    assert got == obj.model_copy(update={update: data[update]})


def test_a_compressible_value_over_400_kb_is_stored_and_read_back(rb: TestBackend) -> None:
    """DynamoDB's limit is on the stored item: 600 KB of text that compresses to a few KB
    is saved and read back whole, by get and query."""
    body = "All work and no play makes Jack a dull boy. " * 14_000  # (616 KB)
    with Session(red) as s:
        s.save(Big(slug="c", body=body))
    assert len(_raw(rb, "BIG#c", "BIG")["body"]["B"]) < 20_000
    s = Session(red)
    assert s.get(Big, slug="c") == Big(slug="c", body=body)
    assert s.query(Big, slug="c").values("body") == [{"body": body}]


def test_a_stored_form_over_400_kb_is_refused_before_sending(rb: TestBackend) -> None:
    """A value whose stored (compressed) form is over the limit, though the value itself
    is under it (incompressible bytes grow through their JSON): ``ItemTooLargeError``
    before any request; the table holds what it held."""
    blob = random.Random(7).randbytes(410_000)  # (stored: 414,139 bytes of zlib)
    assert len(zlib.compress(blob)) > 410_000
    rec = recording(red)
    s = Session(red)
    s.save(Big(slug="x", blob=blob))
    with pytest.raises(ItemTooLargeError):
        s.commit()
    assert rec.writes == []
    assert Session(red).get(Big, slug="x") is None


def test_a_stored_form_just_under_400_kb_is_stored(rb: TestBackend,
                                                  request: pytest.FixtureRequest) -> None:
    """Incompressible bytes of 400,000 are stored as 404,035 bytes of zlib: under the
    limit, so saved (DynamoDB measures binary values by their bytes; moto measures them
    otherwise, so this runs on the other engines) and read back whole."""
    if engine_of(request) == "moto":
        pytest.skip("moto measures a binary attribute's size otherwise than DynamoDB")
    blob = random.Random(7).randbytes(400_000)
    with Session(red) as s:
        s.save(Big(slug="u", blob=blob))
    assert 400_000 < len(_raw(rb, "BIG#u", "BIG")["blob"]["B"]) < 409_600
    assert Session(red).get(Big, slug="u") == Big(slug="u", blob=blob)


@pytest.mark.sync_only
def test_refused_uses_send_nothing(rb: TestBackend) -> None:
    """Conditions, filters and update actions that compare a stored compressed value are
    refused before any request leaves, inside ``Encrypted`` too."""
    with Session(red) as s:
        s.save(Many(slug="r", text="x" * 100, sealed="y" * 100))
    rec = recording(red)
    s = Session(red)
    refused = [
        lambda: s.scan(Many).filter(F("text") == "x").all(),
        lambda: s.query(Many, slug="r").filter(F("doc")["a"] == 1).all(),
        lambda: s.query(Many, slug="r").filter(F("sealed").exists()).all(),
        lambda: s.update(Many, slug="r").add(nums={1}),
        lambda: s.update(Many, slug="r").append(words=["z"]),
        lambda: s.update(Many, slug="r").set(slug="r").where(F("inner").exists()),
        lambda: s.save(Many(slug="q"), condition=F("words").not_exists()),
        lambda: s.delete(Many(slug="r"), condition=F("blob") == b"x"),
    ]
    for bad in refused:
        with pytest.raises(DynaormError):
            bad()
            s.commit()
        s = Session(red)
    assert rec.sent == []


def test_compared_attributes_cannot_be_compressed() -> None:
    """The table's TTL attribute (DynamoDB expires only a number: compressed, an expired
    row was returned by get) and a versioned entity's ``version`` (its condition compares
    the stored number: compressed, every save after the first was refused as a concurrent
    modification no other writer made): refused as the class is defined."""
    zero = Compressed(min_size=0)
    with pytest.raises(DynaormError, match=r"Expiring: Compressed \['expires'\]"):
        class Expiring(Entity):
            class Meta:
                table = red
                pk = "EXP#{slug}"
                sk = "EXP"

            slug: str
            expires: Annotated[int | None, zero] = None
    with pytest.raises(DynaormError, match=r"Counted: Compressed \['version'\]"):
        class Counted(Entity):
            class Meta:
                table = red
                pk = "CNT#{slug}"
                sk = "CNT"
                versioned = True

            slug: str
            version: Annotated[int, zero] = 0


class Hostile(Entity):
    class Meta:
        table = red
        pk = "HOST#{slug}"
        sk = "HOST"

    slug: str
    body: Compressed[str] = ""
    doc: Compressed[dict[str, Any]] = {}
    n: Compressed[int] = 0


HOSTILE = [b'{"Q":"x"}', b'{"S":5}', b'"x"', b'{"M":{"a":{"Z":1}}}', b'{"S":"\xff"}',
           b'{"N":"abc"}', b'{"N":"NaN"}', b"", b'{"M":{"a":{"B":"!!"}}}',
           b'{"L":' * 3000 + b"[]" + b"}" * 3000, b'{"S":"a","N":"1"}', b'{"NULL":false}',
           b'{"SS":[1,2]}', b'{"BS":["%%"]}', b"[1,2]"]


@pytest.mark.parametrize("payload", HOSTILE, ids=range(len(HOSTILE)))
def test_a_binary_value_compressed_wrongly_is_a_dynaorm_error_on_every_read(
        rb: TestBackend, payload: bytes) -> None:
    """Another writer's zlib bytes that are no attribute value Compressed wrote (an
    unknown kind, a value of the wrong type, bad base64, nesting deeper than Python
    recurses): a :class:`DynaormError` naming the field on get, query and ``values()``,
    never a ``KeyError`` / ``RecursionError`` nor a value read wrongly (bad base64 was
    read as ``b""``; ``values()`` gave a number for a text field)."""
    from tests.support.raw import raw_set

    field = "doc" if payload.startswith((b'{"M"', b'{"L"', b'{"BS"')) else (
        "n" if b'"N"' in payload else "body")
    raw_set(red, {"pk": "HOST#h", "sk": "HOST"}, _type="Hostile", slug="h",
            **{field: zlib.compress(payload)})
    s = Session(red)
    for read in (lambda: s.get(Hostile, slug="h"), lambda: s.query(Hostile, slug="h").all(),
                 lambda: s.query(Hostile, slug="h").values(field)):
        with pytest.raises(DynaormError, match=rf"Hostile\.{field}|Hostile"):
            read()


def test_an_update_whose_stored_value_is_over_400_kb_is_refused_before_sending(
        rb: TestBackend) -> None:
    """``set()`` of a value whose stored (compressed) form alone is over the limit: the
    size checked before sending is the stored one, as a save's."""
    with Session(red) as s:
        s.save(Big(slug="v", body="kept"))
    blob = random.Random(8).randbytes(410_000)
    rec = recording(red)
    s = Session(red)
    s.update(Big, slug="v").set(blob=blob)
    with pytest.raises(ItemTooLargeError):
        s.commit()
    assert rec.writes == []
    assert Session(red).get(Big, slug="v") == Big(slug="v", body="kept")
    with Session(red) as s:  # (and a compressible one far over the limit is stored)
        s.update(Big, slug="v").set(body="z" * 700_000)
    assert Session(red).get(Big, slug="v") == Big(slug="v", body="z" * 700_000)
