"""``Meta.lock``: writing beside another mapper that keeps an optimistic lock (contract
25, "Beside other writers"): DynamoDBMapper v1, the Enhanced Client and PynamoDB, as
byte-exact mimics (tests/support/other_writers.py). Their races with dynaorm are in
tests/system/test_other_writers.py."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import (
    ConcurrentModificationError,
    ConditionTooLargeError,
    DynaormError,
    Entity,
    Lock,
    Table,
)
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.engines import identify
from tests.support.other_writers import ENHANCED, MAPPER_V1, PYNAMODB, Mapper, Refused, client_for

shop = Table("other-writers", pk="pk", sk="sk", type_attribute=None)
typed = Table("other-writers-typed", pk="pk", sk="sk")  # (a versioned entity needs one)
MODELED = {"order_id": "S", "status": "S", "qty": "N", "extra": "S"}


#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "ORDER"
        lock = "version"

    order_id: str
    status: str = "NEW"
    qty: int = 0
    version: int | None = None


class Plain(Entity):
    """The same items, mapped without their lock (as inferred before 0.10)."""

    class Meta:
        table = shop
        pk = "PLAIN#{order_id}"
        sk = "ORDER"

    order_id: str
    status: str = "NEW"
    qty: int = 0
    version: int | None = None


@pytest.fixture
def db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(shop, typed, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        if str(request.node.callspec.params.get("backend", "")).endswith("-async"):
            tb.session_kind = "async"
        yield tb


def other(style: Mapper, db: TestBackend) -> Mapper:
    url = db.endpoint_url
    if style.style == "v1" and (url is None or identify(url) != "local"):
        pytest.skip("moto ignores the legacy Expected {Value, Exists} a v1 save sends")
    return style.bound(client_for(url), shop.name, MODELED)


def theirs(m: Mapper, order_id: str = "o1", prefix: str = "ORDER#", **attrs: Any
           ) -> dict[str, Any]:
    """A new order saved by the other writer (version 1)."""
    doc = {"pk": f"{prefix}{order_id}", "sk": "ORDER", "order_id": order_id, "status": "NEW",
           "qty": 0, "extra": "kept", "version": None, **attrs}
    m.save(doc)
    return doc


STYLES = pytest.mark.parametrize("style", [MAPPER_V1, ENHANCED, PYNAMODB],
                                 ids=lambda m: m.style)


@STYLES
def test_a_save_moves_the_lock_and_a_stale_save_of_theirs_is_refused(
        db: TestBackend, style: Mapper) -> None:
    m = other(style, db)
    doc = theirs(m)
    stale = m.load(doc)
    s = db.session()
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None and o.version == 1
    o.qty = 5
    s.save(o)
    s.commit()
    assert o.version == 2
    assert stale is not None
    stale["status"] = "PAID"
    with pytest.raises(Refused):  # (loaded at 1: dynaorm's save moved it to 2)
        m.save(stale)
    back = m.load(doc)
    assert back is not None and back["qty"] == 5 and back["version"] == 2
    assert back["extra"] == "kept" or style.style != "v2"
    m.save(back)  # (loaded now: theirs goes through, and moves it to 3)
    assert m.load(doc)["version"] == 3  # type: ignore[index]


@STYLES
def test_a_stale_save_of_ours_is_refused(db: TestBackend, style: Mapper) -> None:
    m = other(style, db)
    doc = theirs(m)
    s = db.session()
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None
    m.save(doc)  # (theirs: version 2, after our load)
    o.status = "SHIPPED"
    s.save(o)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    s.rollback()
    assert m.load(doc)["status"] == "NEW"  # type: ignore[index]


def test_a_new_object_starts_the_lock_as_they_do_and_nothing_moves_it_idly(
        db: TestBackend) -> None:
    s = db.session()
    o = Order(order_id="o2")
    s.save(o)
    s.commit()
    assert o.version == 1
    s.save(o)  # (nothing changed: nothing sent, the lock stays)
    s.commit()
    m = other(MAPPER_V1, db)
    doc = m.load({"pk": "ORDER#o2", "sk": "ORDER"})
    assert doc is not None and doc["version"] == 1
    m.save(doc)
    assert m.load(doc)["version"] == 2  # type: ignore[index]


def test_an_update_of_a_loaded_object_conditions_on_the_lock_and_moves_it(
        db: TestBackend) -> None:
    m = other(PYNAMODB, db)
    doc = theirs(m)
    s = db.session()
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None
    s.update(o).add(qty=2)
    s.commit()
    assert m.load(doc)["version"] == 2  # type: ignore[index]
    s.update(o).add(qty=2)  # (o was loaded at 1: stale now)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    s.rollback()
    s.update(Order, order_id="o1").add(qty=1)  # (by key: read, then conditioned)
    s.commit()
    back = m.load(doc)
    assert back is not None and back["qty"] == 3 and back["version"] == 3


@STYLES
def test_a_delete_of_a_loaded_object_conditions_on_the_lock(db: TestBackend,
                                                            style: Mapper) -> None:
    m = other(style, db)
    doc = theirs(m)
    s = db.session()
    o = s.get(Order, order_id="o1", consistent=True)
    o2 = s.get(Order, order_id="o1", consistent=True)
    assert o is not None and o2 is not None
    o2.qty = 1
    s.save(o2)  # (ours: the row holds a revision now)
    s.commit()
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None
    fresh = m.load(doc)
    assert fresh is not None
    m.update(fresh, status="PAID") if style.style != "v1" else m.save(
        {**fresh, "status": "PAID"})  # (in place: our revision stays)
    s.delete(o)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    s.rollback()
    with pytest.raises(DynaormError):
        s.delete_many([o])
    assert m.load(doc)["status"] == "PAID"  # type: ignore[index]


def test_a_delete_of_a_foreign_row_without_a_lock_conditions_on_what_was_loaded(
        db: TestBackend) -> None:
    """(issue 89) ``s.delete(obj)`` of a row no dynaorm revision stamped was conditioned
    only on that revision's absence: it deleted an order another writer changed after
    the load, which ``delete_many([obj])`` refused."""
    m = other(PYNAMODB, db)
    doc = theirs(m, prefix="PLAIN#")
    s = db.session()
    p = s.get(Plain, order_id="o1", consistent=True)
    assert p is not None
    loaded = m.load(doc)
    assert loaded is not None
    m.update(loaded, status="PAID")
    s.delete(p)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    s.rollback()
    with pytest.raises(DynaormError):
        s.delete_many([p])
    assert m.load(doc)["status"] == "PAID"  # type: ignore[index]
    p = s.get(Plain, order_id="o1", consistent=True)
    assert p is not None
    s.delete(p)  # (as loaded now: deleted)
    s.commit()
    assert m.load(doc) is None


def test_the_enhanced_clients_start_and_step(db: TestBackend) -> None:
    class Stepped(Entity):
        class Meta:
            table = shop
            pk = "STEP#{order_id}"
            sk = "ORDER"
            lock = Lock.enhanced("rev", start_at=5, increment_by=10)

        order_id: str
        note: str = ""
        rev: int | None = None

    s = db.session()
    o = Stepped(order_id="s1")
    s.save(o)
    s.commit()
    assert o.rev == 15
    o.note = "x"
    s.save(o)
    s.commit()
    assert o.rev == 25
    assert db.scan_raw()[0]["rev"] == {"N": "25"}


def _define(given: Any, typed: bool = True) -> None:
    class Bad(Entity):
        class Meta:
            table = shop
            pk = "B#{order_id}"
            sk = "B"
            lock = given

        order_id: str
        version: int | None = None

    class Text(Entity):
        class Meta:
            table = shop
            pk = "T#{order_id}"
            sk = "T"
            lock = "version" if not typed else None

        order_id: str
        version: str | None = None


@pytest.mark.engines("moto")
@pytest.mark.parametrize(("given", "typed", "match"), [
    ("missing", True, "plain field"),
    ("version", False, "plain field"),
    ("order_id", True, "key"),
    (Lock("version", step=0), True, "step"),
    (7, True, "field name"),
])
def test_a_lock_that_cannot_hold_is_refused_when_the_class_is_defined(
        backend: str | None, given: Any, typed: bool, match: str) -> None:
    with pytest.raises(DynaormError, match=match):
        _define(given if typed else None, typed)


@pytest.mark.engines("moto")
def test_a_lock_on_a_versioned_entitys_version_is_refused(backend: str | None) -> None:
    with pytest.raises(DynaormError, match="dynaorm's own"):
        class Both(Entity):
            class Meta:
                table = shop
                pk = "B#{order_id}"
                sk = "B"
                versioned = True
                lock = "version"

            order_id: str


class Wide(Entity):
    """An order of another writer's with many attributes no class here declares."""

    class Meta:
        table = shop
        pk = "WIDE#{order_id}"
        sk = "{part}"
        lock = "version"

    order_id: str
    part: str = "ORDER"
    status: str = "NEW"
    version: int | None = None


