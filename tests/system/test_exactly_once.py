"""Exactly once across invocations (contract 22, issue 60): the adversaries.

- a lost answer after the keyed transaction applied, with a second writer acting in the
  window (the public fault injector, ``dynaorm.testing.inject_faults``: every engine, both
  kinds of session): settled by the receipt as applied, never ``OutcomeUnknownError``, and
  the second writer's change kept (on moto, which ignores ``ClientRequestToken``, the
  driver's own resend is refused by the receipt);
- a replay from another process, and two processes committing the same key at once (one
  applies, the other is replayed or conflicts, never both), on DynamoDB Local;
- hypothesis over staged operations: the same writes digest the same (in any order, sets
  in any order), any difference digests otherwise (and a commit of it is a mismatch).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import (
    IdempotencyMismatchError,
    OutcomeUnknownError,
    Session,
)
from dynaorm.errors import DynaormError
from dynaorm.schema.rules.receipts import RECEIPT_TYPE, digest
from dynaorm.testing import TestBackend, inject_faults
from dynaorm.write.delete import DeleteEntry
from dynaorm.write.save import SaveEntry
from tests.conftest import engine_of, wire_of
from tests.support.concurrency import join_all
from tests.support.exactly_once import (
    RUN,
    DigestStamped,
    key_of,
    keyed_commits_at_once,
    lost_commit,
    no_waits,
    notes,
    receipts,
    second_writer,
    tables_beside,
)
from tests.support.examples import examples
from tests.support.job_models import Counter, jobs_table
from tests.support.models import Audit, Note, app

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")


@pytest.fixture(autouse=True)
def _no_waits() -> Iterator[None]:
    with no_waits():
        yield


def _mine(s: Any, note_id: str = "n1") -> None:
    s.save(Note(note_id=note_id, body="mine"))


# -- lost answers ----------------------------------------------------------------------------
def test_a_lost_answer_with_a_writer_in_the_window_is_settled_by_the_receipt(
        db: TestBackend) -> None:
    with Session(db.table) as s:
        s.save(Note(note_id="n0", body="before"))
    # a second writer, after the transaction applied
    result, faults = lost_commit(db, key_of(db, "lost"), _mine,
                                 after=second_writer(db.table, "n0"))
    assert not result.replayed
    assert faults.sent["TransactWriteItems"] >= 2  # (the driver resent it: refused or deduped)
    assert notes(db) == {"n0": "theirs", "n1": "mine"}
    # the same writes again: replayed, nothing applied over the second writer
    s = db.session()
    s.save(Note(note_id="n1", body="mine"))
    assert s.commit(idempotency_key=key_of(db, "lost")).replayed
    assert notes(db)["n0"] == "theirs"


def test_without_a_key_the_same_lost_answer_is_unknown(db: TestBackend,
                                                       request: pytest.FixtureRequest) -> None:
    """(The contrast: what the receipt settles.) A single-item insert whose every answer is
    lost, the row changed in the window by another writer: no revision proves it."""
    if engine_of(request) != "moto":
        pytest.skip("one engine shows the contrast")

    other = second_writer(db.table, "n1")
    with inject_faults(db.table) as faults:
        faults.lose_answer("PutItem", times=None, after=other)
        s = db.session()
        s.save(Note(note_id="n1", body="mine"))
        with pytest.raises(OutcomeUnknownError):
            s.commit()
    result, _ = lost_commit(db, key_of(db, "contrast"), lambda s: _mine(s, "n2"), after=other)
    assert not result.replayed


def test_a_lost_answer_of_a_commit_that_did_not_apply_is_not_unknown(db: TestBackend) -> None:
    """Every attempt fails with a server error before applying: the receipt is absent, so
    nothing was applied: the error is raised as it is (committing again is safe)."""
    from dynaorm import RequestError

    with inject_faults(db.table) as faults:
        faults.server_error("TransactWriteItems", times=None)
        s = db.session()
        s.save(Note(note_id="n1", body="mine"))
        with pytest.raises(RequestError) as err:
            s.commit(idempotency_key=key_of(db, "never"))
    assert not isinstance(err.value, OutcomeUnknownError)
    assert notes(db) == {}
    s.save(Note(note_id="n1", body="mine"))
    assert not s.commit(idempotency_key=key_of(db, "never")).replayed
    assert notes(db) == {"n1": "mine"}


# -- other processes --------------------------------------------------------------------------
_SCRIPT = textwrap.dedent("""
    import json, sys, time
    from pydantic import Field
    from dynaorm import Entity, Session, Table
    from dynaorm.errors import DynaormError
    name, url, key, start = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    table = Table(name, endpoint_url=url, region="us-east-1", max_wait=0)

    class Note(Entity):
        class Meta:
            table = table
            pk = "NOTE#{note_id}"
            sk = "NOTE"

        note_id: str
        body: str = ""
        tags: list[str] = Field(default_factory=list)  # (as tests.support.models')

    s = Session(table)
    s.save(Note(note_id="n1", body="once"))
    time.sleep(max(0.0, start - time.time()))  # (asleep: a spin cost ~3 s of CPU a process)
    try:
        result = s.commit(idempotency_key=key)
        print(json.dumps({"replayed": result.replayed}))
    except DynaormError as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
