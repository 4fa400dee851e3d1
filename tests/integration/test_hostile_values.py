"""Hostile values, generated: every input is either stored and read back equal, or refused
before anything is sent with a typed error; never a partial write, never another exception.

Runs on moto and DynamoDB Local (the reference). Key text, strings, numbers, nesting and
sizes are drawn around DynamoDB's limits; runtime is bounded by modest ``max_examples``.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from dynaorm import (
    Entity,
    ExpressionTooLargeError,
    F,
    InvalidValueError,
    ItemTooLargeError,
    KeyTemplateError,
    Session,
    Table,
)
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.examples import examples
from tests.support.models import app
from tests.support.recording import Requests

TYPED = (KeyTemplateError, InvalidValueError, ItemTooLargeError)
RUN = itertools.count()
WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}


class HDoc(Entity):
    """Hostile key text in the partition key and a GSI key; a run number keeps examples apart."""

    class Meta:
        table = app
        pk = "HD#{doc}"
        sk = "{run}"
        indexes = {"gsi1": ("HG#{group}", "{rank}")}

    doc: str
    run: str
    group: str = "g"
    rank: str = "r"
    text: str = ""
    num: Decimal | None = None
    data: Any = None
    tags: set[str] = set()


SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
ANY_CHAR = st.one_of(st.characters(codec="utf-8"), SURROGATES, st.sampled_from("\x00#{}é𝄞"))


def sized_text(lengths: list[int]) -> st.SearchStrategy[str]:
    """Texts of lengths around a limit, of 1-, 2- and 4-byte characters."""
    return st.builds(_repeat, st.sampled_from(lengths), st.sampled_from("aé𝄞"))


def _repeat(n: int, c: str) -> str:
    return c * n


def _number(digits: int, exp: int, neg: bool) -> Decimal:
    return Decimal(f"{'-' if neg else ''}{digits}E{exp}")


KEY_TEXT = st.one_of(st.text(ANY_CHAR, max_size=12),
                     sized_text([255, 256, 510, 511, 512, 1020, 1021, 1024, 1025, 2044, 2045,
                                 2046]))
NUMBERS = st.one_of(
    st.decimals(allow_nan=False, allow_infinity=False),
    st.builds(_number, st.integers(1, 10**40), st.integers(-170, 130), st.booleans()),
    st.sampled_from([Decimal("9.99E+125"), Decimal("1E+126"), Decimal("1E-130"),
                     Decimal("1E-131"), Decimal("1" * 38), Decimal("1" * 39), Decimal(0)]),
    st.integers(-(10**40), 10**40).map(Decimal))


def nest(depth: int, inner: Any, as_list: bool) -> Any:
    for _ in range(depth):
        inner = [inner] if as_list else {"k": inner}
    return inner


SCALARS = st.one_of(st.text(ANY_CHAR, max_size=8), NUMBERS, st.booleans(), st.none(),
                    st.integers(-(10**39), 10**39))
DOCUMENTS = st.one_of(
    st.recursive(SCALARS, lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(ANY_CHAR, max_size=4), inner, max_size=3)), max_leaves=12),
    st.builds(nest, st.integers(28, 34), SCALARS, st.booleans()),
    st.builds(nest, st.sampled_from([100, 700]), st.just("x"), st.booleans()))

SETTINGS = settings(max_examples=examples(40), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])


def note(text: str) -> None:
    """A Hypothesis event (statistics), when inside a Hypothesis test."""
    with contextlib.suppress(InvalidArgument):
        event(text)


def attempt(db: TestBackend, rec: Requests, s: Session, obj: HDoc, how: str) -> None:
    """Write ``obj``: stored and read back equal, or refused before sending."""
    before = len(db.scan_raw())
    rec.clear()
    try:
        if how == "save_many":
            s.save_many([obj])
        elif how == "update":
            staged = s.update(HDoc, upsert=True, doc=obj.doc, run=obj.run)
            staged.set(group=obj.group, rank=obj.rank, text=obj.text, num=obj.num,
                       data=obj.data, tags=obj.tags)
            s.commit()
        else:
            s.save(obj)
            s.commit()
    except TYPED as exc:
        sent = [op for op, _ in rec.calls if op in WRITES]  # (planning reads may be made)
        assert sent == [], f"{type(exc).__name__} after sending {sent}"
        assert len(db.scan_raw()) == before, "a refused write changed the table"
        message = str(exc)
        assert "HDoc" in message or how == "update"  # (a planning read names the table key)
        note(f"refused: {type(exc).__name__}")
        return
    s.rollback()
    got = s.get(HDoc, doc=obj.doc, run=obj.run)
    assert got == obj, "stored, but not read back equal"
    assert len(db.scan_raw()) == before + 1
    note("stored and read back equal")


def recorder(db: TestBackend) -> Requests:
    """One recorder per table for all of a test's examples (handlers are not removable)."""
    rec: Requests | None = getattr(db, "_hostile_requests", None)
    if rec is None:
        rec = Requests(db.table)
        db._hostile_requests = rec  # type: ignore[attr-defined]
    return rec


