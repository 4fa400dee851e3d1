"""Loading from the wire form in pydantic-core (:mod:`dynaorm.values.fastload`) gives exactly
what decoding then validating gives: the same objects (values, types, fields set), the same
loaded-state snapshot (key, stored item, version), the same :class:`ItemDecodeError`, on
generated items of every attribute type and shape -- wrong tags, missing fields, ``NULL``\\ s,
numbers in odd spellings, extra attributes, stored names, versioned rows, fields only in
the key -- one at a time and as a page. On an engine: a query's objects, changed and saved,
write only what changed (a second writer's change to another attribute survives)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from typing import Any, ClassVar, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ConfigDict, Field, field_validator, model_validator

from dynaorm import Entity, ItemDecodeError, Versioned
from dynaorm.read.selection import Selection
from dynaorm.schema.entity import (
    LoadedItems,
    _fast,
    _load,
    _validator,
    answer_reader,
    raw_state,
    spec_of,
)
from dynaorm.testing import TestBackend
from dynaorm.values import state as state_module
from dynaorm.values.state import InstanceState, LoadedPage
from dynaorm.wire import decode
from tests.support.concurrency import join_all
from tests.support.examples import examples
from tests.support.models import app


class FRow(Entity):
    """Every type the fast way reads, with defaults and optional fields."""

    class Meta:
        table = app
        pk = "FROW#{group}"
        sk = "{n}"

    group: str
    n: int
    ratio: float = 0.5
    price: Decimal = Decimal("0")
    flag: bool = False
    when: datetime | None = None
    day: date | None = None
    ident: uuid.UUID | None = None
    kind: Literal["a", "b"] = "a"
    short: str = Field(default="", max_length=8)
    count: int | None = None


class FRenamed(Entity):
    """Fields stored under other names."""

    class Meta:
        table = app
        pk = "FREN#{ren_id}"
        sk = "X"

    ren_id: str
    title: str = Field(default="", alias="t")
    size: int = Field(default=0, alias="sz")


class FVersioned(Versioned):
    """Versioned: the latest copy and version rows."""

    class Meta:
        table = app
        pk = "FVER#{ver_id}"
        sk = "V"

    ver_id: str
    body: str = ""
    score: int = 0


class FKeyed(Entity):
    """A field that older items hold only in their key."""

    class Meta:
        table = app
        pk = "FKEY#{owner}"
        sk = "ITEM#{item_id}"

    owner: str
    item_id: str
    qty: int = 1


class FValidated(Entity):
    """A field validator: never the fast way."""

    class Meta:
        table = app
        pk = "FVAL#{val_id}"
        sk = "X"

    val_id: str
    name: str = ""

    @field_validator("name")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.strip()


class FListy(Entity):
    """A list field: never the fast way."""

    class Meta:
        table = app
        pk = "FLIST#{list_id}"
        sk = "X"

    list_id: str
    tags: list[str] = []


class FModelChecked(Entity):
    """A model validator: never the fast way."""

    class Meta:
        table = app
        pk = "FMOD#{mod_id}"
        sk = "X"

    mod_id: str
    low: int = 0
    high: int = 0

    @model_validator(mode="after")
    def _ordered(self) -> FModelChecked:
        if self.low > self.high:
            raise ValueError("low above high")
        return self


class FOwnValidate(Entity):
    """Its own ``model_validate``: never the fast way (loads call it)."""

    class Meta:
        table = app
        pk = "FOWN#{own_id}"
        sk = "X"

    own_id: str
    calls: ClassVar[list[str]] = []

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> FOwnValidate:  # type: ignore[override]
        cls.calls.append(obj["own_id"])
        return super().model_validate(obj, **kwargs)


class FExtra(Entity):
    """``extra="allow"``: never the fast way (its objects hold an extra dict)."""

    model_config = ConfigDict(extra="allow")

    class Meta:
        table = app
        pk = "FEXT#{ext_id}"
        sk = "X"

    ext_id: str


ENTITIES: tuple[type[Entity], ...] = (FRow, FRenamed, FVersioned, FKeyed, FValidated, FListy,
                                      FModelChecked, FExtra)


def test_which_entities_take_the_fast_way() -> None:
    assert _fast(FRow, spec_of(FRow)) is not None
    assert _fast(FRenamed, spec_of(FRenamed)) is not None
    assert _fast(FVersioned, spec_of(FVersioned)) is not None
    for plain in (FValidated, FListy, FModelChecked, FOwnValidate, FExtra):
        assert _fast(plain, spec_of(plain)) is None, plain
    assert FRow.__pydantic_complete__ is True  # (read as incomplete only while building)


def test_an_entitys_own_model_validate_still_sees_every_load() -> None:
    item = {"pk": {"S": "FOWN#a"}, "sk": {"S": "X"}, "_type": {"S": "FOwnValidate"},
            "own_id": {"S": "a"}}
    FOwnValidate.calls.clear()
    [FOwnValidate._from_item(i, spec_of(FOwnValidate)) for i in (item, item)]
    assert FOwnValidate.calls == ["a", "a"]


def test_a_copy_that_cannot_be_built_means_plain_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    from dynaorm.values import fastload

    class FUnbuilt(Entity):
        class Meta:
            table = app
            pk = "FUNB#{unb_id}"
            sk = "X"

        unb_id: str

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no such schema")

    monkeypatch.setattr(fastload, "SchemaValidator", refuse)
    assert _fast(FUnbuilt, spec_of(FUnbuilt)) is None
    assert FUnbuilt.__pydantic_complete__ is True  # restored after the failed build
    item = {"pk": {"S": "FUNB#a"}, "sk": {"S": "X"}, "_type": {"S": "FUnbuilt"},
            "unb_id": {"S": "a"}}
    obj = FUnbuilt._from_item(item, spec_of(FUnbuilt))
    assert obj == FUnbuilt(unb_id="a") and raw_state(obj) is not None


def test_cleared_caches_build_the_copy_again() -> None:
    from dynaorm.caches import clear_caches

    first = _fast(FRow, spec_of(FRow))
    clear_caches()
    again = _fast(FRow, spec_of(FRow))
    assert first is not None and again is not None and again is not first


# -- generated wire values: right, wrong and odd ------------------------------------------
_texts = st.text(max_size=12)
_ints = st.integers(-10**20, 10**20)
_numbers = st.one_of(
    _ints.map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-10**6,
                max_value=10**6).map(str),
    st.sampled_from(["1.0", "042", "+5", "-0", "1e3", "1E+3", "0.10", " 7", "1_000", "1.5"]),
)
_scalars = st.one_of(
    _texts.map(lambda v: {"S": v}),
    _numbers.map(lambda v: {"N": v}),
    st.booleans().map(lambda v: {"BOOL": v}),
    st.just({"NULL": True}),
    st.just({"SS": ["x", "y"]}),
    st.just({"L": [{"S": "x"}]}),
    st.just({"M": {"a": {"N": "1"}}}),
)
_dates = st.one_of(
    st.datetimes(min_value=datetime(1900, 1, 1)).map(lambda d: {"S": d.isoformat()}),
    st.dates().map(lambda d: {"S": d.isoformat()}),
    st.uuids().map(lambda u: {"S": str(u)}),
    st.sampled_from([{"S": "a"}, {"S": "b"}, {"S": "c"}, {"S": "2024-01-01T00:00:00Z"}]),
)


def _value_for(kind: str, fitting: bool) -> st.SearchStrategy[dict[str, Any]]:
    """The value a field of ``kind`` expects (``fitting``), else mostly so."""
    right: st.SearchStrategy[dict[str, Any]] = {
        "S": _texts.map(lambda v: {"S": v}), "N": _numbers.map(lambda v: {"N": v}),
        "BOOL": st.booleans().map(lambda v: {"BOOL": v}), "D": _dates,
        "datetime": st.datetimes(min_value=datetime(1900, 1, 1)).map(
            lambda d: {"S": d.isoformat()}),
        "date": st.dates().map(lambda d: {"S": d.isoformat()}),
        "uuid": st.uuids().map(lambda u: {"S": str(u)}),
        "ab": st.sampled_from([{"S": "a"}, {"S": "b"}]),
        "short": st.text(max_size=8).map(lambda v: {"S": v}),
        "Nint": (_ints.map(str) if fitting else _numbers).map(lambda v: {"N": v}),
    }[kind]
    if not fitting and kind in ("datetime", "date", "uuid", "ab"):
        right = st.one_of(right, _dates)
    return right if fitting else st.one_of(right, right, right, _scalars)


_FIELDS: dict[type[Entity], dict[str, str]] = {
    FRow: {"ratio": "N", "price": "N", "flag": "BOOL", "when": "datetime", "day": "date",
           "ident": "uuid", "kind": "ab", "short": "short", "count": "Nint"},
    FRenamed: {"t": "S", "sz": "Nint"},
    FVersioned: {"body": "S", "score": "Nint", "version": "Nint"},
    FKeyed: {"qty": "Nint"},
    FValidated: {"name": "S"},
    FListy: {"tags": "S"},
    FModelChecked: {"low": "Nint", "high": "Nint"},
    FExtra: {},
}


@st.composite
def items(draw: st.DrawFn, cls: type[Entity], fits: bool | None = None) -> dict[str, Any]:
    """A stored item of ``cls``: its keys, its type, some of its attributes (each mostly
    right), sometimes an extra attribute."""
    spec = spec_of(cls)
    values: dict[str, Any] = {}
    for name in spec.pk.fields + (spec.sk.fields if spec.sk else ()):
        values[name] = draw(st.integers(0, 99) if name == "n" else
                            st.text("abcxyz", min_size=1, max_size=4))
    item: dict[str, Any] = {k: {"S": v} for k, v in spec.primary_key(values).items()}
    if cls is FVersioned and draw(st.booleans()):  # a version row rather than the latest
        item["sk"] = {"S": f"v{draw(st.integers(1, 99)):08d}_V"}
    item["_type"] = {"S": spec.type_name}
    keys_stored = draw(st.booleans()) or cls is not FKeyed
    for name, value in values.items():
        if keys_stored:
            item[spec.attr(name)] = {"N": str(value)} if name == "n" else {"S": value}
    # every field there, under its tag: the fast way's
    fitting = draw(st.booleans()) if fits is None else fits
    for attr, kind in _FIELDS[cls].items():
        if fitting or draw(st.integers(0, 4)) > 0:
            item[attr] = draw(_value_for(kind, fitting))
    if draw(st.integers(0, 5)) == 0:
        item["extra"] = draw(_scalars)
    return item


def _outcome(cls: type[Entity], item: dict[str, Any], fast: bool) -> Any:
    """(type, dump, fields set, key, item, version) of the loaded object, or the error."""
    spec = spec_of(cls)
    found = _fast(cls, spec) if fast else None
    try:
        obj = _load(cls, spec, item, _validator(cls), None if found is None else found[0])
    except ItemDecodeError as exc:
        return ("error", str(exc), exc.key)
    return _seen(obj)


def _seen(obj: Entity) -> Any:
    state = raw_state(obj)
    assert isinstance(state, InstanceState)
    return (type(obj), obj.model_dump(), obj.model_fields_set, state.key, state.item,
            state.version)


def _same_page(loads: Iterator[Entity], plain: list[Any]) -> None:
    """``loads`` (a page's objects, one at a time as a read hands them out; an error ends
    the page) are the ``plain`` outcomes of its items, up to the first error."""
    fast: list[Any] = []
    while True:
        try:
            fast.append(_seen(next(loads)))
        except StopIteration:
            break
        except ItemDecodeError as exc:
            fast.append(("error", str(exc), exc.key))
            break
    end = next((i for i, o in enumerate(plain) if o[0] == "error"), len(plain))
    assert fast == plain[:end + 1]


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data())
def test_one_item_loads_alike(data: st.DataObject) -> None:
    cls = data.draw(st.sampled_from(ENTITIES))
    item = data.draw(items(cls))
    assert _outcome(cls, item, fast=True) == _outcome(cls, item, fast=False)


@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_a_page_loads_alike(data: st.DataObject) -> None:
    cls = data.draw(st.sampled_from((FRow, FRenamed, FVersioned, FKeyed)))
    page = data.draw(st.lists(items(cls), max_size=6))
    plain: list[Any] = []
    for item in page:
        plain.append(_outcome(cls, item, fast=False))
    _same_page((cls._from_item(i, spec_of(cls)) for i in page), plain)


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data())
def test_a_page_of_several_types_loads_alike(data: st.DataObject) -> None:
    kinds = (FRow, FRenamed, FVersioned, FKeyed, FModelChecked)
    chosen = data.draw(st.lists(st.sampled_from(kinds), min_size=1, max_size=6))
    fits = data.draw(st.sampled_from([True, True, None]))  # (a whole page the fast way's)
    page = [data.draw(items(cls, fits)) for cls in chosen]
    types = {spec_of(cls).type_name: (cls, spec_of(cls)) for cls in chosen}
    read: Selection[Entity] = Selection(type_attr="_type", types=types, table_sk="sk",
                                        key_attrs=("pk", "sk"), order_attrs=("sk", "pk"))
    plain = [_outcome(cls, item, fast=False) for cls, item in zip(chosen, page, strict=True)]
    _same_page(iter(read.decoded(page)), plain)


def _body(answer: dict[str, Any]) -> bytes:
    """``answer`` as DynamoDB sends it (binary values base64 encoded)."""
    def blob(value: object) -> str:
        assert isinstance(value, bytes)
        return base64.b64encode(value).decode()

    return json.dumps(answer, default=blob).encode()


@settings(max_examples=examples(200), deadline=None)
@given(data=st.data())
def test_an_answers_bytes_load_alike(data: st.DataObject) -> None:
    """The bytes path (:func:`answer_reader`: the whole answer validated from its JSON)
    gives the plain path's objects, snapshots (binary values as bytes) and answer, or
    declines the answer: exactly when some item is not for the fast way, or carries a
    type name no class of the table claims (the plain read counts and names it)."""
    kinds = (FRow, FRenamed, FVersioned, FKeyed, FModelChecked, FExtra)
    chosen = data.draw(st.lists(st.sampled_from(kinds), min_size=0, max_size=6))
    fits = data.draw(st.sampled_from([True, True, None]))
    page = [data.draw(items(cls, fits)) for cls in chosen]
    if data.draw(st.booleans()) and page:  # binary values: bytes in the snapshot
        page[0]["bin"] = {"B": b"\x00\xff"}
        page[-1]["bins"] = {"L": [{"BS": [b"\x01", b""]}, {"M": {"b": {"B": b"\x02"}}}]}
    types = {spec_of(cls).type_name: (cls, spec_of(cls)) for cls in chosen or (FRow,)}
    results = list(page)
    for _ in range(data.draw(st.integers(0, 2))):  # items of other types: no results
        other = {"pk": {"S": "X#1"}, "sk": {"S": "1"}, "group": {"S": "g"}, "n": {"N": "1"},
                 "_type": data.draw(st.sampled_from(
                     [{"S": "Nobody"}, {"S": "FValidated"}, {"N": "1"}]))}
        if data.draw(st.booleans()):
            del other["_type"]
        page.insert(data.draw(st.integers(0, len(page))), other)
    answer = {"Items": page, "Count": len(page), "ScannedCount": len(page) + 2,
              "LastEvaluatedKey": {"pk": {"S": "FROW#x"}, "sk": {"S": "é\u0000"},
                                   "gk": data.draw(st.sampled_from([{"B": b"\xfe"},
                                                                    {"S": "B"}]))},
              "ConsumedCapacity": {"TableName": "t", "CapacityUnits": 1.5}}
    body = _body(answer)
    reader = answer_reader(types)
    eligible = all(not (s.versioned or s.renames or s.table.key_types) and
                   _fast(c, s) is not None for c, s in types.values())
    assert (reader is not None) == eligible
    if reader is None:
        return
    read = reader(body)
    fast_fits = all((found := _fast(cls, spec_of(cls))) is not None and _fits(found[0], item)
                    for cls, item in zip(chosen, results, strict=True))
    typed = all("S" in item.get("_type", {}) for item in page)  # (else: declined)
    table = spec_of(FRow).table
    claimed = all(item["_type"]["S"] in types or item["_type"]["S"] in table.entities
                  for item in page if "S" in item.get("_type", {}))  # (else: the plain
    assert (read is not None) == (fast_fits and typed and claimed)  # read names it)
    if read is None:
        return
    plain = [_outcome(cls, item, fast=False) for cls, item in zip(chosen, results, strict=True)]
    assert type(read["Items"]) is LoadedItems or read["Items"] == []
    assert [_seen(obj) for obj in read["Items"]] == plain
    assert {k: v for k, v in read.items() if k != "Items"} == {
        k: v for k, v in decode(body).items() if k != "Items"}  # (the wire's own decoding)


def _fits(fast: Any, item: dict[str, Any]) -> bool:
    try:
        fast(item)
    except ValueError:
        return False
    return True


def _row_page(size: int) -> list[dict[str, Any]]:
    """``size`` stored ``FRow`` items of one group (numbers in odd spellings: ``007``)."""
    return [{"pk": {"S": "FROW#g"}, "sk": {"S": str(i)}, "_type": {"S": "FRow"},
             "group": {"S": "g"}, "n": {"N": str(i)}, "ratio": {"N": "0.10"},
             "price": {"N": "1.50"}, "flag": {"BOOL": True}, "kind": {"S": "b"},
             "short": {"S": "s"}, "count": {"N": "007"}, "when": {"S": "2024-01-01T00:00:00"},
             "day": {"S": "2024-01-02"}, "ident": {"S": str(uuid.UUID(int=5))},
             "legacy": {"L": [{"N": "1"}]}} for i in range(size)]


def test_a_state_kept_on_the_page_is_the_plain_one_and_decodes_the_page_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An object read from an answer's bytes keeps its state on the page until a write
    or ``inspect`` needs it; then the page decodes once for all its objects."""
    page = _row_page(3)
    reader = answer_reader({"FRow": (FRow, spec_of(FRow))})
    assert reader is not None
    read = reader(_body({"Items": page, "Count": 3}))
    assert read is not None
    states = [raw_state(obj) for obj in read["Items"]]
    assert all(isinstance(s, InstanceState) and isinstance(s._shape, LoadedPage)
               for s in states)
    decodes: list[bytes] = []

    def loads(data: bytes) -> Any:
        decodes.append(data)
        return json.loads(data)

    monkeypatch.setattr(state_module, "json", type("J", (), {"loads": staticmethod(loads)}))
    plain = [_outcome(FRow, item, fast=False) for item in page]
    assert [_seen(obj) for obj in read["Items"]] == plain
    assert not any(isinstance(s._shape, LoadedPage) for s in states if s is not None)
    assert len(decodes) == 1  # (the page once, for all its objects)