""")


def _process(db: TestBackend, key: str, start: float = 0.0) -> subprocess.Popen[str]:
    env = {**os.environ, "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "x"),
           "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "x"),
           "PYTHONPATH": os.getcwd()}
    assert db.endpoint_url is not None
    return subprocess.Popen([sys.executable, "-c", _SCRIPT, db.table.name, db.endpoint_url, key,
                             str(start)], stdout=subprocess.PIPE, text=True, env=env)


def _local(db: TestBackend, request: pytest.FixtureRequest) -> None:
    if engine_of(request) != "local" or db.session_kind != "sync" or db.endpoint_url is None:
        pytest.skip("processes share DynamoDB Local (moto in-process is this process's)")


#: (processes share DynamoDB Local, with sessions of their own: the other engines' and the
#: async variants were collected, set up and skipped)
ON_LOCAL = pytest.mark.engines("local")


def _answer(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    answer: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return answer


@ON_LOCAL
@pytest.mark.sync_only
def test_a_replay_from_another_process(db: TestBackend, request: pytest.FixtureRequest
                                       ) -> None:
    _local(db, request)
    key = key_of(db, "process")
    s = db.session()
    s.save(Note(note_id="n1", body="once"))
    assert not s.commit(idempotency_key=key).replayed
    with Session(db.table) as b:  # another writer after it
        theirs = b.get(Note, note_id="n1")
        assert theirs is not None
        theirs.body = "later"
        b.save(theirs)
    assert _answer(_process(db, key)) == {"replayed": True}
    assert notes(db) == {"n1": "later"}


@ON_LOCAL
@pytest.mark.sync_only
def test_two_processes_with_one_key_at_once_apply_once(db: TestBackend,
                                                       request: pytest.FixtureRequest) -> None:
    import time

    _local(db, request)
    for round_ in range(3):
        key = key_of(db, f"race{round_}")
        start = time.time() + 3.0
        procs = [_process(db, key, start) for _ in range(2)]
        answers = [_answer(p) for p in procs]
        applied = [a for a in answers if a == {"replayed": False}]
        others = [a for a in answers if a not in applied]
        assert len(applied) <= 1, answers
        assert all(a == {"replayed": True} or a.get("error") in (
            "TransactionConflictError", "RequestError") for a in others), answers
        if applied or {"replayed": True} in others:
            assert notes(db) == {"n1": "once"}
        else:
            assert notes(db) == {}
            continue
        with Session(db.table) as s:  # (the next round inserts again)
            got = s.get(Note, note_id="n1")
            assert got is not None
            s.delete(got)


# -- the digest ------------------------------------------------------------------------------
_values = st.fixed_dictionaries({
    "note_id": st.sampled_from(["a", "b", "c", "d"]),
    "body": st.text(max_size=5),
    "tags": st.lists(st.sampled_from(["x", "y", "z"]), max_size=3),
})
_ops = st.lists(st.tuples(st.sampled_from(["save", "delete", "overwrite"]), _values),
                min_size=1, max_size=4, unique_by=lambda op: op[1]["note_id"])


def _staged(ops: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    out: list[Any] = []
    for kind, values in ops:
        note = Note(**values)
        out.append(DeleteEntry(note) if kind == "delete" else SaveEntry(
            note, overwrite=kind == "overwrite"))
    return out


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ops, st.randoms(use_true_random=False))
def test_the_same_writes_in_any_order_digest_the_same(ops: list[Any], rnd: Any) -> None:
    shuffled = list(ops)
    rnd.shuffle(shuffled)
    assert digest(_staged(ops)) == digest(_staged(shuffled))


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ops, _ops)
def test_different_writes_digest_otherwise(first: list[Any], second: list[Any]) -> None:
    def writes(ops: list[Any]) -> list[str]:  # (a write's values, in any order)
        return sorted(repr((kind, sorted(values.items()))) for kind, values in ops)

    same = writes(first) == writes(second)
    assert (digest(_staged(first)) == digest(_staged(second))) is same


def test_a_different_set_order_digests_the_same_and_a_changed_value_is_a_mismatch(
        db: TestBackend) -> None:
    from dynaorm import Entity

    s = db.session()
    s.save(Note(note_id="n1", body="x", tags=["a"]))
    s.commit(idempotency_key=key_of(db, "digest"))
    for changed in (Note(note_id="n1", body="y", tags=["a"]),
                    Note(note_id="n1", body="x", tags=["a", "b"]),
                    Note(note_id="n2", body="x", tags=["a"])):
        before = db.scan()
        s.save(changed)
        with pytest.raises(IdempotencyMismatchError):
            s.commit(idempotency_key=key_of(db, "digest"))
        assert db.scan() == before
    assert issubclass(Note, Entity)


# -- the digest is decided per object (contract 24) -------------------------------------------
_MOMENTS = st.sampled_from([None, datetime(2026, 1, 1, tzinfo=UTC),
                            datetime(2026, 1, 2, tzinfo=UTC)])
_GIVEN = st.fixed_dictionaries({}, optional={
    "stamped_id": st.sampled_from(["s1", "s2"]), "body": st.sampled_from(["", "a", "b"]),
    "n": st.integers(0, 2), "created_at": _MOMENTS, "updated_at": _MOMENTS})


def _caller_gave(given: dict[str, Any]) -> dict[str, Any]:
    """What a commit of ``DigestStamped(**given)`` writes of the caller's: every value but the
    id a factory made (not given), the updated time (always stamped) and a created time
    left ``None`` (stamped)."""
    obj = DigestStamped(**given)
    return {n: v for n, v in obj.__dict__.items() if not (
        (n == "stamped_id" and n not in given) or n == "updated_at"
        or (n == "created_at" and v is None))}


def _digest_of(given: dict[str, Any]) -> str:
    return digest([SaveEntry(DigestStamped(**given))])


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(_GIVEN, min_size=2, max_size=8))
def test_objects_differing_in_a_value_the_caller_gave_never_share_a_digest(
        objects: list[dict[str, Any]]) -> None:
    """Digested one after another in one process (the first object of the class no
    longer decides what the others' digests leave out): two objects share a digest
    exactly when they agree on every value the caller gave. (0.8 cached the stamped
    fields per class from the first object: after one without ``created_at``, a retry
    with another ``created_at`` was replayed.)"""
    digests = [_digest_of(g) for g in objects]
    for (a, da), (b, db_) in itertools.combinations(zip(objects, digests, strict=True), 2):
        assert (da == db_) is (_caller_gave(a) == _caller_gave(b)), (a, b)


_DIGESTS = textwrap.dedent("""
    import json, sys
    from datetime import datetime
    from dynaorm.schema.rules.receipts import digest
    from dynaorm.write.save import SaveEntry
    from tests.support.exactly_once import DigestStamped
    out = []
    for given in json.loads(sys.argv[1]):
        if given.get("created_at"):
            given["created_at"] = datetime.fromisoformat(given["created_at"])
        if given.get("updated_at"):
            given["updated_at"] = datetime.fromisoformat(given["updated_at"])
        out.append(digest([SaveEntry(DigestStamped(**given))]))
    print(json.dumps(out))
""")


@settings(max_examples=examples(3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_GIVEN, min_size=4, max_size=12))
def test_another_process_digests_each_object_alike(objects: list[dict[str, Any]]) -> None:
    """Another process, digesting the same objects in the reverse order (another first
    object of the class), gives each the digest this one does; so two objects of other
    values the caller gave never share one across processes either."""
    here = [_digest_of(g) for g in objects]
    sent = [{k: v.isoformat() if isinstance(v, datetime) else v for k, v in g.items()}
            for g in reversed(objects)]
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run([sys.executable, "-c", _DIGESTS, json.dumps(sent)], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    there = list(reversed(json.loads(out.stdout.strip().splitlines()[-1])))
    assert there == here
    for (a, da), (b, db_) in itertools.combinations(zip(objects, there, strict=True), 2):
        assert (da == db_) is (_caller_gave(a) == _caller_gave(b)), (a, b)


@pytest.mark.engines("moto")
def test_a_retry_with_another_created_time_is_a_mismatch(db: TestBackend) -> None:
    """One keyed insert without ``created_at``, then a retry under the same key giving
    one: other writes (``IdempotencyMismatchError``, nothing written), as another process
    says; the same retry without it is replayed."""
    key = key_of(db, "stamped")
    s = db.session()
    s.save(DigestStamped(stamped_id="st1", body="x"))
    assert not s.commit(idempotency_key=key).replayed
    stored = db.session().get(DigestStamped, stamped_id="st1")
    assert stored is not None and stored.created_at is not None
    s.save(DigestStamped(stamped_id="st1", body="x", created_at=datetime(2020, 1, 1, tzinfo=UTC)))
    with pytest.raises(IdempotencyMismatchError):
        s.commit(idempotency_key=key)
    s.rollback()
    after = db.session().get(DigestStamped, stamped_id="st1")
    assert after is not None and after.created_at == stored.created_at
    s.save(DigestStamped(stamped_id="st1", body="x"))
    assert s.commit(idempotency_key=key).replayed


# --- adversaries the first tests left out
# (moved from system/test_exactly_once_red.py:
# Red team of contract 22 ("Exactly once across invocations"): adversaries the first
# tests left out (moto and DynamoDB Local, sync and async sessions).)

#: what the engine answers is the subject: run on the reference engine too






# -- the receipt's lifetime -----------------------------------------------------------------
@pytest.mark.engines('moto', 'local')
def test_a_sub_second_receipts_ttl_still_keeps_the_receipt(db: TestBackend) -> None:
    """receipts_ttl=500ms is accepted: the receipt must then live (not be born expired:
    int(0.5) == 0 made every replay apply again)."""
    before = db.table.receipts_ttl
    db.table.receipts_ttl = timedelta(milliseconds=900)
    try:
        s = db.session()
        s.save(Note(note_id="n1", body="once"))
        assert not s.commit(idempotency_key=key_of(db, "subsecond")).replayed
        (receipt,) = receipts(db)
        assert receipt["dynaorm:expires"] > receipt["dynaorm:at"]
    finally:
        db.table.receipts_ttl = before


@pytest.mark.engines('moto', 'local')
def test_a_lost_answer_whose_receipt_expired_in_the_window_is_applied(
        db: TestBackend) -> None:
    """The commit applied, its answer was lost, and its own receipt expired before the
    resend was refused by it: the commit applied (its own nonce is stored), so it must
    not be reported as refused or not applied."""
    before = db.table.receipts_ttl
    db.table.receipts_ttl = timedelta(seconds=1)
    try:
        def later() -> None:
            time.sleep(2.1)

        result, _ = lost_commit(db, key_of(db, "expired-window"), _mine, after=later,
                                times=1)
        assert not result.replayed
        assert notes(db) == {"n1": "mine"}
    finally:
        db.table.receipts_ttl = before


@pytest.mark.engines('moto', 'local')
def test_an_expired_but_stored_receipt_lets_the_key_apply_again(db: TestBackend) -> None:
    """(As documented: at most once while the receipt lives.) The receipt's TTL passed but
    DynamoDB has not deleted it yet: a commit with the key applies (and is not told it
    replayed), and the receipt is renewed."""
    before = db.table.receipts_ttl
    db.table.receipts_ttl = timedelta(seconds=2)
    try:
        s = db.session()
        s.save(Note(note_id="n1", body="first"))
        s.commit(idempotency_key=key_of(db, "expired"))
        time.sleep(3.1)
        assert len(receipts(db)) == 1  # (still stored)
        s.save(Note(note_id="n1", body="other"), overwrite=True)
        assert not s.commit(idempotency_key=key_of(db, "expired")).replayed
        assert notes(db) == {"n1": "other"}
        s.save(Note(note_id="n1", body="other"), overwrite=True)
        assert s.commit(idempotency_key=key_of(db, "expired")).replayed
    finally:
        db.table.receipts_ttl = before


# -- second writers in the window -----------------------------------------------------------
@pytest.mark.engines('moto', 'local')
def test_a_replay_after_the_item_was_changed_returns_the_first_result(
        db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="n1", body="once"))
    first = s.commit(idempotency_key=key_of(db, "changed"))
    with Session(db.table) as b:
        got = b.get(Note, note_id="n1")
        assert got is not None
        b.delete(got)
    s.save(Note(note_id="n1", body="once"))
    again = s.commit(idempotency_key=key_of(db, "changed"))
    assert again.replayed and not first.replayed
    assert [op for op, _ in again.requests] == [op for op, _ in first.requests]
    assert notes(db) == {}  # (the deleted item is not recreated)


@pytest.mark.engines('moto', 'local')
def test_a_replay_of_a_versioned_update_that_its_condition_also_refuses_is_replayed(
        db: TestBackend) -> None:
    """The replay's item condition fails too (the version moved): the receipt's refusal
    decides (replayed), never a ConcurrentModificationError or a second application."""
    with Session(db.table) as s0:
        s0.save(Audit(equipment_id="e1", part="p", notes="v1"))
    key = key_of(db, "versioned")
    with Session(db.table) as r:  # (the retried invocation loaded it as the first did)
        retried = r.get(Audit, equipment_id="e1", part="p")
    s = db.session()
    got = s.get(Audit, equipment_id="e1", part="p")
    assert got is not None and retried is not None
    got.notes = "v2"
    s.save(got)
    assert not s.commit(idempotency_key=key).replayed
    with Session(db.table) as b:  # someone else moves the version on
        theirs = b.get(Audit, equipment_id="e1", part="p")
        assert theirs is not None
        theirs.auditor = "bob"
        b.save(theirs)
    retried.notes = "v2"
    s2 = db.session()
    s2.save(retried)
    assert s2.commit(idempotency_key=key).replayed
    stored = [i for i in db.scan() if i.get("_type") == "Audit"]
    assert len(stored) == 4  # (versions 1-3 and the current row: no fourth version)
    (current,) = [i for i in stored if "_rev" in i]
    assert current["auditor"] == "bob" and current["notes"] == "v2"


# -- the key's scope ------------------------------------------------------------------------
@pytest.fixture
def two(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The test table and the jobs table, bound to one client (one transaction)."""
    with tables_beside(db, jobs_table, wire=wire_of(request)) as tb:
        yield tb


@pytest.mark.engines('moto', 'local')
@pytest.mark.sync_only
def test_one_key_on_two_tables_applies_at_most_once(two: TestBackend) -> None:
    key = f"two-tables-{RUN}"
    with Session(app) as s:
        s.save(Note(note_id="n1", body="x"))
        s.save(Counter(id="c1", n=1))
        s.commit(idempotency_key=key)
    s = Session(app)
    s.save(Note(note_id="n1", body="x"))  # (a subset: its receipt goes to app's table)
    with pytest.raises(IdempotencyMismatchError):
        s.commit(idempotency_key=key)


# -- what the digest tells apart ------------------------------------------------------------
@pytest.mark.engines('moto', 'local')
def test_the_digest_tells_a_put_from_an_overwrite_and_a_delete() -> None:
    note = Note(note_id="n1", body="x")
    kinds = {digest([SaveEntry(note)]), digest([SaveEntry(note, overwrite=True)]),
             digest([DeleteEntry(note)])}
    assert len(kinds) == 3


@pytest.mark.engines('moto', 'local')
def test_the_digest_ignores_list_construction_but_not_list_order() -> None:
    a = Note(note_id="n1", tags=["a", "b"])
    b = Note(note_id="n1", tags=("a", "b"))  # type: ignore[arg-type]
    c = Note(note_id="n1", tags=["b", "a"])
    assert digest([SaveEntry(a)]) == digest([SaveEntry(b)])
    assert digest([SaveEntry(a)]) != digest([SaveEntry(c)])  # (a list is ordered)


@pytest.mark.engines('moto', 'local')
def test_the_digest_tells_updates_of_different_values_and_conditions(db: TestBackend) -> None:
    from dynaorm import F

    def staged(body: str, where: Any = None) -> str:
        s = db.session()
        u = s.update(Note, note_id="n1").set(body=body)
        if where is not None:
            u.where(where)
        return digest(list(s._stage.writes.values()) if hasattr(s, "_stage") else [u])

    assert staged("x") == staged("x")
    assert staged("x") != staged("y")
    assert staged("x", F("body") == "a") != staged("x", F("body") == "b")
    assert staged("x", F("body") == "a") != staged("x")


# -- hostile keys ---------------------------------------------------------------------------
@pytest.mark.engines('moto', 'local')
@pytest.mark.parametrize("key", ["#", "dynaorm:receipt#x", "ключ-🔑-\u0000x", "k" * 2048,
                                 " ", "a#b#c"])
def test_hostile_keys_apply_once_and_replay(db: TestBackend, key: str) -> None:
    s = db.session()
    s.save(Note(note_id="n1", body="x"))
    assert not s.commit(idempotency_key=key).replayed
    s.save(Note(note_id="n1", body="x"))
    assert s.commit(idempotency_key=key).replayed
    s.save(Note(note_id="n1", body="y"))
    with pytest.raises(IdempotencyMismatchError) as err:
        s.commit(idempotency_key=key)
    assert len(str(err.value)) < 600
    assert notes(db) == {"n1": "x"} and len(receipts(db)) == 1


@pytest.mark.engines('moto', 'local')
def test_a_key_given_to_a_commit_with_nothing_staged_is_still_checked(
        db: TestBackend) -> None:
    s = db.session()
    with pytest.raises(DynaormError, match="idempotency_key"):
        s.commit(idempotency_key="")
    assert db.scan() == []


# -- sync and async under one key -----------------------------------------------------------
@pytest.mark.engines('moto', 'local')
def test_a_sync_commit_replayed_by_the_test_session(db: TestBackend) -> None:
    key = key_of(db, "kinds")
    with Session(db.table, idempotency_key=key) as s:
        s.save(Note(note_id="n1", body="x"))
    s2 = db.session()  # (async behind an adapter on the -async variants)
    s2.save(Note(note_id="n1", body="x"))
    assert s2.commit(idempotency_key=key).replayed
    s2.save(Note(note_id="n1", body="z"))
    with pytest.raises(IdempotencyMismatchError):
        s2.commit(idempotency_key=key)
    assert notes(db) == {"n1": "x"}


# -- a replay whose prepare-phase read fails ------------------------------------------------
@pytest.mark.engines('moto', 'local')
def test_a_replay_whose_prepare_read_fails_is_an_error_and_writes_nothing(
        db: TestBackend) -> None:
    from tests.support.models import User

    key = key_of(db, "prepare")
    s = db.session()
    s.save(User(user_id="u1", username="ann", email="a@x"))
    s.commit(idempotency_key=key)
    before = db.scan()
    with inject_faults(db.table) as faults:
        faults.server_error("GetItem", times=None)
        faults.server_error("Query", times=None)
        faults.server_error("BatchGetItem", times=None)
        s2 = db.session()
        s2.save(User(user_id="u1", username="ann", email="a@x"))
        try:
            result = s2.commit(idempotency_key=key)
        except DynaormError as exc:  # (it cannot say: an error, never a false outcome)
            assert not isinstance(exc, IdempotencyMismatchError)
        else:
            assert result.replayed
    assert db.scan() == before


# -- races in threads -----------------------------------------------------------------------
@pytest.mark.engines('moto', 'local')
@pytest.mark.sync_only
def test_threads_committing_one_key_apply_once(db: TestBackend) -> None:
    key = key_of(db, "threads")
    answers = keyed_commits_at_once(db.table, key,
                                    lambda s: s.save(Note(note_id="n1", body="once")))
    assert answers.count("applied") <= 1, answers
    assert set(answers) <= {"applied", "replayed", "TransactionConflictError"}, answers
    assert len(receipts(db)) == 1 and notes(db) == {"n1": "once"}


@pytest.mark.engines('moto', 'local')
def test_a_lost_answer_whose_receipt_cannot_be_read_is_an_unknown_outcome(
        db: TestBackend) -> None:
    """Every answer lost and every read failing: the receipt cannot say, so the caller is
    told the outcome is unknown (never a plain error that reads as a failure)."""
    from dynaorm import OutcomeUnknownError

    with inject_faults(db.table) as faults:
        faults.lose_answer("TransactWriteItems", times=None)
        faults.server_error("GetItem", times=None)
        faults.server_error("BatchGetItem", times=None)
        faults.server_error("Query", times=None)
        s = db.session()
        s.save(Note(note_id="n1", body="x"))
        with pytest.raises(OutcomeUnknownError):
            s.commit(idempotency_key=key_of(db, "unreadable"))
    assert notes(db) == {"n1": "x"}
    s = db.session()
    s.save(Note(note_id="n1", body="x"))
    assert s.commit(idempotency_key=key_of(db, "unreadable")).replayed


@pytest.mark.engines('moto', 'local')
def test_a_commit_own_expired_receipt_is_still_its_own() -> None:
    """The refusal of a resend by this commit's own receipt, expired meanwhile, proves it
    applied: :meth:`live` keeps it."""
    receipt = app.receipts.start([SaveEntry(Note(note_id="n1"))], "own")
    assert receipt is not None
    item = receipt.item("rev", [], app)
    item["dynaorm:expires"] = {"N": "1"}
    assert receipt.live(item, app) is item
    other = app.receipts.start([SaveEntry(Note(note_id="n1"))], "own")
    assert other is not None and other.live(item, app) is None


# -- Powertools' persistence layer ----------------------------------------------------------
class _Context:
    function_name = "handler"
    memory_limit_in_mb = 128
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:handler"
    aws_request_id = "req-1"

    def __init__(self, remaining: int = 30_000) -> None:
        self.remaining = remaining

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining


def _powertools_handler(db: TestBackend, calls: list[str], pause: float = 0.0) -> Any:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent

    from dynaorm.powertools import DynaormPersistenceLayer

    store = DynaormPersistenceLayer(db.table)

    @idempotent(persistence_store=store,
                config=IdempotencyConfig(event_key_jmespath="order_id"))
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        calls.append(event["order_id"])
        time.sleep(pause)
        with Session(db.table) as s:
            s.save(Note(note_id=event["order_id"], body="paid"), overwrite=True)
        return {"saved": event["order_id"]}

    return handler


@pytest.mark.engines('moto', 'local')
@pytest.mark.sync_only
def test_powertools_invocations_racing_in_threads_run_the_handler_once(
        db: TestBackend) -> None:
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
    )

    calls: list[str] = []
    handler = _powertools_handler(db, calls, pause=0.5)
    answers: list[str] = []
    lock = threading.Lock()
    go = threading.Barrier(5)

    def run() -> None:
        go.wait()
        try:
            out = repr(handler({"order_id": "o1"}, _Context()))
        except IdempotencyAlreadyInProgressError:
            out = "in progress"
        except Exception as exc:  # (the test reports what it was)
            out = f"{type(exc).__name__}: {exc}"
        with lock:
            answers.append(out)

    threads = [threading.Thread(target=run) for _ in range(5)]
    join_all(threads)
    assert calls == ["o1"], answers
    assert set(answers) <= {"in progress", repr({"saved": "o1"})}, answers
    assert repr({"saved": "o1"}) in answers
    # after it completed, every later invocation gets the stored result
    assert handler({"order_id": "o1"}, _Context()) == {"saved": "o1"} and calls == ["o1"]


