"""Reads hand a page's results out in one step and decode them through one loader per
entity: limits, early stops, decode failures and cursors behave exactly as item by item."""

from __future__ import annotations

from typing import Any

import pytest

import dynaorm
from dynaorm import Entity, ItemDecodeError, Session, Table
from dynaorm.read.selection import selection
from dynaorm.testing import TestBackend
from tests.support.models import app
from tests.support.recording import Requests


class BatchRow(Entity):
    class Meta:
        table = app
        pk = "ROW#{group}"
        sk = "{n:04d}"

    group: str
    n: int
    note: str = ""


@pytest.fixture
def s(db: TestBackend) -> Session:
    session = db.session()
    session.save_many([BatchRow(group="g", n=i, note=f"row {i}") for i in range(30)])
    return session


@pytest.fixture
def rec(db: TestBackend) -> Requests:
    return Requests(db.table)


@pytest.mark.sync_only
def test_a_limit_below_the_page_stops_inside_the_batch(s: Session, rec: Requests) -> None:
    got = list(s.query(BatchRow, group="g").page_size(10).limit(3))
    assert [r.n for r in got] == [0, 1, 2]
    (request,) = rec.of("Query")
    assert request["Limit"] == 10
    rec.clear()
    got = list(s.query(BatchRow, group="g").page_size(10).limit(13))
    assert [r.n for r in got] == list(range(13))
    assert [r["Limit"] for r in rec.of("Query")] == [10, 10]


@pytest.mark.sync_only
def test_stopping_a_loop_reads_no_further(s: Session, rec: Requests) -> None:
    for row in s.query(BatchRow, group="g").page_size(10):
        if row.n == 4:
            break
    assert len(rec.of("Query")) == 1
    first = s.query(BatchRow, group="g").page_size(7).first()
    assert first == BatchRow(group="g", n=0, note="row 0")


def test_pages_resume_right_after_their_last_result(s: Session) -> None:
    q = s.query(BatchRow, group="g").page_size(4).limit(10)
    seen: list[int] = []
    cursor: str | None = None
    while True:
        page = q.page(cursor)
        seen.extend(r.n for r in page.items)
        cursor = page.cursor
        if cursor is None:
            break
    assert seen == list(range(10))


def test_objects_before_an_undecodable_item_come_first(db: TestBackend, s: Session) -> None:
    client = db.table.client
    client.put_item(TableName=db.table.name, Item={
        "pk": {"S": "ROW#g"}, "sk": {"S": "0002x"}, "_type": {"S": "BatchRow"},
        "group": {"S": "g"}, "n": {"S": "not a number"}})
    got: list[int] = []
    with pytest.raises(ItemDecodeError):
        for row in s.query(BatchRow, group="g").page_size(10):
            got.append(row.n)
    assert got == [0, 1, 2]  # the bad item sorts right after 0002


def test_loaded_objects_keep_their_stored_item(db: TestBackend, s: Session) -> None:
    rows = s.query(BatchRow, group="g").all()
    raw = {(i["pk"]["S"], i["sk"]["S"]): i for i in db.scan_raw()}
    for row in rows:
        state = row._dynaorm_state
        assert state is not None
        assert state.item == raw[("ROW#g", f"{row.n:04d}")]
        assert row == BatchRow(group="g", n=row.n, note=f"row {row.n}")


def _items() -> list[dict[str, Any]]:
    return [
        {"pk": {"S": "ROW#g"}, "sk": {"S": "0001"}, "_type": {"S": "BatchRow"}},
        {"pk": {"S": "ROW#g"}, "sk": {"S": "0002"}},  # no type attribute
        {"pk": {"S": "ROW#g"}, "sk": {"S": "0003"}, "_type": {"S": "User"}},
        {"pk": {"S": "ROW#g"}, "sk": {"S": "0004"}, "_type": {"N": "1"}},
        {"pk": {"S": "ROW#g"}, "sk": {"S": "0005"}, "_type": {"S": "BatchRow"}},
    ]


@pytest.mark.parametrize("exclude", [None, "0005"])
def test_kept_is_keep_for_each_item(exclude: str | None) -> None:
    sel = selection([BatchRow], None, sk_attr="sk", exclude=exclude)
    items = _items()
    assert sel.kept(items) == [i for i in items if sel.keep(i)]
    assert [i["sk"]["S"] for i in sel.kept(items)] == (
        ["0001", "0005"] if exclude is None else ["0001"])


