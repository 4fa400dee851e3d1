"""Red team 08f of merge ``lit69``: an entity's previous layout (``Meta.previous``) claims
its literal key until migrated (``EntitySpec.layouts``/``literal_claims``/``fits_layout``,
the unclaimed claims, key conditions skipping a previous literal sort key, the stream
reader asking the claimant, ``Layout._claimed``).

A model-based property: random tables without a type attribute of two or three entities
mixing literal keys, templates and previous layouts (literal or templated), and random
operation sequences (save, a legacy row as 0.7 stored it, get, load-and-save (a move),
delete, query, scan, stream classification, ``dynaorm migrate``). Every row carries its
writer in a ``tag`` attribute (``Owner:n``). What must never happen:

- a row read (get), listed (query, scan) or decoded (a stream record) as another
  entity's;
- an operation of one entity (a save, overwrite or not, a move, a delete) changing or
  removing another entity's row;
- ``dynaorm migrate`` moving a row anywhere but its owner's current key, or losing one.

And after ``dynaorm migrate`` and ``Meta.previous`` removed, a previous literal key is
released: the template entity beside it may save there.

Moto only: none of it depends on the engine."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import dynaorm
from dynaorm import DynaormError, ItemNotFoundError, Previous, Session, Table
from dynaorm.schema.streams import classify
from dynaorm.schema.templates import KeyTemplate
from dynaorm.testing import use_tables, worker_suffix
from tests.support.examples import examples

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

PKS = ["USER#{a}", "USER#root", "USER#admin", "OLD#{a}", "OLD#admin", "ADMIN#root", "{a}"]
SKS = ["PROFILE", "{c}", "P#{c}", "P#1"]
VALUES = ["admin", "root", "x", "1", "PROFILE", "P#1"]
_names = count()


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    from dynaorm.testing import moto_backend

    with moto_backend():
        yield


def _fields(*templates: str) -> set[str]:
    return {f for t in templates for f in KeyTemplate.parse(t).fields}


def _entity(home: Table, name: str, pk: str, sk: str,
            previous: tuple[str, str] | None) -> type[Any]:
    body: dict[str, Any] = {"table": home, "pk": pk, "sk": sk, "__qualname__": f"{name}.Meta",
                            "__module__": __name__}
    if previous is not None:
        body["previous"] = Previous(pk=previous[0], sk=previous[1])
    notes = dict.fromkeys(sorted(_fields(pk, sk)), str) | {"tag": str}
    return type(name, (dynaorm.Entity,), {"__annotations__": notes, "__module__": __name__,
                                          "__qualname__": name, "tag": "",
                                          "Meta": type("Meta", (), body)})


@st.composite
def _shapes(draw: st.DrawFn) -> list[tuple[str, str, tuple[str, str] | None]]:
    """Two or three entities' keys, most with a previous layout (its fields among the
    current keys' fields)."""
    out = []
    for _ in range(draw(st.integers(2, 3))):
        pk, sk = draw(st.sampled_from(PKS)), draw(st.sampled_from(SKS))
        olds = [(p, s) for p in PKS for s in SKS
                if _fields(p, s) <= _fields(pk, sk) and (p, s) != (pk, sk)]
        prev = draw(st.sampled_from(olds)) if olds and draw(st.integers(0, 3)) else None
        out.append((pk, sk, prev))
    return out


_values = st.fixed_dictionaries({f: st.sampled_from(VALUES) for f in "ac"})
_op = st.one_of(
    st.tuples(st.just("save"), st.integers(0, 2), _values, st.booleans()),
    st.tuples(st.just("legacy"), st.integers(0, 2), _values),
    st.tuples(st.just("get"), st.integers(0, 2), _values),
    st.tuples(st.just("move"), st.integers(0, 2), _values),
    st.tuples(st.just("delete"), st.integers(0, 2), _values),
    st.tuples(st.just("query"), st.integers(0, 2), _values),
    st.tuples(st.just("scan"), st.integers(0, 2)),
    st.tuples(st.just("range"), st.integers(0, 2), _values,
              st.sampled_from(["eq", "gte", "lte", "gt", "lt", "begins_with"])),
    st.tuples(st.just("migrate"),),
    st.tuples(st.just("probe"), st.integers(0, 2), st.integers(0, 20),
              st.sampled_from(["get", "move", "delete"])),
)