@SETTINGS
@given(doc=KEY_TEXT, group=KEY_TEXT, rank=KEY_TEXT, how=st.sampled_from(
    ["commit", "save_many", "update"]))
def test_hostile_key_text(db: TestBackend, doc: str, group: str, rank: str, how: str) -> None:
    rec = recorder(db)
    attempt(db, rec, db.session(), HDoc(doc=doc, run=str(next(RUN)), group=group, rank=rank),
            how)


@SETTINGS
@given(text=st.text(ANY_CHAR, max_size=30), num=NUMBERS, tags=st.sets(
    st.text(ANY_CHAR, min_size=1, max_size=4), max_size=3),
    how=st.sampled_from(["commit", "save_many", "update"]))
def test_hostile_strings_and_numbers(db: TestBackend, text: str, num: Decimal,
                                     tags: set[str], how: str) -> None:
    rec = recorder(db)
    attempt(db, rec, db.session(), HDoc(doc="s", run=str(next(RUN)), text=text, num=num,
                                        tags=tags), how)


@SETTINGS
@given(data=DOCUMENTS, how=st.sampled_from(["commit", "save_many", "update"]))
def test_hostile_documents(db: TestBackend, data: Any, how: str) -> None:
    rec = recorder(db)
    attempt(db, rec, db.session(), HDoc(doc="d", run=str(next(RUN)), data=data), how)


@pytest.mark.parametrize("how", ["commit", "save_many", "update"])
@pytest.mark.parametrize("size", [390_000, 409_000, 409_599, 409_600, 409_601, 420_000])
def test_hostile_sizes(db: TestBackend, request: pytest.FixtureRequest, size: int,
                       how: str) -> None:
    """Items around 400 KB, exactly at DynamoDB's limit on the embedded default (0.6
    skipped it: moto refused items from 405,000 bytes) and DynamoDB Local."""
    from dynaorm.schema.entity import encode_entity, spec_of
    from dynaorm.values.limits import item_size
    obj = HDoc(doc="é" * 300, run=str(next(RUN)))
    base = item_size(encode_entity(obj, spec_of(HDoc)))
    obj.text = "t" * (size - base)
    attempt(db, recorder(db), db.session(), obj, how)
    if size > 409_600:
        assert db.scan_raw() == []


class EFloat(Entity):
    class Meta:
        table = app
        pk = "EF#{fid}"
        sk = "F"

    fid: str
    x: float


def test_unstorable_number_is_a_dynaorm_error_naming_the_field(db: TestBackend) -> None:
    s = db.session()
    s.save(EFloat(fid="f", x=math.nan))
    with pytest.raises(InvalidValueError, match=r"EFloat field 'x'"):
        s.commit()
    assert db.scan_raw() == []


class EAny(Entity):
    class Meta:
        table = app
        pk = "EA#{aid}"
        sk = "A"

    aid: str
    x: float = 0.0
    blob: Any = None


class _Opaque:
    """No DynamoDB form (and a repr that raises: the message must not depend on it)."""

    def __repr__(self) -> str:
        raise RuntimeError("hostile repr")


REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("nan", {"x": math.nan}), ("+inf", {"x": math.inf}), ("-inf", {"x": -math.inf}),
    # (a Decimal field refuses these itself, at validation: a caller's own ValidationError)
    ("Decimal NaN", {"blob": Decimal("NaN")}),
    ("Decimal -Infinity", {"blob": {"k": Decimal("-Infinity")}}),
    ("nan in a list", {"blob": [1, math.nan]}), ("inf in a map", {"blob": {"k": math.inf}}),
    ("object", {"blob": object()}), ("complex", {"blob": 1j}),
    ("hostile repr", {"blob": _Opaque()}), ("object in a map", {"blob": {"k": [object()]}}),
]


# (refused by the codec before anything is sent, the same on every engine: moto, and the
# AsyncSession on the moto server; a path's eleven values share one table: none of them
# writes anything, which each asserts)
@pytest.mark.engines("moto")
@pytest.mark.parametrize("how", ["insert", "update", "overwrite", "save_many", "s.update",
                                 "condition"])
def test_refused_values_raise_the_public_error_before_sending(
        db: TestBackend, how: str) -> None:
    """(0.3) NaN, infinities and values of unsupported types raise InvalidValueError itself
    (no private class), on every write path, and nothing is written."""
    with db.session() as s:
        s.save(EAny(aid="a"))
    before = db.scan_raw()
    for case, fields in REFUSED:
        s = db.session()
        loaded = s.get(EAny, aid="a")
        assert loaded is not None
        with pytest.raises(InvalidValueError) as err:
            if how == "insert":
                s.save(EAny(aid="b", **fields))
                s.commit()
            elif how in ("update", "overwrite"):
                for name, value in fields.items():
                    setattr(loaded, name, value)
                s.save(loaded, overwrite=how == "overwrite")
                s.commit()
            elif how == "save_many":
                s.save_many([EAny(aid="c", **fields)])
            elif how == "s.update":
                s.update(EAny, aid="a").set(**fields)
                s.commit()
            else:
                ((name, value),) = fields.items()
                s.save(EAny(aid="a", x=1.0), overwrite=True, condition=F(name) == value)
                s.commit()
        assert type(err.value) is InvalidValueError, case
        s.rollback()
        assert db.scan_raw() == before, case


#: (issue 89) a wide item's 300 attributes, each declared: a save changing them all, or an
#: update setting them all, is an update expression over DynamoDB's 4 KB
wide = Table("hostile-wide", pk="pk", sk="sk")
ATTRS = [f"attribute_{i:03d}" for i in range(300)]


class Wide(Entity):
    class Meta:
        table = wide
        pk = "W#{wide_id}"
        sk = "W"

    wide_id: str
    __annotations__.update(dict.fromkeys(ATTRS, "str"))
    locals().update(dict.fromkeys(ATTRS, ""))