def test_numbers_in_odd_spellings_snapshot_as_a_plain_load_does() -> None:
    item = {"pk": {"S": "FROW#g"}, "sk": {"S": "1"}, "_type": {"S": "FRow"},
            "group": {"S": "g"}, "n": {"N": "1.0"}, "ratio": {"N": "0.10"},
            "price": {"N": "1.50"}, "flag": {"BOOL": True}, "kind": {"S": "b"},
            "short": {"S": "s"}, "count": {"N": "007"}, "when": {"S": "2024-01-01T00:00:00"},
            "day": {"S": "2024-01-02"}, "ident": {"S": str(uuid.UUID(int=5))}}
    fast = _outcome(FRow, item, fast=True)
    assert fast == _outcome(FRow, item, fast=False)
    assert fast[4]["n"] == {"N": "1.0"} and fast[4]["count"] == {"N": "007"}  # (as stored)


# -- on an engine: change tracking after a fast read -----------------------------------------
def test_a_fast_read_then_a_save_writes_only_what_changed(db: TestBackend) -> None:
    s = db.session()
    s.save_many([FRow(group="ct", n=i, ratio=0.25, price=Decimal("1.10"), count=i)
                 for i in range(5)])
    assert _fast(FRow, spec_of(FRow)) is not None
    rows = db.session().query(FRow, group="ct").all()
    assert [r.n for r in rows] == list(range(5))
    assert all(raw_state(r) is not None for r in rows)
    # a second writer changes another attribute of row 2 after our read
    db.table.client.update_item(
        TableName=db.table.name, Key={"pk": {"S": "FROW#ct"}, "sk": {"S": "2"}},
        UpdateExpression="SET #a = :v", ExpressionAttributeNames={"#a": "short"},
        ExpressionAttributeValues={":v": {"S": "theirs"}})
    mine = db.session()
    rows[2].flag = True
    mine.save(rows[2])
    mine.commit()
    again = {r.n: r for r in db.session().query(FRow, group="ct").all()}
    assert again[2].flag is True and again[2].short == "theirs"  # their change survives
    assert again[2].price == Decimal("1.10") and again[2].ratio == 0.25
    assert again[1] == rows[1]


