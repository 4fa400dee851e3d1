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
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import (
    IdempotencyMismatchError,
    OutcomeUnknownError,
    Session,
)
from dynaorm.schema.rules.receipts import digest
from dynaorm.testing import TestBackend, inject_faults
from dynaorm.write.delete import DeleteEntry
from dynaorm.write.save import SaveEntry
from tests.conftest import engine_of
from tests.support.exactly_once import (
    DigestStamped,
    key_of,
    lost_commit,
    no_waits,
    notes,
    second_writer,
)
from tests.support.examples import examples
from tests.support.models import Note

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