@pytest.mark.engines('moto', 'local')
@pytest.mark.sync_only
def test_powertools_a_completed_record_past_its_expiry_runs_again(db: TestBackend) -> None:
    """A COMPLETED record whose expiry passed but which DynamoDB has not deleted yet does
    not hold the key (Powertools' semantics), and is never read back as an entity."""
    from dynaorm.powertools import POWERTOOLS_TYPE

    calls: list[str] = []
    handler = _powertools_handler(db, calls)
    handler({"order_id": "o1"}, _Context())
    (record,) = [i for i in db.scan_raw() if i.get("_type", {}).get("S") == POWERTOOLS_TYPE]
    from dynaorm.protocol.hooks import Operation
    from dynaorm.protocol.steps import call

    record["_expires"] = {"N": str(int(time.time()) - 10)}
    db.table.db.driver.run(call("PutItem", {"TableName": db.table.name, "Item": record}),
                           Operation("test.put", (db.table.name,)))
    handler({"order_id": "o1"}, _Context())
    assert calls == ["o1", "o1"]
    assert [n.note_id for n in db.session().scan(Note).all()] == ["o1"]


@pytest.mark.engines('moto', 'local')
def test_a_lost_answer_with_the_receipt_deleted_and_the_item_changed_in_the_window(
        db: TestBackend) -> None:
    """A second writer deletes the receipt and changes the item after the transaction
    applied, before its answer: the driver's resend (the same token, within DynamoDB's
    window) applies nothing over the second writer, and the caller is told applied."""
    from dynaorm.protocol.hooks import Operation
    from dynaorm.protocol.steps import call

    def other() -> None:
        (receipt,) = [i for i in db.scan_raw() if i.get("_type", {}).get("S") == RECEIPT_TYPE]
        db.table.db.driver.run(call("DeleteItem", {
            "TableName": db.table.name, "Key": {"pk": receipt["pk"], "sk": receipt["sk"]}}),
            Operation("test.delete", (db.table.name,)))
        second_writer(db.table, "n1")()

    result, _ = lost_commit(db, key_of(db, "receipt-deleted"), _mine, after=other, times=1)
    assert not result.replayed
    assert notes(db) == {"n1": "theirs"}