class WideUnlocked(Entity):
    class Meta:
        table = shop
        pk = "WIDE-UNLOCKED#{order_id}"
        sk = "{part}"

    order_id: str
    part: str = "ORDER"
    status: str = "NEW"
    version: int | None = None


@pytest.mark.engines("local")  # (moto enforces neither limit: DynamoDB Local does)
@pytest.mark.parametrize("cls", [Wide, WideUnlocked], ids=["locked", "unlocked"])
def test_a_wide_item_of_theirs_saves_with_its_lock_and_is_refused_before_sending_without(
        db: TestBackend, cls: type[Any]) -> None:
    """(issue 89) A save back to a new key and a delete of another writer's item with
    ~205 undeclared attributes: conditioned whole without its lock, over DynamoDB's
    limits (DynamoDB Local refused it with a ValidationException): a typed error before
    sending, naming the way out; with the lock, the lock proves it."""
    pk = "WIDE#w1" if cls is Wide else "WIDE-UNLOCKED#w1"
    m = other(PYNAMODB, db)
    wide = {"pk": pk, "sk": "ORDER", "order_id": "w1", "status": "NEW", "qty": None,
            "extra": None, "version": None}
    m.save(wide)
    client_for(db.endpoint_url).update_item(
        TableName=shop.name, Key={"pk": {"S": pk}, "sk": {"S": "ORDER"}},
        UpdateExpression="SET " + ", ".join(f"#a{i} = :v{i}" for i in range(205)),
        ExpressionAttributeNames={f"#a{i}": f"attribute_{i:03d}" for i in range(205)},
        ExpressionAttributeValues={f":v{i}": {"S": f"value {i}"} for i in range(205)})
    s = db.session()
    o = s.get(cls, order_id="w1", part="ORDER", consistent=True)
    assert o is not None
    o.part = "MOVED"
    s.save(o)
    if cls is WideUnlocked:
        with pytest.raises(ConditionTooLargeError, match=r"Meta\.lock"):
            s.commit()
        s.rollback()
        s.delete(o)
        with pytest.raises(ConditionTooLargeError, match=r"a delete's the whole item"):
            s.commit()
        assert len(db.scan_raw()) == 1
        return
    s.commit()
    moved = m.load({"pk": "WIDE#w1", "sk": "MOVED"})
    assert moved is not None and moved["version"] == 2
    raw = db.scan_raw()
    assert len(raw) == 1 and raw[0]["attribute_204"] == {"S": "value 204"}
    s.delete(o)
    s.commit()
    assert db.scan_raw() == []


