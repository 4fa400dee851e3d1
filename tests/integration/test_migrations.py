"""Migrations (contract 18): ``Meta.previous`` declared and refused, reads finding an entity
under its old layout, writes moving it (guards and version rows with it), a writer racing
a move, and ``dynaorm.jobs.migration`` on every engine. The live run beside threads is in
``system/test_migrate_live.py``."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import dynaorm
from dynaorm import (
    AsyncSession,
    Client,
    ConditionFailedError,
    ConflictError,
    DynaormError,
    Encrypted,
    Entity,
    F,
    IdempotencyMismatchError,
    KeyTemplateError,
    OutcomeUnknownError,
    Previous,
    ScopeError,
    Session,
    Shards,
    StaticKeyring,
    Table,
    TransactionTooLargeError,
    Unique,
    UniqueConstraintError,
    Versioned,
)
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.jobs import ReencryptReport, reencrypt, run_local
from dynaorm.jobs.migration import migrate
from dynaorm.protocol.steps import call
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules.previous import MovedState, history_batches
from dynaorm.schema.rules.receipts import RECEIPT_TYPE
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from dynaorm.write.conditions import WRITING
from dynaorm.write.render import WritePlan
from dynaorm.write.save import SaveEntry, plan_save
from tests.conftest import session_kind, wire_of
from tests.support.examples import examples
from tests.support.migration_models import (
    Account,
    Badge,
    Ledger,
    OldAccount,
    OldBadge,
    OldLedger,
    OldPass,
    Pass,
    mig,
    mig_ttl,
    old,
    old_ttl,
)


class OldNote(Entity):
    """``Note`` before the change: ``MEMO#{id}``, type ``memo``, text stored as ``body``."""

    class Meta:
        table = old
        pk = "MEMO#{id}"
        sk = "NOTE"
        type_name = "memo"

    id: str
    body: str = ""


class Note(Entity):
    """A plain entity (no unique or versioned rules) whose key, type and a name changed."""

    class Meta:
        table = mig
        pk = "NOTE#{id}"
        sk = "NOTE"
        type_name = "note"
        previous = Previous(pk="MEMO#{id}", type_name="memo", stored_names={"text": "body"})

    id: str
    text: str = ""


