"""``dynaorm check --repair`` beside live writers (0.3, DynamoDB Local): 16 writer threads
save, change unique values, delete and save versioned entities while check --repair loops;
no finding is reported on the healthy table (every one was a writer's in-between state,
dropped by the confirmation), and every writer finds its own last committed state intact."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm.jobs.checking import check_table
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.audit import audit_table
from tests.support.guards import assert_guards_consistent
from tests.support.models import Audit, User, app

pytestmark = pytest.mark.sync_only

WRITERS = 16
SECONDS = 15.0


@pytest.fixture
def local(ddb_local: str) -> Iterator[TestBackend]:
    with use_tables(app, endpoint_url=ddb_local, name_suffix=worker_suffix()) as tb:
        tb.table.client  # noqa: B018 - one shared client before the threads race
        yield tb


def _writer(tb: TestBackend, w: int, stop: threading.Event, out: dict[int, Any]) -> None:
    """Writer ``w``: its own user (renamed, re-mailed, deleted and re-created) and its own
    versioned audit; records what it last committed."""
    s = tb.session()
    user: User | None = None
    audit = Audit(equipment_id=f"W{w}", part="P")
    s.save(audit)
    s.commit()
    n = 0
    while not stop.is_set():
        n += 1
        step = n % 4
        if user is None:
            user = User(user_id=f"w{w}", username=f"w{w}u{n}", email=f"W{w}E{n}@x.io")
            s.save(user)
        elif step == 1:
            user.username = f"w{w}u{n}"
            s.save(user)
        elif step == 2:
            user.email = f"W{w}E{n}@x.io"
            s.save(user)
        elif step == 3:
            s.delete(user)
            user = None
        audit.notes = f"n{n}"
        s.save(audit)
        s.commit()
    out[w] = (None if user is None else (user.username, user.email), audit.notes,
              audit.version)


def test_check_repair_beside_16_writers_changes_nothing(local: TestBackend) -> None:
    stop = threading.Event()
    out: dict[int, Any] = {}
    errors: list[BaseException] = []

    def run(w: int) -> None:
        try:
            _writer(local, w, stop, out)
        except BaseException as exc:
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=run, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    runs, reported, repairs = 0, [], []
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline and not stop.is_set():
        result = check_table(local.table, fix=True, page_size=50)
        runs += 1
        reported += result.problems
        repairs += [r for r in result.repairs if r.ok]
    stop.set()
    for t in threads:
        t.join(30)
    assert errors == []
    print(f"{runs} check --repair runs beside {WRITERS} writers: "
          f"{len(reported)} findings, {len(repairs)} repairs")
    assert runs >= 2
    assert reported == [] and repairs == []
    s = local.session()
    for w, (user, notes, version) in out.items():
        stored = s.get(User, user_id=f"w{w}")
        assert (None if stored is None else (stored.username, stored.email)) == user
        got = s.get(Audit, equipment_id=f"W{w}", part="P")
        assert got is not None and (got.notes, got.version) == (notes, version)
    assert_guards_consistent(local)
    assert audit_table(local.table)[1] == []
