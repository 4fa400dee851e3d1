"""Red team of 0.10's seams (contract 25): where two of the release's new surfaces meet.

Each test states what must never happen where the two meet: nothing lost or half
written, no other writer's update lost, no orphan object in S3, no plaintext where
``Encrypted`` is declared, every caller told the truth. The surfaces: another writer's
optimistic lock (``Meta.lock``), the value tree (``Encrypted`` in a nested model,
``Offloaded``), the planner's inline rows of an ``offload=`` table (a value moving between
S3 and its row as ``offload_threshold`` changes), re-encryption reaching offloaded values,
bulk loads, inference. The other writer is written by hand as PynamoDB's ``save`` sends it
(``PutItem`` of the item it read, ``version`` + 1, conditioned on the version read: the
rule tests/support/other_writers.py mimics), so that it can carry a binary attribute.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

import pytest
from pydantic import BaseModel

from dynaorm import (
    ConcurrentModificationError,
    Encrypted,
    Entity,
    Lock,
    Offloaded,
    OffloadError,
    Session,
    StaticKeyring,
    Table,
    Versioned,
)
from dynaorm.schema.rules.offloaded import references
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.offload import Bucket, bucket, referenced
from tests.support.recording import send

#: dynaorm's behaviour beside another writer, on the embedded default (each test says why
#: where it runs on DynamoDB Local too)
pytestmark = [pytest.mark.engines("moto"), pytest.mark.sync_only]

E = TypeVar("E", bound=Entity)
KEY, NEW, MAC = b"k" * 32, b"n" * 32, b"m" * 32
LIMIT = 1000
seams = Table("seams_010", offload="s3://placeholder/s/", offload_threshold=LIMIT,
              keyring=StaticKeyring(KEY, mac_key=MAC))


class Card(BaseModel):
    label: str = ""
    pan: str = ""


class Locked(Entity):
    """Another writer's item (PynamoDB's lock) with dynaorm's kinds in it."""

    class Meta:
        table = seams
        pk = "LOCKED#{lid}"
        sk = "LOCKED"
        lock = "version"

    lid: str
    status: str = "NEW"
    secret: Encrypted[str] = ""
    body: Offloaded[str] = ""
    card: Encrypted[Card] | None = None
    pans: list[Encrypted[str]] = []
    version: int | None = None


@pytest.fixture
def tb(backend: str | None, request: pytest.FixtureRequest,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestBackend, Bucket]]:
    seams.keyring = StaticKeyring(KEY, mac_key=MAC)
    seams.offload_threshold = LIMIT
    with bucket(backend, request, monkeypatch, seams) as b, use_tables(
            seams, endpoint_url=backend, name_suffix=worker_suffix(),
            wire=wire_of(request)) as t:
        yield t, b
    seams.keyring = StaticKeyring(KEY, mac_key=MAC)
    seams.offload_threshold = LIMIT


def raw(lid: str) -> dict[str, Any]:
    """The stored item, read as another writer reads it."""
    out = send(seams, "GetItem", {"TableName": seams.name, "ConsistentRead": True,
                                  "Key": {"pk": {"S": f"LOCKED#{lid}"}, "sk": {"S": "LOCKED"}}})
    item: dict[str, Any] = out["Item"]
    return item


def their_save(item: dict[str, Any], **changes: dict[str, Any]) -> bool:
    """PynamoDB's ``save`` of ``item`` as it read it (with ``changes``): the whole item,
    its version + 1, conditioned on the version read. ``False``: refused by the lock."""
    old = item["version"]["N"]
    new = {**item, **changes, "version": {"N": str(int(old) + 1)}}
    try:
        send(seams, "PutItem", {"TableName": seams.name, "Item": new,
                                "ConditionExpression": "#0 = :0",
                                "ExpressionAttributeNames": {"#0": "version"},
                                "ExpressionAttributeValues": {":0": {"N": old}}})
    except Exception as exc:  # (the engine's refusal, through dynaorm's wire)
        if "ConditionalCheckFailed" not in str(exc):
            raise
        return False
    return True