def test_a_fast_read_of_a_versioned_entity_commits_the_next_version(db: TestBackend) -> None:
    s = db.session()
    s.save(FVersioned(ver_id="a", body="one", score=1))
    s.commit()
    (got,) = db.session().query(FVersioned, ver_id="a").all()
    assert got.version == 1
    got.body = "two"
    s2 = db.session()
    s2.save(got)
    s2.commit()
    assert db.session().get(FVersioned, ver_id="a").version == 2


@pytest.mark.parametrize("cls", [FRow, FRenamed])
def test_items_that_do_not_fit_are_the_plain_error(db: TestBackend, cls: type[Entity]) -> None:
    pk = "FROW#bad" if cls is FRow else "FREN#bad"
    sk = "1" if cls is FRow else "X"
    db.table.client.put_item(TableName=db.table.name, Item={
        "pk": {"S": pk}, "sk": {"S": sk}, "_type": {"S": cls.__name__},
        "group": {"S": "bad"}, "n": {"N": "1"}, "ren_id": {"S": "bad"},
        "ratio": {"S": "not a number"}, "sz": {"S": "not a number"}})
    with pytest.raises(ItemDecodeError) as caught:
        if cls is FRow:
            db.session().query(FRow, group="bad").all()
        else:
            db.session().get(FRenamed, ren_id="bad")
    assert caught.value.key == {"pk": pk, "sk": sk}


