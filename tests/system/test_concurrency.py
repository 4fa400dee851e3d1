"""Racing writers, each with its own Session, on every engine: unique guards and version
rows stay right under contention, and racing updates lose nothing (no lost updates,
contract section 4; on moto since dynaorm's test backend answers one request at a time,
contract section 21)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from dynaorm import (
    ConcurrentModificationError,
    DynaormError,
    TransactionConflictError,
    UniqueConstraintError,
)
from dynaorm.jobs.checking import check_table
from dynaorm.testing import TestBackend
from tests.support.concurrency import race
from tests.support.guards import assert_guards_consistent
from tests.support.models import Audit, User
from tests.support.update_models import Counter, Player

pytestmark = [pytest.mark.sync_only,  # instruments of the sync client (see conftest)
              pytest.mark.engines("moto", "local")]

THREADS = 8


@pytest.fixture
def db(db: TestBackend) -> Iterator[TestBackend]:
    """The shared table, its client made before the threads race (requests are atomic
    on every engine: dynaorm's test backend answers moto's one at a time)."""
    db.table.db.botocore  # noqa: B018 - create the shared client before the threads race
    yield db


def test_racing_registrations_with_one_email(db: TestBackend) -> None:
    def register(i: int) -> str:
        s = db.session()
        s.save(User(user_id=f"u{i}", username=f"user{i}", email="Same@Example.com"))
        s.commit()
        return f"u{i}"

    results = race(THREADS, register)
    winners = [r for r in results if isinstance(r, str)]
    losers = [r for r in results if isinstance(r, BaseException)]
    unexpected = [r for r in losers
                  if not isinstance(r, UniqueConstraintError | TransactionConflictError)]
    assert not unexpected, unexpected
    assert len(winners) == 1
    for err in losers:
        if isinstance(err, UniqueConstraintError):
            assert err.field == "email" and err.violations == [("email", "Same@Example.com")]
    items = db.scan()
    users = [i for i in items if i["_type"] == "User"]
    assert [u["user_id"] for u in users] == winners
    guards = [i for i in items if i["_type"] == "dynaorm:unique"]
    assert sorted(g["pk"] for g in guards) == ["email#same@example.com",
                                                f"username#user{winners[0][1:]}"]
    assert_guards_consistent(db)


def test_racing_email_changes_to_one_value(db: TestBackend) -> None:
    with db.session() as s:
        for i in range(THREADS):
            s.save(User(user_id=f"u{i}", username=f"user{i}", email=f"u{i}@x.com"))
    loaded = [db.session().get(User, user_id=f"u{i}", consistent=True) for i in range(THREADS)]

    def change(i: int) -> int:
        user = loaded[i]
        assert user is not None
        user.email = "wanted@x.com"
        s = db.session()
        s.save(user)
        s.commit()
        return i

    results = race(THREADS, change)
    winners = [r for r in results if isinstance(r, int)]
    assert len(winners) == 1
    assert all(isinstance(r, UniqueConstraintError | TransactionConflictError)
               for r in results if isinstance(r, BaseException))
    assert_guards_consistent(db)
    # every loser kept its own email and its guard
    items = db.scan()
    emails = sorted(i["email"] for i in items if i["_type"] == "User")
    assert emails == sorted(["wanted@x.com"] + [f"u{i}@x.com" for i in range(THREADS)
                                                if i != winners[0]])


def test_racing_versioned_updates_keep_history_contiguous(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Audit(equipment_id="E1", part="P1", notes="start"))
    rounds = 3
    wins: list[int] = []
    lock = threading.Lock()

    def update(i: int) -> int:
        won = 0
        for r in range(rounds):
            s = db.session()
            a = s.get(Audit, equipment_id="E1", part="P1", consistent=True)
            assert a is not None
            a.notes = f"t{i}r{r}"
            s.save(a)
            try:
                s.commit()
            except (ConcurrentModificationError, TransactionConflictError):
                continue
            with lock:
                wins.append(a.version)
            won += 1
        return won

    results = race(THREADS, update)
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert sum(r for r in results if isinstance(r, int)) == len(wins) >= rounds
    hist = db.session().history(Audit, equipment_id="E1", part="P1").all()
    versions = [h.version for h in hist]
    n = len(versions)
    assert versions == list(range(1, n + 1))  # no gaps, no duplicates
    assert sorted(wins) == list(range(2, n + 1))  # each winner wrote exactly one version
    latest = db.session().get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert latest is not None and latest.version == n
    assert latest.notes == hist[-1].notes


def test_errors_under_contention_are_typed(db: TestBackend) -> None:
    """Deleting and updating one user at once: every loser gets a typed dynaorm error."""
    with db.session() as s:
        s.save(User(user_id="u1", username="bob", email="bob@x.com"))
    loaded = [db.session().get(User, user_id="u1", consistent=True) for _ in range(THREADS)]

    def act(i: int) -> str:
        user = loaded[i]
        assert user is not None
        s = db.session()
        if i % 2:
            s.delete(user)
        else:
            user.email = f"bob{i}@x.com"
            s.save(user)
        s.commit()
        return "ok"

    results = race(THREADS, act)
    assert all(r == "ok" or isinstance(r, DynaormError) for r in results), results
    assert results.count("ok") >= 1
    assert_guards_consistent(db)


# -- racing updates lose nothing ---------------------------------------------------------
def test_16_racing_atomic_adds_all_land(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Counter(name="c1", count=100))

    def add(i: int) -> int:
        s = db.session()
        s.update(Counter, name="c1").add(count=1)
        s.commit()
        return i

    results = race(16, add)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, errors
    got = db.session().get(Counter, name="c1", consistent=True)
    assert got is not None and got.count == 116


def test_16_racing_load_increment_saves_lose_nothing(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Counter(name="c1", count=0))
    loaded = [db.session().get(Counter, name="c1", consistent=True) for _ in range(16)]

    def bump(i: int) -> int:
        s = db.session()
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
    got = db.session().get(Counter, name="c1", consistent=True)
    assert got is not None and got.count == len(wins) == 1


def test_8_racing_leaderboard_adds_keep_the_index_key_right(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Player(player_id="p1", handle="ann", score=0))

    def add(i: int) -> int:
        for _ in range(20):  # a rule update reads first: a stale read is retried
            s = db.session()
            s.update(Player, player_id="p1").add(score=i + 1)
            try:
                s.commit()
                return i + 1
            except (ConcurrentModificationError, TransactionConflictError):
                continue
        raise AssertionError("never landed")

    results = race(8, add)
    assert all(isinstance(r, int) for r in results), results
    row = next(r for r in db.scan() if r["_type"] == "Player")
    assert row["score"] == sum(range(1, 9))
    assert row["gsi2sk"] == f"{sum(range(1, 9)):010d}#p1"
    audit = check_table(db.table)  # the whole table: no stale index key, no orphan
    assert audit.problems == [], audit.problems


def test_racing_writers_with_one_if_match_exactly_one_wins(db: TestBackend) -> None:
    """Eight handlers load the same version and save with the same expected version (an
    If-Match): one is applied, every other is refused with the stored entity (the new
    ETag), and the stored version moved by exactly one."""
    with db.session() as s:
        s.save(Audit(equipment_id="RACE", part="P", notes="v1"))

    def handler(i: int) -> int:
        s = db.session()
        audit = s.get(Audit, equipment_id="RACE", part="P", consistent=True)
        assert audit is not None
        audit.version = 1  # the client's If-Match
        audit.notes = f"writer {i}"
        s.save(audit)
        s.commit()
        return audit.version

    results = race(8, handler)
    won = [r for r in results if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, BaseException)]
    assert won == [2]
    assert all(isinstance(e, ConcurrentModificationError) for e in lost), lost
    stored = db.session().get(Audit, equipment_id="RACE", part="P", consistent=True)
    assert stored is not None and stored.version == 2
    for error in lost:  # the current ETag comes with every refusal
        assert isinstance(error, ConcurrentModificationError)
        assert error.item is not None and error.item.version == 2