def stored(s: Any, cls: type[E], **key: Any) -> E:
    """The stored entity at ``key``, read consistently (it must be there)."""
    obj = s.get(cls, consistent=True, **key)
    assert obj is not None
    return obj


def consistent(t: TestBackend, b: Bucket) -> None:
    """No orphan object, no dangling reference."""
    assert b.uris() == referenced(t.scan_raw())


def big(c: str = "x", n: int = 5000) -> str:
    return c * n


# -- another writer's lock x the value tree (Offloaded, Encrypted in a nested model) -------
@pytest.mark.engines("moto", "local")  # (conditions, transactions: the reference engine too)
def test_a_value_moving_to_s3_under_their_lock_is_refused_whole_when_they_saved_since(
        tb: tuple[TestBackend, Bucket]) -> None:
    """Our loaded save grows an inline value past the threshold after their save: refused
    (their update kept), and the object it uploaded for it removed; saved afresh, the value
    goes to S3 and the lock moves once."""
    t, b = tb
    s = t.session()
    s.save(Locked(lid="1", body="short"))
    s.commit()
    ours = stored(t.session(), Locked, lid="1")
    assert ours is not None and ours.version == 1
    assert their_save(raw("1"), status={"S": "THEIRS"})
    ours.body = big()
    s = t.session()
    s.save(ours)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    after = raw("1")
    assert after["status"] == {"S": "THEIRS"} and after["body"] == {"S": "short"}
    assert after["version"] == {"N": "2"}
    assert b.keys() == set()  # (what it uploaded for the refused save: removed)
    s = t.session()
    ours = stored(s, Locked, lid="1")
    ours.body = big()
    s.save(ours)
    s.commit()
    after = raw("1")
    assert set(references(after)) == {"body"} and after["version"] == {"N": "3"}
    assert after["status"] == {"S": "THEIRS"}
    consistent(t, b)


def test_a_value_moving_into_its_row_after_the_threshold_rose_keeps_their_lock(
        tb: tuple[TestBackend, Bucket]) -> None:
    """A value kept in S3, the threshold raised: a save that leaves it alone keeps its
    object and moves the lock; one that writes it after their save is refused, the object
    kept (the row still references it); saved afresh it moves into its row, its object
    removed, the lock moved once."""
    t, b = tb
    s = t.session()
    s.save(Locked(lid="1", body=big()))
    s.commit()
    (uri,) = b.uris()
    seams.offload_threshold = 100_000
    s = t.session()
    ours = stored(s, Locked, lid="1")
    ours.status = "OURS"
    s.save(ours)
    s.commit()
    assert b.uris() == {uri} and raw("1")["version"] == {"N": "2"}
    ours = stored(t.session(), Locked, lid="1")
    assert their_save(raw("1"), status={"S": "THEIRS"})
    ours.body = big("y")
    s = t.session()
    s.save(ours)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert b.uris() == {uri} and raw("1")["status"] == {"S": "THEIRS"}
    assert stored(t.session(), Locked, lid="1").body == big()
    s = t.session()
    ours = stored(s, Locked, lid="1")
    ours.body = big("y")
    s.save(ours)
    s.commit()
    after = raw("1")
    assert after["body"] == {"S": big("y")} and after["version"] == {"N": "4"}
    assert b.keys() == set()


@pytest.mark.engines("moto", "local")  # (conditions, transactions: the reference engine too)
def test_a_delete_of_an_offloaded_row_under_their_lock_keeps_the_object_when_refused(
        tb: tuple[TestBackend, Bucket]) -> None:
    t, b = tb
    s = t.session()
    s.save(Locked(lid="1", body=big()))
    s.commit()
    before = b.uris()
    ours = stored(t.session(), Locked, lid="1")
    assert their_save(raw("1"), status={"S": "THEIRS"})
    s = t.session()
    s.delete(ours)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert b.uris() == before and raw("1")["status"] == {"S": "THEIRS"}
    s = t.session()
    s.delete(stored(s, Locked, lid="1"))
    s.commit()
    assert t.scan_raw() == [] and b.keys() == set()


