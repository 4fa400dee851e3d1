"""A row whose value kept in S3 is gone (its object removed behind dynaorm's back: a
dangling reference, ``dynaorm check``'s ``dangling-ref``) can still be replaced and
deleted: an overwrite replaces the stored item whole and a delete needs no value, so
neither reads the object's bytes; each conditions on the row as it read it (its
references, another writer's lock) and removes the replaced reference once it applied (a
missing object is no failure). Beside another writer's lock (contract 25 "Beside other
writers"), a save inside the window between the overwrite's read and its write refuses
that round: the overwrite plans again on the fresh row, the lock moving from there, and
is refused, the table as the other writer left it, when every round is raced. The
fixtures and the table are tests/integration/test_offload.py's."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from dynaorm import (
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    Entity,
    F,
    Hook,
    Offloaded,
    OffloadError,
    Unique,
    Versioned,
)
from dynaorm.schema.rules.offloaded import references
from dynaorm.testing import TestBackend, inject_faults
from tests.integration.test_offload import big, rows, s3, store
from tests.support.offload import Bucket
from tests.support.recording import send

__all__ = ["s3"]

pytestmark = pytest.mark.engines("moto", "local", "dynoxide")


class Locked(Entity):
    """Another writer's lock; a value kept in S3 with no default (read back or nothing)."""

    class Meta:
        table = store
        pk = "LOCKED#{lid}"
        sk = "LOCKED"
        lock = "version"

    lid: str
    text: Offloaded[str]
    status: str = "NEW"
    version: int | None = None


class Claimed(Entity):
    """A unique value beside a value kept in S3: its guard moves with an overwrite."""

    class Meta:
        table = store
        pk = "CLAIMED#{cid}"
        sk = "CLAIMED"
        unique = [Unique("email")]

    cid: str
    email: str
    text: Offloaded[str] = ""


class Kept(Versioned):
    class Meta:
        table = store
        pk = "KEPT#{kid}"
        sk = "KEPT"

    kid: str
    text: Offloaded[str] = ""


def _gone(tb: TestBackend, b: Bucket) -> set[str]:
    """Remove every object the table's rows reference (behind dynaorm's back)."""
    uris = {r.uri for row in rows(tb) for r in references(row).values()}
    for uri in uris:
        b.remove(uri)
    assert uris and not b.uris()
    return uris


def _raw(lid: str) -> dict[str, Any]:
    item: dict[str, Any] = send(store, "GetItem", {
        "TableName": store.name, "ConsistentRead": True,
        "Key": {"pk": {"S": f"LOCKED#{lid}"}, "sk": {"S": "LOCKED"}}})["Item"]
    return item


def their_save(item: dict[str, Any], **changes: Any) -> None:
    """PynamoDB-style save: the whole item as read, version + 1, conditioned on the
    version (its reference to the missing object copied as it is)."""
    old = item["version"]["N"]
    send(store, "PutItem", {"TableName": store.name,
                            "Item": {**item, **changes, "version": {"N": str(int(old) + 1)}},
                            "ConditionExpression": "#0 = :0",
                            "ExpressionAttributeNames": {"#0": "version"},
                            "ExpressionAttributeValues": {":0": {"N": old}}})


def _first(tb: TestBackend, b: Bucket) -> set[str]:
    """One of each entity, every object of theirs then removed (the URIs returned)."""
    s = tb.session()
    s.save(Locked(lid="1", text=big()))
    s.save(Claimed(cid="1", email="a@x", text=big(c="c")))
    s.save(Kept(kid="1", text=big(c="k")))
    s.commit()
    return _gone(tb, b)


def _dangling(tb: TestBackend, b: Bucket) -> set[str]:
    """The references of the table's rows no object answers (the objects: every one a
    row references, none left over)."""
    held = {r.uri for row in rows(tb) for r in references(row).values()}
    assert b.uris() <= held, "an object no row references is left in S3"
    return held - b.uris()


# -- replaced and deleted, never read ------------------------------------------------------
@pytest.mark.parametrize("value", ["small", "large"])
def test_an_overwrite_replaces_a_row_whose_object_is_gone(
        s3: tuple[TestBackend, Bucket], value: str) -> None:
    """Each entity (another writer's lock, a unique value, a history) is overwritten: the
    new values are read back, the lock moved from the stored one, the guard moved, a
    version kept; no reference dangles and no object is left unreferenced."""
    tb, b = s3
    gone = _first(tb, b)
    text = big(c="n") if value == "large" else "new"
    s = tb.session()
    s.save(Locked(lid="1", text=text, status="X"), overwrite=True)
    s.save(Claimed(cid="1", email="b@x", text=text), overwrite=True)
    s.save(Kept(kid="1", text=text), overwrite=True)
    s.commit()
    r = tb.session()
    locked = r.get(Locked, lid="1", consistent=True)
    assert locked is not None and (locked.text, locked.status, locked.version) == (
        text, "X", 2)
    claimed = r.get(Claimed, cid="1", consistent=True)
    assert claimed is not None and (claimed.email, claimed.text) == ("b@x", text)
    kept = r.get(Kept, kid="1", consistent=True)
    assert kept is not None and (kept.text, kept.version) == (text, 2)
    s = tb.session()  # (the old value's guard released: another entity may claim it)
    s.save(Claimed(cid="2", email="a@x"))
    s.commit()
    (history,) = _dangling(tb, b)  # (only Kept's first version row's, which it keeps)
    assert history in gone


def test_a_delete_by_key_of_a_row_whose_object_is_gone(
        s3: tuple[TestBackend, Bucket]) -> None:
    """Deleting needs no value: each row goes, with its guard and its history."""
    tb, b = s3
    _first(tb, b)
    s = tb.session()
    s.delete(Locked(lid="1", text=""))
    s.delete(Claimed(cid="1", email="a@x"))
    s.delete(Kept(kid="1"), history=True)
    s.commit()
    assert rows(tb) == []
    assert not b.uris()


