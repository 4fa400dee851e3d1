"""No lost updates (contract section 4, 0.2): an update of a persisted object is conditioned
on the stored values of every attribute it writes or removes, on every engine. Racing
writers are in tests/system/test_concurrency.py, the request size those conditions add in
tests/unit/test_write_plan.py."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import dynaorm
from dynaorm import (
    Compressed,
    ConcurrentModificationError,
    Encrypted,
    Entity,
    F,
    OutcomeUnknownError,
    Session,
    StaticKeyring,
    Table,
    Unique,
)
from dynaorm.jobs import reencrypt, run_local
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.models import Note, app
from tests.support.raw import raw_get, raw_set
from tests.support.recording import send

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


def _note(db: TestBackend, **fields: Any) -> None:
    with db.session() as s:
        s.save(Note(note_id="n1", **fields))


def _load(db: TestBackend) -> tuple[Session, Note]:
    s = db.session()
    n = s.get(Note, note_id="n1")
    assert n is not None
    return s, n


def _stale_second(db: TestBackend, stored: dict[str, Any], **change: Any
                  ) -> tuple[Session, Note]:
    """Note ``n1`` stored with ``stored`` and loaded twice; the first copy changed by
    ``change`` and committed: the second session and its copy, stale now."""
    _note(db, **stored)
    s1, a = _load(db)
    s2, b = _load(db)
    for name, value in change.items():
        setattr(a, name, value)
    s1.save(a)
    s1.commit()
    return s2, b


def _refused_changing_nothing(db: TestBackend, s: Session) -> ConcurrentModificationError:
    """``s``'s commit refused as a lost update, the table as it was before it."""
    before = db.scan()
    with pytest.raises(ConcurrentModificationError) as err:
        s.commit()
    assert db.scan() == before
    return err.value


def test_same_attribute_from_one_loaded_state_second_writer_fails(db: TestBackend) -> None:
    s2, b = _stale_second(db, {"body": "v0"}, body="from a")
    b.body = "from b"
    s2.save(b)
    assert _refused_changing_nothing(db, s2).entity is Note
    assert db.scan()[0]["body"] == "from a"
    # b kept the state it was loaded with: reload and retry works
    s3, c = _load(db)
    c.body = "from b"
    s3.save(c)
    s3.commit()
    assert db.scan()[0]["body"] == "from b"


def test_a_delete_of_a_loaded_object_is_conditioned_on_its_revision(db: TestBackend) -> None:
    """(0.6, the rule matrix) The delete of an object loaded before another writer's
    change deleted that change unseen: it is conditioned on the revision it was loaded
    with (the revision rule's answer for deletes)."""
    _note(db, body="v0")
    s1, stale = _load(db)
    s2, fresh = _load(db)
    fresh.body = "changed"
    s2.save(fresh)
    s2.commit()
    s1.delete(stale)
    with pytest.raises(ConcurrentModificationError):
        s1.commit()
    s1.rollback()
    assert _load(db)[1].body == "changed"
    s3, current = _load(db)
    s3.delete(current)
    s3.commit()
    assert db.scan() == []


def test_removed_attribute_is_conditioned_too(db: TestBackend) -> None:
    s2, b = _stale_second(db, {"body": "v0", "tags": ["x"]}, tags=["y"])
    b.tags = []  # written as an empty list: conditioned on the old ["x"]
    s2.save(b)
    _refused_changing_nothing(db, s2)


def test_attribute_absent_when_loaded_must_still_be_absent(db: TestBackend) -> None:
    t = db.table
    type_attr = t.type_attribute
    send(t, "PutItem", {"TableName": t.name, "Item": {  # written by other code
        "pk": {"S": "NOTE#n1"}, "sk": {"S": "NOTE"}, type_attr: {"S": "Note"},
        "note_id": {"S": "n1"}}})
    s1, a = _load(db)
    s2, b = _load(db)
    assert a.body == "" and b.body == ""
    a.body = "A"
    b.body = "B"
    s1.save(a)
    s1.commit()
    s2.save(b)
    _refused_changing_nothing(db, s2)
    assert db.scan()[0]["body"] == "A"