def test_sealed_members_changed_under_their_lock_stay_sealed_and_move_it(
        tb: tuple[TestBackend, Bucket]) -> None:
    """A sealed nested model and a list of sealed members, changed by a loaded save of a
    locked item: the row holds ciphertext (never the text), the lock moves once, their
    stale save is refused; our stale save after theirs is refused too."""
    t, _ = tb
    s = t.session()
    s.save(Locked(lid="1", card=Card(label="a", pan="4111-SECRET-1"), pans=["SECRET-A"]))
    s.commit()
    stale = raw("1")
    s = t.session()
    ours = stored(s, Locked, lid="1")
    ours.card = Card(label="a", pan="4111-SECRET-2")
    ours.pans.append("SECRET-B")
    s.save(ours)
    s.commit()
    after = raw("1")
    assert "SECRET" not in repr(after) and list(after["card"]) == ["B"]
    assert list(after["pans"]) == ["B"]  # (a list of sealed members: sealed whole)
    assert after["version"] == {"N": "2"}
    assert not their_save(stale, status={"S": "THEIRS"})
    got = stored(t.session(), Locked, lid="1")
    assert got.card is not None and (got.card.pan, got.pans) == (
        "4111-SECRET-2", ["SECRET-A", "SECRET-B"])
    mine = stored(t.session(), Locked, lid="1")
    assert their_save(raw("1"), status={"S": "THEIRS"})
    mine.pans[0] = "SECRET-C"
    s = t.session()
    s.save(mine)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert stored(t.session(), Locked, lid="1").pans[0] == "SECRET-A"


# -- re-encryption x another writer's lock ---------------------------------------------------
@pytest.mark.parametrize("where", ["row", "s3"])
def test_a_rotation_moves_their_lock_so_a_copy_read_before_it_cannot_undo_it(
        tb: tuple[TestBackend, Bucket], where: str) -> None:
    """``jobs.reencrypt`` of a locked entity reports the row resealed, ``failed`` empty:
    the previous key may go. Their save of the item read before the rotation (as a
    mapper that models the attribute as binary writes it back) must then be refused by
    their own lock, or the value is sealed under the dropped key again and lost."""
    from dynaorm.jobs import reencrypt, run_local

    t, b = tb
    s = t.session()
    s.save(Locked(lid="1", secret="s3cret", body=big() if where == "s3" else "inline"))
    s.commit()
    stale = raw("1")
    seams.keyring = StaticKeyring(NEW, previous=[KEY], mac_key=MAC)
    report = run_local(reencrypt(Locked), workers=1)
    assert report.failed == [] and report.resealed == 1
    assert not their_save(stale, status={"S": "THEIRS"})
    seams.keyring = StaticKeyring(NEW, mac_key=MAC)  # (the previous key dropped)
    assert stored(t.session(), Locked, lid="1").secret == "s3cret"
    consistent(t, b)


# -- a bulk load x another writer's lock, x keys per tenant ----------------------------------
loaded = Table("seams_010_load", keyring=StaticKeyring(KEY, mac_key=MAC), key_scope="tenant")
BUCKET = "seams-loads"


class Ticket(Entity):
    """Another writer's item (the Enhanced Client's lock: 10 on a new item, by 5) with a value
    sealed under its tenant's key."""

    class Meta:
        table = loaded
        pk = "T#{tenant}#TICKET#{tid}"
        sk = "TICKET"
        lock = Lock.enhanced("revision", start_at=5, increment_by=5)

    tenant: str
    tid: str
    note: Encrypted[str] = ""
    status: str = ""
    revision: int | None = None