def test_a_read_on_dynaorms_wire_loads_from_the_answers_bytes(db: TestBackend) -> None:
    """On dynaorm's own wire an iterated read's objects come from each answer's bytes
    (their states kept on the page); a page holding an item of another type decodes the
    plain way (the same results); a hook on the client sees the answers as botocore
    shapes them (then no bytes path); a change after a bytes read writes only itself."""
    from tests.support.recording import Requests

    def row(i: int) -> FRow:  # every field stored: the fast way's
        return FRow(group="bp", n=i, count=i, price=Decimal("0.50"),
                    when=datetime(2024, 1, 2, 3, 4, 5), day=date(2024, 1, 2),
                    ident=uuid.UUID(int=i))

    s = db.session()
    s.save_many([row(i) for i in range(7)])
    expected = [row(i) for i in range(7)]
    rows = db.session().query(FRow, group="bp").page_size(3).all()
    assert rows == expected
    own = db.table.db.sync_wire is not None  # (dynaorm's wire: the sessions' too)
    on_pages = [isinstance(getattr(raw_state(r), "_shape", None), LoadedPage) for r in rows]
    assert on_pages == [own] * 7
    assert dynaorm_inspect_keys(rows) == [{"pk": "FROW#bp", "sk": str(i)} for i in range(7)]
    # another type's item among them (a class of the table claims its type name; one no
    # class claims sends the page the plain way, which names it: test_type_names): not
    # a result, the rest still from the bytes
    db.table.client.put_item(TableName=db.table.name, Item={
        "pk": {"S": "FROW#bp"}, "sk": {"S": "3a"}, "_type": {"S": "FValidated"}})
    for size in (3, 1000):
        got = db.session().query(FRow, group="bp").page_size(size).all()
        assert got == expected
        assert [isinstance(getattr(raw_state(r), "_shape", None), LoadedPage)
                for r in got] == [own] * 7
        assert dynaorm_inspect_keys(got) == dynaorm_inspect_keys(rows)
    # an item of its type the fast way refuses (a field missing): that read goes the
    # plain way from there (the same results)
    db.table.client.put_item(TableName=db.table.name, Item={
        "pk": {"S": "FROW#bp"}, "sk": {"S": "3b"}, "_type": {"S": "FRow"},
        "group": {"S": "bp"}, "n": {"N": "3"}})
    got = db.session().query(FRow, group="bp").page_size(3).all()
    assert got == [*expected[:4], FRow(group="bp", n=3), *expected[4:]]
    assert [isinstance(getattr(raw_state(r), "_shape", None), LoadedPage)
            for r in got] == [own] * 3 + [False] * 5
    db.table.client.delete_item(TableName=db.table.name,
                                Key={"pk": {"S": "FROW#bp"}, "sk": {"S": "3b"}})
    db.table.client.delete_item(TableName=db.table.name,
                                Key={"pk": {"S": "FROW#bp"}, "sk": {"S": "3a"}})
    # a change after a bytes read: only it is written, a second writer's change survives
    db.table.client.update_item(
        TableName=db.table.name, Key={"pk": {"S": "FROW#bp"}, "sk": {"S": "4"}},
        UpdateExpression="SET #a = :v", ExpressionAttributeNames={"#a": "short"},
        ExpressionAttributeValues={":v": {"S": "theirs"}})
    rows[4].count = 40
    mine = db.session()
    mine.save(rows[4])
    mine.commit()
    got = db.session().get(FRow, group="bp", n=4)
    assert got.count == 40 and got.short == "theirs" and got.price == Decimal("0.50")
    # an attribute no field reads, binary: kept as bytes in the snapshot, left as it is
    db.table.client.update_item(
        TableName=db.table.name, Key={"pk": {"S": "FROW#bp"}, "sk": {"S": "5"}},
        UpdateExpression="SET #a = :v", ExpressionAttributeNames={"#a": "blob"},
        ExpressionAttributeValues={":v": {"B": b"\x00\xff\"B\""}})
    rows = db.session().query(FRow, group="bp").all()
    state = raw_state(rows[5])
    assert isinstance(state, InstanceState) and isinstance(state._shape, LoadedPage) == own
    assert state.item["blob"] == {"B": b"\x00\xff\"B\""}
    rows[5].short = "mine"
    mine = db.session()
    mine.save(rows[5])
    mine.commit()
    stored = db.table.client.get_item(
        TableName=db.table.name, Key={"pk": {"S": "FROW#bp"}, "sk": {"S": "5"}})["Item"]
    assert stored["blob"] == {"B": b"\x00\xff\"B\""} and stored["short"] == {"S": "mine"}
    # a scan too (one segment), the table's other items left out
    scanned = db.session().scan(FRow).page_size(4).all()
    assert sorted(r.n for r in scanned) == list(range(7))
    assert all(isinstance(getattr(raw_state(r), "_shape", None), LoadedPage) == own
               for r in scanned)
    # a hook sees botocore-shaped answers: item dicts, not objects
    seen = Requests(db.table)
    assert len(db.session().query(FRow, group="bp").all()) == 7
    assert all(isinstance(item, dict) for _, answer in seen.responses
               for item in answer.get("Items", ()))
    assert seen.responses