def test_different_attributes_both_land(db: TestBackend) -> None:
    _note(db, body="v0", tags=["x"])
    s1, a = _load(db)
    s2, b = _load(db)
    a.body = "from a"
    b.tags = ["from b"]
    s1.save(a)
    s1.commit()
    s2.save(b)
    s2.commit()
    (row,) = db.scan()
    assert (row["body"], row["tags"]) == ("from a", ["from b"])


def test_overwrite_of_a_persisted_object_is_last_writer_wins(db: TestBackend) -> None:
    s2, b = _stale_second(db, {"body": "v0"}, body="from a")
    b.body = "from b"
    s2.save(b, overwrite=True)
    s2.commit()
    assert db.scan()[0]["body"] == "from b"


def test_moving_a_key_is_conditioned_on_every_attribute_it_copies(db: TestBackend) -> None:
    s2, b = _stale_second(db, {"body": "v0"}, body="changed")
    b.note_id = "n2"  # moves the item: would copy the stale body to the new key
    s2.save(b)
    _refused_changing_nothing(db, s2)


def test_model_copy_of_a_loaded_object_saves_as_an_update(db: TestBackend) -> None:
    _note(db, body="v0")
    s, n = _load(db)
    copy = n.model_copy(update={"body": "copied"})
    mine, theirs = dynaorm.inspect(copy), dynaorm.inspect(n)
    assert mine.persisted and mine.changed == {"body"}  # loaded as n was, then changed
    assert (mine.key, mine.loaded, mine.version) == (theirs.key, theirs.loaded, theirs.version)
    s.save(copy)
    plan = s.plan()
    (op,) = plan.ops
    assert type(op).__name__ == "Update"
    s.commit()
    assert db.scan()[0]["body"] == "copied"
    deep = copy.model_copy(deep=True)
    assert dynaorm.inspect(deep).persisted


class Memo(Entity):
    class Meta:
        table = app
        pk = "MEMO#{memo_id}"
        sk = "MEMO"

    memo_id: str
    body: str = ""
    note: str | None = None  # (absent from the stored item while None)


def _memo_moved(db: TestBackend, before_load: bool, **theirs: str) -> Session:
    """Memo m1 stored, ``theirs`` set by another writer (before or after the load), and
    the loaded object staged to move to m2; the session to commit it."""
    with db.session() as s:
        s.save(Memo(memo_id="m1", body="v0"))
    if before_load:
        raw_set(db.table, {"pk": "MEMO#m1", "sk": "MEMO"}, **theirs)
    s = db.session()
    m = s.get(Memo, memo_id="m1", consistent=True)
    assert m is not None
    if not before_load:
        raw_set(db.table, {"pk": "MEMO#m1", "sk": "MEMO"}, **theirs)
    m.memo_id = "m2"
    s.save(m)
    return s


def test_moving_a_key_never_drops_a_value_set_after_the_load(db: TestBackend) -> None:
    # (0.4) the move was conditioned on the attributes present at load only: a value
    # another writer set where the loaded item had none was dropped, and the move
    # reported success
    s = _memo_moved(db, False, note="theirs")
    before = db.scan_raw()
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert db.scan_raw() == before


def test_moving_a_key_carries_a_newer_models_attribute(db: TestBackend) -> None:
    _memo_moved(db, True, newer_attr="kept").commit()
    moved = raw_get(db.table, {"pk": "MEMO#m2", "sk": "MEMO"})
    assert moved is not None and moved["newer_attr"] == {"S": "kept"}
    assert raw_get(db.table, {"pk": "MEMO#m1", "sk": "MEMO"}) is None