def test_an_overwrite_moves_the_lock_without_its_condition(db: TestBackend) -> None:
    m = other(ENHANCED, db)
    doc = theirs(m)
    s = db.session()
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None
    m.save(doc)  # (theirs: 2, after our load)
    o.status = "MINE"
    s.save(o, overwrite=True)  # (the last writer wins, the lock moved from what is stored)
    s.commit()
    back = m.load(doc)
    assert back is not None and back["status"] == "MINE" and back["version"] == 3
    assert o.version == 3
    with pytest.raises(Refused):  # (their copy, at 2, is stale)
        m.save(doc)


def test_a_versioned_entity_keeps_another_writers_lock_beside_its_version(
        db: TestBackend) -> None:
    class Doc(Entity):
        class Meta:
            table = typed
            pk = "DOC#{doc_id}"
            sk = "DOC"
            versioned = True
            lock = "rev"

        doc_id: str
        body: str = ""
        rev: int | None = None

    s = db.session()
    d = Doc(doc_id="d1")
    s.save(d)
    s.commit()
    loaded = s.get(Doc, doc_id="d1", consistent=True)
    assert loaded is not None and loaded.rev == 1
    loaded.body = "two"
    s.save(loaded)
    s.commit()
    assert loaded.rev == 2 and loaded.version == 2
    d.body = "stale"  # (d: saved at version 1, rev 1)
    s.save(d)
    with pytest.raises(ConcurrentModificationError):
        s.commit()