def _rows(home: Table) -> dict[str, dict[str, Any]]:
    """The table's rows by key (json), each the raw item."""
    items = home.db.send("Scan", {"TableName": home.name, "ConsistentRead": True})["Items"]
    return {json.dumps([i["PK"], i["SK"]], sort_keys=True): i for i in items}


def _owner(item: dict[str, Any]) -> str:
    return str(item["tag"]["S"]).split(":")[0]


def _layout_key(pk: str, sk: str, values: dict[str, str]) -> dict[str, str] | None:
    try:
        return {"PK": KeyTemplate.parse(pk).render(values),
                "SK": KeyTemplate.parse(sk).render(values)}
    except DynaormError:
        return None


def _legacy_ok(classes: list[type[Any]], cls: type[Any], item: dict[str, Any]) -> bool:
    """Whether a 0.7 row of ``cls``'s previous layout at ``item``'s key is unambiguous:
    no other entity's literal layout fits it, and, unless the old layout is literal, no
    other entity's layout at all (two templates: no reader could tell)."""
    spec = cls.__dynaorm_spec__
    old_literal = spec.previous.pk.is_literal and (
        spec.previous.sk is None or spec.previous.sk.is_literal)
    for other in classes:
        if other is cls:
            continue
        o = other.__dynaorm_spec__
        for pk, sk in o.layouts:
            if o.fits_layout(item, pk, sk) and (
                    not old_literal or (pk.is_literal and (sk is None or sk.is_literal))):
                return False
    return True


def _probe(classes: list[type[Any]], rows: dict[str, dict[str, Any]], op: tuple[Any, ...]
           ) -> tuple[Any, ...] | None:
    """``("probe", entity, row, kind)``: a get, move or delete of the entity at the values
    its previous layout parses from a row's key (the fields it lacks from the row's
    attributes), whoever wrote the row: every old-layout read meets that row."""
    cls = classes[op[1] % len(classes)]
    layout = cls.__dynaorm_spec__.previous
    if layout is None or not rows:
        return None
    item = rows[sorted(rows)[op[2] % len(rows)]]
    values = layout.parse_key(item)
    if values is None:
        return None
    values = {f: str(values.get(f, item.get(f, {}).get("S", "x"))) for f in "ac"}
    return (op[3], op[1], values)


def _check_reads(cls: type[Any], found: list[Any], what: str) -> None:
    for obj in found:
        assert type(obj) is cls, (what, obj)
        assert obj.tag.split(":")[0] == cls.__name__, (what, "another's row", obj)


def _run(home: Table, classes: list[type[Any]], op: tuple[Any, ...], tags: Iterator[int]
         ) -> None:
    kind = op[0]
    if kind == "migrate":
        from dynaorm.jobs.migration import migrate

        migrate(home)
        return
    cls = classes[op[1] % len(classes)]
    spec = cls.__dynaorm_spec__
    values = {f: op[2][f] for f in "ac" if f in cls.model_fields} if len(op) > 2 else {}
    tag = f"{cls.__name__}:{next(tags)}"
    if kind == "save":
        with Session(home) as s:
            s.save(cls(**values, tag=tag), overwrite=op[3])
    elif kind == "legacy":
        if spec.previous is None:
            return
        key = _layout_key(spec.previous.pk.source, spec.previous.sk.source
                          if spec.previous.sk else "", values)
        if key is None:
            return
        item = {"PK": {"S": key["PK"]}, "SK": {"S": key["SK"]}, "tag": {"S": tag},
                **{f: {"S": v} for f, v in values.items()}}
        if not _legacy_ok(classes, cls, item):
            return
        home.db.send("PutItem", {"TableName": home.name, "Item": item,
                                 "ConditionExpression": "attribute_not_exists(PK)"})
    elif kind == "get":
        got = Session(home).get(cls, consistent=True, **values)
        _check_reads(cls, [] if got is None else [got], "get")
        if got is not None:  # (the entity at that key: a lossy old layout's row too)
            assert {f: getattr(got, f) for f in values} == values, ("another key's", got)
    elif kind == "move":
        s = Session(home)
        got = s.get(cls, consistent=True, **values)
        if got is not None:
            _check_reads(cls, [got], "get before a move")
            got.tag = tag
            s.save(got)
            s.commit()
    elif kind == "delete":
        with Session(home) as s:
            s.delete(cls, **values)
    elif kind == "query":
        found = Session(home).query(cls, **{f: values[f] for f in spec.pk.fields}).all()
        _check_reads(cls, found, "query")
    elif kind == "range":  # (a key condition on the sort key: skips claimed literals)
        if "c" not in (spec.sk.fields if spec.sk else ()):
            return
        q = Session(home).query(cls, **{f: values[f] for f in spec.pk.fields})
        found = getattr(q, op[3])(c=values["c"]).all()
        _check_reads(cls, found, f"query {op[3]}")
    elif kind == "scan":
        _check_reads(cls, Session(home).scan(cls).all(), "scan")


