"""Queries on the table's primary key: key operators, modifiers, filters and terminals.

Every expected result is computed from the Python data that was stored, never written out
by hand, and every test runs on both backends (moto and DynamoDB Local).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from pydantic import Field

from dynaorm import (
    Attempt,
    DynaormError,
    Entity,
    F,
    Hook,
    ItemNotFoundError,
    KeyTemplateError,
    MultipleResultsError,
    Query,
    Session,
    Table,
)
from dynaorm.testing import TestBackend
from tests.support.models import Audit, EMsg, EReading, app, unsaved

# -- entities ----------------------------------------------------------------------------


#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class QMessage(Entity):
    """Chat messages: room partition, ``user#date`` sort key (the seed's chat example)."""

    class Meta:
        table = app
        pk = "ROOM#{room}"
        sk = "MSG#{user}#{date}"

    room: str
    user: str
    date: str
    status: str = "sent"
    name: str | None = None
    size: int = 0
    tags: list[str] = Field(default_factory=list)


class QRoom(Entity):
    """The room item: shares the messages' partition and sorts after them."""

    class Meta:
        table = app
        pk = "ROOM#{room}"
        sk = "ROOM"

    room: str
    title: str = ""


class QPin(Entity):
    """Pinned notes: share the partition and sort before the messages."""

    class Meta:
        table = app
        pk = "ROOM#{room}"
        sk = "AAA#{n:03d}"

    room: str
    n: int


class QDevice(Entity):
    """A device whose item sorts BEFORE its readings ('#' < 'R')."""

    class Meta:
        table = app
        pk = "QDEV#{device_id}"
        sk = "#DEVICE"

    device_id: str
    location: str = ""


class QReading(Entity):
    class Meta:
        table = app
        pk = "QDEV#{device_id}"
        sk = "READING#{ts:012d}"

    device_id: str
    ts: int
    value: int = 0


class QDeviceZ(Entity):
    """A device whose item sorts AFTER its readings ('z' > 'R')."""

    class Meta:
        table = app
        pk = "QDEVZ#{device_id}"
        sk = "zDEVICE"

    device_id: str
    location: str = ""


class QReadingZ(Entity):
    class Meta:
        table = app
        pk = "QDEVZ#{device_id}"
        sk = "READING#{ts:012d}"

    device_id: str
    ts: int
    value: int = 0


class QLog(Entity):
    """A datetime with a format spec in the sort key (partial values are text prefixes)."""

    class Meta:
        table = app
        pk = "QLOG#{source}"
        sk = "{at:%Y-%m-%d:%H:%M:%S}#{seq}"

    source: str
    at: datetime
    seq: int


class EOrder(Entity):
    class Meta:
        table = app
        pk = "ECUST#{cust}"
        sk = "ORDER#{cust}#{order_id}"

    cust: str
    order_id: str


# -- helpers -----------------------------------------------------------------------------


