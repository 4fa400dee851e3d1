"""Scoped index queries and scans read their answers' bytes straight into objects, as
unscoped ones do (issue 68's budget: a scoped read costs at most 5% more client CPU),
each result admitted by its stored partition key; an answer holding an item under
another tenant's key (its attributes and index key saying ours) is read the plain way,
which leaves that item out. A scoped scan filters by key on the server
(``begins_with(pk, "TENANT#t1#TICKET#")``), so such an item is not even returned; the
session of the tenant whose key it holds skips it too (its fields say another tenant: a
stale key, contract 24). Engines: moto
and DynamoDB Local, sync and async (the ``db`` fixture's session kinds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest

from dynaorm import GSI, AsyncSession, Entity, Session, Table
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.protocol.steps import call
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.recording import Requests

tickets = Table("scope-fast", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Ticket(Entity):
    """A tenant's plain entity (no rule keeps it from the fast reader)."""

    class Meta:
        table = tickets
        pk = "TENANT#{tenant_id}#TICKET#{ticket_id}"
        sk = "TICKET"
        indexes = {"gsi1": ("TENANT#{tenant_id}#STATUS#{status}", "{ticket_id}")}

    tenant_id: str
    ticket_id: str
    status: str
    title: str = ""


def _scoped(kind: str | None, tenant: str = "t1") -> Session:
    if kind == "async":
        return cast(Session, BlockingAsyncSession(AsyncSession(tickets,
                                                               scope={"tenant_id": tenant})))
    return Session(tickets, scope={"tenant_id": tenant})


@pytest.fixture
def tb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """Three open and two closed tickets of t1, one open of t2, and ``liar``: stored
    under t2's key, its attributes and its gsi1 partition saying t1 (open)."""
    with use_tables(tickets, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as backend:
        backend.session_kind = db.session_kind
        with Session(tickets) as s:
            for n in range(5):
                s.save(Ticket(tenant_id="t1", ticket_id=f"k{n}",
                              status="open" if n < 3 else "closed"))
            s.save(Ticket(tenant_id="t2", ticket_id="k9", status="open"))
            s.save(Ticket(tenant_id="t1", ticket_id="liar", status="open"))
        [item] = [i for i in backend.scan_raw(tickets) if i["ticket_id"]["S"] == "liar"]
        tickets.db.driver.run(call("DeleteItem", {"TableName": tickets.name, "Key": {
            "pk": item["pk"], "sk": item["sk"]}}))
        item["pk"] = {"S": "TENANT#t2#TICKET#liar"}
        tickets.db.driver.run(call("PutItem", {"TableName": tickets.name, "Item": item}))
        yield backend


def _fast(objs: list[Any]) -> bool:
    """Whether every object was read from its answer's bytes (its state still the page
    and its place there)."""
    return all(type(object.__getattribute__(o, "_dynaorm_slot")) is tuple for o in objs)


def _as_unscoped(objs: list[Any], read: Any) -> None:
    """``objs`` (a scoped read's) were read as the same read unscoped reads its objects:
    from the answer's bytes where the engine's wire gives them (DynamoDB Local on
    dynaorm's own wire), else the plain way."""
    plain = read(Session(tickets))
    assert plain and _fast(objs) == _fast(plain)


def test_scoped_index_queries_read_the_answer_bytes(tb: TestBackend) -> None:
    s = _scoped(tb.session_kind)
    closed = s.query(Ticket, index="gsi1", tenant_id="t1", status="closed").page().items
    assert sorted(t.ticket_id for t in closed) == ["k3", "k4"]
    if tb.session_kind != "async":  # (the blocking wrapper's objects: the same reader)
        _as_unscoped(closed, lambda u: u.query(Ticket, index="gsi1", tenant_id="t1",
                                               status="closed").page().items)
    # the liar's answer: read the plain way, the liar left out, ours kept
    opened = s.query(Ticket, index="gsi1", tenant_id="t1", status="open").page().items
    assert sorted(t.ticket_id for t in opened) == ["k0", "k1", "k2"]
    unscoped = Session(tickets).query(Ticket, index="gsi1", tenant_id="t1", status="open")
    assert "liar" in {t.ticket_id for t in unscoped.all()}  # (it is there to be left out)


def test_scoped_scans_filter_by_key_and_read_the_answer_bytes(tb: TestBackend) -> None:
    s = _scoped(tb.session_kind)
    rec = Requests(tickets)
    found = s.scan(Ticket).page_size(100).page().items
    assert sorted(t.ticket_id for t in found) == ["k0", "k1", "k2", "k3", "k4"]
    [scan] = rec.of("Scan")
    assert "begins_with" in scan["FilterExpression"]
    assert {"S": "TENANT#t1#TICKET#"} in scan["ExpressionAttributeValues"].values()
    if tb.session_kind != "async":
        _as_unscoped(found, lambda u: u.scan(Ticket).page_size(100).page().items)
    assert sorted(t.ticket_id for t in _scoped(tb.session_kind, "t2").scan(Ticket).all()
                  ) == ["k9"]  # (t2's key, t1's fields: a stale key, nobody's in a scope)
    assert s.scan(Ticket, index="gsi1").count() == 5