@pytest.fixture
def lb(backend: str | None, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestBackend]:
    """``loaded`` on moto with the bulk API's emulator and moto's S3 (test_load.py's)."""
    from moto import mock_aws

    from dynaorm.jobs.export_files import s3_client
    from dynaorm.testing import moto_backend

    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    loaded.keyring = StaticKeyring(KEY, mac_key=MAC)
    with mock_aws(), moto_backend(), use_tables(loaded, endpoint_url=backend,
                                                 name_suffix=worker_suffix()) as t:
        s3_client().create_bucket(Bucket=BUCKET)
        yield t


def test_a_bulk_load_starts_their_lock_as_a_save_does_and_their_stale_write_is_refused(
        lb: TestBackend) -> None:
    """An entity loaded by ``jobs.load`` holds their lock's first value (a save's: the
    Enhanced Client's ``start_at`` + ``increment_by``), so their next write of it
    conditions on it; its sealed value is under its tenant's key, never the text."""
    from dynaorm.jobs import load

    report = load(loaded, [Ticket(tenant="acme", tid=str(n), note=f"SECRET-{n}")
                           for n in range(3)], s3=f"s3://{BUCKET}/runs", name="t", poll=0)
    assert report.ok and report.loaded == 3
    with Session(loaded) as s:
        s.save(Ticket(tenant="acme", tid="saved", note="SECRET-s"))
    rows = {r["tid"]["S"]: r for r in lb.scan_raw()}
    assert {t: r["revision"] for t, r in rows.items()} == {t: {"N": "10"} for t in rows}
    assert "SECRET" not in repr(rows)
    with Session(loaded) as s:
        got = s.get(Ticket, tenant="acme", tid="1")
        assert got is not None and (got.note, got.revision) == ("SECRET-1", 10)
        got.note = "SECRET-1b"
        s.save(got)
    assert {r["tid"]["S"]: r["revision"] for r in lb.scan_raw()}["1"] == {"N": "15"}


def test_a_bulk_load_for_a_forgotten_tenant_stores_nothing_of_it_and_says_so(
        lb: TestBackend) -> None:
    """After ``forget`` of a tenant, a load holding its entities (a restore from before
    the forget) seals nothing for it: nothing of that tenant stored (no plaintext, no
    row), and either the load is refused before it writes anything (what it does) or the
    other tenant's entities are loaded and the forgotten ones reported failed."""
    from dynaorm import DynaormError
    from dynaorm.jobs import load

    with Session(loaded) as s:
        s.save(Ticket(tenant="gone", tid="0", note="SECRET-old"))
    loaded.forget(scope={"tenant": "gone"})
    objs = [Ticket(tenant=t, tid=str(n), note=f"SECRET-{t}{n}")
            for t in ("kept", "gone") for n in (1, 2)]
    try:
        report = load(loaded, objs, s3=f"s3://{BUCKET}/runs", name="f", poll=0)
    except DynaormError as exc:  # (refused whole: before anything is written)
        assert "forgotten" in str(exc)
        report = None
    rows = lb.scan_raw()
    assert "SECRET" not in repr(rows)
    assert sorted(r["tid"]["S"] for r in rows if r["tenant"]["S"] == "gone") == ["0"]
    kept = sorted(r["tid"]["S"] for r in rows if r["tenant"]["S"] == "kept")
    if report is None:
        assert kept == []
    else:
        assert kept == ["1", "2"] and not report.ok and report.loaded == 2


# -- the threshold moving values between S3 and the row x rotation x version rows ----------
class Diary(Versioned):
    """Sealed, then kept in S3 above the threshold, with history: each version row holds
    its own object."""

    class Meta:
        table = seams
        pk = "DIARY#{did}"
        sk = "DIARY"

    did: str
    entry: Encrypted[Offloaded[str]] = ""
    mood: str = ""


