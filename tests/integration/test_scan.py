"""Scans (contract section 13): type selection on the server, parallel and single segments,
modifiers, terminals and cursors, on moto and DynamoDB Local."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import DynaormError, F, InvalidCursorError, Page, Scan, Session
from dynaorm.testing import TestBackend
from tests.support.models import Audit, Note, User, unsaved
from tests.support.recording import Requests

USERS = [User(user_id=f"u{i}", username=f"user{i}", email=f"u{i}@x.com", org_id="acme")
         for i in range(6)]
NOTES = [Note(note_id=f"n{i:02d}", body="hot" if i % 3 == 0 else "cold") for i in range(20)]


#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


@pytest.fixture
def s(db: TestBackend) -> Session:
    with db.session() as session:
        for u in USERS:
            session.save(User(**u.model_dump()))  # new objects: each test inserts them
    s = db.session()
    s.save_many(unsaved(NOTES))
    for part in ("P1", "P2"):  # two versioned entities, three versions each
        a = Audit(equipment_id="E1", part=part)
        for n in range(3):
            a.notes = f"v{n}"
            s.save(a)
            s.commit()
    return s


@pytest.fixture
def rec(db: TestBackend) -> Requests:
    return Requests(db.table)


def chain(scan: Scan[Any]) -> list[Page[Any]]:
    pages = [scan.page()]
    while pages[-1].cursor is not None:
        pages.append(scan.page(pages[-1].cursor))
        assert len(pages) < 500
    return pages


def by_id(objs: list[Any], attr: str) -> list[Any]:
    return sorted(objs, key=lambda o: getattr(o, attr))


def test_scan_returns_only_the_requested_type(s: Session, rec: Requests,
                                              db: TestBackend) -> None:
    assert len(db.scan()) == 6 * 3 + 20 + 2 * 4  # users + guards, notes, audits + versions
    rec.clear()
    assert by_id(s.scan(User).all(), "user_id") == USERS
    (request,) = rec.of("Scan")
    assert request["FilterExpression"] == "#n0 IN (:v0)"
    assert request["ExpressionAttributeNames"] == {"#n0": "_type"}
    assert request["ExpressionAttributeValues"] == {":v0": {"S": "User"}}
    assert "Segment" not in request and request["Limit"] == 1000  # iteration's page bound


def test_versioned_entities_scan_as_latest_copies(s: Session, rec: Requests) -> None:
    got = s.scan(Audit).all()
    assert sorted((a.part, a.version, a.notes) for a in got) == [("P1", 3, "v2"),
                                                                  ("P2", 3, "v2")]
    (request,) = rec.of("Scan")
    assert request["FilterExpression"] == "(#n0 IN (:v0)) AND (begins_with(#n1, :v1))"
    assert request["ExpressionAttributeNames"] == {"#n0": "_type", "#n1": "sk"}
    assert request["ExpressionAttributeValues"] == {":v0": {"S": "Audit"}, ":v1": {"S": "v0_"}}
    assert s.scan(Audit).count() == 2


def test_several_types_and_a_filter(s: Session, rec: Requests) -> None:
    got = s.scan(User, Note, Audit).all()
    assert len(got) == 6 + 20 + 2
    assert rec.of("Scan")[0]["FilterExpression"] == (
        "(#n0 IN (:v0, :v1)) OR ((#n0 IN (:v2)) AND (begins_with(#n1, :v3)))")
    hot = s.scan(Note).filter(F("body") == "hot").all()
    assert by_id(hot, "note_id") == [n for n in NOTES if n.body == "hot"]
    request = rec.of("Scan")[-1]
    assert request["FilterExpression"] == "(#n0 IN (:v0)) AND (#n1 = :v1)"
    mixed = s.scan(User, Note).filter(F("body").exists() | F("username").begins_with("user1"))
    assert mixed.count() == 20 + 1
    last = rec.of("Scan")[-1]
    assert last["FilterExpression"] == (
        "(#n0 IN (:v0, :v1)) AND ((attribute_exists(#n1)) OR (begins_with(#n2, :v2)))")
    assert last["Select"] == "COUNT"


def test_count_is_select_count(s: Session, rec: Requests) -> None:
    assert s.scan(User).count() == 6
    assert s.scan(User, Note).count() == 26
    assert s.scan(Note).filter(F("body") == "hot").count() == 7
    assert s.scan(Note).limit(5).count() == 5
    assert all(r["Select"] == "COUNT" for r in rec.of("Scan"))
    assert all("Items" not in out for op, out in rec.responses if op == "Scan")


def test_versioned_count_is_select_count(s: Session, rec: Requests) -> None:
    # 0.2 read every key to count latest copies; the v0_ rule is in the filter already
    assert s.scan(Audit).count() == 2
    assert s.scan(Audit, User).count() == 2 + 6
    assert s.scan(Audit).filter(F("notes") == "v2").count() == 2
    assert s.scan(Audit, segments=3).count() == 2
    assert s.scan(Audit).limit(1).count() == 1
    requests = rec.of("Scan")
    assert len(requests) >= 5 and all(r["Select"] == "COUNT" for r in requests)
    assert all("begins_with" in r["FilterExpression"] for r in requests)
    assert all("Items" not in out for op, out in rec.responses if op == "Scan")


@pytest.mark.sync_only  # a thread barrier proves the segments overlap
def test_parallel_scan_reads_every_segment_concurrently(s: Session, rec: Requests) -> None:
    rec.expect_overlap(2)
    got = s.scan(Note, segments=4).all()
    assert rec.overlapped  # two segments' requests were in flight at once
    assert by_id(got, "note_id") == NOTES
    requests = rec.of("Scan")
    assert sorted(r["Segment"] for r in requests) == [0, 1, 2, 3]
    assert {r["TotalSegments"] for r in requests} == {4}
    assert s.scan(Note, segments=4).count() == 20
    assert s.scan(Note, segments=3).limit(7).count() == 7
    assert len(s.scan(Note, segments=3).limit(7).all()) == 7


def test_one_segment_for_one_worker(s: Session, rec: Requests) -> None:
    parts = [s.scan(Note, User, segment=i, segments=5).all() for i in range(5)]
    assert sum(len(p) for p in parts) == 26
    ids = {getattr(o, "note_id", None) or getattr(o, "user_id", "") for p in parts for o in p}
    assert len(ids) == 26
    assert [r["Segment"] for r in rec.of("Scan")] == [0, 1, 2, 3, 4]
    assert {r["TotalSegments"] for r in rec.of("Scan")} == {5}


def test_page_size_is_dynamodbs_limit_and_pages_chain(s: Session, rec: Requests) -> None:
    pages = chain(s.scan(Note).page_size(7))
    assert by_id([n for p in pages for n in p.items], "note_id") == NOTES
    assert all(r["Limit"] == 7 for r in rec.of("Scan"))
    # one request per page: a page holds the Notes among the 7 items evaluated
    assert len(rec.of("Scan")) == len(pages)
    assert all(len(p.items) <= 7 for p in pages)
    assert any(len(p.items) < 7 for p in pages[:-1])  # other types shared those requests
    rec.clear()
    segmented = chain(s.scan(Note, User, segments=3).page_size(5))
    assert len([o for p in segmented for o in p.items]) == 26
    assert {r["Segment"] for r in rec.of("Scan")} == {0, 1, 2}


def test_limit_counts_results_across_pages(s: Session) -> None:
    pages = chain(s.scan(Note).page_size(4).limit(9))
    assert sum(len(p.items) for p in pages) == 9
    assert len({n.note_id for p in pages for n in p.items}) == 9
    assert len(s.scan(Note).limit(3).all()) == 3
    one = s.scan(Note).first()
    assert one is not None and one in NOTES
    assert s.scan(Note).filter(F("body") == "nope").first() is None
    pages = chain(s.scan(Note, segments=4).limit(11).page_size(3))
    assert sum(len(p.items) for p in pages) == 11


def test_values_and_keys(s: Session, rec: Requests) -> None:
    values = s.scan(User).values("username", "email")
    assert sorted(values, key=lambda v: v["username"]) == [
        {"username": u.username, "email": u.email} for u in USERS]
    request = rec.of("Scan")[-1]
    names = request["ExpressionAttributeNames"]
    projected = {names[n] for n in request["ProjectionExpression"].split(", ")}
    assert projected == {"username", "email", "pk", "sk", "_type"}
    keys = s.scan(User).keys()
    assert sorted(k["user_id"] for k in keys) == [u.user_id for u in USERS]
    assert all(set(k) == {"user_id"} for k in keys)
    for key in keys[:2]:
        assert s.get(User, **key) in USERS
    tags = s.scan(Note).values("tags", "body")
    assert len(tags) == 20 and all(v["tags"] == [] or v["tags"] is None for v in tags)
    with pytest.raises(DynaormError, match="nope"):
        s.scan(User).values("nope")
    with pytest.raises(DynaormError):
        s.scan(User).values()


def test_values_of_absent_fields_are_none(s: Session) -> None:
    mixed = s.scan(User, Note).values("username", "body")
    assert len(mixed) == 26
    assert sum(1 for v in mixed if v["body"] is None) == 6
    assert sum(1 for v in mixed if v["username"] is None) == 20


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_scan_of_an_index(s: Session, rec: Requests) -> None:
    got = s.scan(User, index="gsi1").all()
    assert by_id(got, "user_id") == USERS
    assert rec.of("Scan")[0]["IndexName"] == "gsi1"
    assert s.scan(Note, index="gsi1").all() == []  # notes are not in gsi1


def test_bad_scans_are_refused(s: Session) -> None:
    with pytest.raises(DynaormError):
        s.scan(Note, segment=1)
    with pytest.raises(DynaormError):
        s.scan(Note, segment=4, segments=4)
    with pytest.raises(DynaormError):
        s.scan(Note, segments=0)
    with pytest.raises(DynaormError):
        s.scan(Note, index="nope")
    with pytest.raises(DynaormError):
        s.scan(Note, index="gsi1").consistent()
    assert len(s.scan(Note).consistent().all()) == 20
    assert len(s.scan(Note, index="lsi1").consistent().all()) == 0


def test_cursors_belong_to_their_scan(s: Session) -> None:
    first = s.scan(Note).page_size(5).page()
    assert first.cursor is not None
    with pytest.raises(InvalidCursorError):
        s.scan(User).page_size(5).page(first.cursor)
    with pytest.raises(InvalidCursorError):
        s.scan(Note, segments=2).page_size(5).page(first.cursor)
    with pytest.raises(InvalidCursorError):
        s.query(Note, note_id="n01").page(first.cursor)
    with pytest.raises(InvalidCursorError):
        s.scan(Note).page_size(5).page(first.cursor[:-3] + "abc")
    with pytest.raises(InvalidCursorError):
        s.scan(Note).page_size(5).page("garbage")
    again = s.scan(Note).page_size(5).page(first.cursor)
    assert not {n.note_id for n in again.items} & {n.note_id for n in first.items}