def _owners_changed(before: dict[str, Any], after: dict[str, Any], actor: str | None
                    ) -> list[str]:
    """Rows not ``actor``'s that changed or went (``actor`` None: every row)."""
    return [k for k, item in before.items()
            if _owner(item) != actor and after.get(k) != item]


@settings(deadline=None, suppress_health_check=list(HealthCheck), max_examples=examples(200))
@given(shapes=_shapes(), ops=st.lists(_op, min_size=1, max_size=12),
       pool=st.lists(st.sampled_from(VALUES), min_size=1, max_size=3, unique=True))
def test_no_entity_ever_takes_anothers_row(moto: None, shapes: list[Any],
                                           ops: list[Any], pool: list[str]) -> None:
    """(each example's ops draw their values from a ``pool`` of one to three: one entity's
    row meets another's reads and writes at the same values often)"""
    ops = [(*op[:2], {f: pool[VALUES.index(v) % len(pool)] for f, v in op[2].items()},
            *op[3:]) if len(op) > 2 and isinstance(op[2], dict) else op for op in ops]
    n = next(_names)
    home = Table(f"red08f-claims-{n}", pk="PK", sk="SK", type_attribute=None)
    try:
        classes = [_entity(home, f"Red08fC{n}x{i}", pk, sk, prev)
                   for i, (pk, sk, prev) in enumerate(shapes)]
    except DynaormError as exc:
        event("refused at definition")
        note(f"refused at definition: {exc}")
        return
    olds = sum(c.__dynaorm_spec__.previous is not None for c in classes)
    event(f"{len(classes)} entities, {olds} previous")
    tags = count()
    with use_tables(home, name_suffix=worker_suffix()):
        for op in ops:
            before = _rows(home)
            if op[0] == "probe" and (op := _probe(classes, before, op)) is None:
                continue
            actor = None if op[0] == "migrate" else classes[op[1] % len(classes)].__name__
            try:
                _run(home, classes, op, tags)
            except DynaormError as exc:
                note(f"{op}: {type(exc).__name__}: {exc}")
            after = _rows(home)
            note(f"{op} -> {sorted(after)}")
            if op[0] == "migrate":
                _check_migrated(classes, before, after)
            else:
                assert _owners_changed(before, after, actor) == [], (op, before, after)
            if op[0] == "delete":  # (by key: only the entity at that key, in either layout)
                cls = classes[op[1] % len(classes)]
                asked = {f: v for f, v in op[2].items() if f in cls.model_fields}
                assert all({f: before[k].get(f, {}).get("S") for f in asked} == asked
                           for k in before if k not in after), (op, before, after)
            for item in after.values():  # a stream record of each row: its writer's or none
                cls = classify(home, item)[0]
                assert cls is None or cls.__name__ == _owner(item), (item, cls)