def test_an_overwrite_refused_by_its_condition_leaves_the_table_as_it_was(
        s3: tuple[TestBackend, Bucket]) -> None:
    """The caller's condition fails: ConditionFailedError (its stored entity unsaid: its
    value cannot be read), the row as it was, and the object the overwrite uploaded gone."""
    tb, b = s3
    _first(tb, b)
    before = _raw("1")
    s = tb.session()
    s.save(Locked(lid="1", text=big(c="n")), overwrite=True, condition=F("status") == "NOPE")
    with pytest.raises(ConditionFailedError) as failed:
        s.commit()
    assert failed.value.item is None
    assert _raw("1") == before and not b.uris()


# -- another writer inside the window ------------------------------------------------------
class _Racer(Hook):
    """Another writer's save, each time the overwrite's write starts (up to ``times``)."""

    def __init__(self, times: int) -> None:
        self.times, self.saved, self.busy = times, 0, False

    def on_start(self, phase: Any) -> object:
        if getattr(phase, "operation", None) in ("PutItem", "TransactWriteItems") and (
                self.saved < self.times and not self.busy):
            self.saved, self.busy = self.saved + 1, True
            try:  # (their own PutItem passes through this client too)
                their_save(_raw("1"), status={"S": f"THEIRS{self.saved}"})
            finally:
                self.busy = False
        return None


@pytest.mark.sync_only  # (a writer of the sync client inside the overwrite's request)
@pytest.mark.parametrize("rounds", [1, 3])
def test_an_overwrite_beside_a_writer_in_its_window_keeps_their_lock(
        s3: tuple[TestBackend, Bucket], rounds: int) -> None:
    """Their save lands between the overwrite's read and its write: that round is refused
    by the lock as read. Once: the overwrite plans again on their row and applies, the
    lock moved from theirs. Every round (3): refused, ConcurrentModificationError, the
    row as they left it, and nothing the overwrite uploaded left in S3."""
    tb, b = s3
    gone = _first(tb, b)
    racer = _Racer(rounds)
    store.db.add_hook(racer)
    try:
        s = tb.session()
        s.save(Locked(lid="1", text=big(c="n"), status="OURS"), overwrite=True)
        if rounds == 1:
            s.commit()
        else:
            with pytest.raises(ConcurrentModificationError):
                s.commit()
    finally:
        store.db.remove_hook(racer)
    assert racer.saved == rounds
    if rounds == 1:
        got = tb.session().get(Locked, lid="1", consistent=True)
        assert got is not None and (got.text, got.status, got.version) == (
            big(c="n"), "OURS", 3)
        assert _dangling(tb, b) <= gone  # (its own object there, the others' as they were)
    else:
        row = _raw("1")
        assert (row["status"], row["version"]) == ({"S": "THEIRS3"}, {"N": "4"})
        assert not b.uris()


# -- a lost answer ------------------------------------------------------------------------
@pytest.mark.sync_only  # (their save from the sync client, inside the window)
@pytest.mark.parametrize("op", ["PutItem", "TransactWriteItems"])  # (one row, or two)
@pytest.mark.parametrize("theirs", [False, True], ids=["alone", "their-save"])
def test_an_overwrite_whose_answer_is_lost_never_removes_what_a_row_references(
        s3: tuple[TestBackend, Bucket], op: str, theirs: bool) -> None:
    """The overwrite of a row whose object is gone applies, its answer is lost (and
    another writer saves the row again inside the window, keeping its reference):
    whatever the overwrite is told, no row's reference dangles but the history's (the
    stored objects all referenced), and the row reads the overwrite's value."""
    tb, b = s3
    gone = _first(tb, b)
    s = tb.session()
    s.save(Locked(lid="1", text=big(c="n"), status="OURS"), overwrite=True)
    if op == "TransactWriteItems":
        s.save(Kept(kid="1", text=big(c="m")), overwrite=True)

    ran = []

    def after() -> None:
        ran.append(op)  # (the answer lost: the window opened)
        if theirs:
            their_save(_raw("1"), status={"S": "THEIRS"})

    with inject_faults(store) as faults:
        faults.lose_answer(op, after=after)
        with contextlib.suppress(DynaormError):
            s.commit()
    assert ran == [op] and _dangling(tb, b) <= gone
    r = tb.session()
    got = r.get(Locked, lid="1", consistent=True)
    assert got is not None and (got.text, got.status) == (
        big(c="n"), "THEIRS" if theirs else "OURS")
    if op == "TransactWriteItems":
        kept = r.get(Kept, kid="1", consistent=True)
        assert kept is not None and kept.text == big(c="m")


# -- an update needs the value ---------------------------------------------------------------
@pytest.mark.parametrize("field", ["text", "status"])
def test_an_update_of_a_row_whose_object_is_gone_names_the_way_out(
        s3: tuple[TestBackend, Bucket], field: str) -> None:
    """An update by key is planned as a save of the whole object, the gone value included
    (setting it, or another field): refused before anything is sent, OffloadError naming
    the field, the missing object and the way out (an overwrite or a delete needs no
    value); the row as it was."""
    tb, b = s3
    (uri,) = _first(tb, b) & {r.uri for r in references(_raw("1")).values()}
    before = _raw("1")
    s = tb.session()
    s.update(Locked, lid="1").set(**{field: "new"})
    with pytest.raises(OffloadError) as refused:
        s.commit()
    assert all(w in str(refused.value) for w in ("Locked.text", uri, "overwrite=True",
                                                  "delete"))
    assert _raw("1") == before and not b.uris()
