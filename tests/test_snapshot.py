"""``get_many(..., snapshot=True)`` as one TransactGetItems, and ``concurrency=`` of bulk
reads and writes (contract section 8, 0.2)."""

from __future__ import annotations

import pytest

from dynaorm import DynaormError, TransactionTooLargeError
from dynaorm.testing import TestBackend
from tests.support.models import Note
from tests.support.recording import Requests

pytestmark = pytest.mark.sync_only  # instruments of the sync client (see conftest)

NOTES = [Note(note_id=f"n{i:03d}", body=f"b{i}") for i in range(260)]


@pytest.fixture
def rec(db: TestBackend) -> Requests:
    db.session().save_many(NOTES)
    return Requests(db.table)


def test_snapshot_is_one_transact_get(db: TestBackend, rec: Requests) -> None:
    s = db.session()
    keys = [{"note_id": "n005"}, {"note_id": "nope"}, {"note_id": "n001"}, {"note_id": "n005"}]
    got = s.get_many(Note, keys, snapshot=True)
    assert got == [NOTES[5], None, NOTES[1], NOTES[5]]
    assert [op for op, _ in rec.calls] == ["TransactGetItems"]
    (request,) = rec.of("TransactGetItems")
    assert [g["Get"]["Key"]["pk"]["S"] for g in request["TransactItems"]] == [
        "NOTE#n005", "NOTE#nope", "NOTE#n001"]  # a repeated key is read once
    assert all(g["Get"]["TableName"] == db.table.name for g in request["TransactItems"])
    loaded = got[0]
    assert loaded is not None and loaded._is_persisted
    assert s.get_many(Note, [], snapshot=True) == []


def test_snapshot_of_100_distinct_items_and_no_more(db: TestBackend, rec: Requests) -> None:
    s = db.session()
    # DynamoDB takes 100 items a TransactGetItems; moto and DynamoDB Local still refuse
    # more than 25, so 25 is what can be shown here (100 is the limit dynaorm enforces)
    n = 25
    keys = [{"note_id": note.note_id} for note in NOTES[:n]]
    assert s.get_many(Note, [*keys, *keys], snapshot=True) == [*NOTES[:n], *NOTES[:n]]
    assert len(rec.of("TransactGetItems")[0]["TransactItems"]) == n
    rec.clear()
    with pytest.raises(TransactionTooLargeError, match="101"):
        s.get_many(Note, [{"note_id": n.note_id} for n in NOTES[:101]], snapshot=True)
    assert rec.calls == []  # refused before anything was sent


def test_get_many_sends_batches_concurrently(db: TestBackend, rec: Requests) -> None:
    s = db.session()
    keys = [{"note_id": n.note_id} for n in reversed(NOTES)]
    rec.expect_overlap(2)
    assert s.get_many(Note, keys) == NOTES[::-1]
    assert sorted(len(r["RequestItems"][db.table.name]["Keys"])
                  for r in rec.of("BatchGetItem")) == [60, 100, 100]
    assert rec.overlapped  # two batches were in flight at once
    rec.clear()
    rec.expect_overlap(2, timeout=0.5)  # the same check fails when batches go one by one
    assert s.get_many(Note, keys, concurrency=1) == NOTES[::-1]
    assert len(rec.threads) == 1 and rec.overlapped is False
    for bad in (0, 17, 2.0, True):
        with pytest.raises(DynaormError, match="concurrency"):
            s.get_many(Note, keys, concurrency=bad)  # type: ignore[arg-type]


def test_save_many_sends_batches_concurrently(db: TestBackend, rec: Requests) -> None:
    s = db.session()
    more = [Note(note_id=f"m{i:03d}", body="x") for i in range(120)]
    rec.expect_overlap(3)
    s.save_many(more, concurrency=3)
    assert sorted(len(r["RequestItems"][db.table.name]) for r in rec.of("BatchWriteItem")) == [
        20, 25, 25, 25, 25]
    assert rec.overlapped  # three batches were in flight at once
    assert s.get_many(Note, [{"note_id": n.note_id} for n in more]) == more
    with pytest.raises(DynaormError, match="concurrency"):
        s.save_many(more, concurrency=0)