@pytest.mark.engines('moto', 'local')
def test_an_update_and_a_save_of_the_same_values_are_other_writes(db: TestBackend) -> None:
    key = key_of(db, "update-vs-save")
    with Session(db.table) as s0:
        s0.save(Note(note_id="n1", body="a"))
    s = db.session()
    s.update(Note, note_id="n1").set(body="b")
    s.commit(idempotency_key=key)
    s.save(Note(note_id="n1", body="b"), overwrite=True)
    with pytest.raises(IdempotencyMismatchError):
        s.commit(idempotency_key=key)
    s.update(Note, note_id="n1").set(body="b")
    assert s.commit(idempotency_key=key).replayed
    assert notes(db) == {"n1": "b"}


# -- hypothesis: the digest of staged updates -----------------------------------------------
_actions = st.lists(st.tuples(st.sampled_from(["set", "append", "prepend"]),
                              st.sampled_from(["body", "tags"]),
                              st.text(max_size=3)),
                    max_size=4, unique_by=lambda a: a[1])


def _update(actions: list[tuple[str, str, str]], note_id: str = "n1") -> Any:
    from dynaorm.write.updates import StagedUpdate

    u = StagedUpdate(Note, {"note_id": note_id}, None, False)
    for method, field, value in actions:
        if field == "body":
            u.set(body=value)
        else:
            getattr(u, method)(tags=[value])
    return u