def _both_designs(current: Table, previous: Table, backend: str | None,
                  request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    wire = wire_of(request)
    with use_tables(current, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire) as tb:
        if session_kind(request) == "async":
            tb.session_kind = "async"
        # the previous design's table is the same table, pointed where ``current`` is,
        # over the same wire, on a client of its own (the previous release ran in another
        # process: one client's Table objects of one table share one type-name registry,
        # where the two designs' classes would claim each other's names), put back after
        saved = (previous.name, previous.binding())
        previous.name = current.name
        previous.restore((None, {}, Client(current.endpoint_url, wire=wire or "dynaorm")))
        try:
            yield tb
        finally:
            previous.name = saved[0]
            previous.restore(saved[1])


@pytest.fixture
def db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    yield from _both_designs(mig, old, backend, request)


def _old_data() -> None:
    """Items written by the previous design: an account and a ledger with 2 versions."""
    s = Session(old)
    s.save(OldAccount(id="a1", mail="Ann@X.io", name="Ann"))
    ledger = OldLedger(id="l1", code="C1")
    s.save(ledger)
    s.commit()
    ledger.balance = 5
    s.save(ledger)
    s.commit()


def _keys(db: TestBackend) -> set[tuple[str, str]]:
    return {(i["pk"], i["sk"]) for i in db.scan()}


def _by_key(db: TestBackend) -> dict[tuple[str, str], dict[str, Any]]:
    return {(i["pk"], i["sk"]): i for i in _unstamped(db)}


def _unstamped(db: TestBackend) -> list[dict[str, Any]]:
    """The stored items without the revision a 0.5 write stamps on a row (a move, a save)."""
    items = db.scan()
    for i in items:
        assert len(i.pop("_rev", "0" * 16)) == 16
    return items


OLD_KEYS = {("USER#a1", "PROFILE"), ("email#ann@x.io", "email#ann@x.io"),
            ("BOOK#l1", "v0_LEDGER"), ("BOOK#l1", "v00000001_LEDGER"),
            ("BOOK#l1", "v00000002_LEDGER"), ("code#C1", "code#C1")}
NEW_KEYS = {("ACCOUNT#a1", "PROFILE"), ("email#ann@x.io", "email#ann@x.io"),
            ("LEDGER#l1", "v0_LEDGER"), ("LEDGER#l1", "v00000001_LEDGER"),
            ("LEDGER#l1", "v00000002_LEDGER"), ("code#C1", "code#C1")}


# -- declaration ---------------------------------------------------------------------------
def _define(previous: Any, table: Table | None = None, **meta: Any) -> type[Entity]:
    t = table or Table("dynaorm-migrations-defs")
    options = {"pk": "ACCOUNT#{id}", "sk": "PROFILE", "shards": None, **meta}
    previous_ = previous

    class Defined(Entity):
        class Meta:
            table = t
            pk = options["pk"]
            sk = options["sk"]
            shards = options["shards"]
            previous = previous_

        id: str
        email: str

    return Defined


@pytest.mark.parametrize(("previous", "message"), [
    ({"pk": "USER#{id}"}, "must be dynaorm.Previous"),
    (Previous(), "identical to the current layout"),
    (Previous(pk="ACCOUNT#{id}", sk="PROFILE"), "identical to the current layout"),
    (Previous(pk="USER#{nope}"), "names field 'nope'"),
    (Previous(pk="USER#{email}"), "not a field of the current key"),
    (Previous(stored_names={"nope": "x"}), "unknown field 'nope'"),
    (Previous(pk="USER#{id}", stored_names={"email": "pk"}), "other than the table's keys"),
    (Previous(pk="USER#{id}", stored_names={"email": "id"}), "two fields under one name"),
    (Previous(stored_names={"email": "mail"}), "only stored names changed"),
])
def test_previous_declaration_errors(previous: Any, message: str) -> None:
    with pytest.raises(DynaormError, match=message):
        _define(previous)


def test_previous_errors_for_tables_and_sharding() -> None:
    no_sk = Table("dynaorm-migrations-nosk", sk=None)
    with pytest.raises(DynaormError, match="has no sort key"):
        _define(Previous(sk="X"), no_sk, sk=None)
    untyped = Table("dynaorm-migrations-untyped", type_attribute=None)
    with pytest.raises(DynaormError, match="stores no type attribute"):
        _define(Previous(type_name="old"), untyped)
    with pytest.raises(DynaormError, match="sharded entity"):
        _define(Previous(pk="USER#{id}#{shard}"), pk="ACCOUNT#{id}#{shard}",
                shards={"primary": Shards(4)})
    with pytest.raises(KeyTemplateError, match="names field"):
        _define(Previous(sk="OLD#{missing}"))


@pytest.mark.parametrize("retiring_first", [True, False])
def test_a_retired_type_name_belongs_to_the_class_that_declares_it(
        retiring_first: bool) -> None:
    """(0.4) ``Previous(type_name="user")`` did not reserve ``"user"``: a new class took
    it, ``get(Account)`` returned that class's items and ``migrate`` converted them.
    Whichever class is defined first, the second is a definition error."""
    t = Table(f"dynaorm-migrations-names-{retiring_first}")

    def retiring() -> None:
        class Retiring(Entity):
            class Meta:
                table = t
                pk = "ACCOUNT#{id}"
                sk = "PROFILE"
                type_name = "account"
                previous = Previous(type_name="user")

            id: str

        spec_of(Retiring)

    def squatter() -> None:
        class Squatter(Entity):
            class Meta:
                table = t
                pk = "USER#{id}"
                sk = "PROFILE"
                type_name = "user"

            id: str

        spec_of(Squatter)

    first, second = (retiring, squatter) if retiring_first else (squatter, retiring)
    first()
    with pytest.raises(DynaormError, match="type name 'user' is taken by .*"
                       + ("Retiring" if retiring_first else "Squatter")):
        second()


def test_too_much_history_to_move_atomically() -> None:
    obj = Ledger(id="l9", code="C9", version=49)
    row = {"pk": {"S": "BOOK#l9"}, "sk": {"S": "v0_LEDGER"}, "_type": {"S": "Ledger"},
           "id": {"S": "l9"}, "code": {"S": "C9"}, "version": {"N": "49"}}
    history = tuple({**row, "sk": {"S": f"v{n:08d}_LEDGER"}, "version": {"N": str(n)}}
                    for n in range(1, 50))
    state = MovedState({"pk": "BOOK#l9", "sk": "v0_LEDGER"}, row, 49, history)
    with pytest.raises(TransactionTooLargeError, match="49 version rows takes 102 actions"):
        plan_save(SaveEntry(obj), state, 0)


def _old_history(versions: int) -> None:
    """Ledger ``long`` in the old layout with ``versions`` versions."""
    o = Session(old)
    ledger = OldLedger(id="long", code="LONG")
    for n in range(versions):
        ledger.balance = n
        o.save(ledger)
        o.commit()


@pytest.mark.sync_only
def test_long_history_moves_in_batches_by_migrate(db: TestBackend) -> None:
    _old_history(60)
    s = db.session()
    got = s.get(Ledger, id="long")
    assert got is not None and got.version == 60
    s.save(got)
    with pytest.raises(TransactionTooLargeError, match="run `dynaorm migrate`"):
        s.commit()
    report = migrate(mig)
    assert report.moved == {"Ledger": 1} and report.ok, report
    keys = _keys(db)
    assert not [k for k in keys if k[0].startswith("BOOK#")]
    assert len([k for k in keys if k[0] == "LEDGER#long"]) == 61
    assert [v.balance for v in s.history(Ledger, id="long").all()] == list(range(60))


@pytest.mark.sync_only
def test_delete_with_history_between_two_history_batches_leaves_nothing(
        db: TestBackend) -> None:
    """(0.4) migrate moved a first batch of 24 version rows ahead of the entity; a delete
    with ``history=True`` read the rest under the old key and deleted versions 1..n there
    only: the 24 moved rows stayed under the current key."""
    _old_history(30)
    s = db.session()
    got = s.get(Ledger, id="long")
    assert got is not None and isinstance(got._dynaorm_state, MovedState)
    first, *_ = history_batches(spec_of(Ledger), got._dynaorm_state, WRITING)
    request = WritePlan(tuple(first)).transaction_request("batch-one-of-two-0000000000")
    db.table.db.driver.run(call("TransactWriteItems", request))
    assert len([k for k in _keys(db) if k[0] == "LEDGER#long"]) == 24
    again = s.get(Ledger, id="long")
    assert again is not None
    s.delete(again, history=True)
    s.commit()
    assert [k for k in _keys(db) if "long" in k[0] or k[0] == "code#LONG"] == []


def test_a_new_object_at_the_current_key_of_an_old_row_is_refused(db: TestBackend
                                                                   ) -> None:
    """(0.4) saving a new ``Account(id="a1")`` while ``a1`` was still stored in the old
    layout succeeded: the old row and its guards stayed for good (the value could never
    be claimed again) and migrate said ok."""
    _old_data()
    s = db.session()
    s.save(Account(id="a1", email="other@x.io"))
    with pytest.raises(dynaorm.ItemExistsError):
        s.commit()
    assert _keys(db) == OLD_KEYS
    report = migrate(mig)
    assert report.ok, report
    assert _keys(db) == NEW_KEYS


# -- a new object beside a lossy old row (an old layout with fewer key fields) ----------

lossy = Table("mig_lossy")


class Line(Entity):
    """The old layout kept one row per ``id`` (``USER#{id}``/``PROFILE``, type ``LineV1``);
    the current one a row per ``item``: the old row is the entity of the ``item`` it
    holds, no other."""

    class Meta:
        table = lossy
        pk = "USER#{id}"
        sk = "{item}"
        previous = Previous(sk="PROFILE", type_name="LineV1")

    id: str
    item: str
    body: str = ""


@pytest.fixture
def moto_lossy() -> Iterator[None]:
    from dynaorm.testing import moto_backend

    with moto_backend(), use_tables(lossy, name_suffix=worker_suffix()):
        yield


def _plant_line(item: str) -> None:
    lossy.db.driver.run(call("PutItem", {"TableName": lossy.name, "Item": {
        "pk": {"S": "USER#x"}, "sk": {"S": "PROFILE"}, "_type": {"S": "LineV1"},
        "id": {"S": "x"}, "item": {"S": item}, "body": {"S": "old"}}}))


@pytest.mark.sync_only
@pytest.mark.engines("moto")
def test_a_new_object_beside_a_lossy_old_row_of_another_entity_saves(
        moto_lossy: None) -> None:
    """A new ``Line(id="x", item="y")`` beside the old row of item ``z``: that row is not
    the entity (``get`` says none), so the insert's check at the old key lets it pass (it
    was ItemExistsError, whose advice found nothing to get)."""
    _plant_line("z")
    s = Session(lossy)
    assert s.get(Line, id="x", item="y") is None
    s.save(Line(id="x", item="y", body="new"))
    s.commit()
    rows = lossy.db.driver.run(call("Scan", {"TableName": lossy.name}))["Items"]
    assert sorted(r["sk"]["S"] for r in rows) == ["PROFILE", "y"], rows


@pytest.mark.sync_only
@pytest.mark.engines("moto")
def test_following_the_advice_of_item_exists_leaves_the_entity_once(
        moto_lossy: None) -> None:
    _plant_line("y")
    s = Session(lossy)
    s.save(Line(id="x", item="y", body="new"))
    with pytest.raises(dynaorm.ItemExistsError, match="previous") as caught:
        s.commit()
    assert "PROFILE" in str(caught.value) and "get it and save it" in str(caught.value)
    s = Session(lossy)  # (the advice: the entity read in its old layout, changed, saved)
    found = s.get(Line, id="x", item="y")
    assert found is not None
    found.body = "new"
    s.save(found)
    s.commit()
    rows = lossy.db.driver.run(call("Scan", {"TableName": lossy.name}))["Items"]
    assert [r["sk"]["S"] for r in rows] == ["y"], rows  # (the entity once)


def test_migrate_moves_the_kept_history_of_a_deleted_entity(db: TestBackend) -> None:
    """(0.4) a versioned entity deleted without ``history=True`` keeps its version rows;
    in the old layout they stayed there after migrate said ok: ``history()`` was empty."""
    _old_data()
    with Session(old) as o:
        o.delete(OldLedger, id="l1")  # its history kept
    report = migrate(mig)
    assert report.ok, report
    assert report.moved == {"Account": 1, "Ledger (kept history)": 2}
    assert not [k for k in _keys(db) if k[0].startswith("BOOK#")]
    s = db.session()
    assert [v.balance for v in s.history(Ledger, id="l1").all()] == [0, 5]


def test_a_new_versioned_object_continues_history_kept_in_the_old_layout(
        db: TestBackend) -> None:
    """(0.4) a new object saved during the window at the key of an entity deleted in the
    old layout (its history kept) restarted at version 1; migrate then could not move the
    kept rows."""
    _old_data()
    with Session(old) as o:
        o.delete(OldLedger, id="l1")  # its history (versions 1, 2) kept
    s = db.session()
    fresh = Ledger(id="l1", code="C9", balance=7)
    s.save(fresh)
    s.commit()
    assert fresh.version == 3
    report = migrate(mig)
    assert report.ok, report
    assert [(v.version, v.balance) for v in s.history(Ledger, id="l1").all()] == [
        (1, 0), (2, 5), (3, 7)]


@pytest.mark.sync_only
def test_migrate_is_ok_only_when_nothing_is_left_in_a_previous_layout(
        db: TestBackend) -> None:
    """(0.4) migrate said ok with guards naming an old type, old version rows and kept
    history left behind. Whatever it could not move, a last look finds and reports."""
    _old_data()
    with Session(old) as o:  # a guard naming the old type whose owner is elsewhere
        o.save(OldBadge(id="b9", code="LOST"))
    db.table.db.driver.run(call("DeleteItem", {"TableName": mig.name, "Key": {
        "pk": {"S": "BADGE#b9"}, "sk": {"S": "BADGE"}}}))
    report = migrate(mig, check=False)
    assert not report.ok
    assert report.left == ["guard code#LOST/code#LOST: names an owner in a previous layout"]


# -- reads ---------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["save", "migrate"])
def test_a_move_in_place_rewrites_its_guards_to_name_the_new_type(db: TestBackend,
                                                                 how: str) -> None:
    """(0.4) only the type name changed: the guards kept naming the old type, ``find``
    returned None forever and ``check`` was clean."""
    with Session(old) as s:
        s.save(OldBadge(id="b1", code="GOLD"))
    if how == "save":
        s2 = db.session()
        badge = s2.get(Badge, id="b1")
        assert badge is not None
        s2.save(badge)
        s2.commit()
    else:
        assert migrate(mig).ok
    guard = _by_key(db)[("code#GOLD", "code#GOLD")]
    assert guard["owner_type"] == "badge"
    assert db.session().find(Badge, code="GOLD", consistent=True) == Badge(id="b1",
                                                                           code="GOLD")


@pytest.mark.parametrize("how", ["save", "delete", "migrate"])
def test_a_unique_rule_new_in_the_release_that_declares_previous(db: TestBackend,
                                                                 how: str) -> None:
    """(0.4) the old rows have no guard for a rule (or a normalisation) the new release
    adds: moving or deleting them raised ConcurrentModificationError with no other
    writer. Now the move claims the value, the delete has nothing to release."""
    _old_data()
    db.table.db.driver.run(call("DeleteItem", {"TableName": mig.name, "Key": {
        "pk": {"S": "email#ann@x.io"}, "sk": {"S": "email#ann@x.io"}}}))
    s = db.session()
    account = s.get(Account, id="a1")
    assert account is not None
    if how == "migrate":
        assert migrate(mig).ok
    else:
        (s.save if how == "save" else s.delete)(account)
        s.commit()
    keys = _keys(db)
    assert ("USER#a1", "PROFILE") not in keys
    assert (("ACCOUNT#a1", "PROFILE") in keys) == (how != "delete")
    assert (("email#ann@x.io", "email#ann@x.io") in keys) == (how != "delete")


@pytest.mark.parametrize("how", ["delete", "delete history", "delete_many",
                                 "delete_many generator"])
def test_delete_by_key_finds_the_entity_under_its_old_layout(db: TestBackend,
                                                             how: str) -> None:
    """(0.4) delete by key looked only at the current key: ItemNotFoundError, and
    delete_many(Entity, keys) reported deletes it did not do (0.8: keys given as a
    generator were read once, for the current layout, and none deleted in either)."""
    _old_data()
    with Session(old) as o:
        o.save(OldNote(id="n1", body="hello"))
    s = db.session()
    if how.startswith("delete_many"):
        keys = [{"id": "n1"}, {"id": "nobody"}]
        s.delete_many(Note, keys if how == "delete_many" else (k for k in keys))
        assert not [k for k in _keys(db) if k[0] == "MEMO#n1"]
        return
    s.delete(Account, id="a1")
    s.delete(Ledger, id="l1", history=how == "delete history")
    s.commit()
    left = {k for k in _keys(db) if k[0] != "MEMO#n1"}
    assert left == (set() if how == "delete history" else {
        ("BOOK#l1", "v00000001_LEDGER"), ("BOOK#l1", "v00000002_LEDGER")})
    with pytest.raises(dynaorm.ItemNotFoundError):
        s.delete(Account, id="a1")
        s.commit()


@pytest.fixture
def ttl_db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The TTL table, in both designs (see :func:`db`)."""
    yield from _both_designs(mig_ttl, old_ttl, backend, request)


def test_an_expired_old_layout_item_is_gone_for_every_read_and_write(
        ttl_db: TestBackend) -> None:
    """(0.4) get returned an expired old-layout item (the current layout's reads treat
    an expired item as gone); migrate failed on an expired owner whose value a live
    owner had claimed meanwhile."""
    import time

    with Session(old_ttl) as o:
        o.save(OldPass(id="p1", seat="A1", expires=int(time.time()) - 60))
    s = Session(mig_ttl)
    assert s.get(Pass, id="p1", consistent=True) is None
    with pytest.raises(dynaorm.ItemNotFoundError):
        s.delete(Pass, id="p1")
        s.commit()
    s.rollback()
    s.save(Pass(id="p2", seat="A1"))  # the expired owner's value is free
    s.commit()
    report = migrate(mig_ttl)
    assert not report.failed, report.failed
    assert s.find(Pass, seat="A1", consistent=True) == Pass(id="p2", seat="A1")


def test_a_move_onto_an_expired_current_row_takes_its_key(ttl_db: TestBackend) -> None:
    """(issue 59) A live old-layout item moved onto its current key where an expired row
    (TTL passed, not yet deleted) is still stored: the row is gone for reads, so the move
    takes the key (it was ``ItemExistsError``), as an insert does."""
    import time

    with Session(mig_ttl) as w:  # (first: a new object may not have a live old row)
        w.save(Pass(id="p1", seat="Z9", expires=int(time.time()) - 60))
    with Session(old_ttl) as o:
        o.save(OldPass(id="p1", seat="B2", expires=int(time.time()) + 600))
    assert ("PASS#p1", "PASS") in _keys(ttl_db)  # stored, expired
    s = Session(mig_ttl)
    found = s.get(Pass, id="p1", consistent=True)
    assert found is not None and dynaorm.inspect(found).previous_layout
    s.save(found)
    s.commit()
    assert s.get(Pass, id="p1", consistent=True) == found
    assert not dynaorm.inspect(found).previous_layout
    assert ("TICKET#p1", "PASS") not in _keys(ttl_db)


class OldVault(Versioned):
    """``Vault`` before the change: ``SAFE#{id}``, type ``safe``, its secret as ``code``."""

    class Meta:
        table = old
        pk = "SAFE#{id}"
        sk = "VAULT"
        type_name = "safe"
        unique = ("pin",)

    id: str
    pin: Encrypted[str]
    code: Encrypted[str] = ""


class Vault(Versioned):
    """A versioned entity with a unique encrypted field and an encrypted field renamed."""

    class Meta:
        table = mig
        pk = "VAULT#{id}"
        sk = "VAULT"
        unique = ("pin",)
        previous = Previous(pk="SAFE#{id}", type_name="safe", stored_names={"secret": "code"})

    id: str
    pin: Encrypted[str]
    secret: Encrypted[str] = ""


#: the MAC key of unique encrypted fields: not a data key (the data keys rotate under it)
MAC = b"m" * 32


@pytest.fixture
def keyed(db: TestBackend) -> Iterator[TestBackend]:
    mig.keyring = old.keyring = StaticKeyring(b"v" * 32, mac_key=MAC)
    try:
        yield db
    finally:
        mig.keyring = old.keyring = None


def test_an_encrypted_entity_in_its_previous_layout_reads_finds_and_migrates(
        keyed: TestBackend) -> None:
    """Contract 21 (0.5 raised ``KeyError: 'pk'``): its old rows' ciphertexts open bound
    to the old row and the old attribute name; a move (``migrate``) seals them anew for
    the new rows, its history with it; ``find`` finds it once moved."""
    safe = OldVault(id="v1", pin="1234", code="s3cret")
    for code in ("s3cret", "s3cret 2"):
        safe.code = code
        with Session(old) as o:
            o.save(safe)
    s = keyed.session()
    found = s.get(Vault, id="v1")
    assert found == Vault(id="v1", pin="1234", secret="s3cret 2", version=2)
    report = migrate(mig)
    assert report.ok and report.moved == {"Vault": 1}
    assert s.get(Vault, id="v1") == found and s.find(Vault, pin="1234") == found
    assert [v.secret for v in s.history(Vault, id="v1")] == ["s3cret", "s3cret 2"]
    rows = [i for i in keyed.scan_raw() if i["pk"]["S"] == "VAULT#v1"]
    assert len(rows) == 3 and all(set(i["secret"]) == {"B"} for i in rows)
    texts = [v for i in keyed.scan_raw() for a in i.values() for t, v in a.items()
             if t in "SN"]  # (a random _rev or a ciphertext may hold "1234" by chance)
    assert not [t for t in texts if "s3cret" in t or t == "1234" or t.endswith("#1234")]


def test_reencrypt_reseals_rows_still_in_the_previous_layout(keyed: TestBackend) -> None:
    """(0.6) ``jobs.reencrypt`` re-seals an entity's rows still in its previous layout
    (bound to the old row, under the old attribute name), history included: the old key
    goes before the migration, and the rows then read, move and find."""
    first, second = b"v" * 32, b"w" * 32
    safe = OldVault(id="v1", pin="1234", code="s3cret")
    for code in ("s3cret", "s3cret 2"):
        safe.code = code
        with Session(old) as o:
            o.save(safe)
    mig.keyring = old.keyring = StaticKeyring(second, previous=[first], mac_key=MAC)
    assert run_local(reencrypt(Vault, segments=2)) == ReencryptReport(3, 0, [], 3)
    mig.keyring = old.keyring = StaticKeyring(second, mac_key=MAC)  # the first key dropped
    s = keyed.session()
    assert s.get(Vault, id="v1") == Vault(id="v1", pin="1234", secret="s3cret 2", version=2)
    assert migrate(mig).moved == {"Vault": 1}
    assert [v.secret for v in s.history(Vault, id="v1")] == ["s3cret", "s3cret 2"]


def test_get_finds_entity_under_old_layout(db: TestBackend) -> None:
    _old_data()
    s = db.session()
    account = s.get(Account, id="a1")
    assert account == Account(id="a1", email="Ann@X.io", name="Ann")
    ledger = s.get(Ledger, id="l1")
    assert ledger == Ledger(id="l1", code="C1", balance=5, version=2)
    assert s.get(Account, id="nobody") is None
    assert s.get(Ledger, id="nobody") is None
    assert _keys(db) == OLD_KEYS  # reading moves nothing


def test_save_many_of_a_new_object_honours_the_old_layout(db: TestBackend) -> None:
    """(0.4) save_many put a new object blindly at its current key while the entity was
    still stored in the old layout: it was stored twice. Now each new object of an entity
    in its window is the insert a save sends: refused there, written elsewhere."""
    with Session(old) as o:
        o.save(OldNote(id="n1", body="hello"))
    s = db.session()
    with pytest.raises(dynaorm.BulkWriteError) as err:
        s.save_many([Note(id="n1", text="twin"), Note(id="n2", text="new")])
    assert [n.id for n in err.value.not_written] == ["n1"]
    assert [n.id for n in err.value.written] == ["n2"]
    assert {k for k in _keys(db) if "#n" in k[0]} == {("MEMO#n1", "NOTE"),
                                                       ("NOTE#n2", "NOTE")}


def test_get_many_finds_entities_under_either_layout(db: TestBackend) -> None:
    """(0.4) get_many read the current layout only: an old-layout entity was None."""
    _old_data()
    s = db.session()
    with Session(mig) as other:
        other.save(Account(id="a2", email="bob@x.io"))
    got = s.get_many(Account, [{"id": "a1"}, {"id": "nobody"}, {"id": "a2"}])
    assert got == [Account(id="a1", email="Ann@X.io", name="Ann"), None,
                   Account(id="a2", email="bob@x.io")]
    assert got[0] is not None and isinstance(got[0]._dynaorm_state, MovedState)
    s.save(got[0])
    s.commit()
    assert ("ACCOUNT#a1", "PROFILE") in _keys(db)


def test_query_over_new_key_does_not_see_old_items(db: TestBackend) -> None:
    _old_data()
    s = db.session()
    assert s.query(Account, index="gsi1", org="acme").all() == []
    assert s.get(Account, id="a1") is not None


# -- writes move ---------------------------------------------------------------------------
@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_save_moves_row_guard_and_version_rows(db: TestBackend) -> None:
    _old_data()
    s = db.session()
    account = s.get(Account, id="a1")
    ledger = s.get(Ledger, id="l1")
    assert account is not None and ledger is not None
    account.name = "Ann B"
    s.save(account)
    s.save(ledger)  # unchanged: moved as it is, version kept
    s.commit()
    items = _by_key(db)
    assert set(items) == NEW_KEYS
    assert items[("ACCOUNT#a1", "PROFILE")]["email"] == "Ann@X.io"
    assert "mail" not in items[("ACCOUNT#a1", "PROFILE")]
    assert items[("ACCOUNT#a1", "PROFILE")]["_type"] == "account"
    assert items[("ACCOUNT#a1", "PROFILE")]["gsi1sk"] == "ACCOUNT#a1"
    guard = items[("email#ann@x.io", "email#ann@x.io")]
    assert (guard["owner_pk"], guard["owner_sk"], guard["owner_type"]) == (
        "ACCOUNT#a1", "PROFILE", "account")
    assert items[("code#C1", "code#C1")]["owner_pk"] == "LEDGER#l1"
    assert items[("LEDGER#l1", "v00000001_LEDGER")]["balance"] == 0
    assert items[("LEDGER#l1", "v0_LEDGER")]["version"] == 2
    # the objects now live in the new layout: further saves are plain updates
    ledger.balance = 7
    s.save(ledger)
    s.commit()
    again = s.get(Ledger, id="l1")
    assert again is not None and (again.version, again.balance) == (3, 7)
    assert s.find(Account, email="ann@x.io") == Account(id="a1", email="Ann@X.io",
                                                        name="Ann B")
    assert s.query(Account, index="gsi1", org="acme").all() == [account]


def test_changed_versioned_save_moves_and_adds_a_version(db: TestBackend) -> None:
    _old_data()
    s = db.session()
    ledger = s.get(Ledger, id="l1")
    assert ledger is not None
    ledger.balance = 9
    s.save(ledger)
    s.commit()
    assert ledger.version == 3
    assert _keys(db) == NEW_KEYS - {("ACCOUNT#a1", "PROFILE")} | {
        ("USER#a1", "PROFILE"), ("LEDGER#l1", "v00000003_LEDGER")}  # (the account: not saved)
    assert [v.balance for v in s.history(Ledger, id="l1").all()] == [0, 5, 9]


def test_delete_of_old_layout_object(db: TestBackend) -> None:
    _old_data()
    s = db.session()
    account = s.get(Account, id="a1")
    ledger = s.get(Ledger, id="l1")
    assert account is not None and ledger is not None
    s.delete(account)
    s.delete(ledger, history=True)
    s.commit()
    assert _keys(db) == set()


def test_writer_racing_a_move(db: TestBackend) -> None:
    """Two sessions read the old item; the first to save moves it; the second's save
    loses its condition (nothing duplicated), and a fresh read finds the moved entity."""
    _old_data()
    s1, s2 = db.session(), db.session()
    a1, a2 = s1.get(Account, id="a1"), s2.get(Account, id="a1")
    assert a1 is not None and a2 is not None
    a1.name = "first"
    s1.save(a1)
    s1.commit()
    a2.name = "second"
    s2.save(a2)
    with pytest.raises(ConflictError):
        s2.commit()
    fresh = s2.get(Account, id="a1")
    assert fresh is not None and fresh.name == "first"
    fresh.name = "second"
    s2.save(fresh)
    s2.commit()
    items = _by_key(db)
    assert ("USER#a1", "PROFILE") not in items
    assert items[("ACCOUNT#a1", "PROFILE")]["name"] == "second"


def test_old_item_changed_after_read_is_not_overwritten(db: TestBackend) -> None:
    _old_data()
    s = db.session()
    account = s.get(Account, id="a1")
    assert account is not None
    o = Session(old)
    stale = o.get(OldAccount, id="a1")
    assert stale is not None
    stale.name = "changed in the old layout"
    o.save(stale)
    o.commit()
    s.save(account)
    with pytest.raises(ConflictError):
        s.commit()
    assert _keys(db) == OLD_KEYS


class OldTag(Entity):
    """``Tag`` before the change: same key, type ``tag``, label stored as ``name``."""

    class Meta:
        table = old
        pk = "TAG#{id}"
        sk = "TAG"
        type_name = "tag"

    id: str
    name: str = ""


class Tag(Entity):
    """Only the type name and a stored name changed: the move rewrites one item in place."""

    class Meta:
        table = mig
        pk = "TAG#{id}"
        sk = "TAG"
        type_name = "label"
        previous = Previous(type_name="tag", stored_names={"label": "name"})

    id: str
    label: str = ""


# -- a move's condition= and overwrite= ----------------------------------------------------
def _fresh_account(s: Session) -> Account:
    account = s.get(Account, id="a1")
    assert account is not None and dynaorm.inspect(account).previous_layout
    return account


def test_save_condition_on_a_move_is_in_field_names(db: TestBackend) -> None:
    """A save's condition names fields, whatever layout the row sits in: on a move it is
    judged on the old row (the one replaced) through its old stored names (``email`` was
    stored as ``mail``), so it holds here exactly as it would on a moved row."""
    _old_data()
    s = db.session()
    account = _fresh_account(s)
    account.name = "Ann B"
    s.save(account, condition=(F("email") == "Ann@X.io") & F("email").exists()
           & (F("name") == "Ann"))
    ledger = s.get(Ledger, id="l1")
    assert ledger is not None
    s.save(ledger, condition=F("balance") == 5)
    s.commit()
    items = _by_key(db)
    assert set(items) == NEW_KEYS
    assert items[("ACCOUNT#a1", "PROFILE")]["name"] == "Ann B"


@pytest.mark.parametrize("condition", [
    F("email") == "someone@else.io",  # false on the row, read through its old name
    F("email").not_exists(),  # `email` was never an attribute of the old row: `mail` is
    F("name") == "Bob",
])
def test_failing_save_condition_on_a_move_writes_nothing(db: TestBackend,
                                                         condition: Any) -> None:
    _old_data()
    before = db.scan_raw()
    s = db.session()
    account = _fresh_account(s)
    account.name = "Ann B"
    s.save(account, condition=condition)
    with pytest.raises(ConditionFailedError) as caught:
        s.commit()
    assert db.scan_raw() == before
    err = caught.value
    assert err.entity is Account and err.key == {"pk": "USER#a1", "sk": "PROFILE"}
    assert err.item == Account(id="a1", email="Ann@X.io", name="Ann")  # as stored
    assert dynaorm.inspect(account).previous_layout  # unchanged: save it again
    s.save(account)
    s.commit()
    assert _by_key(db)[("ACCOUNT#a1", "PROFILE")]["name"] == "Ann B"
    # the same condition on the moved row fails the same way
    account.name = "Ann C"
    s.save(account, condition=condition)
    with pytest.raises(ConditionFailedError) as again:
        s.commit()
    assert again.value.item == Account(id="a1", email="Ann@X.io", name="Ann B")


def test_failing_condition_on_a_versioned_move_writes_nothing(db: TestBackend) -> None:
    _old_data()
    before = db.scan_raw()
    s = db.session()
    ledger = s.get(Ledger, id="l1")
    assert ledger is not None
    ledger.balance = 9
    s.save(ledger, condition=F("balance") == 4)
    with pytest.raises(ConditionFailedError) as caught:
        s.commit()
    assert db.scan_raw() == before
    assert caught.value.item == Ledger(id="l1", code="C1", balance=5, version=2)


def test_delete_condition_on_a_move_is_in_field_names(db: TestBackend) -> None:
    _old_data()
    before = db.scan_raw()
    s = db.session()
    account = _fresh_account(s)
    s.delete(account, condition=F("email") == "other@x.io")
    with pytest.raises(ConditionFailedError):
        s.commit()
    assert db.scan_raw() == before
    s.delete(account, condition=F("email") == "Ann@X.io")
    s.commit()
    assert not [k for k in _keys(db) if k[0] in ("USER#a1", "email#ann@x.io")]


def test_save_condition_on_a_plain_move(db: TestBackend) -> None:
    """An entity without rules: ``text`` was stored as ``body``."""
    with Session(old) as o:
        o.save(OldNote(id="n1", body="hello"))
    before = db.scan_raw()
    s = db.session()
    note = s.get(Note, id="n1")
    assert note == Note(id="n1", text="hello")
    note.text = "bye"
    s.save(note, condition=F("text") == "hi")
    with pytest.raises(ConditionFailedError) as caught:
        s.commit()
    assert db.scan_raw() == before
    assert caught.value.item == Note(id="n1", text="hello")
    s.save(note, condition=F("text") == "hello")
    s.commit()
    assert _by_key(db) == {("NOTE#n1", "NOTE"): {"pk": "NOTE#n1", "sk": "NOTE",
                                                 "_type": "note", "id": "n1", "text": "bye"}}


@pytest.mark.parametrize("writer", ["changes it", "moves it", "deletes it"])
def test_overwrite_of_a_moved_object_is_last_writer_wins(db: TestBackend,
                                                         writer: str) -> None:
    """``overwrite=True`` on an object read from the old layout: whatever another writer
    did meanwhile (changed the old row, moved it, deleted it), the entity ends in the
    current layout with the values written, no old row beside it, and exactly the guards
    of those values."""
    _old_data()
    s, other = db.session(), db.session()
    account = _fresh_account(s)
    theirs = other.get(Account, id="a1")
    assert theirs is not None
    if writer == "changes it":
        o = Session(old)
        stale = o.get(OldAccount, id="a1")
        assert stale is not None
        stale.name, stale.mail = "theirs", "Theirs@X.io"
        o.save(stale)
        o.commit()
    elif writer == "moves it":
        theirs.name, theirs.email = "theirs", "Theirs@X.io"
        other.save(theirs)
        other.commit()
    else:
        other.delete(theirs)
        other.commit()
    account.name, account.email = "mine", "Mine@X.io"
    s.save(account, overwrite=True)
    s.commit()
    items = _by_key(db)
    assert ("USER#a1", "PROFILE") not in items
    assert items[("ACCOUNT#a1", "PROFILE")]["name"] == "mine"
    assert items[("ACCOUNT#a1", "PROFILE")]["email"] == "Mine@X.io"
    guards = {k: v for k, v in items.items() if k[0].startswith("email#")}
    assert list(guards) == [("email#mine@x.io", "email#mine@x.io")]
    assert guards[("email#mine@x.io", "email#mine@x.io")]["owner_pk"] == "ACCOUNT#a1"
    assert not dynaorm.inspect(account).previous_layout
    account.name = "mine again"  # a plain update now
    s.save(account)
    s.commit()
    assert s.find(Account, email="mine@x.io") == account


def test_overwrite_of_a_moved_object_held_under_both_layouts(db: TestBackend) -> None:
    """A new object saved at the current key while the old row is still there: two rows
    stand for one entity, and an overwrite (of an entity with rules) cannot tell which one
    it replaces. It says so and writes nothing."""
    _old_data()
    s = db.session()
    account = _fresh_account(s)
    with Session(mig) as other:  # (0.4: an insert is refused there; an overwrite is not)
        other.save(Account(id="a1", email="twin@x.io"), overwrite=True)
    before = db.scan_raw()
    account.name = "mine"
    s.save(account, overwrite=True)
    with pytest.raises(DynaormError, match=r"both layouts hold it, the old row .*USER#a1.* "
                                           r"and the current row .*ACCOUNT#a1"):
        s.commit()
    assert db.scan_raw() == before


def test_overwrite_of_a_moved_versioned_object(db: TestBackend) -> None:
    _old_data()
    s = db.session()
    ledger = s.get(Ledger, id="l1")
    assert ledger is not None
    o = Session(old)
    stale = o.get(OldLedger, id="l1")
    assert stale is not None
    stale.balance = 6  # another writer adds version 3 in the old layout
    o.save(stale)
    o.commit()
    ledger.balance = 9
    s.save(ledger, overwrite=True)
    s.commit()
    assert ledger.version == 4
    keys = _keys(db)
    assert not [k for k in keys if k[0].startswith("BOOK#")]
    assert [v.balance for v in s.history(Ledger, id="l1").all()] == [0, 5, 6, 9]
    assert _by_key(db)[("code#C1", "code#C1")]["owner_pk"] == "LEDGER#l1"


@pytest.mark.parametrize("writer", ["changes it", "moves it", "deletes it"])
def test_overwrite_of_a_plain_moved_object(db: TestBackend, writer: str) -> None:
    with Session(old) as o:
        o.save(OldNote(id="n1", body="hello"))
    s, other = db.session(), db.session()
    note, theirs = s.get(Note, id="n1"), other.get(Note, id="n1")
    assert note is not None and theirs is not None
    if writer == "changes it":
        o = Session(old)
        o.save(OldNote(id="n1", body="theirs"), overwrite=True)
        o.commit()
    elif writer == "moves it":
        theirs.text = "theirs"
        other.save(theirs)
        other.commit()
    else:
        other.delete(theirs)
        other.commit()
    note.text = "mine"
    s.save(note, overwrite=True)
    s.commit()
    assert _by_key(db) == {("NOTE#n1", "NOTE"): {"pk": "NOTE#n1", "sk": "NOTE",
                                                 "_type": "note", "id": "n1", "text": "mine"}}


def test_overwrite_with_a_condition_on_a_move(db: TestBackend) -> None:
    _old_data()
    before = db.scan_raw()
    s = db.session()
    account = _fresh_account(s)
    account.name = "mine"
    s.save(account, overwrite=True, condition=F("email") == "nobody@x.io")
    with pytest.raises(ConditionFailedError):
        s.commit()
    assert db.scan_raw() == before
    s.save(account, overwrite=True, condition=F("email") == "Ann@X.io")
    s.commit()
    items = _by_key(db)
    assert ("USER#a1", "PROFILE") not in items
    assert items[("ACCOUNT#a1", "PROFILE")]["name"] == "mine"


def test_condition_and_overwrite_of_a_move_in_place(db: TestBackend) -> None:
    """Only the type and a stored name changed: the old row's delete and the new row's put
    are one put of the same key, which keeps the old row's condition and the caller's."""
    with Session(old) as o:
        o.save(OldTag(id="t1", name="red"))
    before = db.scan_raw()
    s = db.session()
    tag = s.get(Tag, id="t1")
    assert tag == Tag(id="t1", label="red")
    tag.label = "blue"
    s.save(tag, condition=F("label") == "green")
    with pytest.raises(ConditionFailedError) as caught:
        s.commit()
    assert db.scan_raw() == before
    assert caught.value.item == Tag(id="t1", label="red")
    s.save(tag, condition=F("label") == "red")
    s.commit()
    assert _unstamped(db) == [{"pk": "TAG#t1", "sk": "TAG", "_type": "label", "id": "t1",
                               "label": "blue"}]
    with Session(old) as o:
        o.save(OldTag(id="t2", name="old"))
    again = s.get(Tag, id="t2")
    assert again is not None
    with Session(old) as o:  # another writer changes it in the old layout
        o.save(OldTag(id="t2", name="theirs"), overwrite=True)
    again.label = "mine"
    s.save(again, overwrite=True)
    s.commit()
    assert [i for i in _unstamped(db) if i["pk"] == "TAG#t2"] == [
        {"pk": "TAG#t2", "sk": "TAG", "_type": "label", "id": "t2", "label": "mine"}]


@pytest.mark.parametrize("upsert", [False, True])
def test_update_by_key_of_an_old_layout_entity_is_refused(db: TestBackend,
                                                          upsert: bool) -> None:
    """(0.4) s.update(Entity, key) targeted the current key only: it missed an entity
    still in its old layout (ItemNotFoundError), or with upsert stored it twice."""
    with Session(old) as o:
        o.save(OldNote(id="n1", body="hello"))
    s = db.session()
    s.update(Note, id="n1", upsert=upsert).set(text="changed")
    with pytest.raises(DynaormError, match="previous layout"):
        s.commit()
    assert {k for k in _keys(db) if "#n1" in k[0]} == {("MEMO#n1", "NOTE")}
    s.rollback()
    with Session(mig) as other:  # an entity in the current layout updates as always
        other.save(Note(id="n2", text="one"))
    s.update(Note, id="n2").set(text="two")
    s.commit()


def test_update_of_a_moved_object_is_refused(db: TestBackend) -> None:
    _old_data()
    s = db.session()
    account = _fresh_account(s)
    with pytest.raises(DynaormError, match=r"previous layout \(Meta.previous\): update\(\) "
                                           "cannot move it"):
        s.update(account).set(name="x")
    s.save(account)
    s.commit()
    s.update(account).set(name="moved first")  # in the current layout now: fine
    s.commit()
    assert _by_key(db)[("ACCOUNT#a1", "PROFILE")]["name"] == "moved first"


def test_a_move_keeps_attributes_neither_layout_declares(db: TestBackend) -> None:
    """Contract 18: attributes the class does not declare survive every write of the item,
    a move too (the row and each version row)."""
    _old_data()
    client = db.table.client
    for pk, sk in (("USER#a1", "PROFILE"), ("BOOK#l1", "v0_LEDGER"),
                   ("BOOK#l1", "v00000001_LEDGER")):
        client.update_item(TableName=mig.name, Key={"pk": {"S": pk}, "sk": {"S": sk}},
                           UpdateExpression="SET legacy = :v",
                           ExpressionAttributeValues={":v": {"S": f"kept {sk}"}})
    s = db.session()
    account, ledger = _fresh_account(s), s.get(Ledger, id="l1")
    assert ledger is not None
    account.name = "Ann B"
    ledger.balance = 7
    s.save(account)
    s.save(ledger)
    s.commit()
    items = _by_key(db)
    assert items[("ACCOUNT#a1", "PROFILE")]["legacy"] == "kept PROFILE"
    assert "mail" not in items[("ACCOUNT#a1", "PROFILE")]
    assert items[("LEDGER#l1", "v0_LEDGER")]["legacy"] == "kept v0_LEDGER"
    assert items[("LEDGER#l1", "v00000001_LEDGER")]["legacy"] == "kept v00000001_LEDGER"
    assert "legacy" not in items[("LEDGER#l1", "v00000002_LEDGER")]
    assert items[("LEDGER#l1", "v00000003_LEDGER")]["legacy"] == "kept v0_LEDGER"


# -- dynaorm migrate -----------------------------------------------------------------------
@pytest.mark.sync_only
def test_migrate_dry_run_then_run(db: TestBackend) -> None:
    _old_data()
    dry = migrate(mig, dry_run=True)
    assert dry.found == {"Account": 1, "Ledger": 1} and dry.moved == {}
    assert dry.samples["Account"] == [["USER#a1/PROFILE", "ACCOUNT#a1/PROFILE"]]
    assert dry.done and dry.problems is None
    assert _keys(db) == OLD_KEYS
    report = migrate(mig)
    assert report.moved == {"Account": 1, "Ledger": 1} and report.ok
    assert report.problems == []
    assert _keys(db) == NEW_KEYS
    assert migrate(mig).found == {}  # nothing left


@pytest.mark.sync_only
def test_migrate_resumes_from_checkpoint(db: TestBackend, tmp_path: Any) -> None:
    s = Session(old)
    for n in range(6):
        s.save(OldAccount(id=f"a{n}", mail=f"u{n}@x.io"))
    s.commit()
    point = tmp_path / "migrate.json"
    first = migrate(mig, checkpoint=point, page_size=3, max_pages=2)
    assert not first.done
    with pytest.raises(DynaormError, match="unfinished run"):
        migrate(mig, checkpoint=point)
    rest = migrate(mig, checkpoint=point, resume=True, page_size=3)
    assert rest.resumed and rest.done and rest.ok
    assert rest.moved["Account"] == 6  # (the checkpoint's counts cover both runs)
    assert {k for k in _keys(db) if k[1] == "PROFILE"} == {
        (f"ACCOUNT#a{n}", "PROFILE") for n in range(6)}
    with pytest.raises(DynaormError, match="nothing to resume"):
        migrate(mig, checkpoint=point, resume=True)


@pytest.mark.sync_only
def test_migrate_rate_limit_paces_moves(db: TestBackend) -> None:
    s = Session(old)
    for n in range(4):
        s.save(OldAccount(id=f"a{n}", mail=f"u{n}@x.io"))
    s.commit()
    now = [0.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    report = migrate(mig, rate=2, clock=lambda: now[0], sleep=sleep)
    assert report.moved == {"Account": 4}
    assert sum(waits) == pytest.approx(1.5)  # 4 moves at 2 a second: 0, 0.5, 1.0, 1.5
    with pytest.raises(DynaormError, match="rate must be positive"):
        migrate(mig, rate=0)
    with pytest.raises(DynaormError, match="concurrency must be at least 1"):
        migrate(mig, concurrency=0)


@pytest.mark.sync_only
def test_migrate_command(db: TestBackend, capsys: pytest.CaptureFixture[str]) -> None:
    from dynaorm.cli.main import main

    _old_data()
    ref = "tests.support.migration_models:mig"
    assert main(["migrate", ref, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Account: 1 in the previous layout, would move 1" in out
    assert "USER#a1/PROFILE -> ACCOUNT#a1/PROFILE" in out
    assert _keys(db) == OLD_KEYS
    assert main(["migrate", ref, "--rate", "0"]) == 2
    assert main(["migrate", ref, "--concurrency", "0"]) == 2
    assert main(["migrate", ref, "--resume"]) == 2
    assert "resume needs a checkpoint" in capsys.readouterr().err
    assert main(["migrate", ref, "--progress"]) == 0
    captured = capsys.readouterr()
    assert "Ledger: 1 in the previous layout, moved 1" in captured.out
    assert "check: 0 problem(s)" in captured.out
    assert "scanned" in captured.err and "ETA" in captured.err
    assert _keys(db) == NEW_KEYS


@pytest.mark.sync_only
def test_migrate_checkpoint_errors(db: TestBackend, tmp_path: Any) -> None:
    from dynaorm.jobs.checkpoint import CheckpointError

    point = tmp_path / "m.json"
    with pytest.raises(CheckpointError, match="does not exist: nothing to resume"):
        migrate(mig, checkpoint=point, resume=True)
    with pytest.raises(CheckpointError, match="is a directory"):
        migrate(mig, checkpoint=tmp_path)
    point.write_text("{not json")
    with pytest.raises(CheckpointError, match="not a dynaorm migrate checkpoint"):
        migrate(mig, checkpoint=point)
    point.write_text('{"table": "another", "dry_run": false}')
    with pytest.raises(CheckpointError, match="belongs to table 'another'"):
        migrate(mig, checkpoint=point)
    point.write_text(f'{{"table": "{mig.name}", "dry_run": true}}')
    with pytest.raises(CheckpointError, match="with --dry-run"):
        migrate(mig, checkpoint=point, resume=True)
    point.unlink()
    assert migrate(mig, checkpoint=point).done  # a finished checkpoint starts over
    assert migrate(mig, checkpoint=point).done


def test_old_item_that_does_not_fit_is_a_typed_error(db: TestBackend) -> None:
    from dynaorm import ItemDecodeError

    db.table.client.put_item(TableName=mig.name, Item={
        "pk": {"S": "USER#bad"}, "sk": {"S": "PROFILE"}, "_type": {"S": "user"},
        "id": {"S": "bad"}})  # no mail: the current class needs an email
    with pytest.raises(ItemDecodeError, match=r"USER#bad.*previous layout.*Account"):
        db.session().get(Account, id="bad")
    report = migrate(mig, check=False)
    assert report.found == {} and len(report.failed) == 1
    assert "USER#bad/PROFILE" in report.failed[0] and not report.ok


@pytest.mark.sync_only
def test_migrate_rejudges_a_move_that_lost_its_condition(db: TestBackend) -> None:
    """A move whose item a writer changed in the old layout is redone from a fresh read
    (the writer's change kept); one a writer moved first is skipped."""
    from dynaorm.jobs.migration import _move

    _old_data()
    s = Session(mig)
    stale = s.get(Account, id="a1")
    assert stale is not None
    o = Session(old)
    writer = o.get(OldAccount, id="a1")
    assert writer is not None
    writer.name = "changed by a writer"
    o.save(writer)
    o.commit()
    assert _move(Session(mig), spec_of(Account), stale) == "moved"
    moved = s.get(Account, id="a1")
    assert moved is not None and moved.name == "changed by a writer"
    assert not dynaorm.inspect(moved).previous_layout

    first, second = s.get(Ledger, id="l1"), Session(mig).get(Ledger, id="l1")
    assert first is not None and second is not None
    s.save(first)
    s.commit()  # a live writer moves it
    assert _move(Session(mig), spec_of(Ledger), second) == "skipped"
    assert _keys(db) == NEW_KEYS


def test_find_in_the_window_reads_an_old_type_name(db: TestBackend) -> None:
    """(issue 59) ``find`` in a migration window whose type name changed gave ``None``
    while ``get`` found the item: the guard names its owner under the old type name, and
    the owner is read in the old layout (a write of it moves it), as get reads it."""
    with Session(old) as s:
        s.save(OldBadge(id="b1", code="GOLD"))
        s.save(OldAccount(id="a1", mail="Ann@X.io", name="Ann"))
    s = db.session()
    assert s.find(Badge, code="GOLD") == s.get(Badge, id="b1") == Badge(id="b1", code="GOLD")
    found = s.find(Account, email="ann@x.io")
    assert found == s.get(Account, id="a1") == Account(id="a1", email="Ann@X.io", name="Ann")
    assert found is not None and dynaorm.inspect(found).previous_layout
    found.name = "Ann Lee"  # a write of it moves it to the current layout
    s.save(found)
    s.commit()
    assert _keys(db) >= {("ACCOUNT#a1", "PROFILE")} and ("USER#a1", "PROFILE") not in _keys(db)
    assert s.find(Account, email="ann@x.io", consistent=True) == found


# --- find in a migration window: a versioned entity with a unique (encrypted) field ----------
# (red team of issue 59's fixes; moved from integration/test_fix59_red_team.py)


def test_find_of_a_versioned_entity_in_the_window(keyed: Any) -> None:
    """A versioned entity whose type name changed (``safe`` -> ``Vault``), found by its
    unique encrypted field in the window: what get gives, in the previous layout."""
    import dynaorm

    with Session(old) as s:
        s.save(OldVault(id="v1", pin="1234", code="s3"))
    s = keyed.session()
    found = s.find(Vault, pin="1234")
    assert found is not None and found == s.get(Vault, id="v1")
    assert found.secret == "s3" and dynaorm.inspect(found).previous_layout
    found.secret = "s4"
    s.save(found)
    s.commit()
    again = Session(keyed.table).find(Vault, pin="1234", consistent=True)
    assert again is not None and again.secret == "s4"


# --- lost moves and migrate racing a session in the move window
# (moved from system/test_red_team_08d_previous.py:
# Red team 08d, previous layouts (``Meta.previous``: the moves planned in
# :mod:`dynaorm.schema.rules.previous`): what must never happen to an entity still stored in
# its old layout while sessions and ``dynaorm migrate`` write it.
#
# - a move whose answer is lost, with a second writer acting in the window (after the move
#   applied, before its answer): the caller is never told ``ConflictError`` for a move that
#   is stored, the second writer's work is never undone, the old row is never resurrected,
#   and an entity is never stored under both layouts;
# - ``dynaorm migrate`` racing a session inside its own move's window: the same;
# - random sequences of creates (either design), changes, deletes, refused updates and
#   migrate runs checked against a model (hypothesis stateful): every read answers the
#   model, every unique guard names its live owner, no entity is stored twice.
#
# The lost-answer tests run on moto and DynamoDB Local (a transaction's resend is
# deduplicated by its token on DynamoDB Local; moto ignores tokens, so the outcome there is
# read back); the model-based test on moto only (the moves' plans do not depend on the
# engine).)

cur = Table("red08d-previous")
prev_table = Table("red08d-previous")


class OldAcct(Entity):
    class Meta:
        table = prev_table
        pk = "U#{id}"
        sk = "P"
        type_name = "u_old"
        unique = (Unique("mail", prefix="email", normalize=str.lower),)

    id: str
    mail: str
    name: str = ""


class Acct(Entity):
    class Meta:
        table = cur
        pk = "A#{id}"
        sk = "P"
        type_name = "acct"
        unique = (Unique("email", normalize=str.lower),)
        previous = Previous(pk="U#{id}", type_name="u_old", stored_names={"email": "mail"})

    id: str
    email: str
    name: str = ""


class OldBook(Versioned):
    class Meta:
        table = prev_table
        pk = "OB#{id}"
        sk = "BOOK"
        type_name = "book"
        unique = ("code",)

    id: str
    code: str
    n: int = 0


class Book(Versioned):
    class Meta:
        table = cur
        pk = "B#{id}"
        sk = "BOOK"
        type_name = "book"
        unique = ("code",)
        previous = Previous(pk="OB#{id}")

    id: str
    code: str
    n: int = 0


@pytest.fixture
def both(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """``cur`` fresh on the engine; ``old`` the same table on a client of its own (the
    previous release's process), put back after."""
    wire = wire_of(request)
    with use_tables(cur, endpoint_url=backend, name_suffix=worker_suffix(), wire=wire) as tb:
        saved = (prev_table.name, prev_table.binding())
        prev_table.name = cur.name
        prev_table.restore((None, {}, Client(cur.endpoint_url, wire=wire or "dynaorm")))
        cur.max_wait = 0
        try:
            yield tb
        finally:
            prev_table.name = saved[0]
            prev_table.restore(saved[1])


def _rows(tb: TestBackend) -> dict[tuple[str, str], dict[str, Any]]:
    return {(i["pk"], i["sk"]): i for i in tb.scan()}


def _guards_consistent(tb: TestBackend) -> None:
    """Every guard names a live owner holding its value; every owner has its guard; no
    entity is stored under both layouts."""
    rows = _rows(tb)
    for (pk, _sk), g in rows.items():
        if g.get("_type") != "dynaorm:unique":
            continue
        owner = rows.get((g["owner_pk"], g["owner_sk"]))
        assert owner is not None, f"orphan guard {pk}"
        assert owner["_type"] == g["owner_type"], (g, owner)
    ids = [(t, i["id"]) for (pk, sk), i in rows.items()
           for t in [i.get("_type")] if t in ("acct", "u_old")]
    assert len(ids) == len({i for _, i in ids}), f"stored under both layouts: {ids}"
    for (pk, sk), i in rows.items():
        if i.get("_type") in ("acct", "u_old"):
            email = (i.get("email") or i.get("mail")).lower()
            g = rows.get((f"email#{email}", f"email#{email}"))
            assert g is not None and (g["owner_pk"], g["owner_sk"]) == (pk, sk), (i, g)


def _old_acct(email: str = "Ann@X.io", id: str = "a1") -> None:
    with Session(prev_table) as s:
        s.save(OldAcct(id=id, mail=email, name="ann"))


# == lost answers of a move, a second writer in the window ================================
@pytest.mark.sync_only
@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("second", ["none", "build", "delete", "rename_email"])
def test_a_lost_move_never_undoes_the_second_writer(both: TestBackend, second: str) -> None:
    """A move (a changed save of an old-layout object) applied, its answer lost; in the
    window a second session builds on the moved entity, deletes it, or changes its unique
    email. Never: a ``ConflictError`` (the move is stored), the old row back, the second
    writer's change undone, an orphan guard."""
    _old_acct()
    s = Session(cur)
    moved = s.get(Acct, id="a1")
    assert moved is not None and moved.email == "Ann@X.io"
    moved.name = "moved"

    def window() -> None:
        with Session(cur) as b:
            theirs = b.get(Acct, id="a1")
            assert theirs is not None and theirs.name == "moved"  # (the move applied)
            if second == "build":
                theirs.name = "theirs"
                b.save(theirs)
            elif second == "delete":
                b.delete(theirs)
            elif second == "rename_email":
                theirs.email = "Bob@X.io"
                b.save(theirs)

    outcome: str
    with inject_faults(cur) as faults:
        faults.lose_answer("TransactWriteItems", after=None if second == "none" else window)
        try:
            s.save(moved)
            s.commit()
            outcome = "ok"
        except ConflictError as exc:
            pytest.fail(f"a stored move reported as a conflict: {exc!r}")
        except OutcomeUnknownError:
            outcome = "unknown"
    rows = _rows(both)
    assert ("U#a1", "P") not in rows  # (never resurrected)
    _guards_consistent(both)
    now = Session(cur).get(Acct, id="a1")
    expected = {"none": ("moved", "Ann@X.io"), "build": ("theirs", "Ann@X.io"),
                "delete": None, "rename_email": ("moved", "Bob@X.io")}[second]
    assert (None if now is None else (now.name, now.email)) == expected
    if second == "none":
        assert outcome == "ok"


@pytest.mark.sync_only
@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("second", ["build", "delete"])
def test_a_lost_versioned_move_keeps_history_and_the_second_writer(both: TestBackend,
                                                                    second: str) -> None:
    """A versioned entity with two old version rows, moved by a changed save whose answer
    is lost; a second writer builds on it (a version 4) or deletes it in the window.
    Never: a conflict for the stored move, old rows back, a version lost or doubled."""
    book = OldBook(id="b1", code="C1")
    for n in (1, 2):
        book.n = n
        with Session(prev_table) as o:
            o.save(book)
    s = Session(cur)
    moved = s.get(Book, id="b1")
    assert moved is not None and moved.version == 2  # type: ignore[attr-defined]
    moved.n = 3

    def window() -> None:
        with Session(cur) as b:
            theirs = b.get(Book, id="b1")
            assert theirs is not None and theirs.n == 3
            if second == "build":
                theirs.n = 4
                b.save(theirs)
            else:
                b.delete(theirs)

    with inject_faults(cur) as faults:
        faults.lose_answer("TransactWriteItems", after=window)
        try:
            s.save(moved)
            s.commit()
        except ConflictError as exc:
            pytest.fail(f"a stored move reported as a conflict: {exc!r}")
        except OutcomeUnknownError:
            pass
    keys = set(_rows(both))
    assert not any(pk.startswith("OB#") for pk, _ in keys), keys
    now = Session(cur).get(Book, id="b1")
    if second == "build":
        assert now is not None and (now.n, now.version) == (4, 4)  # type: ignore[attr-defined]
        assert [b.n for b in Session(cur).history(Book, id="b1")] == [1, 2, 3, 4]
    else:
        assert now is None
        assert ("code#C1", "code#C1") not in keys


@pytest.mark.sync_only
@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("second", ["build", "delete"])
def test_migrate_racing_a_session_in_its_move_window(both: TestBackend, second: str) -> None:
    """``dynaorm migrate`` moves an account, its answer lost; a session builds on or
    deletes the moved account in the window. Never: the session's work undone, the old
    row back, migrate claiming a failure for a row it moved, an orphan guard."""
    _old_acct()
    _old_acct("Cy@X.io", id="a2")

    def window() -> None:
        with Session(cur) as b:
            theirs = b.get(Acct, id="a1")
            if theirs is None:  # (the first move was a2's)
                return
            if second == "build":
                theirs.name = "theirs"
                b.save(theirs)
            else:
                b.delete(theirs)

    with inject_faults(cur) as faults:
        faults.lose_answer("TransactWriteItems", after=window, times=2)
        report = migrate(cur, check=False)
    assert report.failed == [], report
    rows = _rows(both)
    assert not any(pk.startswith("U#") for pk, _ in rows), rows
    _guards_consistent(both)
    now = Session(cur).get(Acct, id="a1")
    assert (None if now is None else now.name) == ("theirs" if second == "build" else None)
    assert Session(cur).get(Acct, id="a2") is not None


# == random sequences against a model ======================================================
REFUSED = (ConflictError, UniqueConstraintError)
IDS = st.sampled_from(["a", "b", "c"])
EMAILS = st.sampled_from(["x@e.io", "X@E.IO", "y@e.io", "z@e.io"])


class PreviousLayoutMachine(RuleBasedStateMachine):
    """Accounts created by either design, changed, renamed, deleted, updated (refused in
    the old layout) and migrated; the model: id -> (email, name, layout)."""

    tb: TestBackend

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, tuple[str, str, str]] = {}
        for i in self.tb.scan_raw():
            self.tb.table.db.send("DeleteItem", {"TableName": cur.name, "Key": {
                "pk": i["pk"], "sk": i["sk"]}})

    def _taken(self, email: str, but: str | None = None) -> bool:
        return any(e.lower() == email.lower() for i, (e, _, _) in self.model.items()
                   if i != but)

    @rule(id=IDS, email=EMAILS)
    def create_old(self, id: str, email: str) -> None:
        """The previous release, still running, creates an account."""
        if id in self.model:
            return  # (the old release cannot see a current-layout row: not its business)
        try:
            _old_acct(email, id)
        except REFUSED:
            assert self._taken(email)
            return
        assert not self._taken(email)
        self.model[id] = (email, "ann", "old")

    @rule(id=IDS, email=EMAILS)
    def create_new(self, id: str, email: str) -> None:
        try:
            with Session(cur) as s:
                s.save(Acct(id=id, email=email))
        except REFUSED:
            assert id in self.model or self._taken(email)
            return
        assert id not in self.model and not self._taken(email), (id, email, self.model)
        self.model[id] = (email, "", "new")

    @rule(id=IDS, email=EMAILS, name=st.sampled_from(["", "n1", "n2"]))
    def change(self, id: str, email: str, name: str) -> None:
        with Session(cur) as s:
            obj = s.get(Acct, id=id)
            if obj is None:
                assert id not in self.model
                return
            obj.email, obj.name = email, name
            try:
                s.save(obj)
                s.commit()
            except REFUSED:
                assert self._taken(email, but=id)
                return
        assert not self._taken(email, but=id)
        self.model[id] = (email, name, "new")

    @rule(id=IDS)
    def delete(self, id: str) -> None:
        with Session(cur) as s:
            obj = s.get(Acct, id=id)
            assert (obj is None) == (id not in self.model)
            if obj is not None:
                s.delete(obj)
                s.commit()
                del self.model[id]

    @rule(id=IDS, name=st.sampled_from(["u1", "u2"]))
    def update(self, id: str, name: str) -> None:
        if id not in self.model:
            return
        try:
            with Session(cur) as s:
                s.update(Acct, id=id).set(name=name)
        except DynaormError as exc:
            assert self.model[id][2] == "old", exc
            assert "previous layout" in str(exc)
            return
        assert self.model[id][2] == "new"
        e, _, layout = self.model[id]
        self.model[id] = (e, name, layout)

    @precondition(lambda self: any(v[2] == "old" for v in self.model.values()))
    @rule()
    def run_migrate(self) -> None:
        report = migrate(cur, check=False)
        assert report.failed == [] and report.done
        self.model = {i: (e, n, "new") for i, (e, n, _) in self.model.items()}

    @invariant()
    def reads_answer_the_model(self) -> None:
        s = Session(cur)
        for id in ("a", "b", "c"):
            got = s.get(Acct, id=id)
            want = self.model.get(id)
            assert (None if got is None else (got.email, got.name)) == (
                None if want is None else want[:2]), id
        for id, (email, _, _) in self.model.items():
            found = s.find(Acct, email=email.swapcase())
            assert found is not None and found.id == id
        _guards_consistent(self.tb)
        layouts = {i["id"]: i["_type"] for i in self.tb.scan() if i.get("_type") in (
            "acct", "u_old")}
        assert layouts == {i: ("u_old" if v[2] == "old" else "acct")
                           for i, v in self.model.items()}


@pytest.mark.sync_only
@pytest.mark.engines("moto")
def test_previous_layout_sequences_against_a_model(both: TestBackend) -> None:
    PreviousLayoutMachine.tb = both
    run = PreviousLayoutMachine.TestCase
    run.settings = settings(max_examples=examples(15), stateful_step_count=10, deadline=None,
                            suppress_health_check=list(HealthCheck))
    run().runTest()


# --- a previous layout's read by key finds the entity at that key only
# (moved from system/test_red_team_08h.py:
# Red team 08h of merge ``fix08f``: a previous layout's read, delete or update by key
# finds only the entity at the key asked for (``Layout.read``/``Layout.either`` compare the
# old row's object's current key with it). What must never happen: a false miss, an old row
# of the entity asked for answered as absent (hidden data), because its current key and the
# key asked for differ in text but name the same item:
#
# - a number (``N``) key attribute: DynamoDB reads the row at ``5`` for ``5.0``
#   (``Decimal("5.0")``, ``5.00``, ``5E0``): under the current layout ``get`` finds it, so
#   under the old one it must too (fix08f compared the rendered text: a miss, and a delete
#   by that key raised ``ItemNotFoundError``). Every engine: the engine decides what a
#   number key is.
# - an old layout that pads numbers (``{n:05d}``) or a current one that does: the object
#   read from the old row is the entity asked for (a hypothesis property, moto only).)

numbered = Table("red08h_num", pk="pk", sk="sk", key_types={"pk": "N"})


class Num(Entity):
    """A number partition key; its sort key moved (``O#{x}`` -> ``C#{x}``)."""

    class Meta:
        table = numbered
        pk = "{n}"
        sk = "C#{x}"
        previous = Previous(sk="O#{x}")

    n: Decimal
    x: str
    body: str = ""


@pytest.fixture
def ndb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(numbered, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        yield tb


def _plant_num(n: str, x: str, body: str) -> None:
    """A row of the old layout, as the release before stored it."""
    numbered.db.driver.run(call("PutItem", {"TableName": numbered.name, "Item": {
        "pk": {"N": n}, "sk": {"S": f"O#{x}"}, "_type": {"S": "Num"}, "n": {"N": n},
        "x": {"S": x}, "body": {"S": body}}}))


SAME_FIVE = [Decimal("5"), Decimal("5.0"), Decimal("5.00"), Decimal("5E0"), 5, 5.0]


@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("asked", SAME_FIVE, ids=str)
def test_a_number_key_asked_as_another_spelling_finds_the_old_row(
        ndb: TestBackend, asked: Any) -> None:
    """(fix08f: ``get(Num, n=Decimal("5.0"), x="a")`` of an old row at ``5`` was ``None``,
    while the same spelling found a current row: the number key compared as text)"""
    _plant_num("5", "a", "old")
    s = ndb.session()
    s.save(Num(n=Decimal(5), x="b", body="current"))
    s.commit()
    assert s.get(Num, n=asked, x="b") is not None  # (DynamoDB: 5.0 is 5)
    got = s.get(Num, n=asked, x="a")
    assert got is not None and got.body == "old"
    many = s.get_many(Num, [{"n": asked, "x": "a"}, {"n": asked, "x": "b"}])
    assert [o.body if o else None for o in many] == ["old", "current"]
    assert s.get(Num, n=Decimal(6), x="a") is None  # (another number: a miss)
    s.delete(Num, n=asked, x="a")
    s.commit()
    assert s.get(Num, n=Decimal(5), x="a") is None
    assert [i["sk"]["S"] for i in ndb.scan_raw(numbered)] == ["C#b"]


# -- padded templates: the decoded object's key and the asked key in other text ----------

padded = Table("red08h_pad")


class PadOld(Entity):
    """The old layout pads the number, the current one does not."""

    class Meta:
        table = padded
        pk = "N#{n}"
        sk = "P#{c}"
        previous = Previous(pk="OLD#{n:05d}", sk="{c}")

    n: int
    c: str
    body: str = ""


class PadNew(Entity):
    """The current layout pads the number, the old one did not."""

    class Meta:
        table = padded
        pk = "M#{n:05d}"
        sk = "P#{c}"
        previous = Previous(pk="OM#{n}", sk="{c}")

    n: int
    c: str
    body: str = ""


@pytest.fixture(scope="module")
def moto_padded() -> Iterator[None]:
    from dynaorm.testing import moto_backend

    with moto_backend(), use_tables(padded, name_suffix=worker_suffix()):
        yield


@pytest.mark.sync_only
@pytest.mark.engines("moto")
@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(entity=st.sampled_from([PadOld, PadNew]), n=st.integers(0, 99999),
       other=st.integers(0, 99999), c=st.sampled_from(["a", "b"]),
       how=st.sampled_from(["get", "get_many", "update", "delete"]))
def test_an_old_row_of_a_padded_layout_is_the_entity_at_its_key(
        moto_padded: None, entity: type[Entity], n: int, other: int, c: str,
        how: str) -> None:
    """Never a false miss: a row stored in the old layout is found by its entity's own
    key, whichever template pads the number; another number never finds it."""
    spec: Any = entity.__dynaorm_spec__
    old_key = spec.rules.before.key({"n": n, "c": c}, entity.__name__)
    padded.db.driver.run(call("PutItem", {"TableName": padded.name, "Item": {
        "pk": {"S": old_key["pk"]}, "sk": {"S": old_key["sk"]},
        "_type": {"S": entity.__name__}, "n": {"N": str(n)}, "c": {"S": c},
        "body": {"S": "old"}}}))
    try:
        s = Session(padded)
        if other != n:
            assert s.get(entity, n=other, c=c) is None
        if how == "get":
            got = s.get(entity, n=n, c=c)
            assert got is not None and got.body == "old"  # type: ignore[attr-defined]
        elif how == "get_many":
            many = s.get_many(entity, [{"n": n, "c": c}])
            assert many[0] is not None
        elif how == "update":  # (an old row is refused by update(): never "not found")
            with pytest.raises(dynaorm.DynaormError, match="previous layout"):
                s.update(entity, n=n, c=c).set(body="x")
                s.commit()
        else:
            s.delete(entity, n=n, c=c)
            s.commit()
            assert s.get(entity, n=n, c=c) is None
    finally:
        padded.db.driver.run(call("DeleteItem", {"TableName": padded.name, "Key": {
            "pk": {"S": old_key["pk"]}, "sk": {"S": old_key["sk"]}}}))


scoped = Table("red08h_scoped")


class TenantLine(Entity):
    """A lossy old layout (one row per ``tenant_id``; a row per ``item`` now), scoped by
    ``tenant_id``."""

    class Meta:
        table = scoped
        pk = "T#{tenant_id}"
        sk = "{item}"
        previous = Previous(sk="PROFILE", type_name="TenantLineV1")

    tenant_id: str
    item: str
    body: str = ""


@pytest.mark.sync_only
@pytest.mark.engines("moto")
def test_a_scoped_session_reads_and_deletes_only_its_tenants_entity_at_the_key() -> None:
    """A tenant's session: its old row is found at its own key only; another item of the
    same old row is a miss (get, get_many) and not found (delete); another tenant's key
    is refused before anything is sent; nothing is deleted."""
    from dynaorm.testing import moto_backend

    with moto_backend(), use_tables(scoped, name_suffix=worker_suffix()):
        for tenant, item in (("a", "z"), ("b", "y")):
            scoped.db.driver.run(call("PutItem", {"TableName": scoped.name, "Item": {
                "pk": {"S": f"T#{tenant}"}, "sk": {"S": "PROFILE"},
                "_type": {"S": "TenantLineV1"}, "tenant_id": {"S": tenant},
                "item": {"S": item}, "body": {"S": "old"}}}))
        s = Session(scoped, scope={"tenant_id": "a"})
        assert s.get(TenantLine, tenant_id="a", item="z") is not None
        assert s.get(TenantLine, tenant_id="a", item="y") is None
        many = s.get_many(TenantLine, [{"tenant_id": "a", "item": "y"},
                                       {"tenant_id": "a", "item": "z"}])
        assert [o.item if o else None for o in many] == [None, "z"]
        with pytest.raises(dynaorm.ScopeError):
            s.delete(TenantLine, tenant_id="b", item="y")
            s.commit()
        s = Session(scoped, scope={"tenant_id": "a"})
        with pytest.raises(dynaorm.ItemNotFoundError):
            s.delete(TenantLine, tenant_id="a", item="y")
            s.commit()
        assert len(scoped.db.driver.run(call("Scan", {"TableName": scoped.name}))["Items"]) == 2


# --- a keyed commit moving an entity out of its previous layout, per tenant
# (moved from system/test_red_team_seams08_engines.py:
# Seams of release 0.8 that depend on the engine (conditional transactions, a receipt's
# refusal), attacked by someone who wrote none of them: a keyed commit (receipts as rows of
# the plan) that moves an entity out of its previous layout (``Meta.previous``, a rule of its
# own), in a tenant's scoped session. The engine-independent seams are in
# ``system/test_migration_window.py``. Each test states what must never happen; every engine.)

moved = Table("seams08_moved")
RUN = uuid.uuid4().hex[:8]

#: moto and DynamoDB Local (with its async variant): a lost answer settles the same way on
#: every engine (CI's 30 minutes)


class ScopedAcct(Entity):
    """Scoped by ``tenant_id``, in a migration window: its old layout has its own
    separator (``.``)."""

    class Meta:
        table = moved
        pk = "ACCT#{tenant_id}"
        sk = "A#{aid}"
        type_name = "Acct"
        previous = Previous(pk="OLD.{tenant_id}.{aid}", sk="A", type_name="OldAcct")

    tenant_id: str
    aid: str
    body: str = ""


@pytest.fixture
def mdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(moved, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        moved.max_wait = 0
        yield tb


def _session(kind: str | None, tenant: str | None) -> Session:
    scope = {"tenant_id": tenant} if tenant is not None else None
    if kind == "async":
        return cast(Session, BlockingAsyncSession(AsyncSession(moved, scope=scope)))
    return Session(moved, scope=scope)


def _plant(tenant: str, aid: str, body: str) -> None:
    """An item of the old layout, as 0.7's code stored it."""
    moved.db.driver.run(call("PutItem", {"TableName": moved.name, "Item": {
        "pk": {"S": f"OLD.{tenant}.{aid}"}, "sk": {"S": "A"}, "_type": {"S": "OldAcct"},
        "tenant_id": {"S": tenant}, "aid": {"S": aid}, "body": {"S": body}}}))


def _stored_rows(tb: TestBackend) -> list[str]:
    """The table's items that are not receipts, order-independent."""
    return sorted(json.dumps(i, sort_keys=True) for i in tb.scan_raw(moved)
                  if i.get("_type", {}).get("S") != RECEIPT_TYPE)


def _receipts(tb: TestBackend) -> list[dict[str, Any]]:
    return [i for i in tb.scan_raw(moved) if i.get("_type", {}).get("S") == RECEIPT_TYPE]


def _key(tb: TestBackend, name: str) -> str:
    return f"{name}-{tb.session_kind}-{RUN}"


def _handler(tb: TestBackend, tenant: str, aid: str, key: str, *,
             delete: bool = False) -> Any:
    """What a retried handler does: load the account and change it (or delete it by
    key), commit under ``key`` in the tenant's scope."""
    s = _session(tb.session_kind, tenant)
    if delete:  # (by key: the handler's retry finds nothing to load)
        s.delete(ScopedAcct, tenant_id=tenant, aid=aid)
    else:
        acct = s.get(ScopedAcct, tenant_id=tenant, aid=aid)
        assert acct is not None
        acct.body = "changed"
        s.save(acct)
    return s.commit(idempotency_key=key)


# -- receipts x previous layout x scope --------------------------------------------------
@pytest.mark.engines('moto', 'local')
@pytest.mark.parametrize("delete", [False, True], ids=["move", "delete"])
def test_a_retried_keyed_move_out_of_the_old_layout_replays(mdb: TestBackend,
                                                            delete: bool) -> None:
    """A handler loads an account still in its old layout and saves it changed (the move:
    the old row deleted, the new one put) or deletes it by key, under an idempotency key;
    its retry does the same (the account now in the new layout, or gone).
    Never: the retry applied again, told a mismatch for the same call, a row left in the
    old layout, the entity stored twice, a second receipt."""
    _plant("t-1", "a_1", "old")
    key = _key(mdb, "move-delete" if delete else "move")
    first = _handler(mdb, "t-1", "a_1", key, delete=delete)
    assert not first.replayed
    after = _stored_rows(mdb)
    assert not any('"OLD.' in r for r in after), after
    assert len(after) == (0 if delete else 1)
    again = _handler(mdb, "t-1", "a_1", key, delete=delete)
    assert again.replayed
    assert _stored_rows(mdb) == after
    assert len(_receipts(mdb)) == 1


@pytest.mark.engines('moto', 'local')
def test_a_keyed_move_whose_answer_is_lost_is_settled_by_its_receipt(
        mdb: TestBackend) -> None:
    """The move's transaction applied, its answer lost: the commit is settled (applied,
    not an unknown outcome nor a conflict with its own delete of the old row), the account
    is stored once in the new layout, and the retry under the same key replays."""
    _plant("t1", "a", "old")
    key = _key(mdb, "lost-move")
    with inject_faults(moved) as faults:
        faults.lose_answer("TransactWriteItems", times=1)
        result = _handler(mdb, "t1", "a", key)
    assert not result.replayed
    rows = [json.loads(r) for r in _stored_rows(mdb)]
    assert [(r["pk"]["S"], r["sk"]["S"], r["body"]["S"]) for r in rows] == [
        ("ACCT#t1", "A#a", "changed")]
    assert _handler(mdb, "t1", "a", key).replayed


@pytest.mark.engines('moto', 'local')
def test_another_tenants_retry_of_a_move_never_replays_nor_moves_it(
        mdb: TestBackend) -> None:
    """t1 moves its account under key ``K``; t2 (``t1`` with a suffix) under the same key
    moves its own account of the same id: it applies (t1's receipt is not t2's), and
    neither tenant's scoped session can load or move the other's old row."""
    _plant("t1", "a", "old-1")
    _plant("t1_x", "a", "old-2")
    key = _key(mdb, "tenants")
    assert not _handler(mdb, "t1", "a", key).replayed
    assert not _handler(mdb, "t1_x", "a", key).replayed
    assert _handler(mdb, "t1_x", "a", key).replayed
    keys = sorted((json.loads(r)["pk"]["S"], json.loads(r)["body"]["S"]) for r in _stored_rows(mdb))
    assert keys == [("ACCT#t1", "changed"), ("ACCT#t1_x", "changed")]
    assert len(_receipts(mdb)) == 2
    with pytest.raises(ScopeError):
        _session(mdb.session_kind, "t1").get(ScopedAcct, tenant_id="t1_x", aid="a")
    s = _session(mdb.session_kind, "t1")
    other = s.get(ScopedAcct, tenant_id="t1", aid="a")
    assert other is not None
    other.body = "another call"
    s.save(other)
    with pytest.raises(IdempotencyMismatchError):
        s.commit(idempotency_key=key)
