"""``Compressed[T]`` (contract 22) on every engine: values from ``min_size`` bytes on
stored zlib-compressed as binary, shorter ones as they are, read back plain by get,
query, scan, batch reads, ``values()``, streams, history and exports; refused in keys,
indexes, conditions, filters and update actions before sending. Two transforms of one
field compose (decoded in the reverse of their encode order): ``Encrypted`` with
``Compressed`` in both spellings, and a user's two rules registered in both orders
(tests/support/user_rules.py); a user's rule read on every path of an otherwise plain
entity. The matrix runs ``Compressed`` beside every other rule
(tests/system/test_rule_matrix.py).
"""

from __future__ import annotations

import tempfile
import zlib
from collections.abc import Iterator
from typing import Annotated, Any

import pytest

from dynaorm import (
    GSI,
    Compressed,
    DynaormError,
    Encrypted,
    Entity,
    F,
    Previous,
    Rule,
    Session,
    StaticKeyring,
    Table,
    register_rule,
)
from dynaorm.jobs import export, run_local
from dynaorm.schema.entity import spec_of
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.exports import read_back, row_of
from tests.support.raw import raw_set
from tests.support.user_rules import B64_1, B64_2, REV1, REV2, REVERSED, b64

zipped = Table("cmp_docs", keyring=StaticKeyring(b"c" * 32),
               indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Doc(Entity):
    class Meta:
        table = zipped
        pk = "DOC#{slug}"
        sk = "DOC"
        indexes = {"gsi1": ("KIND#{kind}", "DOC#{slug}")}

    slug: str
    kind: str = "page"
    body: Compressed[str] = ""
    small: Annotated[str, Compressed(min_size=8)] = ""
    data: Compressed[dict[str, Any]] = {}
    blob: Compressed[bytes] = b""
    sealed: Encrypted[Compressed[str]] = ""
    sealed_too: Compressed[Encrypted[str]] = ""
    maybe: Compressed[str] | None = None
    # a user's two transforms on one field, registered in both orders
    first: Annotated[str, REV1, B64_1] = ""
    second: Annotated[str, REV2, B64_2] = ""


class Versioned(Entity):
    class Meta:
        table = zipped
        pk = "VDOC#{slug}"
        sk = "VDOC"
        versioned = True

    slug: str
    version: int = 0
    body: Encrypted[Compressed[str]] = ""


class Motto(Entity):
    """An entity plain but for a user's rule (no other rule decodes its rows)."""

    class Meta:
        table = zipped
        pk = "MOTTO#{slug}"
        sk = "MOTTO"

    slug: str
    motto: Annotated[str, REVERSED] = ""
    n: int = 0


class Moved(Entity):
    """A compressed field stored under another name before (``Meta.previous``)."""

    class Meta:
        table = zipped
        pk = "MOVED#{slug}"
        sk = "MOVED"
        previous = Previous(pk="WAS#{slug}", stored_names={"body": "text"})

    slug: str
    body: Compressed[str] = ""


LONG = "DynamoDB stores items. " * 40  # (920 bytes)


@pytest.fixture
def zb(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(zipped, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        yield tb


def _doc(slug: str = "a", **values: Any) -> Doc:
    data: dict[str, Any] = {"slug": slug, "body": LONG, "small": "12345678", "data": {
        "words": LONG.split(), "n": 3, "raw": b"\x00\x01"}, "blob": b"\x00\xff" * 3,
        "sealed": LONG, "sealed_too": LONG + "!", "maybe": "short", "first": "first text",
        "second": "second text", **values}
    return Doc(**data)


def _raw(tb: TestBackend, pk: str, sk: str) -> dict[str, Any]:
    return next(i for i in tb.scan_raw() if (i["pk"]["S"], i["sk"]["S"]) == (pk, sk))


def _save(*objs: Entity) -> None:
    with Session(zipped) as s:
        for obj in objs:
            s.save(obj)


def test_stored_compressed_from_min_size_on(zb: TestBackend) -> None:
    """A value of at least ``min_size`` bytes is stored as zlib of its DynamoDB JSON
    (binary); a shorter one as it is; a binary value always compressed; ``None`` as
    nothing stored."""
    _save(_doc(), _doc("b", small="1234567", body="short", maybe=None, blob=b"x"),
          _doc("c", body="x" * 255, small="\u00e9" * 4), _doc("d", body="x" * 256))
    a, b = _raw(zb, "DOC#a", "DOC"), _raw(zb, "DOC#b", "DOC")
    c, d = _raw(zb, "DOC#c", "DOC"), _raw(zb, "DOC#d", "DOC")
    assert c["body"] == {"S": "x" * 255} and set(d["body"]) == {"B"}  # (the default, 256)
    assert set(c["small"]) == {"B"}  # (4 characters, 8 bytes of UTF-8)
    assert zlib.decompress(a["body"]["B"]) == b'{"S":"' + LONG.encode() + b'"}'
    assert len(a["body"]["B"]) < len(LONG) / 4
    assert set(a["small"]) == {"B"} and b["small"] == {"S": "1234567"}  # (8 vs 7 bytes)
    assert b["body"] == {"S": "short"} and a["maybe"] == {"S": "short"}
    assert set(a["data"]) == {"B"} and set(a["blob"]) == {"B"} and set(b["blob"]) == {"B"}
    assert "maybe" not in b
    # a user's two transforms, in the order their rules were registered
    assert a["first"] == {"S": b64("first text"[::-1])}
    assert a["second"] == {"S": b64("second text")[::-1]}


@pytest.mark.engines("moto")
def test_a_value_longer_than_a_read_inflates_is_refused_when_saved(zb: TestBackend) -> None:
    """A read decompresses at most MAX_INFLATED bytes (a stored bomb is refused): a save
    of a longer value is refused before sending, never stored unreadable."""
    from dynaorm.schema.rules.compressed import MAX_INFLATED

    s = zb.session()
    s.save(Doc(slug="big", body="a" * MAX_INFLATED))
    with pytest.raises(DynaormError, match=r"Doc\.body: a Compressed value is at most"):
        s.commit()
    assert zb.scan_raw() == []


def test_every_read_reads_the_plain_value(zb: TestBackend) -> None:
    a, b = _doc(), _doc("b", small="short", body="x" * 255)
    _save(a, b)
    s = Session(zipped)
    assert s.get(Doc, slug="a") == a and s.get(Doc, slug="b") == b
    assert s.query(Doc, slug="a").all() == [a]
    assert sorted(s.scan(Doc).consistent(), key=lambda d: d.slug) == [a, b]
    assert [d.slug for d in s.query(Doc, index="gsi1", kind="page")] == ["a", "b"]
    assert s.query(Doc, index="gsi1", kind="page").all() == [a, b]
    assert s.get_many(Doc, [{"slug": "a"}, {"slug": "b"}]) == [a, b]
    names = ("body", "small", "data", "blob", "sealed", "sealed_too", "maybe", "first",
             "second")
    assert s.query(Doc, slug="a").values(*names) == [{n: getattr(a, n) for n in names}]
    assert s.scan(Doc).consistent().values("slug", "body") == [
        {"slug": "a", "body": LONG}, {"slug": "b", "body": b.body}]
    changes = list(zipped.changes([{"eventName": "INSERT", "dynamodb": {
        "NewImage": _raw(zb, f"DOC#{x}", "DOC")}} for x in "ab"]))
    assert [c.new for c in changes] == [a, b]


def test_an_unchanged_value_writes_nothing_and_a_change_writes_it(zb: TestBackend) -> None:
    """A loaded object saved unchanged is no write (its stored bytes compare equal); a
    changed compressed value is compressed again; ``set()`` of one is compressed."""
    _save(_doc())
    s = Session(zipped)
    got = s.get(Doc, slug="a")
    assert got is not None
    s.save(got)
    assert s.commit().requests == []
    got.body = LONG + "more"
    s.save(got)
    s.commit()
    assert s.get(Doc, slug="a").body == LONG + "more"  # type: ignore[union-attr]
    s.update(Doc, slug="a").set(body=LONG * 2, small="tiny")
    s.commit()
    raw = _raw(zb, "DOC#a", "DOC")
    assert zlib.decompress(raw["body"]["B"]) == b'{"S":"' + (LONG * 2).encode() + b'"}'
    assert raw["small"] == {"S": "tiny"}
    assert s.get(Doc, slug="a").body == LONG * 2  # type: ignore[union-attr]


def test_encrypted_and_compressed_compose_in_both_spellings(zb: TestBackend) -> None:
    """``Encrypted[Compressed[str]]`` and ``Compressed[Encrypted[str]]``: compressed,
    then sealed (the ciphertext of the compressed bytes is far shorter than the text);
    opened, then decompressed, on every read, history and the export."""
    _save(_doc())
    raw = _raw(zb, "DOC#a", "DOC")
    for attr in ("sealed", "sealed_too"):
        assert set(raw[attr]) == {"B"} and len(raw[attr]["B"]) < len(LONG) / 2
        assert LONG[:20].encode() not in raw[attr]["B"]
    v = Versioned(slug="v", body=LONG)
    with Session(zipped) as s:
        s.save(v)
    v.body = LONG + "2"
    with Session(zipped) as s:
        s.save(v)
    s = Session(zipped)
    assert [x.body for x in s.history(Versioned, slug="v")] == [LONG, LONG + "2"]
    assert s.get(Versioned, slug="v", version=1).body == LONG  # type: ignore[union-attr]


def test_export_writes_the_plain_values(zb: TestBackend) -> None:
    a = _doc()
    _save(a)
    with tempfile.TemporaryDirectory() as out:
        run_local(export(zipped, out, encrypted="decrypt"))
        (row,) = read_back(out, "Doc")
    assert {k: v for k, v in row.items() if k != "data"} == row_of(a, omit=("data",))
    assert row["body"] == LONG and row["first"] == "first text" and row["blob"] == a.blob
    assert LONG.split()[0] in str(row["data"])  # (a dict field's column: its words in it)


def test_refused_in_conditions_filters_and_update_actions(zb: TestBackend) -> None:
    """A compressed field in a condition, a filter or an update's ``add``/``append``:
    :class:`DynaormError` naming the entity and the field, before anything is sent."""
    _save(_doc())
    s = Session(zipped)
    for bad in (lambda: s.scan(Doc).filter(F("body") == LONG).all(),
                lambda: s.query(Doc, slug="a").filter(F("small").exists()).all(),
                lambda: s.update(Doc, slug="a").set(kind="x").where(F("body") == "x"),
                lambda: s.update(Doc, slug="a").append(data=["x"])):
        with pytest.raises(DynaormError, match=r"Doc\.(body|small|data)"):
            bad()
    (refused,) = [e for e in (_refused(lambda: s.save(_doc("c"), condition=F("sealed") == "x"))
                              ,) if e]
    assert "sealed" in refused


def _refused(fn: Any) -> str:
    try:
        fn()
    except DynaormError as exc:
        return str(exc)
    return ""


def test_refused_in_keys_and_indexes() -> None:
    """A compressed field in a key template, an index key or a native index key: refused
    as the class is defined, naming the entity and the field."""
    table = Table("cmp_keys", indexes=[GSI("by_tag", pk=("tag",)),
                                       GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])
    for pk, more, field in (("K#{slug}", {}, "slug"),
                            ("K#{id}", {"indexes": {"gsi1": ("T#{tag}", "X")}}, "tag"),
                            ("K#{id}", {}, "tag")):
        with pytest.raises(DynaormError, match=rf"Bad\w*: Compressed \[[^]]*'{field}'"):
            type("Bad" + field, (Entity,), {
                "__annotations__": {"id": str, "slug": Compressed[str], "tag": Compressed[str]},
                "__module__": __name__, "__qualname__": "Bad" + field, "Meta": type(
                    "Meta", (), {"table": table, "pk": pk, "sk": "K", **more,
                                 "__qualname__": f"Bad{field}.Meta"})})


def test_decoders_run_in_reverse_order() -> None:
    """The rules' decoders run last rule first: a spec's ``decoders`` are its
    ``encoders``' rules reversed (a user's two rules, in both registration orders)."""
    spec = spec_of(Doc)
    enc = [getattr(e, "__self__", None) for e in spec.rules.encoders]
    dec = [getattr(d, "__self__", None) for d in spec.rules.decoders]
    assert dec == enc[::-1]
    assert [r.name for r in enc if r is not None] == [
        "compressed", "encrypted", "rev1", "b64_1", "b64_2", "rev2"]
    assert isinstance(enc[0], Rule) and register_rule is not None


def test_a_user_rule_decodes_on_every_read_of_an_otherwise_plain_entity(
        zb: TestBackend) -> None:
    """0.6's fast read paths (an answer validated from its bytes, an item from its wire
    form) skipped a registered rule's decoders on an entity no built-in rule decodes:
    every read reads the value the rule decodes."""
    m, other = Motto(slug="a", motto="carpe diem", n=1), Motto(slug="b", motto="ad astra")
    _save(m, other)
    assert _raw(zb, "MOTTO#a", "MOTTO")["motto"] == {"S": "meid eprac"}
    s = Session(zipped)
    assert s.get(Motto, slug="a") == m
    assert s.query(Motto, slug="a").all() == [m]
    assert sorted(s.scan(Motto).consistent(), key=lambda o: o.slug) == [m, other]
    assert s.get_many(Motto, [{"slug": "a"}, {"slug": "b"}]) == [m, other]
    assert s.query(Motto, slug="a").values("motto") == [{"motto": "carpe diem"}]
    (change,) = zipped.changes([{"eventName": "INSERT", "dynamodb": {
        "NewImage": _raw(zb, "MOTTO#a", "MOTTO")}}])
    assert change.new == m
    with tempfile.TemporaryDirectory() as out:
        run_local(export(zipped, out))
        assert sorted(r["motto"] for r in read_back(out, "Motto")) == ["ad astra", "carpe diem"]
    got = s.get(Motto, slug="a")
    assert got is not None
    s.save(got)  # (unchanged: its snapshot holds what was stored)
    assert s.commit().requests == []
    got.n = 2
    s.save(got)
    s.commit()
    assert s.get(Motto, slug="a") == got


def test_a_previous_layout_row_reads_back(zb: TestBackend) -> None:
    """A row of the previous layout, its compressed value under the old attribute name,
    reads back plain (get), and its move stores it compressed under the current name."""
    raw_set(zipped, {"pk": "WAS#a", "sk": "MOVED"}, _type="Moved", slug="a",
            text=zlib.compress(b'{"S":"' + LONG.encode() + b'"}'))
    s = Session(zipped)
    got = s.get(Moved, slug="a")
    assert got is not None and got.body == LONG
    s.save(got)
    s.commit()
    assert zlib.decompress(_raw(zb, "MOVED#a", "MOVED")["body"]["B"]) == (
        b'{"S":"' + LONG.encode() + b'"}')
    assert s.get(Moved, slug="a") == got


def test_a_binary_value_not_written_compressed_is_an_error_naming_the_field(
        zb: TestBackend) -> None:
    """A stored binary value is a compressed one: one that is not (another writer's raw
    bytes) is a :class:`DynaormError` naming the entity and the field, never a wrong
    value."""
    raw_set(zipped, {"pk": "DOC#x", "sk": "DOC"}, _type="Doc", slug="x", body=b"raw bytes")
    with pytest.raises(DynaormError, match=r"Doc\.body: the stored binary value is not"):
        Session(zipped).get(Doc, slug="x")