@pytest.mark.sync_only
def test_an_update_over_dynamodbs_4_kb_is_refused_before_sending(backend: str | None) -> None:
    """An update expression over 4 KB (DynamoDB Local: "Invalid UpdateExpression:
    Expression size has exceeded the maximum allowed size"; moto takes it) is refused
    before anything is sent, naming the way out, which works: the object saved whole."""
    with use_tables(wide, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        s = tb.session()
        s.save(Wide(wide_id="w1"))
        s.commit()
        before = tb.scan_raw()
        loaded = s.get(Wide, wide_id="w1", consistent=True)
        for name in ATTRS:
            setattr(loaded, name, "changed")
        s.save(loaded)
        with pytest.raises(ExpressionTooLargeError, match=r"4 KB.*overwrite=True"):
            s.commit()
        s.rollback()
        s.update(Wide, wide_id="w1").set(**dict.fromkeys(ATTRS, "set"))
        with pytest.raises(ExpressionTooLargeError, match=r"4 KB.*overwrite=True"):
            s.commit()
        s.rollback()
        assert tb.scan_raw() == before
        s.save(loaded, overwrite=True)
        s.commit()
        assert tb.scan_raw()[0]["attribute_299"] == {"S": "changed"}


class Tagged(Entity):
    class Meta:
        table = wide
        pk = "T#{tag_id}"
        sk = "T"

    tag_id: str
    tags: list[str] = []


def _expression_of(calls: list[tuple[str, dict[str, Any]]]) -> str:
    """The condition expression of the one write recorded."""
    (body,) = [b for op, b in calls if op in ("PutItem", "UpdateItem", "TransactWriteItems")]
    if "TransactItems" in body:
        (action,) = body["TransactItems"]
        body = next(iter(action.values()))
    text: str = body["ConditionExpression"]
    return text


@pytest.mark.sync_only
def test_a_condition_of_exactly_4096_bytes_is_sent_and_one_byte_more_is_refused(
        backend: str | None) -> None:
    """DynamoDB's limit is 4 KB *inclusive*: a save whose condition renders to exactly
    4,096 bytes is sent and applied (DynamoDB Local takes it), one of 4,097 is refused
    before sending. The condition is calibrated on the engine: attribute_not_exists of
    list members ``tags[1000]``..., one index a digit longer per byte wanted."""
    def cond(n: int, longer: int) -> Any:
        terms = [F(f"tags[{10000 + i if i < longer else 1000 + i}]").not_exists()
                 for i in range(n)]
        out = terms[0]
        for t in terms[1:]:
            out = out & t
        return out

    with use_tables(wide, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        rec = Requests(wide)
        s = tb.session()
        s.save(Tagged(tag_id="calibrate"), condition=cond(10, 0))
        s.commit()
        ten = len(_expression_of(rec.calls).encode())
        rec.calls.clear()
        s.save(Tagged(tag_id="calibrate2"), condition=cond(11, 0))
        s.commit()
        per = len(_expression_of(rec.calls).encode()) - ten
        n = 10 + (4096 - ten) // per
        base = ten + (n - 10) * per
        assert 0 <= 4096 - base < per <= n
        rec.calls.clear()
        s.save(Tagged(tag_id="edge"), condition=cond(n, 4096 - base))
        s.commit()
        assert len(_expression_of(rec.calls).encode()) == 4096
        rec.calls.clear()
        s.save(Tagged(tag_id="over"), condition=cond(n, 4097 - base))
        with pytest.raises(ExpressionTooLargeError, match="4 KB"):
            s.commit()
        assert rec.calls == []


@pytest.mark.sync_only
def test_a_condition_of_exactly_300_operators_is_sent_and_one_more_is_refused(
        backend: str | None) -> None:
    """DynamoDB's 300 operators of a condition (comparators, AND/OR/NOT, functions; a
    BETWEEN and an IN one each) are inclusive: a save whose condition holds exactly 300
    is sent and applied (DynamoDB Local takes it; 301 it refuses), one of 301 is refused
    before sending. Calibrated on what is sent: ``tags[i] <> :v`` terms, the first one
    ``NOT (tags[0] = :v)`` for one operator more."""
    import re

    def ops(text: str) -> int:
        return len(re.findall(r"<>|<=|>=|[=<>]|\b(?:AND|OR|NOT|BETWEEN|IN)\b|\w+\(", text))

    def cond(n: int, odd: bool) -> Any:
        out = ~(F("tags[0]") == "x") if odd else F("tags[0]") != "x"  # (NOT: one more)
        for i in range(1, n):
            out = out & (F(f"tags[{i}]") != "x")
        return out

    with use_tables(wide, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        rec = Requests(wide)
        s = tb.session()
        s.save(Tagged(tag_id="calibrate"), condition=cond(10, False))
        s.commit()
        ten = ops(_expression_of(rec.calls))
        n, odd = 10 + (300 - ten) // 2, (300 - ten) % 2 == 1
        rec.calls.clear()
        s.save(Tagged(tag_id="edge"), condition=cond(n, odd))
        s.commit()
        assert ops(_expression_of(rec.calls)) == 300
        rec.calls.clear()
        s.save(Tagged(tag_id="over"), condition=cond(n + 1, False) if odd else cond(n, True))
        with pytest.raises(ExpressionTooLargeError, match="300"):
            s.commit()
        assert rec.calls == []