def test_moving_a_key_carries_an_attribute_a_newer_model_set_after_the_load(
        db: TestBackend) -> None:
    # (0.4) the move copied the item as loaded: an attribute a newer model set after the
    # load was dropped, and the move reported success. A condition cannot name what no
    # class here declares: the move reads it and carries it
    _memo_moved(db, False, newer_attr="theirs").commit()
    moved = raw_get(db.table, {"pk": "MEMO#m2", "sk": "MEMO"})
    assert moved is not None and moved["newer_attr"] == {"S": "theirs"}


# --- a lost update with a second writer in the fault's window
# (moved from system/test_red_team_08f_lost_update.py:
# Red team 08f: an update whose answer was lost, with a second writer sequenced into the
# fault's window (after the update was applied, before its answer reached the client).
#
# red08e's fix (``dynaorm/core/commit.py``): a single update whose lost answer is proved
# applied (the row read back holds its revision) returns that item read back as its result.
# What must never happen: the update's ``result`` is a state another writer made (later) or
# a state before the update; an update whose read back cannot prove it applied is told
# success. Every variant runs on moto and DynamoDB Local, sync and async (the ``db``
# fixture's variants); transactions (unique fields, versioned entities: a
# ``ClientRequestToken`` resend) run on DynamoDB Local only (moto ignores tokens).)

KEY = b"r" * 32
crates = Table("red08f_lost", keyring=StaticKeyring(KEY, mac_key=KEY))


class Box(Entity):
    """Plain fields, an encrypted one and a compressed one: an update alone is one
    ``UpdateItem`` (``ALL_NEW``)."""

    class Meta:
        table = crates
        pk = "BOX#{box_id}"
        sk = "BOX"

    box_id: str
    n: int = 0
    label: str = ""
    tags: list[str] = []
    secret: Encrypted[str] = "s0"
    blob: Compressed[str] = "b0"


class Member(Entity):
    """A unique field: an update changing it is a transaction (its guards)."""

    class Meta:
        table = crates
        pk = "MEMBER#{member_id}"
        sk = "MEMBER"
        unique = [Unique("email")]

    member_id: str
    email: str
    n: int = 0


class Ledger(Entity):
    """Versioned: every update is a transaction (the latest copy, a version row)."""

    class Meta:
        table = crates
        pk = "LEDGER#{ledger_id}"
        sk = "{part}"
        versioned = True

    ledger_id: str
    part: str
    n: int = 0
    version: int = 0