def _check_migrated(classes: list[type[Any]], before: dict[str, Any],
                    after: dict[str, Any]) -> None:
    """Every row is kept, where it was or at its owner's current key (same tag)."""
    by_tag = {i["tag"]["S"]: (k, i) for k, i in after.items()}
    assert sorted(by_tag) == sorted(i["tag"]["S"] for i in before.values()), (before, after)
    for key, item in before.items():
        moved_key, _ = by_tag[item["tag"]["S"]]
        if moved_key == key:
            continue
        owner = next(c for c in classes if c.__name__ == _owner(item))
        spec = owner.__dynaorm_spec__
        want = _layout_key(spec.pk.source, spec.sk.source if spec.sk else "",
                           {f: item[f]["S"] for f in "ac" if f in item})
        assert want is not None and json.loads(moved_key) == [
            {"S": want["PK"]}, {"S": want["SK"]}], ("moved elsewhere", item, moved_key)


def test_a_previous_literal_key_is_released_once_migrated_and_dropped(moto: None) -> None:
    """``Root`` keyed ``ADMIN#root`` (previously ``USER#root``) beside ``Account`` keyed
    ``USER#{a}``: in the window ``Account(a="root")`` is refused; after ``dynaorm
    migrate`` and ``Meta.previous`` dropped (``Root`` redefined), the key is released:
    ``Account(a="root")`` saves, reads, queries, scans as itself, and ``Root`` keeps its
    row at ``ADMIN#root``."""
    from dynaorm.jobs.migration import migrate

    home = Table("red08f-release", pk="PK", sk="SK", type_attribute=None)
    account = _entity(home, "Red08fAccount", "USER#{a}", "PROFILE", None)
    root = _entity(home, "Red08fRoot", "ADMIN#root", "PROFILE", ("USER#root", "PROFILE"))
    with use_tables(home, name_suffix=worker_suffix()):
        home.db.send("PutItem", {"TableName": home.name, "Item": {
            "PK": {"S": "USER#root"}, "SK": {"S": "PROFILE"}, "tag": {"S": "root"}}})
        with pytest.raises(DynaormError, match="literal key"), Session(home) as s:
            s.save(account(a="root", tag="acct"))
        migrate(home)
        assert Session(home).get(root).tag == "root"
        root = _entity(home, "Red08fRoot", "ADMIN#root", "PROFILE", None)  # previous dropped
        with Session(home) as s:
            s.save(account(a="root", tag="acct"))
        assert Session(home).get(account, a="root") == account(a="root", tag="acct")
        assert Session(home).query(account, a="root").all() == [account(a="root", tag="acct")]
        assert Session(home).scan(account).all() == [account(a="root", tag="acct")]
        assert Session(home).get(root).tag == "root"
        assert sorted(_rows(home)) == sorted(json.dumps(
            [{"S": pk}, {"S": "PROFILE"}]) for pk in ("ADMIN#root", "USER#root"))


@pytest.mark.parametrize("first", ["current", "previous"])
def test_a_previous_layout_no_literal_ranks_beside_anothers_keys_is_refused(
        moto: None, first: str) -> None:
    """Fixed (found by the property above): ``Plain`` keyed ``USER#root``/``{c}`` beside
    ``Moved`` keyed ``USER#admin``/``{c}`` whose previous layout was ``USER#root``/``{c}``:
    the same shapes, no literal ranking either, on a table without a type attribute. Both
    were accepted; ``dynaorm migrate`` then took ``Plain``'s row for an unmigrated
    ``Moved`` and moved it to ``USER#admin`` (``Plain``'s row gone, a ``Moved`` made of
    it), as ``get(Moved, c=...)`` read it on a miss. Now the second class defined is
    refused, as two current layouts no precedence ranks are (either order)."""
    home = Table(f"red08f-prevcur-{first}", pk="PK", sk="SK", type_attribute=None)
    shapes: list[tuple[str, str, tuple[str, str] | None]] = [
        ("USER#root", "{c}", None), ("USER#admin", "{c}", ("USER#root", "{c}"))]
    if first == "previous":
        shapes.reverse()
    _entity(home, f"Red08fPrevCur{first}0", *shapes[0])
    with pytest.raises(DynaormError, match="no precedence can tell them apart"):
        _entity(home, f"Red08fPrevCur{first}1", *shapes[1])