@pytest.mark.engines('moto', 'local')
@settings(max_examples=examples(150), deadline=None)
@given(_actions, st.randoms(use_true_random=False))
def test_updates_of_the_same_actions_in_any_order_digest_the_same(
        actions: list[tuple[str, str, str]], rnd: Any) -> None:
    shuffled = list(actions)
    rnd.shuffle(shuffled)
    assert digest([_update(actions)]) == digest([_update(shuffled)])


def _meaning(actions: list[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    return {("set", f, v) if f == "body" else (m, f, v) for m, f, v in actions}


@pytest.mark.engines('moto', 'local')
@settings(max_examples=examples(150), deadline=None)
@given(_actions, _actions)
def test_updates_of_other_actions_digest_otherwise(first: list[tuple[str, str, str]],
                                                   second: list[tuple[str, str, str]]) -> None:
    same = _meaning(first) == _meaning(second)
    assert (digest([_update(first)]) == digest([_update(second)])) is same


@pytest.mark.engines('moto', 'local')
def test_updates_of_other_nested_paths_digest_otherwise() -> None:
    from dynaorm import F
    from dynaorm.write.updates import StagedUpdate

    def at(path: str) -> str:
        u = StagedUpdate(Note, {"note_id": "n1"}, None, False)
        u.set(F(path), "x")
        return digest([u])

    assert at("tags[0]") != at("tags[1]")


@pytest.mark.engines('moto', 'local')
def test_receipts_and_powertools_records_are_not_in_an_export(db: TestBackend,
                                                              tmp_path: Any) -> None:
    pytest.importorskip("pyarrow")
    from dynaorm.jobs import export, run_local

    s = db.session()
    s.save(Note(note_id="n1", body="x"))
    s.commit(idempotency_key=key_of(db, "export"))
    calls: list[str] = []
    if db.session_kind == "sync":
        _powertools_handler(db, calls)({"order_id": "o1"}, _Context())
    report = run_local(export(db.table, tmp_path / "out", entities=[Note]))
    assert report.unclaimed == {}, report
    assert report.rows == {"Note": 1 + len(calls)}


@pytest.mark.engines('moto', 'local')
def test_a_keyed_delete_of_an_item_already_deleted_keeps_no_receipt(
        db: TestBackend) -> None:
    """A delete of an item someone else deleted first is refused (ItemNotFoundError) and
    keeps no receipt; once the item is back, the same key deletes it, once."""
    from dynaorm import ItemNotFoundError

    with Session(db.table) as s0:
        s0.save(Note(note_id="n1", body="x"))
    with Session(db.table) as b:  # someone else deletes it first
        b.delete(Note(note_id="n1", body="x"))
    key = key_of(db, "deleted")
    s = db.session()
    s.delete(Note(note_id="n1", body="x"))
    with pytest.raises(ItemNotFoundError):
        s.commit(idempotency_key=key)
    assert receipts(db) == []
    with Session(db.table) as w:  # it is recreated by someone else
        w.save(Note(note_id="n1", body="x"))
    s.delete(Note(note_id="n1", body="x"))
    assert not s.commit(idempotency_key=key).replayed
    with Session(db.table) as w:
        w.save(Note(note_id="n1", body="x"))
    s.delete(Note(note_id="n1", body="x"))
    assert s.commit(idempotency_key=key).replayed
    assert notes(db) == {"n1": "x"}  # (the replay deleted nothing)


@pytest.mark.engines('moto', 'local')
def test_an_optional_field_given_none_and_left_out_are_the_same_writes() -> None:
    from tests.support.models import User

    a = User(user_id="u1", username="ann", email="a@x")
    b = User(user_id="u1", username="ann", email="a@x", full_name="")
    assert digest([SaveEntry(a)]) == digest([SaveEntry(b)])