def dynaorm_inspect_keys(objs: list[Entity]) -> list[dict[str, Any]]:
    import dynaorm

    return [dict(dynaorm.inspect(obj).key) for obj in objs]


def _row_page(n: int) -> list[dict[str, Any]]:
    return [{"pk": {"S": "FROW#t"}, "sk": {"S": str(i)}, "_type": {"S": "FRow"},
             "group": {"S": "t"}, "n": {"N": str(i)}, "ratio": {"N": "0.5"},
             "price": {"N": "2"}, "flag": {"BOOL": False}, "kind": {"S": "a"},
             "short": {"S": ""}, "count": {"N": "1"}, "when": {"S": "2024-01-01T00:00:00"},
             "day": {"S": "2024-01-02"}, "ident": {"S": str(uuid.UUID(int=i))}}
            for i in range(n)]


def test_states_on_one_page_made_from_many_threads_at_once_are_the_plain_ones() -> None:
    """Threads asking at once for the states of one page's objects (each state made
    once, the page decoded again under a lock) all see the plain path's snapshots."""
    import threading

    page = _row_page(200)
    reader = answer_reader({"FRow": (FRow, spec_of(FRow))})
    assert reader is not None
    read = reader(_body({"Items": page}))
    assert read is not None
    objs = list(read["Items"])
    plain = [_outcome(FRow, item, fast=False)[3:] for item in page]
    start = threading.Barrier(6)
    seen: list[list[Any]] = []

    def ask() -> None:
        start.wait()
        states = [raw_state(obj) for obj in reversed(objs)]
        seen.append([(s.key, s.item, s.version) for s in reversed(states)
                     if isinstance(s, InstanceState)])

    threads = [threading.Thread(target=ask) for _ in range(6)]
    join_all(threads)
    assert len(seen) == 6 and all(states == plain for states in seen)


