"""No lost updates (contract section 4, 0.2): an update of a persisted object is conditioned
on the stored values of every attribute it writes or removes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import (
    ConcurrentModificationError,
    Session,
    TransactionConflictError,
    TransactionTooLargeError,
)
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from dynaorm.tools.check import check_table
from dynaorm.write.planner import compile_commit
from dynaorm.write.staged import SaveEntry
from tests.support.concurrency import race
from tests.support.models import Note, app
from tests.support.update_models import Counter, Player

T = "dynaorm-tests"


def _note(db: TestBackend, **fields: Any) -> None:
    with db.session() as s:
        s.save(Note(note_id="n1", **fields))


def _load(db: TestBackend) -> tuple[Session, Note]:
    s = db.session()
    n = s.get(Note, note_id="n1")
    assert n is not None
    return s, n


def test_same_attribute_from_one_loaded_state_second_writer_fails(db: TestBackend) -> None:
    _note(db, body="v0")
    s1, a = _load(db)
    s2, b = _load(db)
    a.body = "from a"
    s1.save(a)
    s1.commit()
    b.body = "from b"
    s2.save(b)
    before = db.scan()
    with pytest.raises(ConcurrentModificationError) as err:
        s2.commit()
    assert err.value.entity is Note
    assert db.scan() == before
    assert before[0]["body"] == "from a"
    # b kept the state it was loaded with: reload and retry works
    s3, c = _load(db)
    c.body = "from b"
    s3.save(c)
    s3.commit()
    assert db.scan()[0]["body"] == "from b"


def test_removed_attribute_is_conditioned_too(db: TestBackend) -> None:
    _note(db, body="v0", tags=["x"])
    s1, a = _load(db)
    s2, b = _load(db)
    a.tags = ["y"]
    s1.save(a)
    s1.commit()
    b.tags = []  # written as an empty list: conditioned on the old ["x"]
    s2.save(b)
    before = db.scan()
    with pytest.raises(ConcurrentModificationError):
        s2.commit()
    assert db.scan() == before


def test_attribute_absent_when_loaded_must_still_be_absent(db: TestBackend) -> None:
    t = db.table
    type_attr = t.type_attribute
    t.transport.call("PutItem", {"TableName": t.name, "Item": {  # written by other code
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
    before = db.scan()
    with pytest.raises(ConcurrentModificationError):
        s2.commit()
    assert db.scan() == before
    assert before[0]["body"] == "A"


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
    _note(db, body="v0")
    s1, a = _load(db)
    s2, b = _load(db)
    a.body = "from a"
    s1.save(a)
    s1.commit()
    b.body = "from b"
    s2.save(b, overwrite=True)
    s2.commit()
    assert db.scan()[0]["body"] == "from b"


def test_moving_a_key_is_conditioned_on_every_attribute_it_copies(db: TestBackend) -> None:
    _note(db, body="v0")
    s1, a = _load(db)
    s2, b = _load(db)
    a.body = "changed"
    s1.save(a)
    s1.commit()
    b.note_id = "n2"  # moves the item: would copy the stale body to the new key
    s2.save(b)
    before = db.scan()
    with pytest.raises(ConcurrentModificationError):
        s2.commit()
    assert db.scan() == before


def test_model_copy_of_a_loaded_object_saves_as_an_update(db: TestBackend) -> None:
    _note(db, body="v0")
    s, n = _load(db)
    copy = n.model_copy(update={"body": "copied"})
    assert copy._dynaorm_state == n._dynaorm_state
    assert copy._dynaorm_state is not None
    s.save(copy)
    plan = s.plan()
    (op,) = plan.ops
    assert type(op).__name__ == "Update"
    s.commit()
    assert db.scan()[0]["body"] == "copied"
    deep = copy.model_copy(deep=True)
    assert deep._dynaorm_state is not None


def test_request_size_counts_condition_values() -> None:
    """Twelve updates of ~190 KB each: 2.3 MB of new values, but each is also conditioned on
    its ~190 KB old value, so the request is over 4 MB and is refused before sending."""
    from dynaorm.model.entity import Entity

    entries = []
    for i in range(12):
        n = Note._from_item({"pk": {"S": f"NOTE#{i}"}, "sk": {"S": "NOTE"},
                             "type": {"S": "Note"}, "note_id": {"S": str(i)},
                             "body": {"S": "a" * 190_000}})
        n.body = "b" * 190_000
        entries.append((SaveEntry(n), n._dynaorm_state))
    assert isinstance(entries[0][0].obj, Entity)
    with pytest.raises(TransactionTooLargeError):
        compile_commit(T, entries)
    plan, _ = compile_commit(T, entries[:5])  # the same shape, small enough, plans fine
    assert len(plan.ops) == 5


# -- races, on DynamoDB Local only (moto is not atomic across threads) ---------------------
@pytest.fixture
def local(ddb_local: str) -> Iterator[TestBackend]:
    with use_tables(app, endpoint_url=ddb_local, name_suffix=worker_suffix()) as tb:
        tb.table.transport.client  # noqa: B018 - one shared client before the threads race
        yield tb


def test_16_racing_atomic_adds_all_land(local: TestBackend) -> None:
    with local.session() as s:
        s.save(Counter(name="c1", count=100))

    def add(i: int) -> int:
        s = local.session()
        s.update(Counter, name="c1").add(count=1)
        s.commit()
        return i

    results = race(16, add)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors
    got = local.session().get(Counter, name="c1", consistent=True)
    assert got is not None and got.count == 116


def test_16_racing_load_increment_saves_lose_nothing(local: TestBackend) -> None:
    with local.session() as s:
        s.save(Counter(name="c1", count=0))
    loaded = [local.session().get(Counter, name="c1", consistent=True) for _ in range(16)]

    def bump(i: int) -> int:
        s = local.session()
        c = loaded[i]
        assert c is not None
        c.count += 1
        s.save(c)
        s.commit()
        return i

    results = race(16, bump)
    wins = [r for r in results if not isinstance(r, BaseException)]
    losses = [r for r in results if isinstance(r, BaseException)]
    assert all(isinstance(e, ConcurrentModificationError) for e in losses), losses
    got = local.session().get(Counter, name="c1", consistent=True)
    assert got is not None and got.count == len(wins) == 1


def test_8_racing_leaderboard_adds_keep_the_index_key_right(local: TestBackend) -> None:
    with local.session() as s:
        s.save(Player(player_id="p1", handle="ann", score=0))

    def add(i: int) -> int:
        for _ in range(20):  # a rule update reads first: a stale read is retried
            s = local.session()
            s.update(Player, player_id="p1").add(score=i + 1)
            try:
                s.commit()
                return i + 1
            except (ConcurrentModificationError, TransactionConflictError):
                continue
        raise AssertionError("never landed")

    results = race(8, add)
    assert all(isinstance(r, int) for r in results), results
    row = next(r for r in local.scan() if r["_type"] == "Player")
    assert row["score"] == sum(range(1, 9))
    assert row["gsi2sk"] == f"{sum(range(1, 9)):010d}#p1"
    audit = check_table(local.table)  # the whole table: no stale index key, no orphan
    assert audit.problems == [], audit.problems