def test_two_previous_templates_no_literal_ranks_are_refused(moto: None) -> None:
    """Two entities whose previous layouts are the same template (``OLD#{a}``/``P``):
    an unmigrated row is either's; ``dynaorm migrate`` would move it as the first's. The
    second is refused."""
    home = Table("red08f-prevprev", pk="PK", sk="SK", type_attribute=None)
    _entity(home, "Red08fPrevPrev0", "A#{a}", "P", ("OLD#{a}", "P"))
    with pytest.raises(DynaormError, match="could match the same item"):
        _entity(home, "Red08fPrevPrev1", "B#{a}", "P", ("OLD#{a}", "P"))


def test_a_get_never_returns_an_object_of_another_key_from_a_lossy_old_layout(
        moto: None) -> None:
    """Defect (found by the property above): ``Item`` keyed ``USER#{a}``/``{c}``, whose
    previous layout ``USER#{a}``/``P#1`` has no ``c`` (one old row per ``a``). Its 0.7 row
    holds ``c="admin"``. ``get(Item, a="admin", c="root")`` missed ``USER#admin/root``,
    read the old key and returns the ``c="admin"`` object, for a key it does not have
    (and a delete by that key deleted it). Now a miss: ``None`` (``get_many`` too), a
    delete by that key finds nothing (``c="admin"`` still reads it)."""
    home = Table("red08f-lossy", pk="PK", sk="SK", type_attribute=None)
    item = _entity(home, "Red08fLossy", "USER#{a}", "{c}", ("USER#{a}", "P#1"))
    with use_tables(home, name_suffix=worker_suffix()):
        home.db.send("PutItem", {"TableName": home.name, "Item": {
            "PK": {"S": "USER#admin"}, "SK": {"S": "P#1"}, "a": {"S": "admin"},
            "c": {"S": "admin"}, "tag": {"S": "old"}}})
        held = _rows(home)
        assert Session(home).get(item, a="admin", c="root") is None
        assert Session(home).get_many(item, [{"a": "admin", "c": "root"}]) == [None]
        with pytest.raises(ItemNotFoundError, match="under either layout"), Session(home) as s:
            s.delete(item, a="admin", c="root")  # (nor is it deleted by that key)
        assert _rows(home) == held
        got = Session(home).get(item, a="admin", c="admin")
        assert got is not None and (got.a, got.c, got.tag) == ("admin", "admin", "old")


def test_a_previous_template_never_takes_a_partly_literal_row(moto: None) -> None:
    """``Moved`` keyed ``USER#{a}``/``{c}``, previously ``OLD#{a}``/``P#{c}``, beside
    ``Admin`` keyed ``OLD#admin``/``P#{c}`` (its literal pk outranks the old template).
    Admin's row ``OLD#admin``/``P#x`` is never a Moved: not to ``get`` (which reads the
    old key on a miss), not to ``delete``, not to ``dynaorm migrate``."""
    from dynaorm.jobs.migration import migrate

    home = Table("red08f-partlit", pk="PK", sk="SK", type_attribute=None)
    moved = _entity(home, "Red08fPartMoved", "USER#{a}", "{c}", ("OLD#{a}", "P#{c}"))
    admin = _entity(home, "Red08fPartAdmin", "OLD#admin", "P#{c}", None)
    with use_tables(home, name_suffix=worker_suffix()):
        with Session(home) as s:
            s.save(admin(c="x", tag="admin"))
        held = _rows(home)
        assert Session(home).get(moved, a="admin", c="x") is None
        with pytest.raises(ItemNotFoundError, match="under either layout"), Session(home) as s:
            s.delete(moved, a="admin", c="x")  # (no Moved there: none to delete)
        assert _rows(home) == held
        migrate(home)
        assert _rows(home) == held
        assert Session(home).get(admin, c="x") == admin(c="x", tag="admin")