@pytest.mark.parametrize("body", [b"{not json", b'{"Items": [1, 2]', b"", b'{"Items": {}}',
                                  b'{"Items": [{"_type": {"S": "FRow"}}]}'])
def test_an_answer_the_reader_declines_is_the_wires_own_decoding(body: bytes) -> None:
    """A body that is not a Query answer of the read's items (malformed JSON, ``Items``
    not a list, an item the fast way refuses) reaches the caller as the wire's own
    decoding makes it: the same value, or the same error."""
    from dynaorm.wire import checked_answer

    reader = answer_reader({"FRow": (FRow, spec_of(FRow))})
    assert reader is not None

    def outcome(with_reader: bool) -> Any:
        try:
            return checked_answer("Query", 200, {}, body, reader if with_reader else None)
        except Exception as exc:  # (the plain path's error, whatever it is)
            return (type(exc), str(exc))

    assert outcome(True) == outcome(False)


def test_a_page_is_validated_without_collections_and_the_collector_is_left_as_found(
        ) -> None:
    """The bytes path validates an answer with the cyclic collector paused (no
    collection walks the page's objects while they are being made: ``collector_paused``),
    and leaves the collector on or off as it found it, also after an answer it refuses."""
    import gc

    reader = answer_reader({"FRow": (FRow, spec_of(FRow))})
    assert reader is not None
    body = _body({"Items": _row_page(3000), "Count": 3000})
    made = []

    def collections() -> int:
        return sum(generation["collections"] for generation in gc.get_stats())

    assert gc.isenabled()
    gc.collect()
    before = collections()
    read = reader(body)
    assert read is not None
    made.append(read)
    # 3,000 objects of ~4 tracked containers each, with the collector on, would start
    # more than ten collections; paused, none start until the objects exist
    assert collections() - before <= 1 and len(made[0]["Items"]) == 3000
    assert gc.isenabled()

    gc.disable()
    try:
        assert answer_reader({"FRow": (FRow, spec_of(FRow))}) is not None
        assert reader(body) is not None
        assert not gc.isenabled()  # (off as the caller left it)
    finally:
        gc.enable()

    refusing = answer_reader({"FRow": (FRow, spec_of(FRow))})
    assert refusing is not None
    bad = _row_page(2)
    bad[1]["n"] = {"S": "not a number"}
    assert refusing(_body({"Items": bad, "Count": 2})) is None  # (declined: plain way)
    assert gc.isenabled()


