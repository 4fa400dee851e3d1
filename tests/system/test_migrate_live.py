"""``dynaorm migrate`` on a live table (contract 18, DynamoDB Local): N versioned entities
with a unique field and a GSI, written under their old key template, are moved by the
command while 8 threads read every entity (``get`` must find each one, under either
layout, at every moment) and write them through the new classes (a write moves what it
touches). The command is stopped after a few pages and resumed from its checkpoint. At
the end no old-layout item is left, no committed write is lost, and ``check`` is clean.

N is 300 in pages of 50 (the command stopped after 3 of its 6 pages), or 10,000 with
``DYNAORM_SCALE=1`` (``DYNAORM_MIGRATE_N`` sets it exactly): 1,000 took 77 s of CI's two
cores for the same interleavings (pages moved beside the threads, a stop and a resume).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynaorm import Client, ConflictError, Session
from dynaorm.cli.main import main
from dynaorm.schema.entity import encode_entity, spec_of
from dynaorm.schema.rules.unique import guard_item
from dynaorm.schema.rules.versioned import version_row
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.audit import audit_table
from tests.support.migration_models import Ledger, OldLedger, mig, old

pytestmark = pytest.mark.sync_only

THREADS = 8
N = int(os.environ.get("DYNAORM_MIGRATE_N")
        or (10_000 if os.environ.get("DYNAORM_SCALE") == "1" else 300))
PAGE = 50


@pytest.fixture
def local(ddb_local: str) -> Iterator[TestBackend]:
    with use_tables(mig, endpoint_url=ddb_local, name_suffix=worker_suffix()) as tb:
        saved = (old.name, old.binding())  # (use_tables' own seam: restored below)
        old.name = mig.name  # (on a client of its own: the old release's process)
        old.restore((None, {}, Client(ddb_local)))
        tb.table.client  # noqa: B018 - one shared client before the threads race
        old.client  # noqa: B018
        try:
            yield tb
        finally:
            old.name = saved[0]
            old.restore(saved[1])


def _seed(n: int) -> None:
    """n old ledgers, each at version 2 (two version rows, a guard, a GSI key), written as
    the old classes write them, in BatchWriteItem requests (fast to set up)."""
    spec = spec_of(OldLedger)
    items = []
    for i in range(n):
        v1 = OldLedger(id=f"L{i}", code=f"C{i}", version=1)
        v2 = OldLedger(id=f"L{i}", code=f"C{i}", balance=1, version=2)
        latest = encode_entity(v2, spec, 2)
        items += [latest, version_row(spec, encode_entity(v1, spec, 1), "v00000001_LEDGER"),
                  version_row(spec, latest, "v00000002_LEDGER"),
                  guard_item(spec, spec.uniques[0], f"code#C{i}",
                             {"pk": f"BOOK#L{i}", "sk": "v0_LEDGER"})]
    client = old.client
    for at in range(0, len(items), 25):
        pending: dict[str, Any] = {old.name: [{"PutRequest": {"Item": it}}
                                              for it in items[at:at + 25]]}
        while pending:
            pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems")


def _worker(t: int, n: int, stop: threading.Event, expected: dict[str, int],
            stats: dict[str, int], missing: list[str]) -> None:
    """Reads any entity (it must be found); writes its own slice (ids = t mod THREADS)."""
    s = Session(mig)
    rng = random.Random(t)
    while not stop.is_set():
        i = rng.randrange(n)
        ident = f"L{i}"
        got = s.get(Ledger, id=ident)
        stats["reads"] += 1
        if got is None:
            missing.append(ident)
            continue
        if i % THREADS != t:
            continue
        for _ in range(20):  # a move by migrate may win: read again and redo the write
            assert got is not None
            got.balance += 1
            s.save(got)
            try:
                s.commit()
            except ConflictError:
                s.rollback()
                stats["conflicts"] += 1
                got = s.get(Ledger, id=ident)
                if got is None:
                    missing.append(ident)
                    break
                continue
            expected[ident] = got.balance
            stats["writes"] += 1
            break


def test_migrate_beside_8_readers_and_writers(local: TestBackend, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    _seed(N)
    seeded = time.monotonic()
    stop = threading.Event()
    expected: dict[str, int] = {}
    missing: list[str] = []
    errors: list[BaseException] = []
    stats_all = [{"reads": 0, "writes": 0, "conflicts": 0} for _ in range(THREADS)]

    def run(t: int) -> None:
        try:
            _worker(t, N, stop, expected, stats_all[t], missing)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    point = tmp_path / "migrate.json"
    ref = "tests.support.migration_models:mig"
    url = ["--endpoint-url", str(local.endpoint_url)]
    try:
        first = main(["migrate", ref, *url, "--checkpoint", str(point), "--page-size",
                      str(PAGE), "--max-pages", "3", "--concurrency", "4"])
        interrupted = capsys.readouterr().out
        rest = main(["migrate", ref, *url, "--checkpoint", str(point), "--resume",
                     "--page-size", str(PAGE), "--concurrency", "4"])
        finished = capsys.readouterr().out
    finally:
        stop.set()
        for th in threads:
            th.join(60)
    done = time.monotonic()
    stats = {k: sum(s[k] for s in stats_all) for k in stats_all[0]}
    print(f"migrate of {N} entities: seeding {seeded - started:.1f}s, migration "
          f"{done - seeded:.1f}s beside {THREADS} threads ({stats})")
    print(finished)
    assert errors == []
    assert first == 1 and "--resume" in interrupted
    assert rest == 0, finished  # 0: everything moved and check clean
    assert "resumed from checkpoint" in finished
    assert missing == []  # get found every entity at every moment
    assert stats["reads"] > 0 and stats["writes"] > 0
    items = local.scan()
    assert not [i for i in items if str(i["pk"]).startswith("BOOK#")]
    latest = {i["id"]: i for i in items if i["sk"] == "v0_LEDGER"}
    assert len(latest) == N
    versions = {}
    for i in items:
        if str(i["sk"]).startswith("v0000"):
            versions[i["id"]] = versions.get(i["id"], 0) + 1
    guards = [i for i in items if i["_type"] == "dynaorm:unique"]
    assert len(guards) == N
    assert len(items) == N + N + sum(versions.values())
    for ident, row in latest.items():
        assert versions[ident] == row["version"]  # every version row moved, none lost
        assert (row["gsi1pk"], row["gsi1sk"]) == ("ORG#acme", f"LEDGER#{ident}")
    for ident, balance in expected.items():
        assert latest[ident]["balance"] == balance  # no committed write lost
    assert audit_table(local.table)[1] == []
    guard_owner = {g["pk"]: g["owner_pk"] for g in guards}
    assert all(guard_owner[f"code#C{i}"] == f"LEDGER#L{i}" for i in range(N))
