"""Vector search on every engine that has it (contract 21): the embedded default (moto,
answered by ``dynaorm.testing``, in process and as a server for ``AsyncSession``) and
dynoxide; DynamoDB Local has no vector index (it ignores ``VectorIndexes`` and refuses
``SearchVectors`` as an unknown operation), so these tests skip there and say so. The pure
side (definitions, refusals before sending, requests, the endpoint, hostile answers) is
``tests/unit/test_vectors.py``."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from dynaorm import (
    AsyncSession,
    BadAnswerError,
    Client,
    DynaormError,
    Encrypted,
    Entity,
    F,
    Hit,
    Hits,
    InvalidValueError,
    ItemDecodeError,
    Previous,
    Session,
    StaticKeyring,
    Table,
    Vector,
    VectorIndex,
    explain,
)
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.protocol.capacity import SEARCH_BYTES
from dynaorm.protocol.steps import call
from dynaorm.schema.entity import raw_state
from dynaorm.schema.rules.compressed import Compressed
from dynaorm.testing import TestBackend, fault_proxy, index_lag, use_tables, worker_suffix
from dynaorm.values.limits import float32
from dynaorm.values.limits import float32 as float32_plain
from pytest_dynaorm import LAG_OPTION
from tests.conftest import engine_of, wire_of
from tests.support.examples import examples
from tests.support.hostile import Reply, answer, json_body, serving
from tests.support.recording import Requests
from tests.support.vector_models import (
    Account,
    Doc,
    Memo,
    Note,
    Page,
    Point,
    docs,
    f32,
    model_score,
    space,
)

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

#: why these tests skip on DynamoDB Local
NO_LOCAL = ("DynamoDB Local has no vector index: it ignores VectorIndexes on CreateTable and "
            "refuses SearchVectors as an unknown operation")


@pytest.fixture
def vdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The vector tables, fresh, on the engine of ``db`` (its kind of session too)."""
    if engine_of(request) == "local":
        pytest.skip(NO_LOCAL)
    with use_tables(docs, space, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        yield tb


def doc(n: int, embedding: list[float], *, tenant: str = "t1", category: str = "news",
        year: int = 2026, **more: object) -> Doc:
    return Doc(doc_id=f"d{n}", tenant_id=tenant, category=category, year=year,
               title=f"doc {n}", embedding=embedding, **more)


def corpus() -> list[Doc]:
    """Six new docs (two tenants, two categories, two years)."""
    return [doc(1, [1, 0, 0, 0]), doc(2, [0.9, 0.1, 0, 0], category="blog"),
            doc(3, [0, 1, 0, 0], year=2025), doc(4, [0.5, 0.5, 0.5, 0.5], secret="s4"),
            doc(5, [1, 0, 0, 0], tenant="t2"), doc(6, [-1, 0, 0.25, 0], category="blog")]


def saved(vdb: TestBackend, *objs: object) -> None:
    with vdb.session() as s:
        for obj in objs:
            s.save(obj)  # type: ignore[arg-type]


def expected(distance: str, query: list[float], objs: list[Doc]) -> list[tuple[str, float]]:
    """The brute-force model's hits: (doc id, score), nearest first."""
    scored = [(d.doc_id, model_score(distance, query, d.embedding)) for d in objs]
    return sorted(scored, key=lambda p: -p[1] if distance == "DOT_PRODUCT" else p[1])


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_hits_are_the_stored_entities_nearest_first(vdb: TestBackend) -> None:
    saved(vdb, *(docs_ := corpus()))
    s = vdb.session()
    query = [1.0, 0.2, 0.0, 0.1]
    hits = s.search(Doc, "by_meaning", vector=query, top=10, tenant_id="t1").all()
    want = expected("COSINE", query, [d for d in docs_ if d.tenant_id == "t1"])
    assert [h.item.doc_id for h in hits] == [i for i, _ in want]
    assert [h.score for h in hits] == pytest.approx([sc for _, sc in want], abs=1e-6)
    assert all(isinstance(h, Hit) and isinstance(h.item, Doc) for h in hits)
    for hit in hits:  # what is stored, the vector and the decrypted field included
        assert hit.item == s.get(Doc, doc_id=hit.item.doc_id)
    assert hits[-1].item.doc_id == "d6" and hits.skipped == 0
    assert next(h for h in hits if h.item.doc_id == "d4").item.secret == "s4"
    assert [h.item.doc_id for h in s.search(Doc, "by_meaning", vector=query, top=2,
                                             tenant_id="t1").all()] == [i for i, _ in want[:2]]


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
@pytest.mark.sync_only  # (both kinds of session in the test itself, on each wire)
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_sync_and_async_sessions_search_alike_on_both_wires(
        vdb: TestBackend, request: pytest.FixtureRequest, wire: str) -> None:
    """The embedded default as a server (the in-process one answers botocore's client
    alone) and dynoxide, through dynaorm's wire and botocore's, sync and async."""
    url = vdb.endpoint_url or request.getfixturevalue("dynaorm_moto_server")
    with use_tables(docs, endpoint_url=url, name_suffix="-wire", wire=wire) as tb:
        saved(tb, *corpus())
        query = [0.25, 0.5, 1.0, 0.0]
        synced = Session(docs).search(Doc, "by_meaning", vector=query, tenant_id="t1").where(
            F("category") == "news").all()
        asynced = BlockingAsyncSession(AsyncSession(docs)).search(
            Doc, "by_meaning", vector=query, tenant_id="t1").where(F("category") == "news").all()
        assert isinstance(asynced, Hits) and asynced == synced
        assert [h.item.doc_id for h in synced] == ["d4", "d3", "d1"]
        assert BlockingAsyncSession(AsyncSession(docs)).search(
            Doc, "by_dot", vector=query, top=2).all() == Session(docs).search(
            Doc, "by_dot", vector=query, top=2).all()


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_where_narrows_a_search_by_the_index_filters(vdb: TestBackend) -> None:
    saved(vdb, *corpus())
    s = vdb.session()
    query = [1.0, 0.0, 0.0, 0.0]
    blog = s.search(Doc, "by_meaning", vector=query, tenant_id="t1").where(
        F("category") == "blog").all()
    assert [h.item.doc_id for h in blog] == ["d2", "d6"]
    both = s.search(Doc, "by_meaning", vector=query, tenant_id="t1").where(
        (F("category") == "news") & (F("year") == 2025)).all()
    assert [h.item.doc_id for h in both] == ["d3"]
    assert s.search(Doc, "by_meaning", vector=query, tenant_id="t3").all() == []


@pytest.mark.parametrize("index, distance", [("by_distance", "EUCLIDEAN"),
                                             ("by_dot", "DOT_PRODUCT")])
@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_each_index_orders_by_its_distance(vdb: TestBackend, index: str, distance: str) -> None:
    """EUCLIDEAN nearest first, DOT_PRODUCT highest first; ``by_dot`` projects only keys,
    so its hits are read by key, equal to what is stored all the same."""
    saved(vdb, *(docs_ := corpus()))
    s = vdb.session()
    query = [0.5, -0.25, 1.0, 2.0]
    hits = s.search(Doc, index, vector=query, top=4).all()
    want = expected(distance, query, docs_)
    assert [h.score for h in hits] == pytest.approx([sc for _, sc in want[:4]], abs=1e-6)
    assert {h.item.doc_id for h in hits} == {i for i, _ in want[:4]}
    assert [h.item for h in hits] == [s.get(Doc, doc_id=h.item.doc_id) for h in hits]


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_hits_are_read_by_key_other_types_left_out_first_where_the_index_tells(
        vdb: TestBackend) -> None:
    """An index projecting every attribute (``ALL``) answers a search in one request that
    asks for them all, the vector included (0.6 read every hit again by key): each hit is
    the stored item exactly (its loaded state too: the index holds the 32-bit floats
    dynaorm stored), the notes told apart by their type. A ``KEYS_ONLY`` index's hits
    are read by key (``BatchGetItem``), the notes told apart after."""
    notes = [Note(note_id=f"n{i}", tenant_id="t1", embedding=[1, 0, 0, 0.5]) for i in range(2)]
    saved(vdb, *corpus(), *notes)
    requests = Requests(vdb.table)

    def read_by_key() -> int:
        (found,) = [r for op, r in requests.calls if op == "BatchGetItem"]
        return len(next(iter(found["RequestItems"].values()))["Keys"])

    hits = vdb.session().search(Doc, "by_distance", vector=[1, 0, 0, 0.5], top=5).all()
    assert [op for op, _ in requests.calls] == ["SearchVectors"]
    assert "embedding" in requests.calls[0][1]["ExpressionAttributeNames"].values()
    assert len(hits) == 3 and hits.skipped == 2
    stored = {i["pk"]["S"]: i for i in vdb.scan_raw()}
    for hit in hits:  # (the vector: the index's copy of the 32-bit floats stored)
        loaded = dict(raw_state(hit.item).peek_item())
        assert float32([float(n["N"]) for n in loaded.pop("embedding")["L"]]) == float32([
            float(n["N"]) for n in stored[f"DOC#{hit.item.doc_id}"]["embedding"]["L"]])
        assert loaded == {k: v for k, v in stored[f"DOC#{hit.item.doc_id}"].items()
                          if k != "embedding"}
        assert hit.item == vdb.session().get(Doc, doc_id=hit.item.doc_id)
    changed = hits[0].item
    changed.title = "changed from a hit"
    with vdb.session() as s:
        s.save(changed)
    assert vdb.session().get(Doc, doc_id=changed.doc_id) == changed
    requests.calls.clear()
    hits = vdb.session().search(Doc, "by_dot", vector=[1, 0, 0, 0.5], top=5).all()
    assert read_by_key() == 5 and hits.skipped == 5 - len(hits)
    loaded = hits[0].item
    loaded.title = "changed"  # (a write of a hit is conditioned on the item as stored)
    with vdb.session() as s:
        s.save(loaded)
    assert vdb.session().get(Doc, doc_id=loaded.doc_id) == loaded


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_other_types_in_an_index_are_skipped_and_counted(vdb: TestBackend) -> None:
    notes = [Note(note_id=f"n{i}", tenant_id="t1", embedding=[1, 0, 0, 0.01 * i])
             for i in range(3)]
    saved(vdb, *corpus(), *notes)
    table = vdb.table
    table.db.driver.run(call("PutItem", {"TableName": table.name, "Item": {
        "pk": {"S": "GONE#1"}, "sk": {"S": "GONE"}, "_type": {"S": "Retired"},
        "embedding": {"L": [{"N": "1"}, {"N": "0"}, {"N": "0"}, {"N": "0"}]}}}))
    s = vdb.session()
    hits = s.search(Doc, "by_distance", vector=[1, 0, 0, 0], top=6).all()
    assert sorted(h.item.doc_id for h in hits) == ["d1", "d5"]  # (3 notes, 1 foreign)
    assert hits.skipped == 4
    in_partition = s.search(Note, "by_meaning", vector=[1, 0, 0, 0], tenant_id="t1").all()
    assert {h.item.note_id for h in in_partition} == {"n0", "n1", "n2"}
    assert in_partition.skipped == 5  # (the five docs of tenant t1)


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_version_rows_are_never_hits(vdb: TestBackend) -> None:
    page = Page(page_id="p1", body="one", embedding=[1, 0, 0, 0])
    saved(vdb, page)
    for n, body in enumerate(("two", "three"), start=2):
        page.body, page.embedding = body, [1, 0, 0, float(n)]
        saved(vdb, page)
    s = vdb.session()
    hits = s.search(Page, "by_distance", vector=[1, 0, 0, 3], top=10).all()
    assert [(h.item.version, h.item.body) for h in hits] == [(3, "three")]
    assert hits[0].item == s.get(Page, page_id="p1") and hits.skipped == 0
    rows = [i for i in vdb.scan_raw() if i["pk"]["S"] == "PAGE#p1"]
    history = [r for r in rows if not r["sk"]["S"].startswith("v0_")]
    assert len(history) == 3 and all("embedding" not in r for r in history)
    assert [p.embedding for p in s.history(Page, page_id="p1")] == [
        [1, 0, 0, 0], [1, 0, 0, 2], [1, 0, 0, 3]]


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_an_item_in_the_previous_layout_is_a_hit_read_as_current(vdb: TestBackend) -> None:
    table = vdb.table
    table.db.driver.run(call("PutItem", {"TableName": table.name, "Item": {
        "pk": {"S": "OLDMEMO#m1"}, "sk": {"S": "MEMO"}, "_type": {"S": "oldmemo"},
        "memo_id": {"S": "m1"}, "text": {"S": "old"},
        "embedding": {"L": [{"N": "0"}, {"N": "0"}, {"N": "0"}, {"N": "1"}]}}}))
    saved(vdb, Memo(memo_id="m2", text="new", embedding=[0, 0, 0.5, 1]))
    hits = vdb.session().search(Memo, "by_distance", vector=[0, 0, 0, 1]).all()
    assert [(h.item.memo_id, h.item.text) for h in hits] == [("m1", "old"), ("m2", "new")]
    assert hits.skipped == 0
    moved = hits[0].item
    moved.text = "moved"
    saved(vdb, moved)  # (a write of an old-layout object moves it)
    keys = [i["pk"]["S"] for i in vdb.scan_raw()]
    assert "MEMO#m1" in keys and "OLDMEMO#m1" not in keys
    assert vdb.session().get(Memo, memo_id="m1") == moved


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_guard_items_are_never_hits(vdb: TestBackend) -> None:
    saved(vdb, Account(account_id="a1", email="a@x.test", embedding=[0, 0, 1, 0]),
          Account(account_id="a2", email="b@x.test", embedding=[0, 0, 1, 1]))
    assert len(vdb.scan_raw()) == 4  # (two accounts, two guard items)
    hits = vdb.session().search(Account, "by_distance", vector=[0, 0, 1, 0]).all()
    assert [h.item.account_id for h in hits] == ["a1", "a2"] and hits.skipped == 0


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_expired_items_are_not_hits(vdb: TestBackend) -> None:
    past = datetime.now(UTC) - timedelta(days=1)
    saved(vdb, doc(1, [1, 0, 0, 0]), doc(2, [1, 0, 0, 0.1], expires=past))
    hits = vdb.session().search(Doc, "by_distance", vector=[1, 0, 0, 0]).all()
    assert [h.item.doc_id for h in hits] == ["d1"] and hits.skipped == 0


def test_a_vector_changed_in_place_to_another_length_is_refused_before_sending(
        vdb: TestBackend) -> None:
    saved(vdb, doc(1, [1, 0, 0, 0]))
    s = vdb.session()
    loaded = s.get(Doc, doc_id="d1")
    assert loaded is not None
    loaded.embedding.append(1.0)
    requests = Requests(vdb.table)
    with pytest.raises(InvalidValueError, match=r"embedding.*a vector of 4 numbers, not 5"), \
            vdb.session() as again:
        again.save(loaded)
    assert requests.calls == []
    assert s.get(Doc, doc_id="d1") == doc(1, [1, 0, 0, 0])


def test_a_long_bad_vector_is_summarised_not_printed(vdb: TestBackend) -> None:
    """0.6 printed every number of a vector refused at save (4,096 of them, say)."""
    obj = doc(1, [1, 0, 0, 0])
    obj.embedding.extend([0.25] * 4000)  # (in place: validated at save)
    with pytest.raises(InvalidValueError) as refused, vdb.session() as s:
        s.save(obj)
    message = str(refused.value)
    assert message.startswith("Doc field 'embedding': [1.0, 0.0, 0.0, 0.0, 0.25")
    assert "... (list, 4004 items) breaks its rules (Value error, a vector of 4 numbers, " \
           "not 4004)" in message and len(message) < 200
    assert vdb.scan_raw() == []


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_a_vector_assigned_after_construction_holds_what_is_stored(vdb: TestBackend) -> None:
    """0.6 kept an assigned vector's 64-bit floats in the object while 32-bit ones were
    stored: the saved object and the one read back differed."""
    obj = doc(1, [1, 0, 0, 0])
    obj.embedding = [0.1, 0.2, 0.3, 0.7]
    assert obj.embedding == [f32(x) for x in (0.1, 0.2, 0.3, 0.7)] != [0.1, 0.2, 0.3, 0.7]
    saved(vdb, obj)
    s = vdb.session()
    assert s.get(Doc, doc_id="d1") == obj
    (hit,) = s.search(Doc, "by_distance", vector=[0.1, 0.2, 0.3, 0.7], top=1).all()
    assert hit.item == obj and hit.score == 0
    with pytest.raises(ValueError, match="a vector of 4 numbers, not 3"):
        obj.embedding = [1.0, 2.0, 3.0]
    assert obj.embedding == [f32(x) for x in (0.1, 0.2, 0.3, 0.7)]  # (left as it was)
    obj.title = "plain fields assign as before"
    assert obj.title == "plain fields assign as before"


def test_index_status_knows_vector_indexes(vdb: TestBackend) -> None:
    assert docs.index_status() == dict.fromkeys(("by_meaning", "by_distance", "by_dot"),
                                                "ACTIVE")
    other = Table(docs.name, client=docs.db, vector_indexes=[
        VectorIndex("by_meaning", attribute="embedding", dimensions=8, partition="tenant_id",
                    filters=("category", "year"))], key_types={"year": "N"})
    assert other.index_status()["by_meaning"] == "MISMATCHED"


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_create_adds_a_vector_index_to_a_table_without_it(
        vdb: TestBackend, request: pytest.FixtureRequest) -> None:
    """As for a global index: ``create()`` sends UpdateTable's ``VectorIndexUpdates``."""
    if engine_of(request) == "dynoxide":
        pytest.skip("dynoxide builds an added vector index for 15 s and refuses searches of "
                    "it for 30 s (as AWS does, for minutes): proven on the embedded default")
    plain = Table(f"vector_added{worker_suffix()}", client=docs.db)
    plain.delete()
    plain.create()
    added = Table(plain.name, client=docs.db, vector_indexes=[
        VectorIndex("late", attribute="embedding", dimensions=2, distance="EUCLIDEAN")])
    try:
        assert added.index_status() == {"late": "MISSING"}
        requests = Requests(added)
        added.create()
        assert any(op == "UpdateTable" and "VectorIndexUpdates" in r
                   for op, r in requests.calls)
        assert added.index_status() == {"late": "ACTIVE"}
        added.db.driver.run(call("PutItem", {"TableName": added.name, "Item": {
            "pk": {"S": "a"}, "sk": {"S": "a"}, "embedding": {"L": [{"N": "3"}, {"N": "4"}]}}}))
        out = added.db.driver.run(call("SearchVectors", {
            "TableName": added.name, "IndexName": "late", "TopK": 1,
            "SearchVector": [{"N": "0"}, {"N": "0"}]}))
        assert [r["Score"] for r in out["SearchResults"]] == [5.0]
    finally:
        plain.delete()


def test_a_provisioned_table_is_refused_a_vector_index(vdb: TestBackend) -> None:
    name = f"vector_provisioned{worker_suffix()}"
    plain = Table(name, client=docs.db)
    plain.delete()
    plain.db.driver.run(call("CreateTable", {
        **plain.definition(), "BillingMode": "PROVISIONED",
        "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}}))
    added = Table(name, client=docs.db, vector_indexes=[
        VectorIndex("late", attribute="embedding", dimensions=2)])
    try:
        requests = Requests(added)
        with pytest.raises(DynaormError, match="is PROVISIONED: vector index"):
            added.create()
        assert "UpdateTable" not in [op for op, _ in requests.calls]
        refused = {**added.definition(), "BillingMode": "PROVISIONED", "TableName": name + "x",
                   "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}}
        with pytest.raises(DynaormError, match="PAY_PER_REQUEST"):
            added.db.driver.run(call("CreateTable", refused))
    finally:
        plain.delete()


# -- the engine against a brute-force model of the index ------------------------------------
_NUMBERS = st.one_of(st.floats(-4, 4, width=32), st.sampled_from([0.0, 1.0, -1.0]),
                     st.floats(allow_nan=False, allow_infinity=False, width=32))
_VECTORS = st.lists(_NUMBERS, min_size=3, max_size=3)


@pytest.mark.sync_only  # (one engine, one session kind: the model is the subject)
@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(points=st.lists(_VECTORS, max_size=10), query=_VECTORS, top=st.integers(1, 12),
       distance=st.sampled_from(["COSINE", "EUCLIDEAN", "DOT_PRODUCT"]))
@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_searches_agree_with_a_brute_force_model(vdb: TestBackend, points: list[list[float]],
                                                  query: list[float], top: int,
                                                  distance: str) -> None:
    """Every item compared: the hits are the ``top`` best of the model's scores, each
    scored as the model scores it (ties may come in any order: DynamoDB's is not fixed)."""
    where = uuid.uuid4().hex  # (a partition of its own: no example sees another's points)
    objs = [Point(space=where, n=n, v=v) for n, v in enumerate(points)]
    with Session(space) as s:
        for obj in objs:
            s.save(obj)
    hits = Session(space).search(Point, f"by_{distance.lower()}", vector=query, top=top,
                                 space=where).all()
    model = {o.n: model_score(distance, query, o.v) for o in objs}
    best = sorted(model.values(), reverse=distance == "DOT_PRODUCT")[:top]
    assert len(hits) == len(best)
    for hit, score in zip(hits, best, strict=True):
        tolerance = 1e-9 * (1 + sum(abs(a * b) + a * a + b * b for a, b in zip(
            query, hit.item.v, strict=True)))
        assert math.isclose(hit.score, model[hit.item.n], rel_tol=1e-9, abs_tol=tolerance)
        assert math.isclose(hit.score, score, rel_tol=1e-9, abs_tol=tolerance)
        assert hit.item == objs[hit.item.n]


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_an_update_sets_a_vector_whole(vdb: TestBackend) -> None:
    """``set()`` validates and rounds the whole vector; ``append`` or ``prepend`` would
    change its length: refused before sending."""
    saved(vdb, doc(1, [1, 0, 0, 0]))
    with vdb.session() as s:
        s.update(Doc, doc_id="d1").set(embedding=[0.1, 0.2, 0.3, 0.4])
    assert vdb.session().get(Doc, doc_id="d1") == doc(1, [0.1, 0.2, 0.3, 0.4])
    hits = vdb.session().search(Doc, "by_distance", vector=[0.1, 0.2, 0.3, 0.4]).all()
    assert [(h.item.doc_id, h.score) for h in hits] == [("d1", 0.0)]
    s = vdb.session()
    for action in ("append", "prepend"):
        with pytest.raises(InvalidValueError, match=rf"is a vector: {action}\(\) would change"):
            getattr(s.update(Doc, doc_id="d1"), action)(embedding=[1.0, 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="a vector of 4 numbers, not 3"):  # (validation's)
        s.update(Doc, doc_id="d1").set(embedding=[1.0, 2.0, 3.0])
    s.rollback()


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
@pytest.mark.sync_only  # (explain sends nothing: one kind of session is enough)
def test_explain_of_a_search_sends_nothing_and_tells_what_it_will_send(
        vdb: TestBackend) -> None:
    first = doc(1, [1, 0, 0, 0])
    saved(vdb, first)
    requests = Requests(vdb.table)
    search = Session(docs).search(Doc, "by_meaning", vector=[1, 0, 0, 0], top=3,
                                  tenant_id="t1").where(F("category") == "news")
    found = explain(search, items=[first])
    assert requests.calls == []  # nothing sent
    assert [(r.operation, r.index) for r in found.requests] == [
        ("SearchVectors", "by_meaning")]  # (an ALL index: one request)
    assert found.index == "by_meaning" and not found.exact
    # (vector search bytes cannot be counted before sending: not priced, and said so)
    assert (found.requests[0].read_units, found.requests[0].write_units) == (0.0, 0.0)
    assert found.read_units == 0 and "projects every attribute of Doc" in str(found)
    assert "VectorSearchRequestBytes" in str(found) and "not priced" in str(found)
    hits = search.all()
    assert [h.item for h in hits] == [first]
    assert requests.calls == [("SearchVectors", found.requests[0].request)]  # as sent
    requests.calls.clear()
    by_key = explain(Session(docs).search(Doc, "by_dot", vector=[1, 0, 0, 0]), items=[first])
    assert [r.operation for r in by_key.requests] == ["SearchVectors", "BatchGetItem"]
    assert by_key.read_units == 0.5  # the hit, read by key (eventually consistent, < 4 KB)
    assert requests.calls == []


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_a_search_s_consumed_bytes_are_counted_for_its_entity(
        vdb: TestBackend, request: pytest.FixtureRequest) -> None:
    """With ``return_consumed_capacity`` set, a search asks for its consumed capacity, and
    ``client.capacity()`` counts the vector search bytes the answer reports for the entity
    searched (apart from the units of the read of its hits by key)."""
    saved(vdb, *corpus())
    vdb.table.return_consumed_capacity = "TOTAL"  # (the table's client, with that mode)
    client = vdb.table.db
    requests = Requests(vdb.table)
    try:
        client.capacity(reset=True)
        hits = vdb.session().search(Doc, "by_dot", vector=[1, 0, 0, 0], top=3).all()
        totals = client.capacity(reset=True)
    finally:
        vdb.table.return_consumed_capacity = None
    assert len(hits) == 3
    assert [(op, r.get("ReturnConsumedCapacity")) for op, r in requests.calls] == [
        ("SearchVectors", "TOTAL"), ("BatchGetItem", "TOTAL")]
    answers = dict(requests.responses)
    reported = answers["SearchVectors"].get("ConsumedCapacity", {}).get(
        "VectorSearchRequestBytes")
    if engine_of(request) == "moto":  # (the embedded default reports them; dynoxide may not)
        assert reported is not None and reported > 0
    assert totals.get("Doc", {}).get(SEARCH_BYTES) == reported
    read = sum(c["CapacityUnits"] for c in answers["BatchGetItem"].get(
        "ConsumedCapacity", []))
    assert totals["Doc"].get("read", 0.0) == read
    assert set(totals) == {"Doc"}


@pytest.mark.dynaorm_index_lag(0, reason="tests the lag itself")
def test_a_search_lags_as_a_global_index_read_does(db: TestBackend,
                                                   request: pytest.FixtureRequest) -> None:
    """Under ``index_lag`` a vector index sees the table as it was (DynamoDB fills it
    asynchronously, as a global index), while the hits are read by key, exactly: on the
    embedded default, and behind a fault proxy in front of dynoxide."""
    if engine_of(request) == "local":
        pytest.skip(NO_LOCAL)
    with ExitStack() as stack:
        url = db.endpoint_url
        if url is not None and engine_of(request) != "moto" and request.config.getoption(
                LAG_OPTION) is None:
            url = stack.enter_context(fault_proxy(url))
        tb = stack.enter_context(use_tables(docs, endpoint_url=url, wire=wire_of(request),
                                            name_suffix=worker_suffix()))
        tb.session_kind = db.session_kind
        saved(tb, doc(1, [1, 0, 0, 0]))

        def found() -> list[tuple[str, str]]:
            return [(h.item.doc_id, h.item.title) for h in tb.session().search(
                Doc, "by_meaning", vector=[1.0, 0.0, 0.0, 0.0], tenant_id="t1").all()]

        with index_lag(30) as lag:
            renamed = doc(1, [1, 0, 0, 0])
            renamed.title = "renamed"
            saved(tb, doc(2, [0.9, 0.1, 0, 0]))
            with tb.session() as s:
                s.save(renamed, overwrite=True)
            assert found() == [("d1", "doc 1")]  # (the index's copy: all it projects)
            assert [h.item.title for h in tb.session().search(
                Doc, "by_dot", vector=[1.0, 0.0, 0.0, 0.0]).all()] == ["renamed"]  # (by key)
            lag.advance(30)
            assert found() == [("d1", "renamed"), ("d2", "doc 2")]


# --- hostile vectors in a search's answer; an encrypted hit in its previous layout
# (moved from system/test_red_team_08d_vectors.py:
# Red team 08d, vector reads (bulk float32 through ``struct``, pydantic-core's float parse
# with a plain fallback: :mod:`dynaorm.schema.rules.vectors`, :mod:`dynaorm.read.search`):
# what must never happen when a server answers a search with hostile vectors.
#
# - a hit's vector members as texts no number has (``NaN``, ``inf``, ``1e400``, unicode
#   digits, underscores, spaces, hex), as JSON numbers or ``null`` instead of text, other
#   member types, a vector of the wrong length, a list that is no list: the read either
#   gives exactly the floats the plain way gives (``float()`` of each text, then
#   ``array("f")``) or refuses with dynaorm's own error (:class:`~dynaorm.ItemDecodeError`
#   or :class:`~dynaorm.BadAnswerError`), never a ``KeyError``/``TypeError``/pydantic
#   ``ValidationError`` out of the decoder, never a non-finite float in a loaded object;
# - a hit of an ENCRYPTED entity still stored in its previous layout (``moved_p`` prepares
#   the rows' keys): it decrypts, equals ``get``, and a save of it moves it sealed anew.
#
# The hostile answers are served on loopback (no engine); the previous-layout hit on moto's
# embedded vector search only.)

DIMS = 3
hv = Table("red08d-vectors", vector_indexes=[
    VectorIndex("by_distance", attribute="embedding", dimensions=DIMS, distance="EUCLIDEAN")])


class Pt(Entity):
    class Meta:
        table = hv
        pk = "PT#{pt_id}"
        sk = "PT"

    pt_id: str
    embedding: Annotated[list[float], Vector(DIMS)]


def _hit(embedding: Any) -> dict[str, Any]:
    return {"Item": {"pk": {"S": "PT#p1"}, "sk": {"S": "PT"}, "_type": {"S": "Pt"},
                     "pt_id": {"S": "p1"}, "embedding": embedding}, "Score": 0.5}


@contextmanager
def _hostile(body: bytes, wire: str, rows: Sequence[dict[str, Any]] = ()) -> Iterator[None]:
    with serving(_script({"body": body, "rows": rows})) as server, _pointed(server.url, wire):
        yield


def _script(answers: dict[str, Any]) -> Any:
    """The server's script: a batch read answered with ``answers["rows"]``, any other
    request with ``answers["body"]`` (both read as each request comes)."""
    def script(n: int, request: bytes) -> Reply:
        if b"RequestItems" not in request:
            return Reply(answer(answers["body"]))
        return Reply(answer(json_body({"Responses": {hv.name: list(answers["rows"])}})))

    return script


@contextmanager
def _pointed(url: str, wire: str) -> Iterator[None]:
    bound = hv.binding()
    try:
        hv.connect(url)
        hv.wire, hv.max_attempts = wire, 1
        yield
    finally:
        hv.restore(bound)


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[str, dict[str, Any]]]:
    """One loopback server for every hostile case (a case sets what it answers: each
    request is one case's, the cases run one at a time): its URL and its answers."""
    answers: dict[str, Any] = {"body": b"", "rows": ()}
    with serving(_script(answers)) as server:
        yield server.url, answers


def _plain(embedding: Any) -> list[float] | None:
    """The plain way: ``float()`` of each member's value (a JSON number as ``float()``
    reads it, as the plain reader of ``tests/equivalence/test_vector_reads.py`` does),
    rounded as ``array("f")`` rounds; ``None``: the plain way refuses it."""
    try:
        texts = [m["N"] for m in embedding["L"]]
        values = float32_plain([float(t) for t in texts])
    except (KeyError, TypeError, ValueError):
        return None
    return values if len(values) == DIMS else None


TEXTS = ["1", "-0", "0.1", "3.4028235e38", "3.5e38", "1e-46", "1e400", "-1e400", "NaN", "nan",
         "inf", "-Infinity", "\u0661", "\uff11", "1_0", " 1", "1 ", "0x10", "1e", "", "+1",
         ".5", "5.", "1" + "0" * 400, "0." + "0" * 400 + "1", "1e-99999999999",
         "1e99999999999", "\u0661.\u0662", "\uff11e1", "1\x00", "--1", "1.5e+3"]
MEMBERS: dict[str, Any] = {
    **{f"text {t!r}": {"L": [{"N": t}, {"N": "0"}, {"N": "0"}]} for t in TEXTS},
    "a JSON number": {"L": [{"N": 1}, {"N": "0"}, {"N": "0"}]},
    "a JSON true": {"L": [{"N": True}, {"N": "0"}, {"N": "0"}]},
    "a null": {"L": [{"N": None}, {"N": "0"}, {"N": "0"}]},
    "a list": {"L": [{"N": ["1"]}, {"N": "0"}, {"N": "0"}]},
    "an S member": {"L": [{"S": "1"}, {"N": "0"}, {"N": "0"}]},
    "a member of two types": {"L": [{"N": "1", "S": "x"}, {"N": "0"}, {"N": "0"}]},
    "an empty member": {"L": [{}, {"N": "0"}, {"N": "0"}]},
    "a member not an object": {"L": ["1", {"N": "0"}, {"N": "0"}]},
    "two numbers": {"L": [{"N": "0"}, {"N": "0"}]},
    "four numbers": {"L": [{"N": "0"}] * 4},
    "no numbers": {"L": []},
    "L not a list": {"L": "123"},
    "L an object": {"L": {"N": "1"}},
    "an S": {"S": "1,0,0"},
    "an NS": {"NS": ["1", "0", "2"]},
    "a NULL": {"NULL": True},
    "a NULL false": {"NULL": False},
    "an empty value": {},
    "a number": {"N": "1"},
}


@pytest.mark.sync_only
@pytest.mark.engines("moto")
@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
@pytest.mark.parametrize("case", list(MEMBERS))
def test_a_hostile_vector_is_the_plain_ways_floats_or_dynaorms_error(
        case: str, wire: str, kind: str, hostile: tuple[str, dict[str, Any]]) -> None:
    embedding = MEMBERS[case]
    url, answers = hostile
    answers["body"] = json.dumps({"SearchResults": [_hit(embedding)]}).encode()
    answers["rows"] = [_hit(embedding)["Item"]]
    expected = _plain(embedding)
    with _pointed(url, wire):
        s: Any = Session(hv) if kind == "sync" else BlockingAsyncSession(AsyncSession(hv))
        try:
            hits = s.search(Pt, "by_distance", vector=[1, 0, 0], top=1).all()
        except (ItemDecodeError, BadAnswerError) as exc:
            assert expected is None, f"the plain way reads {expected}, the search: {exc!r}"
            return
        except DynaormError as exc:
            pytest.fail(f"not a decode error: {exc!r}")
    got = [h.item.embedding for h in hits]
    assert got == [expected], (got, expected)
    assert all(math.isfinite(v) for v in got[0])


# == an encrypted entity's hit in its previous layout ======================================
KEYRING = StaticKeyring(b"k" * 32)
ev = Table("red08d-enc-vectors", keyring=KEYRING, vector_indexes=[
    VectorIndex("by_distance", attribute="embedding", dimensions=DIMS, distance="EUCLIDEAN")])
ev_old = Table("red08d-enc-vectors", keyring=KEYRING)


class OldSecretPt(Entity):
    class Meta:
        table = ev_old
        pk = "OLDPT#{pt_id}"
        sk = "PT"
        type_name = "oldpt"

    pt_id: str
    code: Encrypted[str]
    embedding: list[float]


class SecretPt(Entity):
    class Meta:
        table = ev
        pk = "PT#{pt_id}"
        sk = "PT"
        previous = Previous(pk="OLDPT#{pt_id}", type_name="oldpt",
                            stored_names={"secret": "code"})

    pt_id: str
    secret: Encrypted[str]
    embedding: Annotated[list[float], Vector(DIMS)]


@pytest.fixture
def enc(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(ev, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        saved = (ev_old.name, ev_old.binding())
        ev_old.name = ev.name
        ev_old.restore((None, {}, Client(ev.endpoint_url, wire="dynaorm")))
        try:
            yield tb
        finally:
            ev_old.name = saved[0]
            ev_old.restore(saved[1])


@pytest.mark.sync_only
@pytest.mark.engines("moto")
@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_an_encrypted_hit_in_its_previous_layout_opens_and_moves_sealed(
        enc: TestBackend) -> None:
    with Session(ev_old) as o:
        o.save(OldSecretPt(pt_id="p1", code="hush-1", embedding=[0, 0, 1]))
    with Session(ev) as s:
        s.save(SecretPt(pt_id="p2", secret="hush-2", embedding=[0, 0.5, 1]))
    assert "hush" not in str(enc.scan_raw())
    hits = Session(ev).search(SecretPt, "by_distance", vector=[0, 0, 1]).all()
    assert [(h.item.pt_id, h.item.secret) for h in hits] == [("p1", "hush-1"),
                                                              ("p2", "hush-2")]
    moved = hits[0].item
    assert moved == Session(ev).get(SecretPt, pt_id="p1")
    moved.secret = "hush-3"
    with Session(ev) as s:
        s.save(moved)
    rows = {i["pk"]["S"]: i for i in enc.scan_raw()}
    assert "OLDPT#p1" not in rows and set(rows["PT#p1"]["secret"]) == {"B"}
    assert "hush" not in str(rows)
    again = Session(ev).search(SecretPt, "by_distance", vector=[0, 0, 1]).all()
    assert [(h.item.pt_id, h.item.secret) for h in again] == [("p1", "hush-3"),
                                                               ("p2", "hush-2")]


@pytest.mark.sync_only
@pytest.mark.engines("moto")
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_item_botocore_cannot_parse_is_a_bad_answer_on_any_read(kind: str) -> None:
    """Not only a search: a GetItem answered with an attribute of another shape than
    DynamoDB's (``L`` holding text) is a :class:`~dynaorm.BadAnswerError` on botocore's
    wire too (it raised botocore's parser's ``AttributeError``), as on dynaorm's."""
    item = _hit({"L": "123"})["Item"]
    for wire in ("dynaorm", "botocore"):
        with _hostile(json.dumps({"Item": item}).encode(), wire):
            s: Any = Session(hv) if kind == "sync" else BlockingAsyncSession(AsyncSession(hv))
            with pytest.raises((BadAnswerError, ItemDecodeError)) as caught:
                s.get(Pt, pt_id="p1")
            if wire == "botocore":
                assert isinstance(caught.value, BadAnswerError)
                assert "botocore cannot parse" in str(caught.value)


# --- a search of an index projecting every attribute is one request
# (moved from integration/test_search_one_request_redteam.py:
# Red team (issue 59, point 6): a search of an index that projects every attribute is one
# request, its hits decoded from SearchVectors' items: each must equal what a get returns,
# for every kind of field (compressed, encrypted, sets, maps, nested models, numbers,
# binary, dates, None), for an entity other than the tests' ``Doc``. Embedded default and
# dynoxide (DynamoDB Local has no vector index).)

#: (what it asserts depends on the engine: it runs on each)


class Inner(BaseModel):
    name: str
    tags: list[str] = []
    score: Decimal = Decimal("0")


class Rich(Entity):
    class Meta:
        table = docs
        pk = "RICH#{rid}"
        sk = "RICH"

    rid: str
    tenant_id: str = "t1"
    category: str = "rich"
    year: int = 2026
    big: Compressed[str] = ""
    small: Compressed[str] = ""
    secret: Encrypted[str] | None = None
    secret_blob: Encrypted[bytes] | None = None
    tags: set[str] = set()
    counts: set[int] = set()
    doc: dict[str, Any] = {}
    inner: Inner | None = None
    inners: list[Inner] = []
    price: Decimal = Decimal("0")
    ratio: float = 0.0
    blob: bytes = b""
    when: datetime | None = None
    flag: bool = False
    nothing: str | None = None
    embedding: Annotated[list[float], Vector(4)]




def _rich(n: int) -> Rich:
    return Rich(rid=f"r{n}", big="word " * 400, small="tiny", secret=f"s{n}",
                secret_blob=bytes(range(n + 1)), tags={"a", "b"}, counts={1, 2, n},
                doc={"x": [1, "two", None, {"y": Decimal("3.25")}], "z": True},
                inner=Inner(name="i", tags=["t"], score=Decimal("1.5")),
                inners=[Inner(name="j")], price=Decimal("19.99"), ratio=0.1 * n,
                blob=b"\x00\xff" * n, when=datetime(2026, 1, n + 1, 12, tzinfo=UTC),
                flag=bool(n % 2), embedding=[0.1 * (n + 1), 0.2, -0.3, 1 / 3])


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_a_search_hit_of_every_field_kind_is_the_get(vdb: TestBackend) -> None:
    saved = [_rich(n) for n in range(4)]
    with vdb.session() as w:
        for obj in saved:
            w.save(obj)
    s = vdb.session()
    search = s.search(Rich, "by_distance", vector=[0.1, 0.2, -0.3, 0.3], top=10)
    assert len(explain(search).requests) == 1
    sent = Requests(docs)
    hits = search.all()
    assert [op for op, _ in sent.calls] == ["SearchVectors"]
    found = {h.item.rid: h.item for h in hits}
    assert set(found) == {o.rid for o in saved}
    for obj in saved:
        got = s.get(Rich, rid=obj.rid)
        assert found[obj.rid] == got
        assert found[obj.rid].model_dump() == got.model_dump()