# -- red team of issue 89 ----------------------------------------------------------------------
@pytest.mark.sync_only
@pytest.mark.engines("moto")
@pytest.mark.parametrize("fault", ["lose", "lose500"])
@pytest.mark.parametrize("style", [ENHANCED, PYNAMODB], ids=lambda m: m.style)
def test_a_save_whose_answer_is_lost_while_they_save_is_never_reported_untrue(
        db: TestBackend, style: Mapper, fault: str) -> None:
    """Our save is applied (the lock moved 1 -> 2) and its answer lost; inside that window
    the other writer loads and saves (2 -> 3, the whole item put back without our
    revision). Their change stays; we are told success only when it is proved, else that
    the outcome is unknown, never a conflict (the write was applied); either way our
    object never writes again over theirs."""
    from dynaorm import OutcomeUnknownError
    from dynaorm.testing import inject_faults
    from tests.support.fault_kinds import arm

    m = other(style, db)
    doc = theirs(m)
    s = db.session()
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None
    o.qty = 5
    s.save(o)

    def they_save() -> None:
        fresh = m.load(doc)
        assert fresh is not None and fresh["qty"] == 5 and fresh["version"] == 2
        m.save({**fresh, "status": "PAID"})

    error: BaseException | None = None
    with inject_faults(shop) as faults:
        arm(faults, ["UpdateItem", "PutItem", "TransactWriteItems"], fault, after=they_save)
        try:
            s.commit()
        except DynaormError as exc:
            error = exc
    assert error is None or isinstance(error, OutcomeUnknownError), error
    back = m.load(doc)
    assert back is not None and (back["status"], back["qty"], back["version"]) == (
        "PAID", 5, 3)
    s.rollback()
    o.status = "MINE"
    s.save(o)  # (stale: loaded at 1, theirs at 3)
    with pytest.raises(DynaormError):
        s.commit()
    assert m.load(doc)["status"] == "PAID"  # type: ignore[index]


@STYLES
def test_save_many_and_delete_many_keep_their_lock(db: TestBackend, style: Mapper) -> None:
    """The bulk paths: ``save_many`` of a loaded object moves the lock (their stale copy
    refused after it), and a stale ``save_many`` / ``delete_many`` of ours is refused,
    their change kept."""
    m = other(style, db)
    doc = theirs(m)
    stale = m.load(doc)
    s = db.session()
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None and stale is not None
    o.qty = 7
    s.save_many([o])
    assert o.version == 2 and m.load(doc)["version"] == 2  # type: ignore[index]
    with pytest.raises(Refused):
        m.save({**stale, "status": "LOST"})
    o2 = s.get(Order, order_id="o1", consistent=True)
    assert o2 is not None
    fresh = m.load(doc)
    assert fresh is not None
    m.save({**fresh, "status": "PAID"})  # (theirs: 3, after both of our loads)
    o2.qty = 9
    with pytest.raises(DynaormError):
        s.save_many([o2])
    with pytest.raises(DynaormError):
        s.delete_many([o2])
    back = m.load(doc)
    assert back is not None and (back["status"], back["qty"], back["version"]) == (
        "PAID", 7, 3)


def test_a_lock_stored_as_a_string_is_never_moved_back(db: TestBackend) -> None:
    """An item whose lock another tool stored as a string (``{"S": "3"}``): a save must
    not write it back as the first value (1), under which a copy of theirs loaded at 1
    would pass its check; it moves it on from 3, or refuses."""
    shop.client.put_item(TableName=shop.name, Item={
        "pk": {"S": "ORDER#s1"}, "sk": {"S": "ORDER"}, "order_id": {"S": "s1"},
        "status": {"S": "NEW"}, "qty": {"N": "0"}, "version": {"S": "3"}})
    s = db.session()
    o = s.get(Order, order_id="s1", consistent=True)
    assert o is not None and o.version == 3
    o.qty = 1
    s.save(o)
    try:
        s.commit()
    except DynaormError:
        return  # (refused: the lock as stored is none the rule knows)
    stored = shop.client.get_item(TableName=shop.name, Key={
        "pk": {"S": "ORDER#s1"}, "sk": {"S": "ORDER"}}, ConsistentRead=True)["Item"]
    assert int(next(iter(stored["version"].values()))) > 3 and o.version is not None and (
        o.version > 3), stored["version"]