@pytest.mark.parametrize("threshold", [100_000, 10], ids=["raised", "lowered"])
def test_a_rotation_after_the_threshold_changed_reaches_every_copy_and_leaves_no_orphan(
        tb: tuple[TestBackend, Bucket], threshold: int) -> None:
    """Values sealed and placed under one threshold (some in S3, some in their rows, with
    version rows), the threshold then raised or lowered, then a rotation: every copy is
    sealed under the new key (the old key can go), the bucket holds exactly what the
    rows reference, and the history reads back whole."""
    from dynaorm.jobs import reencrypt, run_local

    t, b = tb
    s = t.session()
    d = Diary(did="1", entry=big("a"))
    s.save(d)
    s.commit()
    d.entry = "short"
    s.save(d)
    s.commit()
    d.entry = big("b")
    s.save(d)
    s.commit()
    assert len(b.keys()) == 3  # (the latest copy and two version rows: the short stays)
    seams.offload_threshold = threshold
    seams.keyring = StaticKeyring(NEW, previous=[KEY], mac_key=MAC)
    report = run_local(reencrypt(Diary), workers=1)
    assert report.failed == [] and report.resealed == 4
    seams.keyring = StaticKeyring(NEW, mac_key=MAC)  # (the previous key dropped)
    r = t.session()
    assert [v.entry[:1] for v in r.history(Diary, did="1")] == ["a", "s", "b"]
    assert stored(r, Diary, did="1").entry == big("b")
    consistent(t, b)
    got = stored(r, Diary, did="1")
    got.mood = "ok"
    r.save(got)
    r.commit()
    consistent(t, b)
    r.delete(stored(r, Diary, did="1"), history=True)
    r.commit()
    assert t.scan_raw() == [] and b.keys() == set()


# -- an update by key (read first, planned as a save) x their lock x a value moving to S3 ---
@pytest.mark.engines("moto", "local")  # (conditions, transactions: the reference engine too)
@pytest.mark.parametrize("value", ["big", "small"])
@pytest.mark.parametrize("how", ["by key", "loaded", "upsert"])
def test_an_update_placing_a_value_in_s3_with_their_save_in_its_window_loses_nothing(
        tb: tuple[TestBackend, Bucket], how: str, value: str) -> None:
    """Our update sets an offloaded value past the threshold (its object uploaded before
    the write); their save lands between our read and our write: the write is refused or
    planned again on their item, never over it: their status kept, the lock moved past
    theirs, and the bucket holds exactly what the row references (the refused round's
    upload removed)."""
    from dynaorm import Hook

    t, b = tb
    s = t.session()
    s.save(Locked(lid="1", body="short"))
    s.commit()
    fired: list[bool] = []

    class Theirs(Hook):  # (their save, in our write's window)
        def on_start(self, phase: Any) -> object:
            if getattr(phase, "operation", None) in (
                    "UpdateItem", "PutItem", "TransactWriteItems") and (
                    not fired):
                fired.append(True)
                assert their_save(raw("1"), status={"S": "THEIRS"})
            return None

    ours = stored(t.session(), Locked, lid="1") if how == "loaded" else None
    seams.db.add_hook(hook := Theirs())
    try:
        s = t.session()
        if ours is not None:
            s.update(ours).set(body=big() if value == "big" else "tiny")
        else:
            s.update(Locked, lid="1", upsert=how == "upsert").set(
                body=big() if value == "big" else "tiny")
        try:
            s.commit()
            applied = True
        except ConcurrentModificationError:
            applied = False
    finally:
        seams.db.remove_hook(hook)
    after = raw("1")
    assert fired and after["status"] == {"S": "THEIRS"}
    assert after["version"] == {"N": "3" if applied else "2"}
    assert set(references(after)) == ({"body"} if applied and value == "big" else set())
    consistent(t, b)