def test_a_selection_is_planned_once_but_sees_new_entities_of_a_shapeless_table() -> None:
    bare = Table("bare", pk="pk", sk="sk", type_attribute=None)

    class First(Entity):
        class Meta:
            table = bare
            pk = "F#{a}"
            sk = "F"

        a: str

    before = selection([First], None)
    assert len(before.table_specs) == 1

    class Second(Entity):
        class Meta:
            table = bare
            pk = "S#{a}"
            sk = "S"

        a: str

    after = selection([First], None)
    assert len(after.table_specs) == 2
    assert not after.foreign({"pk": {"S": "S#x"}, "sk": {"S": "S"}})


class Checked(Entity):
    """An entity with its own model_validate (a hook some code bases use)."""

    class Meta:
        table = app
        pk = "CHECKED#{a}"
        sk = "C"

    a: str

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Checked:
        got = super().model_validate({**obj, "a": obj["a"].upper()}, **kwargs)
        return got


def test_an_own_model_validate_still_loads_items() -> None:
    item = {"pk": {"S": "CHECKED#x"}, "sk": {"S": "C"}, "_type": {"S": "Checked"},
            "a": {"S": "x"}}
    got = Checked._from_item(item)
    assert got.a == "X"
    assert got._dynaorm_state is not None and got._dynaorm_state.item == item
    assert BatchRow._from_item({"pk": {"S": "ROW#g"}, "sk": {"S": "0001"},
                                "_type": {"S": "BatchRow"}, "group": {"S": "g"},
                                "n": {"N": "1"}}) == BatchRow(group="g", n=1)


class MixedRow(Entity):
    class Meta:
        table = app
        pk = "MIX#{group}"
        sk = "{n:04d}"

    group: str
    n: int
    note: str | None = None
    tags: list[str] = []
    extra: dict[str, int] = {}


def test_items_of_one_shape_with_different_value_types_load_and_keep_their_items(
        db: TestBackend, s: Session) -> None:
    # The same attribute names, but a field a string in one item and NULL or missing in
    # others: each object validates from its own values and its snapshot renders the very
    # item stored (the loader reads values once for both).
    s.save_many([MixedRow(group="g", n=0, note="a", tags=["x"], extra={"k": 1}),
                 MixedRow(group="g", n=1, note=None, tags=[], extra={}),
                 MixedRow(group="g", n=2, note="c")])
    rows = s.query(MixedRow, group="g").all()
    assert [(r.n, r.note, r.tags, r.extra) for r in rows] == [
        (0, "a", ["x"], {"k": 1}), (1, None, [], {}), (2, "c", [], {})]
    raw = {i["sk"]["S"]: i for i in db.scan_raw() if i["pk"]["S"] == "MIX#g"}
    for row in rows:
        state = row._dynaorm_state
        assert state is not None
        assert state.item == raw[f"{row.n:04d}"]
    rows[1].note = "now set"
    s.save(rows[1])
    s.commit()
    again = s.get(MixedRow, group="g", n=1)
    assert again is not None and again.note == "now set" and again.tags == []


class TextRow(Entity):
    class Meta:
        table = app
        pk = "TEXT#{group}"
        sk = "{name}"

    group: str
    name: str
    note: str | None = None


def _text_item(name: str, note: dict[str, Any], reverse: bool) -> dict[str, Any]:
    item = {"pk": {"S": "TEXT#g"}, "sk": {"S": name}, "_type": {"S": "TextRow"},
            "group": {"S": "g"}, "name": {"S": name}, "note": note}
    return dict(reversed(item.items())) if reverse else item


@pytest.mark.parametrize(("notes", "reverse"), [
    ([{"S": "a"}, {"NULL": True}, {"S": "c"}, {"NULL": True}], False),  # strings first
    ([{"NULL": True}, {"S": "b"}, {"NULL": True}, {"S": "d"}], True),  # a NULL first
])
def test_an_all_string_shape_and_the_same_shape_with_a_null_load_alike(
        notes: list[dict[str, Any]], reverse: bool) -> None:
    # The loader takes a shortcut for items holding strings only; an item of the same
    # attribute names holding a NULL (before or after) loads as the long way loads it.
    # (Each case its own attribute order: a new shape, first met as the case says.)
    items = [_text_item(f"n{i}", note, reverse) for i, note in enumerate(notes)]
    rows = [TextRow._from_item(dict(i)) for i in items]
    assert [(r.name, r.note) for r in rows] == [
        (f"n{i}", note.get("S")) for i, note in enumerate(notes)]
    for row, item in zip(rows, items, strict=True):
        state = row._dynaorm_state
        assert state is not None
        assert state.item == item  # (the stored item exactly, in wire form: private)
        public = dynaorm.inspect(row)
        assert public.key == {"pk": "TEXT#g", "sk": row.name} and public.version is None