def test_a_lock_absent_from_an_item_written_before_it_was_declared_starts_it(
        db: TestBackend) -> None:
    """An item stored without the lock (written before the entity declared it): a save
    of it starts the lock at its first value, conditioned on its absence; a second
    object loaded before that save is refused."""
    shop.client.put_item(TableName=shop.name, Item={
        "pk": {"S": "ORDER#n1"}, "sk": {"S": "ORDER"}, "order_id": {"S": "n1"},
        "status": {"S": "NEW"}, "qty": {"N": "0"}})
    s = db.session()
    a = s.get(Order, order_id="n1", consistent=True)
    b = s.get(Order, order_id="n1", consistent=True)
    assert a is not None and b is not None and a.version is None
    a.qty = 1
    s.save(a)
    s.commit()
    assert a.version == 1
    b.status = "LATE"
    s.save(b)
    with pytest.raises(ConcurrentModificationError):
        s.commit()


def test_an_overwrite_of_a_new_object_never_moves_their_lock_back(db: TestBackend) -> None:
    """A new object (never loaded) saved with ``overwrite=True`` over their item at 3:
    the lock moves on from what is stored (4), never back to its first value, under
    which a copy of theirs loaded at 1 would pass its check again (ABA)."""
    m = other(PYNAMODB, db)
    doc = theirs(m)
    old = m.load(doc)  # (theirs at 1)
    for _ in range(2):
        m.save(m.load(doc))  # type: ignore[arg-type]
    assert m.load(doc)["version"] == 3  # type: ignore[index]
    s = db.session()
    s.save(Order(order_id="o1", status="MINE"), overwrite=True)
    s.commit()
    assert old is not None
    with pytest.raises(Refused):  # (loaded at 1, two saves and an overwrite ago)
        m.save({**old, "status": "ANCIENT"})
    assert m.load(doc)["version"] == 4  # type: ignore[index]


@pytest.mark.parametrize("how", ["in place", "rebuilt"])
def test_a_backfill_moves_their_lock_and_keeps_what_it_did_not_change(
        db: TestBackend, how: str) -> None:
    """A backfill job over their orders, its function changing the loaded object or
    returning a new one built from it (its lock field left None): the lock moves by one
    from what was loaded, their undeclared attribute stays, their copy loaded before the
    job is refused."""
    from dynaorm.jobs import backfill, run_local

    m = other(PYNAMODB, db)
    doc = theirs(m)
    m.save(m.load(doc))  # type: ignore[arg-type]
    stale = m.load(doc)

    def paid(o: Order) -> Order:
        if how == "rebuilt":
            return Order(order_id=o.order_id, status="PAID", qty=o.qty)
        o.status = "PAID"
        return o

    report = run_local(backfill(Order, paid, name=f"pay-{how.replace(' ', '-')}"))
    assert report.changed == 1 and report.failed == []
    back = m.load(doc)
    assert back is not None and (back["status"], back["version"], back["extra"]) == (
        "PAID", 3, "kept")
    assert stale is not None
    with pytest.raises(Refused):
        m.save({**stale, "status": "LOST"})


def test_a_failed_commit_leaves_the_lock_as_loaded_and_a_retry_moves_it_once(
        db: TestBackend) -> None:
    """A save of a loaded order in a commit that fails on another of its actions (an
    insert over an existing order): nothing written, the object's lock still as loaded;
    the same object saved again moves it once, from the value loaded."""
    m = other(ENHANCED, db)
    doc = theirs(m)
    theirs(m, order_id="o2")
    s = db.session()
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None
    o.qty = 3
    s.save(o)
    s.save(Order(order_id="o2"))
    with pytest.raises(DynaormError):
        s.commit()
    s.rollback()
    assert o.version == 1 and m.load(doc)["version"] == 1  # type: ignore[index]
    s.save(o)
    s.commit()
    back = m.load(doc)
    assert o.version == 2 and back is not None and (back["qty"], back["version"]) == (3, 2)


