"""Paging cost (contract section 6, 0.2; issue 9): an unsharded page of P is one request;
over N shards about one request per shard that still has items, reading about P + N items,
with cursors that hold positions only."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from dynaorm import Entity, Query, Session, Shards
from dynaorm.testing import TestBackend
from tests.support.models import app
from tests.support.recording import Requests

pytestmark = [pytest.mark.sync_only,  # instruments of the sync client (see conftest)
              pytest.mark.engines("moto", "local")]

N = 16


class Flat(Entity):
    class Meta:
        table = app
        pk = "FLAT#{group}"
        sk = "{n:04d}"

    group: str
    n: int


class Spread(Entity):
    class Meta:
        table = app
        pk = "SPREAD#{sid}"
        sk = "S"
        indexes = {"gsi1": ("SPREADS#{kind}#{shard}", "{at:05d}")}
        shards = {"gsi1": N}

    sid: str
    kind: str
    at: int


class Slotted(Entity):
    """Eight shards, of which only slots 0 and 1 hold items."""

    class Meta:
        table = app
        pk = "SLOT#{sid}"
        sk = "S"
        indexes = {"gsi2": ("SLOTS#{shard}", "{sid}")}
        shards = {"gsi2": Shards(8, by="slot")}

    sid: str
    slot: int


@pytest.fixture
def s(db: TestBackend) -> Session:
    session = db.session()
    session.save_many([*(Flat(group="g", n=i) for i in range(40)),
                       *(Spread(sid=f"s{i}", kind="k", at=i) for i in range(200)),
                       *(Slotted(sid=f"x{i:02d}", slot=i % 2) for i in range(30))])
    return session


@pytest.fixture
def rec(db: TestBackend) -> Requests:
    return Requests(db.table)


def pages(q: Query[Any], rec: Requests) -> list[tuple[list[Any], int, int, str | None]]:
    """(items, requests, items read, cursor) of each page, each page a fresh request."""
    out = []
    cursor: str | None = None
    while True:
        rec.clear()
        page = q.page(cursor)
        out.append((page.items, len(rec.of("Query")), rec.items_read("Query"), page.cursor))
        cursor = page.cursor
        if cursor is None:
            return out
        assert len(out) < 100


def test_an_unsharded_page_is_one_request(s: Session, rec: Requests) -> None:
    got = pages(s.query(Flat, group="g").page_size(10), rec)
    # DynamoDB returns a LastEvaluatedKey when a page ends exactly at the end (the 5th,
    # empty page learns that it was the end); moto does not
    assert [len(items) for items, *_ in got] in ([10, 10, 10, 10, 0], [10, 10, 10, 10])
    assert all(requests == 1 for _, requests, _, _ in got)
    assert [o.n for items, *_ in got for o in items] == list(range(40))
    rec.clear()
    page = s.query(Flat, group="g").page_size(7).page()
    assert len(page.items) == 7
    (request,) = rec.of("Query")
    assert request["Limit"] == 7
    rec.clear()
    assert [f.n for f in s.query(Flat, group="g").limit(5)] == list(range(5))
    (request,) = rec.of("Query")
    assert request["Limit"] == 5  # not limit + 1
    rec.clear()
    last = s.query(Flat, group="g").page_size(15).limit(12).page()
    assert len(last.items) == 12 and last.cursor is None and len(rec.of("Query")) == 1


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_sharded_pages_read_about_p_plus_n(s: Session, rec: Requests) -> None:
    p = 25
    got = pages(s.query(Spread, index="gsi1", kind="k").page_size(p), rec)
    assert [o.at for items, *_ in got for o in items] == list(range(200))
    for items, requests, read, cursor in got[:-1]:
        assert len(items) == p
        assert requests <= 2 * N  # one per shard, and a few refills
        assert read <= p + 2 * N  # not p per shard
        assert cursor is not None and len(cursor) < 1200
        body = cursor.split(".")[0]
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        assert len(data["p"]) == N  # positions, one per shard: never items
        assert all(pos in (None, False) or (isinstance(pos, list) and len(pos) == 3)
                   for pos in data["p"])
    total_read = sum(read for _, _, read, _ in got)
    assert total_read <= 2.5 * 200
    assert [r.at for r in s.query(Spread, index="gsi1", kind="k").reverse().page_size(30)
            .page().items] == list(range(199, 169, -1))


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_shards_without_items_are_not_read_again(s: Session, rec: Requests) -> None:
    got = pages(s.query(Slotted, index="gsi2").page_size(10), rec)
    assert [x.sid for items, *_ in got for x in items] == [f"x{i:02d}" for i in range(30)]
    first_requests = got[0][1]
    assert first_requests >= 8  # every shard is asked once
    assert all(requests <= 4 for _, requests, _, _ in got[1:])  # then only the two with items