def test_pages_read_in_many_threads_at_once_leave_the_collector_on() -> None:
    """Threads reading pages at once each pause the collector or find it paused; whatever
    the interleaving (a switch interval of ten microseconds), it ends on, and every page
    reads the same objects."""
    import gc
    import sys
    import threading

    reader = answer_reader({"FRow": (FRow, spec_of(FRow))})
    assert reader is not None
    # (a short page: more pauses and resumes of the collector, to be interleaved, per
    # row validated)
    body = _body({"Items": _row_page(20), "Count": 20})
    expected = [_seen(obj) for obj in reader(body)["Items"]]  # type: ignore[index]
    seen: list[list[Any]] = []
    errors: list[BaseException] = []

    def read_pages() -> None:
        try:
            for _ in range(8):
                read = reader(body)
                assert read is not None
                seen.append([_seen(obj) for obj in read["Items"]])
        except BaseException as exc:  # (reported by the test thread)
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=read_pages) for _ in range(4)]
        join_all(threads)
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert gc.isenabled()
    assert len(seen) == 32 and all(page == expected for page in seen)


def _on_pages(objs: list[Any]) -> list[bool]:
    """Whether each object's state is kept on its answer's bytes (the bytes path)."""
    return [isinstance(getattr(raw_state(obj), "_shape", None), LoadedPage) for obj in objs]