def test_all_string_items_queried_keep_their_items(db: TestBackend, s: Session) -> None:
    s.save_many([TextRow(group="g", name="a", note="x"), TextRow(group="g", name="b")])
    rows = s.query(TextRow, group="g").all()
    assert [(r.name, r.note) for r in rows] == [("a", "x"), ("b", None)]
    raw = {i["sk"]["S"]: i for i in db.scan_raw() if i["pk"]["S"] == "TEXT#g"}
    for row in rows:
        assert row._dynaorm_state is not None
        assert row._dynaorm_state.item == raw[row.name]


class PageRow(Entity):
    class Meta:
        table = app
        pk = "PAGE#{group}"
        sk = "{name}"

    group: str
    name: str
    note: str | None = None


def test_a_page_loads_as_its_items_load_one_by_one() -> None:
    # A page's items of strings only load in one loop (the loader's page path), the rest
    # one by one: either way each object, its snapshot and its key are what the item
    # loader gives; equal partition keys and the type name are shared strings.
    cases = [("g", {"S": "a"}), ("g", {"S": "b"}), ("h", {"S": "c"}), ("h", {"S": "d"}),
             ("g", {"S": "e"}), ("h", {"NULL": True})]
    items: list[dict[str, Any]] = [
        {"pk": {"S": f"PAGE#{g}"}, "sk": {"S": f"p{i}"}, "_type": {"S": "PageRow"},
         "group": {"S": g}, "name": {"S": f"p{i}"}, "note": note}
        for i, (g, note) in enumerate(cases)]
    paged = [PageRow._from_item(dict(i)) for i in items]  # first: before the NULL
    single = [PageRow._from_item(dict(i)) for i in items]
    assert [row.note for row in paged] == ["a", "b", "c", "d", "e", None]
    assert paged == single
    for got, want, item in zip(paged, single, items, strict=True):
        assert got._dynaorm_state == want._dynaorm_state
        assert got._dynaorm_state is not None
        assert got._dynaorm_state.item == item
        assert dynaorm.inspect(got).key == {"pk": item["pk"]["S"], "sk": item["sk"]["S"]}
    keys = [row._dynaorm_state.key["pk"] for row in paged if row._dynaorm_state]
    assert keys[0] is keys[1] is keys[4] and keys[2] is keys[3] is keys[5]
    names = {id(row._dynaorm_state.item["_type"]["S"]) for row in paged if row._dynaorm_state}
    assert len(names) == 1


def test_a_page_of_alternating_shapes_loads_as_its_items_load_one_by_one() -> None:
    # The page loader looks a shape up again whenever an item's names change, and after
    # an item took the long way (a new shape, or a NULL where the shape held strings):
    # shapes alternating, a NULL inside a run, then strings again, load item by item.
    def item(i: int, note: dict[str, Any] | None, reverse: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"pk": {"S": "PAGE#alt"}, "sk": {"S": f"r{i}"},
                               "_type": {"S": "PageRow"}, "group": {"S": "alt"},
                               "name": {"S": f"r{i}"}}
        if note is not None:
            out["note"] = note
        return dict(reversed(out.items())) if reverse else out

    items = [item(0, {"S": "a"}, True), item(1, None, True), item(2, {"S": "c"}, True),
             item(3, {"NULL": True}, True), item(4, {"S": "e"}, True), item(5, None, True),
             item(6, {"S": "g"}, True)]
    paged = [PageRow._from_item(dict(i)) for i in items]
    single = [PageRow._from_item(dict(i)) for i in items]
    assert [row.note for row in paged] == ["a", None, "c", None, "e", None, "g"]
    assert paged == single
    for got, want, raw in zip(paged, single, items, strict=True):
        assert got._dynaorm_state == want._dynaorm_state
        assert got._dynaorm_state is not None and got._dynaorm_state.item == raw