def test_a_key_move_of_a_loaded_order_is_conditioned_on_their_lock(db: TestBackend) -> None:
    """A loaded order whose key field changes (its row deleted, a new one put): when they
    saved the order after our load, the move is refused and their row stays; moved as
    loaded, the new row carries the lock moved by one."""
    m = other(PYNAMODB, db)
    doc = theirs(m)
    s = db.session()
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None
    m.save({**m.load(doc), "status": "PAID"})  # type: ignore[dict-item]
    o.order_id = "o9"
    s.save(o)
    with pytest.raises(DynaormError):
        s.commit()
    s.rollback()
    assert m.load(doc)["status"] == "PAID"  # type: ignore[index]
    assert m.load({**doc, "pk": "ORDER#o9"}) is None
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None
    o.order_id = "o9"
    s.save(o)
    s.commit()
    moved = m.load({**doc, "pk": "ORDER#o9"})
    assert m.load(doc) is None and moved is not None and moved["version"] == 3


@pytest.mark.parametrize("by", ["object", "key"])
def test_an_update_setting_the_lock_itself_is_refused_or_moves_it_once(
        db: TestBackend, by: str) -> None:
    """An update that sets the lock field by hand (``.set(version=7)``): never a raw
    engine error (two paths over one attribute) and never a lock put anywhere but one
    step on from what was loaded: a typed error before sending, or the lock moved once."""
    m = other(PYNAMODB, db)
    doc = theirs(m)
    s = db.session()
    o = s.get(Order, order_id="o1", consistent=True)
    assert o is not None
    (s.update(o) if by == "object" else s.update(Order, order_id="o1")).set(version=7)
    try:
        s.commit()
    except DynaormError as exc:
        assert "version" in str(exc) or "lock" in str(exc), exc
        assert m.load(doc)["version"] == 1  # type: ignore[index]
        return
    assert m.load(doc)["version"] == 2  # type: ignore[index]


def test_their_change_in_place_to_a_row_we_stamped_is_never_overwritten_without_a_lock(
        db: TestBackend) -> None:
    """A row holding our revision that they update in place (their update keeps the
    attributes it does not model, our revision with them): a stale save of ours that
    writes the attribute they changed is refused, even with no lock declared."""
    m = other(PYNAMODB, db)
    doc = theirs(m, prefix="PLAIN#")
    s = db.session()
    p = s.get(Plain, order_id="o1", consistent=True)
    assert p is not None
    p.qty = 1
    s.save(p)  # (ours: the row holds our revision now)
    s.commit()
    p = s.get(Plain, order_id="o1", consistent=True)
    assert p is not None
    m.update(m.load(doc), status="PAID")  # type: ignore[arg-type]
    assert "_rev" in db.scan_raw()[0]
    p.status = "MINE"
    s.save(p)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert m.load(doc)["status"] == "PAID"  # type: ignore[index]


def test_their_change_in_place_to_a_row_we_stamped_is_never_deleted_without_a_lock(
        db: TestBackend) -> None:
    m = other(PYNAMODB, db)
    doc = theirs(m, prefix="PLAIN#")
    s = db.session()
    p = s.get(Plain, order_id="o1", consistent=True)
    assert p is not None
    p.qty = 1
    s.save(p)
    s.commit()
    p = s.get(Plain, order_id="o1", consistent=True)
    assert p is not None
    m.update(m.load(doc), status="PAID")  # type: ignore[arg-type]
    s.delete(p)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert m.load(doc) is not None


def test_an_upsert_starts_their_lock_on_a_new_item_and_moves_it_on_a_stored_one(
        db: TestBackend) -> None:
    """``s.update(Order, upsert=True)``: a missing order is created with the lock's first
    value (1, as they start it); an existing one of theirs has it moved by one."""
    m = other(ENHANCED, db)
    s = db.session()
    s.update(Order, order_id="u1", upsert=True).set(status="NEW")
    s.commit()
    assert m.load({"pk": "ORDER#u1", "sk": "ORDER"})["version"] == 1  # type: ignore[index]
    doc = theirs(m, order_id="u2")
    s.update(Order, order_id="u2", upsert=True).set(status="PAID")
    s.commit()
    back = m.load(doc)
    assert back is not None and (back["status"], back["version"]) == ("PAID", 2)