class Recorder(Hook):
    """Records every request naming the table and the response received (a phase hook
    on the table's client: every wire, both kinds of session)."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.calls: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        table.db.add_hook(self)

    def on_end(self, phase: Any, token: Any) -> object:
        if (isinstance(phase, Attempt) and self.table.name in phase.tables
                and phase.response is not None):
            self.calls.append((phase.operation, phase.request, phase.response))
        return None

    def queries(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [(req, out) for op, req, out in self.calls if op == "Query"]


def sk_of(m: QMessage) -> str:
    return f"MSG#{m.user}#{m.date}"


MESSAGES: list[QMessage] = [
    QMessage(room="seattle", user="amsg", date="2017-12-31T23:59:59", status="read",
             name="a) OR (b", size=1, tags=["x", "y"]),
    QMessage(room="seattle", user="amsg", date="2018-07-01T10:00:00", status="sent",
             name="#x", size=2, tags=["y"]),
    QMessage(room="seattle", user="amsg", date="2018-08-01T09:30:00", status="read",
             name=":v0", size=3),
    QMessage(room="seattle", user="amsg", date="2018-08-15T18:45:00", status="deleted",
             size=4, tags=["x"]),
    QMessage(room="seattle", user="amsg", date="2018-09-02T07:00:00", status="sent",
             name="status", size=5),
    QMessage(room="seattle", user="amsgx", date="2018-08-03T12:00:00", status="read",
             name="size", size=6, tags=["z"]),
    QMessage(room="seattle", user="bob", date="2018-08-10T08:00:00", status="sent",
             name="Bob", size=7),
    QMessage(room="seattle", user="bob", date="2019-01-01T00:00:00", status="read", size=8),
    QMessage(room="portland", user="amsg", date="2018-08-02T00:00:00", status="read", size=9),
]


def seattle(pred: Callable[[QMessage], bool] = lambda m: True) -> list[QMessage]:
    """Stored seattle messages matching ``pred``, in sort-key order."""
    return sorted((m for m in MESSAGES if m.room == "seattle" and pred(m)), key=sk_of)


@pytest.fixture
def rec(db: TestBackend) -> Recorder:
    return Recorder(db.table)


@pytest.fixture
def s(db: TestBackend, rec: Recorder) -> Session:
    session = db.session()
    session.save_many([*unsaved(MESSAGES), QRoom(room="seattle", title="Seattle"),
                       *(QPin(room="seattle", n=n) for n in range(3))])
    rec.calls.clear()
    return session


def msgs(q: Query[QMessage]) -> list[QMessage]:
    return q.all()


# -- key conditions ----------------------------------------------------------------------


def test_partition_query_returns_only_its_type_in_key_order(s: Session) -> None:
    assert msgs(s.query(QMessage, room="seattle")) == seattle()
    assert s.query(QRoom, room="seattle").all() == [QRoom(room="seattle", title="Seattle")]
    assert [p.n for p in s.query(QPin, room="seattle")] == [0, 1, 2]
    assert s.query(QMessage, room="nowhere").all() == []


def test_leading_sort_key_field_narrows_by_prefix(s: Session) -> None:
    # "amsg" must not match "amsgx": the literal after the field is part of the prefix.
    assert msgs(s.query(QMessage, room="seattle", user="amsg")) == seattle(
        lambda m: m.user == "amsg")
    assert msgs(s.query(QMessage, room="seattle", user="amsgx")) == seattle(
        lambda m: m.user == "amsgx")


def test_eq_complete_and_incomplete(s: Session) -> None:
    target = MESSAGES[2]
    q = s.query(QMessage, room="seattle").eq(user=target.user, date=target.date)
    assert msgs(q) == [target]
    assert msgs(s.query(QMessage, room="seattle", user="amsg").eq(date=target.date)) == [target]
    assert msgs(s.query(QMessage, room="seattle", user="amsg").eq(date="2018-08-01")) == []
    # an incomplete eq is the prefix of whole leading fields
    assert msgs(s.query(QMessage, room="seattle").eq(user="bob")) == seattle(
        lambda m: m.user == "bob")


def test_begins_with_partial_last_field(s: Session) -> None:
    for prefix in ["2018", "2018-08", "2018-08-1", "2017", "2020"]:
        q = s.query(QMessage, room="seattle", user="amsg").begins_with(date=prefix)
        expected = [m for m in seattle() if m.user == "amsg" and m.date.startswith(prefix)]
        assert msgs(q) == expected, prefix


def test_partial_prefix_of_a_formatted_datetime(db: TestBackend) -> None:
    s = db.session()
    stamps = [datetime(2018, m, d, h) for m, d, h in
              [(7, 31, 23), (8, 1, 0), (8, 15, 12), (9, 1, 0), (8, 1, 9)]]
    logs = [QLog(source="api", at=t, seq=i) for i, t in enumerate(stamps)]
    s.save_many(logs)
    order = sorted(logs, key=lambda x: (x.at, x.seq))
    q = s.query(QLog, source="api")
    for prefix in ("2018", "2018-08", "2018-08-01", "2018-08-01:0"):
        got = q.begins_with(at=prefix).all()
        assert got == [x for x in order if f"{x.at:%Y-%m-%d:%H}".startswith(prefix)], prefix
    # complete values take the format spec
    assert q.lt(at=datetime(2018, 8, 15)).all() == [x for x in order
                                                    if x.at < datetime(2018, 8, 15)]
    assert q.eq(at=datetime(2018, 8, 1, 9), seq=4).one() == logs[4]


def test_begins_with_partial_first_field(s: Session) -> None:
    assert msgs(s.query(QMessage, room="seattle").begins_with(user="ams")) == seattle(
        lambda m: m.user.startswith("ams"))
    q = s.query(QMessage, room="seattle").begins_with(user="amsg", date="2018-08")
    assert msgs(q) == seattle(lambda m: m.user == "amsg" and m.date.startswith("2018-08"))


RANGE_CASES: list[tuple[str, str, Callable[[str, str], bool]]] = [
    ("lt", "2018-08-01T09:30:00", lambda d, b: d < b),
    ("lte", "2018-08-01T09:30:00", lambda d, b: d <= b),
    ("gt", "2018-08-01T09:30:00", lambda d, b: d > b),
    ("gte", "2018-08-01T09:30:00", lambda d, b: d >= b),
    # a partial value (a year-month prefix) compares as a string, like DynamoDB does:
    # lt("2018-08") is "before August", gte("2018-08") is "from August on"
    ("lt", "2018-08", lambda d, b: d < b),
    ("lte", "2018-08", lambda d, b: d <= b),
    ("gt", "2018-08", lambda d, b: d > b),
    ("gte", "2018-08", lambda d, b: d >= b),
    ("lt", "2018", lambda d, b: d < b),
    ("gte", "2018-09", lambda d, b: d >= b),
    ("lt", "0000", lambda d, b: False),
    ("gt", "9999", lambda d, b: False),
]


def test_range_operators_on_date(s: Session) -> None:
    base = s.query(QMessage, room="seattle", user="amsg")
    for op, bound, pred in RANGE_CASES:
        q: Query[QMessage] = getattr(base, op)(date=bound)
        expected = [m for m in seattle() if m.user == "amsg" and pred(m.date, bound)]
        assert msgs(q) == expected, (op, bound)
        assert msgs(q.reverse()) == expected[::-1], (op, bound)


def test_range_operators_on_first_field_stay_inside_the_entity(s: Session) -> None:
    """Pins sort before the messages and the room item after: neither may leak in."""
    q = s.query(QMessage, room="seattle")
    assert msgs(q.lt(user="amsgx")) == seattle(lambda m: m.user < "amsgx")
    assert msgs(q.lte(user="amsgx")) == seattle(lambda m: m.user <= "amsgx")
    assert msgs(q.gt(user="amsg")) == seattle(lambda m: m.user > "amsg")
    assert msgs(q.gte(user="amsgx")) == seattle(lambda m: m.user >= "amsgx")
    assert msgs(q.gt(user="a")) == seattle()
    assert msgs(q.lt(user="zzz")) == seattle()


def test_between_is_inclusive_with_partial_bounds(s: Session) -> None:
    q = s.query(QMessage, room="seattle", user="amsg")
    got = msgs(q.between({"date": "2018-07"}, {"date": "2018-09"}))  # July and August
    assert got == seattle(lambda m: m.user == "amsg" and "2018-07" <= m.date <= "2018-09")
    assert got and all(m.date[:7] in ("2018-07", "2018-08") for m in got)
    exact = msgs(q.between({"date": MESSAGES[1].date}, {"date": MESSAGES[3].date}))
    assert exact == MESSAGES[1:4]
    assert msgs(q.between({"date": "2019"}, {"date": "2018"})) == []
    # a bound that leaves out trailing fields covers all of them: every bob message
    across = msgs(s.query(QMessage, room="seattle").between(
        {"user": "amsg", "date": "2018-08"}, {"user": "bob"}))
    assert across == seattle(lambda m: (m.user, m.date) >= ("amsg", "2018-08")
                             and m.user <= "bob")


def test_bad_key_fields_are_refused(s: Session) -> None:
    with pytest.raises(KeyTemplateError):
        s.query(QMessage, user="amsg").all()  # no partition key field
    with pytest.raises(KeyTemplateError):
        s.query(QMessage, room="seattle", nope=1).all()
    with pytest.raises(KeyTemplateError):
        s.query(QMessage, room="seattle", date="2018").all()  # not a leading field
    with pytest.raises(DynaormError):
        s.query(QMessage, room="seattle").lt(user="a").gt(user="b")


def test_keywords_naming_the_whole_sort_key_match_exactly(db: TestBackend) -> None:
    s = db.session()
    s.save_many([EReading(device="d", ts=t) for t in (1, 10, 11, 2)])
    assert [r.ts for r in s.query(EReading, device="d", ts=1)] == [1]
    assert s.query(EReading, device="d", ts=3).all() == []


def test_begins_with_refuses_fields_it_cannot_use(db: TestBackend) -> None:
    s = db.session()
    s.save_many([EMsg(room="r", date=d, time=t)
                 for d, t in (("2018-08-01", "10"), ("2018-09-01", "10"))])
    q = s.query(EMsg, room="r")
    with pytest.raises(KeyTemplateError, match="leading"):
        q.begins_with(time="10").all()  # skips date
    with pytest.raises(KeyTemplateError, match="bogus"):
        q.begins_with(date="2018-08", bogus="x").all()
    narrowed = s.query(EMsg, room="r", date="2018-08-01")
    with pytest.raises(KeyTemplateError, match="already given"):
        narrowed.begins_with(date="2018-09").all()
    assert [m.date for m in q.begins_with(date="2018-09")] == ["2018-09-01"]
    assert [m.time for m in narrowed.begins_with(time="1")] == ["10"]


def test_sort_key_reusing_a_partition_field_is_queryable(db: TestBackend) -> None:
    s = db.session()
    s.save_many([EOrder(cust="c1", order_id=o) for o in ("o1", "o2", "o3")])
    assert [o.order_id for o in s.query(EOrder, cust="c1")] == ["o1", "o2", "o3"]
    assert [o.order_id for o in s.query(EOrder, cust="c1", order_id="o2")] == ["o2"]
    assert [o.order_id for o in s.query(EOrder, cust="c1").lt(order_id="o3")] == ["o1", "o2"]
    assert s.query(EOrder, cust="c1").eq(order_id="o1").one().order_id == "o1"


# -- entities sharing a partition: range conditions never leak ---------------------------

DEVICE_CASES = [(QDevice, QReading), (QDeviceZ, QReadingZ)]


@pytest.mark.parametrize(("device_cls", "reading_cls"), DEVICE_CASES,
                         ids=["device-sorts-first", "device-sorts-last"])
def test_reading_ranges_never_return_the_device(
        db: TestBackend, rec: Recorder, device_cls: type[QDevice] | type[QDeviceZ],
        reading_cls: type[QReading] | type[QReadingZ]) -> None:
    s = db.session()
    stamps = [1535544000, 1536019200, 1536022800, 1310212800, 1600000000]
    s.save_many([device_cls(device_id="123", location="Omaha"),
                 *(reading_cls(device_id="123", ts=t, value=i) for i, t in enumerate(stamps))])
    by_ts = sorted(stamps)
    q: Any = s.query(reading_cls, device_id="123")
    cases: list[tuple[Any, list[int]]] = [
        (q.lt(ts=1536019200), [t for t in by_ts if t < 1536019200]),
        (q.lte(ts=1536019200), [t for t in by_ts if t <= 1536019200]),
        (q.gt(ts=1536019200), [t for t in by_ts if t > 1536019200]),
        (q.gte(ts=1536019200), [t for t in by_ts if t >= 1536019200]),
        (q.lt(ts=10**11), by_ts),
        (q.gt(ts=0), by_ts),
        (q.lte(ts=10**11), by_ts),
        (q.gte(ts=0), by_ts),
        (q.between({"ts": 0}, {"ts": 10**11}), by_ts),
        (q.between({"ts": 1535544000}, {"ts": 1536022800}),
         [t for t in by_ts if 1535544000 <= t <= 1536022800]),
    ]
    for query, expected in cases:
        rec.calls.clear()
        got = query.all()
        assert [r.ts for r in got] == expected, query
        assert all(isinstance(r, reading_cls) for r in got)
        # the key condition itself keeps DynamoDB inside the readings' own prefix: the
        # device item is never even read (a strict bound's own item may be, then dropped)
        read = [i["_type"]["S"] for _, out in rec.queries() for i in out["Items"]]
        assert set(read) <= {reading_cls.__name__}
        assert len(read) <= len(expected) + 1
        assert [r.ts for r in query.reverse()] == expected[::-1]
    assert s.query(device_cls, device_id="123").one().location == "Omaha"


# -- modifiers ---------------------------------------------------------------------------


def test_reverse_limit_and_their_combinations(s: Session) -> None:
    q = s.query(QMessage, room="seattle")
    assert msgs(q.reverse()) == seattle()[::-1]
    assert msgs(q.reverse().reverse()) == seattle()
    assert msgs(q.limit(3)) == seattle()[:3]
    assert msgs(q.reverse().limit(2)) == seattle()[::-1][:2]
    assert msgs(q.limit(100)) == seattle()
    with pytest.raises(ValueError):
        q.limit(0)
    with pytest.raises(ValueError):
        q.page_size(0)


def test_page_size_reads_lazily_in_pages(s: Session, rec: Recorder) -> None:
    q = s.query(QMessage, room="seattle", user="amsg").page_size(2)
    expected = seattle(lambda m: m.user == "amsg")
    assert msgs(q) == expected
    sizes = [len(out["Items"]) for _, out in rec.queries()]
    assert all(req["Limit"] == 2 for req, _ in rec.queries())
    assert sum(sizes) == len(expected) and max(sizes) <= 2
    rec.calls.clear()
    it = iter(q)
    assert next(it) == expected[0]
    assert len(rec.queries()) == 1  # nothing fetched beyond the first page yet


def test_limit_stops_reading(s: Session, rec: Recorder) -> None:
    assert msgs(s.query(QMessage, room="seattle").limit(2)) == seattle()[:2]
    assert len(rec.queries()) == 1


def test_consistent_read(s: Session, rec: Recorder) -> None:
    assert msgs(s.query(QMessage, room="seattle").consistent()) == seattle()
    assert all(req.get("ConsistentRead") is True for req, _ in rec.queries())
    rec.calls.clear()
    msgs(s.query(QMessage, room="seattle"))
    assert all("ConsistentRead" not in req for req, _ in rec.queries())


def test_terminals(s: Session) -> None:
    q = s.query(QMessage, room="seattle", user="bob")
    assert q.first() == seattle(lambda m: m.user == "bob")[0]
    assert q.reverse().first() == seattle(lambda m: m.user == "bob")[-1]
    assert q.count() == len(seattle(lambda m: m.user == "bob"))
    assert s.query(QMessage, room="seattle").count() == len(seattle())
    assert s.query(QMessage, room="seattle").limit(3).count() == 3
    assert q.eq(date="2019-01-01T00:00:00").one().size == 8
    assert s.query(QMessage, room="nowhere").first() is None
    assert s.query(QMessage, room="nowhere").count() == 0
    with pytest.raises(ItemNotFoundError):
        s.query(QMessage, room="nowhere").one()
    with pytest.raises(MultipleResultsError):
        q.one()
    assert list(q) == q.all()


def test_loaded_objects_are_persisted(s: Session, db: TestBackend) -> None:
    msg = s.query(QMessage, room="seattle", user="bob").first()
    assert msg is not None
    msg.status = "edited"
    s.save(msg)
    s.commit()  # an update of a persisted object, not an insert
    again = s.query(QMessage, room="seattle", user="bob").first()
    assert again is not None and again.status == "edited"


def test_builders_are_generative(s: Session) -> None:
    base = s.query(QMessage, room="seattle")
    rev = base.reverse()
    lim = base.limit(2)
    filt = base.filter(F("status") == "read")
    ranged = base.gt(user="amsgx")
    filt2 = filt.filter(F("size") > 3)
    assert msgs(base) == seattle()
    assert msgs(rev) == seattle()[::-1]
    assert msgs(lim) == seattle()[:2]
    assert msgs(filt) == seattle(lambda m: m.status == "read")
    assert msgs(filt2) == seattle(lambda m: m.status == "read" and m.size > 3)
    assert msgs(ranged) == seattle(lambda m: m.user > "amsgx")
    assert msgs(base) == seattle()  # the base is untouched by its branches
    assert msgs(filt) == seattle(lambda m: m.status == "read")


# -- filters -----------------------------------------------------------------------------

HOSTILE = ["a) OR (b", "#x", ":v0"]
FILTER_CASES: list[tuple[str, Any, Callable[[QMessage], bool]]] = [
    ("eq", F("status") == "read", lambda m: m.status == "read"),
    ("ne", F("status") != "read", lambda m: m.status != "read"),
    ("lt", F("size") < 4, lambda m: m.size < 4),
    ("le", F("size") <= 4, lambda m: m.size <= 4),
    ("gt", F("size") > 4, lambda m: m.size > 4),
    ("ge", F("size") >= 4, lambda m: m.size >= 4),
    ("between", F("size").between(2, 6), lambda m: 2 <= m.size <= 6),
    ("begins_with", F("name").begins_with("#"), lambda m: (m.name or "").startswith("#")),
    ("contains-list", F("tags").contains("x"), lambda m: "x" in m.tags),
    ("contains-str", F("name").contains(") OR ("), lambda m: ") OR (" in (m.name or "")),
    ("exists", F("name").exists(), lambda m: m.name is not None),
    ("not_exists", F("name").not_exists(), lambda m: m.name is None),
    ("is_in", F("name").is_in(*HOSTILE), lambda m: m.name in HOSTILE),
    ("is_in-list", F("status").is_in(["sent", "deleted"]),
     lambda m: m.status in ("sent", "deleted")),
    ("hostile-eq", F("name") == "a) OR (b", lambda m: m.name == "a) OR (b"),
    ("hostile-hash", F("name") == "#x", lambda m: m.name == "#x"),
    ("hostile-colon", F("name") == ":v0", lambda m: m.name == ":v0"),
    ("name-is-reserved-word-value", F("name") == "status", lambda m: m.name == "status"),
    ("and", (F("status") == "read") & (F("size") > 2), lambda m: m.status == "read"
     and m.size > 2),
    ("or", (F("status") == "deleted") | (F("name") == "#x"),
     lambda m: m.status == "deleted" or m.name == "#x"),
    ("not", ~(F("status") == "read"), lambda m: m.status != "read"),
    ("nested", ~((F("size") < 3) | F("name").not_exists()) & F("tags").exists(),
     lambda m: not (m.size < 3 or m.name is None)),
]


def test_every_filter_operator(s: Session, rec: Recorder) -> None:
    failures = []
    for label, cond, pred in FILTER_CASES:
        for base in (s.query(QMessage, room="seattle"),
                     s.query(QMessage, room="seattle").page_size(2).reverse()):
            rec.calls.clear()
            got = msgs(base.filter(cond))
            expected = seattle(pred)
            if base._reverse:
                expected = expected[::-1]
            if got != expected:
                failures.append((label, [m.size for m in got], [m.size for m in expected]))
            for req, _ in rec.queries():
                text = req["FilterExpression"] + req["KeyConditionExpression"]
                for word in ("status", "name", "size", "tags", "OR (b", "#x", "read"):
                    assert word not in text, (label, text)
    assert not failures


def test_filter_with_key_condition_and_limit(s: Session) -> None:
    q = s.query(QMessage, room="seattle", user="amsg").begins_with(date="2018")
    q = q.filter(F("status") != "deleted").limit(2)
    expected = seattle(lambda m: m.user == "amsg" and m.date.startswith("2018")
                       and m.status != "deleted")[:2]
    assert msgs(q) == expected
    assert q.count() == 2


def test_filter_refuses_non_conditions(s: Session) -> None:
    with pytest.raises(TypeError):
        s.query(QMessage, room="seattle").filter("status = 'read'")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        bool(F("a") == 1)


# -- history is a query ------------------------------------------------------------------


def ver(audit: Audit) -> int:
    version: int = audit.__dict__["version"]
    return version


def test_history_is_a_query(db: TestBackend) -> None:
    s = db.session()
    audit = Audit(equipment_id="E1", part="P1", auditor="ann", notes="n1")
    s.save(audit)
    s.commit()
    for i in range(2, 13):  # versions 1..12: more than ten, so padding matters
        audit.notes = f"n{i}"
        s.save(audit)
        s.commit()
    s.save(Audit(equipment_id="E1", part="P2", notes="other"))  # another part, same partition
    s.commit()
    h = s.history(Audit, equipment_id="E1", part="P1")
    assert [ver(a) for a in h] == list(range(1, 13))
    assert [a.notes for a in h] == [f"n{i}" for i in range(1, 13)]
    assert [ver(a) for a in h.reverse().limit(3)] == [12, 11, 10]
    assert h.count() == 12
    assert h.first() is not None and h.reverse().first() == s.get(Audit, equipment_id="E1",
                                                                  part="P1")
    seen: list[int] = []
    page = h.page_size(5).page()
    while True:
        seen.extend(ver(a) for a in page.items)
        if page.cursor is None:
            break
        page = h.page_size(5).page(page.cursor)
    assert seen == list(range(1, 13))
    # the partition query returns the latest copy of every part
    latest = s.query(Audit, equipment_id="E1").all()
    assert [(a.part, ver(a)) for a in latest] == [("P1", 12), ("P2", 1)]


# -- several types: typed as their union, and grouped by class -------------------------------
class GRoom(Entity):
    class Meta:
        table = app
        pk = "GROOM#{room}"
        sk = "ROOM"

    room: str
    title: str = ""


class GMsg(Entity):
    class Meta:
        table = app
        pk = "GROOM#{room}"
        sk = "MSG#{n}"

    room: str
    n: str
    text: str = ""


def test_a_read_of_several_types_grouped_by_class(db: TestBackend) -> None:
    s = db.session()
    s.save_many([GRoom(room="r1", title="general"),
                 *[GMsg(room="r1", n=f"{i:02d}", text=f"t{i}") for i in range(3)]])
    groups = s.query(GRoom, GMsg, room="r1").grouped()
    assert list(groups) == [GRoom, GMsg]
    assert groups[GRoom] == [GRoom(room="r1", title="general")]
    assert [m.text for m in groups[GMsg]] == ["t0", "t1", "t2"]
    only_rooms = s.query(GRoom, GMsg, room="r2").grouped()
    assert only_rooms[GRoom] == [] and only_rooms[GMsg] == []
    with pytest.raises(KeyError):
        groups[EMsg]
    assert s.scan(GMsg, GRoom).grouped()[GRoom] == groups[GRoom]
