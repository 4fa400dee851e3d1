"""``find()`` under a race (contract section 3, 0.2), on DynamoDB Local: while 16 threads
keep moving email addresses among 8 users, 8 threads look addresses up. A guard can be
re-pointed between find's two reads; find must never return a user that, when read, does
not hold the address looked up. Afterwards ``dynaorm check`` finds the data consistent."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator

import pytest

from dynaorm import ConcurrentModificationError, DynaormError, Session
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.audit import audit_table
from tests.support.concurrency import join_all
from tests.support.models import User, app

USERS = 8
EMAILS = [f"mail{i}@example.com" for i in range(12)]  # 8 held, 4 free at any time
SECONDS = 3.0


@pytest.fixture
def local(ddb_local: str) -> Iterator[TestBackend]:
    with use_tables(app, endpoint_url=ddb_local, name_suffix=worker_suffix()) as tb:
        yield tb


def test_find_never_returns_a_wrong_owner(local: TestBackend) -> None:
    with Session(app) as s:
        for i in range(USERS):
            s.save(User(user_id=f"u{i}", username=f"user{i}", email=EMAILS[i]))
    stop = time.monotonic() + SECONDS
    wrong: list[tuple[str, str]] = []
    moves = [0]
    finds = {"found": 0, "none": 0}
    lock = threading.Lock()
    errors: list[BaseException] = []

    def mover(seed: int) -> None:
        rng = random.Random(seed)
        try:
            while time.monotonic() < stop:
                s = Session(app)
                user = s.get(User, user_id=f"u{rng.randrange(USERS)}", consistent=True)
                assert user is not None
                user.email = rng.choice(EMAILS).upper() if rng.random() < 0.5 else (
                    rng.choice(EMAILS))
                s.save(user)
                try:
                    s.commit()
                except (ConcurrentModificationError, DynaormError):
                    continue  # taken by another user, or the user changed meanwhile
                with lock:
                    moves[0] += 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def finder(seed: int) -> None:
        rng = random.Random(seed)
        try:
            while time.monotonic() < stop:
                email = rng.choice(EMAILS)
                looked_up = email.title() if rng.random() < 0.5 else email
                owner = Session(app).find(User, email=looked_up)
                with lock:
                    if owner is None:
                        finds["none"] += 1
                    elif owner.email.lower() != email:
                        wrong.append((email, owner.email))
                    else:
                        finds["found"] += 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=mover, args=(i,)) for i in range(16)]
    threads += [threading.Thread(target=finder, args=(100 + i,)) for i in range(8)]
    join_all(threads, timeout=SECONDS + 60)
    assert not errors, errors
    assert wrong == []  # 0 wrong owners
    assert moves[0] > 0 and finds["found"] > 0  # the race really ran
    _, problems = audit_table(app)
    assert problems == []  # dynaorm check: clean
    stored = local.scan()
    owners = [i for i in stored if i.get("_type") == "User"]
    assert len({o["email"].lower() for o in owners}) == USERS