@pytest.fixture
def cdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    crates.keyring = StaticKeyring(KEY, mac_key=KEY)
    with use_tables(crates, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        before = crates.binding()
        crates.max_wait = 0
        yield tb
        crates.restore(before)


def _fresh(db: TestBackend) -> str:
    tag = uuid.uuid4().hex[:8]
    with Session(crates) as s:
        s.save(Box(box_id=tag, n=1, label="l0", tags=["t0"]))
    return tag


#: each update alone, and the state (of n, label, tags, secret, blob) it produces from
#: the one ``_fresh`` stored
UPDATES: dict[str, tuple[Callable[[Any, str], Any], dict[str, Any]]] = {
    "set": (lambda s, t: s.update(Box, box_id=t).set(n=7),
            {"n": 7, "label": "l0", "tags": ["t0"], "secret": "s0", "blob": "b0"}),
    "where": (lambda s, t: s.update(Box, box_id=t).set(label="l1").where(F("n") == 1),
              {"n": 1, "label": "l1", "tags": ["t0"], "secret": "s0", "blob": "b0"}),
    "add": (lambda s, t: s.update(Box, box_id=t).add(n=5),
            {"n": 6, "label": "l0", "tags": ["t0"], "secret": "s0", "blob": "b0"}),
    "append": (lambda s, t: s.update(Box, box_id=t).append(tags=["t1"]),
               {"n": 1, "label": "l0", "tags": ["t0", "t1"], "secret": "s0", "blob": "b0"}),
    "encrypted": (lambda s, t: s.update(Box, box_id=t).set(secret="s1"),
                  {"n": 1, "label": "l0", "tags": ["t0"], "secret": "s1", "blob": "b0"}),
    "compressed": (lambda s, t: s.update(Box, box_id=t).set(blob="b1" * 200),
                   {"n": 1, "label": "l0", "tags": ["t0"], "secret": "s0",
                    "blob": "b1" * 200}),
    "returning": (lambda s, t: s.update(Box, box_id=t).set(n=8).returning(),
                  {"n": 8, "label": "l0", "tags": ["t0"], "secret": "s0", "blob": "b0"}),
}


def _state(box: Any) -> dict[str, Any]:
    return {f: getattr(box, f) for f in ("n", "label", "tags", "secret", "blob")}


def _stored(tag: str) -> dict[str, Any] | None:
    got = Session(crates).get(Box, box_id=tag, consistent=True)
    return None if got is None else _state(got)


@pytest.mark.parametrize("kind", sorted(UPDATES))
def test_a_lost_update_proved_applied_returns_its_own_item(cdb: TestBackend, kind: str
                                                            ) -> None:
    """No other writer: the result is the state the update produced, read back once
    (an answer lost to a timeout and to a 500, each on an item of its own: one table)."""
    stage, want = UPDATES[kind]
    for how in ("timeout", "500"):
        tag = _fresh(cdb)
        with inject_faults(crates) as faults:
            faults.lose_answer("UpdateItem", how=how)
            s = cdb.session()
            staged = stage(s, tag)
            s.commit()
        assert _state(staged.result) == want, how
        assert _stored(tag) == want, how
        assert faults.sent["UpdateItem"] == 1 and faults.sent["GetItem"] == 1, how


#: second writers, each run inside the window: (name, write, the stored state after it
#: from the update's ``want``, or None: no item)
def _build(tag: str) -> None:
    with Session(crates) as b:
        b.update(Box, box_id=tag).set(label="theirs")


def _rewrite(tag: str) -> None:
    with Session(crates) as b:
        box = b.get(Box, box_id=tag, consistent=True)
        assert box is not None
        box.secret, box.blob = "their-secret", "their-blob"
        b.save(box)


def _delete(tag: str) -> None:
    with Session(crates) as b:
        b.delete(Box, box_id=tag)


def _recreate(tag: str) -> None:
    with Session(crates) as b:
        b.delete(Box, box_id=tag)
    with Session(crates) as b:
        b.save(Box(box_id=tag, n=1, label="l0", tags=["t0"]))  # the very values before


SECOND: dict[str, tuple[Callable[[str], None], Callable[[dict[str, Any]], Any]]] = {
    "build": (_build, lambda w: {**w, "label": "theirs"}),
    "rewrite": (_rewrite, lambda w: {**w, "secret": "their-secret", "blob": "their-blob"}),
    "delete": (_delete, lambda w: None),
    "recreate": (_recreate, lambda w: {"n": 1, "label": "l0", "tags": ["t0"],
                                       "secret": "s0", "blob": "b0"}),
}


@pytest.mark.parametrize("kind", sorted(UPDATES))
def test_a_second_writer_in_the_window_is_never_the_updates_result(
        cdb: TestBackend, kind: str) -> None:
    """Another writer after the update was applied and before its answer: the read back
    cannot prove the update applied (the row holds their revision, or none): the caller
    is told the outcome is unknown, never success (and no result is made up); the table
    keeps what the second writer stored. (Each second writer on an item of its own: one
    table for the four.)"""
    stage, want = UPDATES[kind]
    for second, (write, after) in sorted(SECOND.items()):
        tag = _fresh(cdb)
        with inject_faults(crates) as faults:
            faults.lose_answer("UpdateItem", after=lambda t=tag, w=write: w(t))
            s = cdb.session()
            staged = stage(s, tag)
            with pytest.raises(OutcomeUnknownError):
                s.commit()
        with pytest.raises(Exception, match="no result"):
            staged.result  # noqa: B018 (never a result: not told success)
        assert _stored(tag) == after(want), second


def test_a_reencryption_in_the_window_keeps_the_updates_own_values(cdb: TestBackend) -> None:
    """The one writer that leaves the revision as it was (``reencrypt``: no plaintext, no
    revision changes) re-seals the row in the window: the read back proves the update
    applied, and its result holds the update's values (the secret as stored before, now
    under the current key), never a value of its own making."""
    old, new = b"o" * 32, b"n" * 32
    crates.keyring = StaticKeyring(old, mac_key=KEY)
    tag = _fresh(cdb)
    crates.keyring = StaticKeyring(new, previous=[old], mac_key=KEY)
    done: list[Any] = []

    def rotate() -> None:
        done.append(run_local(reencrypt(Box)))

    with inject_faults(crates) as faults:
        faults.lose_answer("UpdateItem", after=rotate)
        s = cdb.session()
        staged = s.update(Box, box_id=tag).set(n=7)
        s.commit()
    assert done and done[0].resealed == 1, done
    want = {"n": 7, "label": "l0", "tags": ["t0"], "secret": "s0", "blob": "b0"}
    assert _state(staged.result) == want
    crates.keyring = StaticKeyring(new, mac_key=KEY)  # (the old key dropped: resealed)
    assert _stored(tag) == want


# -- transactions: unique fields changing, versioned entities -------------------------------
@pytest.fixture
def ldb(cdb: TestBackend, request: pytest.FixtureRequest) -> TestBackend:
    if engine_of(request) != "local":
        pytest.skip("a transaction's lost answer settles by its token: DynamoDB Local")
    return cdb


def _member_build(tag: str) -> None:
    with Session(crates) as b:
        b.update(Member, member_id=tag).set(n=99)


def _ledger_build(tag: str) -> None:
    with Session(crates) as b:
        led = b.get(Ledger, ledger_id=tag, part="p", consistent=True)
        assert led is not None
        led.n = 99
        b.save(led)


def _transactional(tag: str, which: str) -> tuple[Callable[[Any], Any], Callable[[str], None]]:
    if which == "unique":
        with Session(crates) as s:
            s.save(Member(member_id=tag, email=f"{tag}@a"))
        return (lambda s: s.update(Member, member_id=tag).set(email=f"{tag}@b", n=1)
                .returning()), _member_build
    with Session(crates) as s:
        s.save(Ledger(ledger_id=tag, part="p"))
    return (lambda s: s.update(Ledger, ledger_id=tag, part="p").set(n=1).returning()
            ), _ledger_build


@pytest.mark.parametrize("which", ["unique", "versioned"])
def test_a_lost_transactional_update_returning_is_its_own(ldb: TestBackend,
                                                          which: str) -> None:
    """No other writer: ``returning()``'s result is the update's state."""
    tag = uuid.uuid4().hex[:8]
    stage, _ = _transactional(tag, which)
    with inject_faults(crates) as faults:
        faults.lose_answer("TransactWriteItems")
        s = ldb.session()
        staged = stage(s)
        s.commit()
    assert staged.result.n == 1


@pytest.mark.parametrize("which", ["unique", "versioned"])
def test_a_second_writer_in_a_transactions_window_is_never_its_result(
        ldb: TestBackend, which: str) -> None:
    """A second writer (n=99) after the transaction applied, before its answer: its
    resend (same token) succeeds without writing. ``returning()``'s result must be the
    state this update produced (n=1), or none; never the later writer's n=99."""
    tag = uuid.uuid4().hex[:8]
    stage, write = _transactional(tag, which)
    with inject_faults(crates) as faults:
        faults.lose_answer("TransactWriteItems", after=lambda: write(tag))
        s = ldb.session()
        staged = stage(s)
        try:
            s.commit()
        except OutcomeUnknownError:
            return  # told the truth: unknown
    try:
        got = staged.result.n
    except Exception as exc:  # (no result: it could not say)
        assert "no result" in str(exc)
        return
    assert got == 1, json.dumps({"result n": got, "which": which})