# -- the planner's fallback for a value not at hand (a pickled object) x their lock --------
@pytest.mark.parametrize("theirs_first", [False, True], ids=["alone", "after theirs"])
def test_a_pickled_loaded_object_with_a_value_in_s3_keeps_their_lock(
        tb: tuple[TestBackend, Bucket], theirs_first: bool) -> None:
    """A loaded object pickled (its reference without the object's bytes: the commit's
    plan finds the value not at hand, fetches it and plans again): its save keeps the
    unchanged value's object, conditions on their lock as loaded and moves it once;
    after their save it is refused, and nothing is uploaded or removed."""
    import pickle

    t, b = tb
    s = t.session()
    s.save(Locked(lid="1", body=big()))
    s.commit()
    before = b.uris()
    ours = pickle.loads(pickle.dumps(stored(t.session(), Locked, lid="1")))
    if theirs_first:
        assert their_save(raw("1"), status={"S": "THEIRS"})
    ours.status = "OURS"
    s = t.session()
    s.save(ours)
    if theirs_first:
        with pytest.raises(ConcurrentModificationError):
            s.commit()
    else:
        s.commit()
    after = raw("1")
    assert after["status"] == {"S": "THEIRS" if theirs_first else "OURS"}
    assert after["version"] == {"N": "2"} and b.uris() == before
    consistent(t, b)


# -- forgetting a tenant x their lock ---------------------------------------------------------
@pytest.mark.parametrize("how", ["by key", "loaded before", "keyed commit", "update by key"])
def test_a_forgotten_tenants_locked_row_is_deleted_without_its_values(
        lb: TestBackend, how: str) -> None:
    """A locked entity's row of a forgotten tenant: a delete (by key: read first for the
    lock; of an object loaded before the forget; in a keyed commit) goes without opening
    its sealed value, conditioned on their lock; an update by key of a field that seals
    nothing is refused as ForgottenError (the row as it was) or applied (its sealed value
    as it was, the lock moved once). The other tenant's row stays."""
    from dynaorm import ForgottenError

    with Session(loaded) as s:
        for tenant in ("gone", "kept"):
            s.save(Ticket(tenant=tenant, tid="1", note=f"SECRET-{tenant}"))
    s = Session(loaded)
    before = stored(s, Ticket, tenant="gone", tid="1")
    kept = [r for r in lb.scan_raw() if r["tenant"] == {"S": "kept"}]
    loaded.forget(scope={"tenant": "gone"})
    s = Session(loaded)
    if how == "update by key":
        was = next(r for r in lb.scan_raw() if r["tenant"] == {"S": "gone"})
        s.update(Ticket, tenant="gone", tid="1").set(status="CLOSED")
        try:
            s.commit()
        except ForgottenError:
            assert next(r for r in lb.scan_raw() if r["tenant"] == {"S": "gone"}) == was
        else:  # (applied: its sealed value as it was, their lock moved once)
            now = next(r for r in lb.scan_raw() if r["tenant"] == {"S": "gone"})
            assert (now["note"], now["status"], now["revision"]) == (
                was["note"], {"S": "CLOSED"}, {"N": "15"})
        return
    if how == "loaded before":
        s.delete(before)
    else:
        s.delete(Ticket, tenant="gone", tid="1")
    s.commit(idempotency_key="gone" if how == "keyed commit" else None)
    rows = [r for r in lb.scan_raw() if not r.get("_type", {}).get("S", "").startswith(
        "dynaorm:receipt")]
    assert rows == kept