def test_every_read_terminal_loads_from_the_answers_bytes(db: TestBackend) -> None:
    """On dynaorm's own wire every terminal reading whole items -- a page and the page
    its cursor resumes, a limited read, ``first``, ``one``, ``get``, ``get_many`` (a
    key asked twice: two objects), a scan's pages --
    reads each answer's bytes into its objects; objects, snapshots and cursors are the
    plain path's (the same reads with a hook attached: botocore-shaped answers); a
    limited scan and a read cut short inside an answer hold the same objects too (the
    latter's stop worked out lazily: no page decodes again for it)."""
    from dynaorm import F
    from tests.support.recording import Requests

    db.session().save_many([FRow(group="tb", n=i, count=i, price=Decimal("0.50"),
                                 when=datetime(2024, 1, 2, 3, 4, 5), day=date(2024, 1, 2),
                                 ident=uuid.UUID(int=i)) for i in range(7)])
    own = db.table.db.sync_wire is not None  # (dynaorm's wire: the sessions' too)

    def reads() -> tuple[dict[str, list[Any]], list[str | None]]:
        s = db.session()
        q = s.query(FRow, group="tb")
        first = q.limit(5).page_size(3).page()
        second = q.limit(5).page_size(3).page(first.cursor)
        scan = s.scan(FRow).filter(F("group") == "tb").page_size(4)
        scanned = scan.page()
        got = s.get(FRow, group="tb", n=3)
        many = s.get_many(FRow, [{"group": "tb", "n": n} for n in (5, 1, 9, 5)])
        assert got is not None and many[2] is None and many[0] is not many[3]
        return ({"page": first.items, "resumed": second.items, "limited": q.limit(4).all(),
                 "first": [q.first()], "one": [s.query(FRow, group="tb", n=2).one()],
                 "get": [got], "get_many": [many[0], many[1], many[3]], "scan": scanned.items,
                 "scan resumed": scan.page(scanned.cursor).items,
                 "limited scan": scan.limit(3).all(), "cut short": q.page_size(5).limit(2).all()},
                [first.cursor, second.cursor, scanned.cursor])

    fast, fast_cursors = reads()
    assert [len(objs) for objs in fast.values()] == [3, 2, 4, 1, 1, 1, 3, 4, 3, 3, 2]
    assert {name: _on_pages(objs) for name, objs in fast.items()} == {
        name: [own and name != "limited scan"] * len(objs) for name, objs in fast.items()}
    Requests(db.table)  # a hook sees botocore-shaped answers: the plain path
    plain, plain_cursors = reads()
    assert not any(any(_on_pages(objs)) for objs in plain.values())
    assert {name: [_seen(obj) for obj in objs] for name, objs in fast.items()} == {
        name: [_seen(obj) for obj in objs] for name, objs in plain.items()}
    assert fast_cursors == plain_cursors and fast_cursors[1] is None


def test_a_get_the_bytes_path_declines_loads_the_plain_way(db: TestBackend) -> None:
    """``get`` of an item its fast schema refuses (a field missing) loads it the plain
    way; of a key holding another type's item, finds nothing."""
    client, name = db.table.client, db.table.name
    client.put_item(TableName=name, Item={"pk": {"S": "FROW#gd"}, "sk": {"S": "1"},
                                          "_type": {"S": "FRow"}, "group": {"S": "gd"},
                                          "n": {"N": "1"}})
    client.put_item(TableName=name, Item={"pk": {"S": "FROW#gd"}, "sk": {"S": "2"},
                                          "_type": {"S": "FValidated"}, "val_id": {"S": "x"}})
    got = db.session().get(FRow, group="gd", n=1)
    assert got == FRow(group="gd", n=1) and _on_pages([got]) == [False]
    assert db.session().get(FRow, group="gd", n=2) is None
