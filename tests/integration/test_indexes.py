"""Queries through secondary indexes and over several entity types of one partition.

GSI and LSI queries through entity index templates, index overloading, sparse indexes and
the index keys a partial update derives, an adjacency list (many-to-many) read from both
sides, and multi-entity queries. Key templates themselves, with no table, are in
tests/unit/test_templates.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import DynaormError, Entity, F, KeyTemplateError, Session
from dynaorm.testing import TestBackend
from tests.support.models import Audit, TplSparse, app
from tests.support.recording import Requests

# -- entities ----------------------------------------------------------------------------


#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class IAgent(Entity):
    """Support agents, on gsi1 by team (overloaded with tickets)."""

    class Meta:
        table = app
        pk = "IAGENT#{agent_id}"
        sk = "AGENT"
        indexes = {"gsi1": ("TEAM#{team}", "AGENT#{agent_id}")}

    agent_id: str
    team: str
    name: str = ""


class ITicket(Entity):
    """Tickets, on gsi1 by team (same attributes, other meaning) and on the LSI by priority."""

    class Meta:
        table = app
        pk = "ITICKET#{ticket_id}"
        sk = "TICKET"
        indexes = {"gsi1": ("TEAM#{team}", "TICKET#{opened}#{ticket_id}")}

    ticket_id: str
    team: str
    opened: str
    status: str = "open"


class IProduct(Entity):
    """Products of a store: by sku in the table, by price through the LSI."""

    class Meta:
        table = app
        pk = "ISTORE#{store}"
        sk = "PRODUCT#{sku}"
        indexes = {"lsi1": ("ISTORE#{store}", "PRICE#{price:08d}#{sku}")}

    store: str
    sku: str
    price: int


class IStore(Entity):
    """The store item: same partition, not on the LSI (no lsi1sk)."""

    class Meta:
        table = app
        pk = "ISTORE#{store}"
        sk = "STORE"

    store: str
    city: str = ""


class ITask(Entity):
    """A sparse index: only flagged tasks carry gsi2 keys."""

    class Meta:
        table = app
        pk = "ITASK#{task_id}"
        sk = "TASK"
        indexes = {"gsi2": ("FLAGGED#{board}", "{flagged_at}#{task_id}")}

    task_id: str
    board: str
    flagged_at: str | None = None


class IStudent(Entity):
    class Meta:
        table = app
        pk = "ISTUDENT#{student_id}"
        sk = "PROFILE"

    student_id: str
    name: str


class ICourse(Entity):
    class Meta:
        table = app
        pk = "ICOURSE#{course_id}"
        sk = "COURSE"
        indexes = {"gsi2": ("ICOURSE#{course_id}", "COURSE")}

    course_id: str
    title: str


class IEnrollment(Entity):
    """The edge of the many-to-many: under the student, inverted on gsi2 under the course."""

    class Meta:
        table = app
        pk = "ISTUDENT#{student_id}"
        sk = "ICOURSE#{course_id}"
        indexes = {"gsi2": ("ICOURSE#{course_id}", "ISTUDENT#{student_id}")}

    student_id: str
    course_id: str
    grade: str | None = None


class IDevice(Entity):
    class Meta:
        table = app
        pk = "IDEV#{device_id}"
        sk = "#DEVICE"

    device_id: str
    location: str = ""


class IReading(Entity):
    class Meta:
        table = app
        pk = "IDEV#{device_id}"
        sk = "READING#{ts:012d}"

    device_id: str
    ts: int
    value: int = 0


class IAlarm(Entity):
    """A third type in the device partition, sorting after the readings."""

    class Meta:
        table = app
        pk = "IDEV#{device_id}"
        sk = "zALARM#{code}"

    device_id: str
    code: str


# -- GSI and LSI -------------------------------------------------------------------------


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_gsi_query_with_key_conditions(db: TestBackend) -> None:
    s = db.session()
    tickets = [ITicket(ticket_id=f"t{i}", team="blue" if i % 3 else "red",
                       opened=f"2024-0{1 + i % 4}-1{i}") for i in range(10)]
    s.save_many(tickets)

    def blue(pred: Any = lambda t: True) -> list[ITicket]:
        chosen = [t for t in tickets if t.team == "blue" and pred(t)]
        return sorted(chosen, key=lambda t: (t.opened, t.ticket_id))

    q = s.query(ITicket, index="gsi1", team="blue")
    assert q.all() == blue()
    assert q.reverse().all() == blue()[::-1]
    assert q.begins_with(opened="2024-02").all() == blue(lambda t: t.opened.startswith("2024-02"))
    assert q.lt(opened="2024-03").all() == blue(lambda t: t.opened < "2024-03")
    assert q.gte(opened="2024-03").all() == blue(lambda t: t.opened >= "2024-03")
    assert q.between({"opened": "2024-02"}, {"opened": "2024-04"}).all() == blue(
        lambda t: "2024-02" <= t.opened <= "2024-04")
    assert q.filter(F("status") == "open").limit(2).all() == blue()[:2]
    with pytest.raises(DynaormError):
        q.consistent()  # a GSI cannot be read consistently
    with pytest.raises(DynaormError):
        s.query(ITicket, index="lsi1", ticket_id="t1").all()  # ITicket declares no lsi1 keys


def test_lsi_query_orders_by_the_alternate_sort_key(db: TestBackend) -> None:
    s = db.session()
    prices = {"apple": 120, "kiwi": 45, "melon": 380, "fig": 45, "pear": 99}
    s.save_many([IProduct(store="s1", sku=k, price=v) for k, v in prices.items()])
    s.save_many([IStore(store="s1", city="Lima"), IProduct(store="s2", sku="x", price=1)])
    by_price = sorted(prices, key=lambda k: (prices[k], k))
    q = s.query(IProduct, index="lsi1", store="s1")
    assert [p.sku for p in q] == by_price
    assert [p.sku for p in q.consistent()] == by_price  # an LSI can be read consistently
    assert [p.sku for p in q.lt(price=100)] == [k for k in by_price if prices[k] < 100]
    assert [p.sku for p in q.gte(price=100).reverse()] == [
        k for k in by_price if prices[k] >= 100][::-1]
    assert [p.sku for p in q.eq(price=45)] == [k for k in by_price if prices[k] == 45]
    # the table's own order is by sku
    assert [p.sku for p in s.query(IProduct, store="s1")] == sorted(prices)


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_index_overloading_returns_each_type_its_own_items(db: TestBackend) -> None:
    s = db.session()
    s.save_many([IAgent(agent_id="a1", team="blue", name="Ana"),
                 IAgent(agent_id="a2", team="blue", name="Bo"),
                 IAgent(agent_id="a3", team="red", name="Cy"),
                 ITicket(ticket_id="t1", team="blue", opened="2024-01-01"),
                 ITicket(ticket_id="t2", team="blue", opened="2024-01-02"),
                 ITicket(ticket_id="t3", team="red", opened="2024-01-03")])
    agents = s.query(IAgent, index="gsi1", team="blue").all()
    assert [a.agent_id for a in agents] == ["a1", "a2"]
    tickets = s.query(ITicket, index="gsi1", team="blue").all()
    assert [t.ticket_id for t in tickets] == ["t1", "t2"]
    # a range on one type stays inside its own prefix of the overloaded index
    assert [t.ticket_id for t in s.query(ITicket, index="gsi1", team="blue")
            .gt(opened="2000")] == ["t1", "t2"]
    assert [a.agent_id for a in s.query(IAgent, index="gsi1", team="blue")
            .lt(agent_id="zzz")] == ["a1", "a2"]
    both = s.query(IAgent, ITicket, index="gsi1", team="blue").all()
    assert [type(x).__name__ for x in both] == ["IAgent", "IAgent", "ITicket", "ITicket"]
    # the raw index partition does hold both types
    raw = [i for i in db.scan_raw() if i.get("gsi1pk", {}).get("S") == "TEAM#blue"]
    assert sorted(i["_type"]["S"] for i in raw) == ["IAgent", "IAgent", "ITicket", "ITicket"]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_sparse_index_holds_only_items_with_the_field(db: TestBackend) -> None:
    s = db.session()
    s.save_many([ITask(task_id=f"k{i}", board="b1",
                       flagged_at=f"2024-05-0{i}" if i % 2 else None) for i in range(1, 8)])
    flagged = s.query(ITask, index="gsi2", board="b1").all()
    assert [t.task_id for t in flagged] == ["k1", "k3", "k5", "k7"]
    raw = {i["task_id"]["S"]: i for i in db.scan_raw() if i["_type"]["S"] == "ITask"}
    assert len(raw) == 7
    assert {k for k, i in raw.items() if "gsi2pk" in i} == {"k1", "k3", "k5", "k7"}
    assert all("gsi2sk" not in i and "flagged_at" not in i for k, i in raw.items()
               if k not in {"k1", "k3", "k5", "k7"})
    # flag one more and unflag one: the index follows
    k2, k3 = s.get(ITask, task_id="k2"), s.get(ITask, task_id="k3")
    assert k2 is not None and k3 is not None
    k2.flagged_at = "2024-04-30"
    k3.flagged_at = None
    s.save(k2)
    s.save(k3)
    s.commit()
    assert [t.task_id for t in s.query(ITask, index="gsi2", board="b1")] == [
        "k2", "k1", "k5", "k7"]


def _stored(db: TestBackend, pk: str) -> dict[str, Any]:
    (item,) = [i for i in db.scan() if i["pk"] == pk]
    return item


def test_sparse_index_left_off_while_field_is_none(db: TestBackend) -> None:
    s = db.session()
    obj = TplSparse(sid="s1")
    s.save(obj)
    s.commit()
    item = _stored(db, "SPARSE#s1")
    assert "gsi2pk" not in item and "gsi2sk" not in item
    assert "status" not in item

    obj.status = "open"
    s.save(obj)
    s.commit()
    item = _stored(db, "SPARSE#s1")
    assert item["gsi2pk"] == "STATUS#open"
    assert item["gsi2sk"] == "SPARSE#s1"

    obj.status = None
    s.save(obj)
    s.commit()
    item = _stored(db, "SPARSE#s1")
    assert "gsi2pk" not in item and "gsi2sk" not in item and "status" not in item
    loaded = s.get(TplSparse, sid="s1", consistent=True)
    assert loaded == TplSparse(sid="s1")


def test_derived_index_keys_follow_partial_updates(db: TestBackend) -> None:
    s = db.session()
    obj = TplSparse(sid="s2", status="new")
    s.save(obj)
    s.commit()
    other = db.session().get(TplSparse, sid="s2", consistent=True)
    assert other is not None
    other.status = "done"
    s2 = db.session()
    s2.save(other)
    s2.commit()
    item = _stored(db, "SPARSE#s2")
    assert item["status"] == "done"
    assert item["gsi2pk"] == "STATUS#done"


# -- adjacency list ----------------------------------------------------------------------


@pytest.fixture
def school(db: TestBackend) -> Session:
    s = db.session()
    s.save_many([IStudent(student_id="s1", name="Ana"), IStudent(student_id="s2", name="Ben"),
                 IStudent(student_id="s3", name="Cai"),
                 ICourse(course_id="math", title="Algebra"),
                 ICourse(course_id="bio", title="Biology"),
                 ICourse(course_id="art", title="Drawing")])
    pairs = [("s1", "math"), ("s1", "bio"), ("s2", "math"), ("s3", "math"), ("s3", "art")]
    s.save_many([IEnrollment(student_id=a, course_id=b) for a, b in pairs])
    return s


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_adjacency_list_from_both_sides(school: Session) -> None:
    s = school
    assert [e.course_id for e in s.query(IEnrollment, student_id="s1")] == ["bio", "math"]
    assert [e.student_id for e in s.query(IEnrollment, index="gsi2", course_id="math")] == [
        "s1", "s2", "s3"]
    assert s.query(IEnrollment, index="gsi2", course_id="bio").one().student_id == "s1"
    # the student's profile and its edges in one query, in key order ("ICOURSE#" < "PROFILE")
    rows = s.query(IStudent, IEnrollment, student_id="s3").all()
    assert [type(r).__name__ for r in rows] == ["IEnrollment", "IEnrollment", "IStudent"]
    # the course item and its students in one index query ("COURSE" < "ISTUDENT#")
    rows = s.query(ICourse, IEnrollment, index="gsi2", course_id="math").all()
    assert isinstance(rows[0], ICourse) and rows[0].title == "Algebra"
    assert [r.student_id for r in rows[1:] if isinstance(r, IEnrollment)] == ["s1", "s2", "s3"]
    # resolve the other side of the edges with one batch read
    names = s.get_many(IStudent, [{"student_id": e.student_id} for e in rows[1:]
                                  if isinstance(e, IEnrollment)])
    assert [n.name for n in names if n is not None] == ["Ana", "Ben", "Cai"]


# -- several entity types of one partition -----------------------------------------------


def test_multi_entity_query_in_key_order(db: TestBackend) -> None:
    s = db.session()
    s.save_many([IDevice(device_id="124", location="Omaha"),
                 *(IReading(device_id="124", ts=t, value=t % 7) for t in (30, 10, 20)),
                 IAlarm(device_id="124", code="HOT"),
                 IReading(device_id="999", ts=5)])
    rows = s.query(IDevice, IReading, device_id="124").all()
    assert [type(r).__name__ for r in rows] == ["IDevice", "IReading", "IReading", "IReading"]
    assert [r.ts for r in rows if isinstance(r, IReading)] == [10, 20, 30]
    # the order of the entity classes does not matter; the alarm is not asked for
    assert s.query(IReading, IDevice, device_id="124").all() == rows
    everything = s.query(IDevice, IReading, IAlarm, device_id="124").all()
    assert [type(r).__name__ for r in everything] == [
        "IDevice", "IReading", "IReading", "IReading", "IAlarm"]
    # the device and its two latest readings, newest first (the '#' prefix trick, reversed
    # with the device sorting first: ask for the readings and the device apart, or reverse
    # a query whose parent sorts last)
    latest = s.query(IReading, IAlarm, device_id="124").reverse().limit(3).all()
    assert [type(r).__name__ for r in latest] == ["IAlarm", "IReading", "IReading"]
    assert [r.ts for r in latest if isinstance(r, IReading)] == [30, 20]
    assert s.query(IDevice, IReading, device_id="124").reverse().all() == rows[::-1]
    with pytest.raises(DynaormError):
        s.query(IDevice, IReading, device_id="124").lt(ts=5).all()  # templates differ
    with pytest.raises(DynaormError):
        s.query(IDevice, IAgent, device_id="124").all()  # IAgent is not in this partition


def test_multi_entity_query_pages(db: TestBackend) -> None:
    s = db.session()
    s.save_many([IDevice(device_id="7"), *(IReading(device_id="7", ts=t) for t in range(9)),
                 *(IAlarm(device_id="7", code=c) for c in "ABC")])
    q = s.query(IDevice, IReading, IAlarm, device_id="7").page_size(4)
    seen: list[Any] = []
    page = q.page()
    while True:
        seen.extend(page.items)
        if page.cursor is None:
            break
        page = q.page(page.cursor)
    assert seen == q.all()
    assert len(seen) == 13


class IEquipment(Entity):
    """Shares the partition of the versioned ``Audit`` rows of tests.support.models."""

    class Meta:
        table = app
        pk = "EQUIPMENT#{equipment_id}"
        sk = "EQUIPMENT"

    equipment_id: str
    model: str = ""


def test_multi_entity_query_with_a_versioned_type_reads_latest_copies(db: TestBackend) -> None:
    s = db.session()
    s.save(IEquipment(equipment_id="E9", model="press"))
    audit = Audit(equipment_id="E9", part="P1", notes="first")
    s.save(audit)
    s.commit()
    audit.notes = "second"
    s.save(audit)
    s.commit()
    rows = s.query(IEquipment, Audit, equipment_id="E9").all()
    assert [type(r).__name__ for r in rows] == ["IEquipment", "Audit"]
    assert isinstance(rows[1], Audit) and rows[1].notes == "second"
    assert s.query(Audit, IEquipment, equipment_id="E9").reverse().all() == rows[::-1]


# -- a separator an index refuses, on every render path (contract 24) ----------------------
class SepDoc(Entity):
    """``tenant_id`` is followed by ``-`` in its index key: no value of it may hold one,
    in any key of the entity (its table key ``SEPDOC#{tenant_id}`` too)."""

    class Meta:
        table = app
        pk = "SEPDOC#{tenant_id}"
        sk = "DOC#{doc_id}"
        indexes = {"gsi1": ("{tenant_id}-{category}", "{doc_id}")}

    tenant_id: str
    doc_id: str
    category: str | None = None


@pytest.mark.engines("moto")
def test_a_separator_of_another_template_is_refused_on_every_render_path(
        db: TestBackend) -> None:
    """``tenant_id="a-b"``: a save that leaves the (sparse) index out, an upsert, a get, a
    query and a delete by key each refuse it before anything is sent, as the save with a
    category does (0.8's shortcut for ``LITERAL{field}`` checked only ``#``)."""
    rec = Requests(app)
    s = db.session()
    attempts = {
        "save without the index": lambda: (s.save(SepDoc(tenant_id="a-b", doc_id="1")),
                                           s.commit()),
        "save with the index": lambda: (s.save(SepDoc(tenant_id="a-b", doc_id="1",
                                                      category="x")), s.commit()),
        "upsert": lambda: (s.update(SepDoc, upsert=True, tenant_id="a-b", doc_id="2")
                           .set(category=None), s.commit()),
        "get": lambda: s.get(SepDoc, tenant_id="a-b", doc_id="1"),
        "query": lambda: s.query(SepDoc, tenant_id="a-b").all(),
        "delete by key": lambda: (s.delete(SepDoc, tenant_id="a-b", doc_id="1"), s.commit()),
    }
    for what, attempt in attempts.items():
        with pytest.raises(KeyTemplateError, match="'-'") as info:
            attempt()
        assert "SepDoc" in str(info.value) and "tenant_id" in str(info.value), what
        s.rollback()
    assert rec.calls == [] and db.scan_raw() == []
    s.save(SepDoc(tenant_id="ab", doc_id="1"))
    s.commit()
    assert s.get(SepDoc, tenant_id="ab", doc_id="1") is not None