# -- the public door x the value tree: sealed_by of a sealed value kept in S3 --------------
def test_sealed_by_never_calls_a_sealed_value_kept_in_s3_unsealed(
        tb: tuple[TestBackend, Bucket]) -> None:
    """``sealed_by`` is documented as telling "which attributes are sealed, and which
    values a key still holds" (an operator's check before dropping a previous key). A
    sealed value kept in S3 is stored as a reference in its row: asked of it, sealed_by
    must name the key (read from the object) or refuse, never answer "not sealed": it
    refuses, naming the object, whose bytes name the key."""
    from dynaorm.codec import sealed_by
    from dynaorm.schema.rules.encrypted import header_of

    t, b = tb
    s = t.session()
    s.save(Diary(did="1", entry=big()))
    s.commit()
    row = next(r for r in t.scan_raw() if references(r))
    (uri,) = {ref.uri for ref in references(row).values()}
    header = header_of({"B": b.body(uri)})  # (the object holds the ciphertext)
    assert header is not None
    with pytest.raises(OffloadError) as refused:
        sealed_by(row["entry"])
    assert refused.value.uri == uri
    assert sealed_by({"B": b.body(uri)}) == header[0]


# -- a refusal's stored entity (ConcurrentModificationError.item) x values in S3, sealed ---
@pytest.mark.parametrize("kept", ["plain", "sealed", "in s3"])
@pytest.mark.engines("moto", "local")  # (conditions, transactions: the reference engine too)
def test_a_refusal_under_their_lock_names_the_stored_entity_with_its_values(
        tb: tuple[TestBackend, Bucket], kept: str) -> None:
    """Our stale save of a locked item refused after their save: the error's ``item``,
    "the stored entity now", holds the values as stored (their status, the lock they
    moved), the value kept in S3 as the value and the sealed one opened, never a
    reference map or ciphertext in their place, and never ``None`` ("no item") while
    DynamoDB returned it (it does, for each kind here)."""
    t, _ = tb
    s = t.session()
    secret, body = {"plain": ("", "b"), "sealed": ("s3cret", "b"), "in s3": ("", big())}[kept]
    s.save(Locked(lid="1", secret=secret, body=body))
    s.commit()
    ours = stored(t.session(), Locked, lid="1")
    assert their_save(raw("1"), status={"S": "THEIRS"})
    ours.status = "OURS"
    s = t.session()
    s.save(ours)
    with pytest.raises(ConcurrentModificationError) as refused:
        s.commit()
    now = refused.value.item
    assert now is not None and (now.status, now.version, now.secret, now.body) == (
        "THEIRS", 2, secret, body)


# -- the inline rows' shortcut x a sealed value that outgrows its plain text ---------------
def test_a_sealed_value_whose_plain_text_is_small_but_ciphertext_is_not_is_placed_whole(
        tb: tuple[TestBackend, Bucket]) -> None:
    """The planner asks the placing rule nothing for a held value whose payload cannot
    pass the threshold (a string of at most a quarter of it in characters): asked of the
    plain text, before ``Encrypted`` seals it. With a threshold below the seal's overhead
    the ciphertext of such a text is above it: it is kept in S3 all the same, through
    saves that change it, leave it alone, overwrite and delete with history, and the
    bucket always holds exactly what the rows reference."""
    t, b = tb
    seams.offload_threshold = 40
    s = t.session()
    d = Diary(did="1", entry="abcdefghij")  # (10 characters: 40 bytes at most as text)
    s.save(d)
    s.commit()
    assert all(set(references(r)) == {"entry"} for r in t.scan_raw())
    consistent(t, b)
    for change in ("mood", "entry", "overwrite"):
        s = t.session()
        got = stored(s, Diary, did="1")
        if change == "mood":
            got.mood = "ok"
        else:
            got.entry = "klmnopqrst"
        s.save(got, overwrite=change == "overwrite")
        s.commit()
        consistent(t, b)
        assert all(set(references(r)) == {"entry"} for r in t.scan_raw())
    r = t.session()
    assert [v.entry for v in r.history(Diary, did="1")][-1] == "klmnopqrst"
    r.delete(stored(r, Diary, did="1"), history=True)
    r.commit()
    assert t.scan_raw() == [] and b.keys() == set()
