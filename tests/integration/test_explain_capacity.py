"""``dynaorm.explain``'s units against the capacity DynamoDB Local reports
(``ReturnConsumedCapacity="INDEXES"``: the table and each index), operation by operation:
gets (eventually and strongly consistent), puts under and over 1 KB, an update, a delete,
a save with GSI keys, a unique versioned save (a transaction: twice the units), a keyed
commit (its receipt), a query page, and a property over item sizes around the 1 KB write
and 4 KB read boundaries. Each read is run twice: through the session, and as the request
explain shows, sent verbatim on the low-level client.

On DynamoDB Local only: the figures are the reference engine's (moto and dynoxide report
no capacity, or other figures). Where DynamoDB Local is known to differ from DynamoDB:

- a transaction: AWS's pricing says "transactional write requests require two WCUs to
  perform one write per second for items up to 1 KB", for each item; DynamoDB Local
  counts the actions whose capacities are equal once (:func:`priced` compares through
  ``tests.support.engines.local_transaction_units``; ``integration/test_explain.py``
  shows it and fails the day a build counts each). explain prices each, as DynamoDB.
- a read that finds nothing: DynamoDB Local reports 0 for an empty Query or Scan page
  (0.5 for a GetItem of a missing item); the developer guide ("item sizes for reads are
  rounded up to the next 4 KB multiple") names no minimum for a query: explain follows
  DynamoDB Local.

A blind update, a condition check or a delete by key prices items it has not read:
``exact`` is then ``False`` and its units a lower bound (asserted as such here). The other
explain tests are in ``integration/test_explain.py``."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import partial
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import (
    GSI,
    LSI,
    Compressed,
    Encrypted,
    Entity,
    Explanation,
    F,
    RequestEvent,
    Session,
    StaticKeyring,
    Table,
    explain,
)
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import engine_of
from tests.support.engines import local_transaction_units
from tests.support.examples import examples
from tests.support.models import SHARDS, Audit, Note, SOrder, TplSparse, User, app
from tests.support.recording import send

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("local"),
              pytest.mark.dynaorm_index_lag(0, reason="compares with what DynamoDB Local "
                                                      "reports")]


@pytest.fixture(autouse=True)
def _on_dynamodb_local(request: pytest.FixtureRequest) -> None:
    """Skips on any other engine behind ``--dynaorm-endpoint`` (dynoxide counts capacity
    its own way): the figures compared are DynamoDB Local's."""
    if engine_of(request) != "local":
        pytest.skip("compares explain with DynamoDB Local's own counting")


@pytest.fixture
def local(db: TestBackend) -> Iterator[TestBackend]:
    """The suite's table on DynamoDB Local, every request asking for capacity by index,
    each answer's event kept (``SEEN``)."""
    app.return_consumed_capacity = "INDEXES"
    db.table.on_request(SEEN.append)
    try:
        yield db
    finally:
        app.return_consumed_capacity = None
        del SEEN[:]


#: the events of the requests the current test sent (its ``local`` fixture listens)
SEEN: list[RequestEvent] = []


def _sum(into: dict[str, float], capacity: dict[str, float]) -> dict[str, float]:
    for name, units in capacity.items():
        if units:  # (an index read reports its table's 0 too)
            into[name] = into.get(name, 0.0) + units
    return into


def reported(run: Callable[[], Any]) -> dict[str, float]:
    """What DynamoDB Local reported as consumed by the requests ``run`` sends, by table
    and ``table/index``."""
    del SEEN[:]
    run()
    out: dict[str, float] = {}
    for event in SEEN:
        _sum(out, event.consumed_capacity)
    return out


def raw(db: TestBackend, found: Explanation) -> dict[str, float]:
    """What DynamoDB Local reports for explain's own read requests, sent verbatim on the
    low-level client with ``ReturnConsumedCapacity="INDEXES"`` (parsed here, not by
    dynaorm)."""
    out: dict[str, float] = {}
    for r in found.requests:
        answer = send(db.table, r.operation, {**r.request,
                                              "ReturnConsumedCapacity": "INDEXES"})
        for capacity in answer.get("ConsumedCapacity", []) if isinstance(
                answer.get("ConsumedCapacity"), list) else [answer["ConsumedCapacity"]]:
            name = capacity["TableName"]
            table = capacity.get("Table", {}).get("CapacityUnits", capacity.get(
                "CapacityUnits", 0.0) if "Table" not in capacity else 0.0)
            parts = {name: table}
            for kind in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
                for index, units in capacity.get(kind, {}).items():
                    parts[f"{name}/{index}"] = units["CapacityUnits"]
            _sum(out, parts)
    return out


def committed(s: Session, db: TestBackend) -> tuple[Explanation, dict[str, float]]:
    """``s``'s next commit explained, then sent: what DynamoDB Local reported for it."""
    found = explain(s)
    return found, reported(s.commit)


def priced(found: Explanation) -> dict[str, float]:
    """explain's units as DynamoDB Local reports them (a transaction's equal actions
    once: see the module), its reads' with them."""
    if all(r.operation != "TransactWriteItems" for r in found.requests):
        return found.by_table()
    out = local_transaction_units(found.rows)
    for r in found.requests:
        if r.read_units:
            _sum(out, {r.table: r.read_units})
    return out


def test_gets_eventually_and_strongly_consistent(local: TestBackend) -> None:
    s = local.session()
    notes = [Note(note_id=f"g{n}", body="b" * n) for n in (10, 4000, 4100, 9000)]
    for note in notes:
        s.save(note)
    s.commit()
    for note in notes:
        for consistent in (False, True):
            found = explain(Note, items=[note], consistent=consistent, note_id=note.note_id)
            assert found.exact
            got = reported(partial(s.get, Note, consistent=consistent,
                                   note_id=note.note_id))
            assert found.by_table() == got == raw(local, found), (len(note.body), consistent)


def test_puts_under_and_over_1kb_an_update_and_a_delete(local: TestBackend) -> None:
    s = local.session()
    for size in (1, 900, 1000, 1100, 2100, 5000):
        note = Note(note_id=f"p{size}", body="x" * size)
        s.save(note)
        found, got = committed(s, local)
        assert found.exact and found.requests[0].operation == "PutItem"
        assert found.by_table() == got, size
    loaded = s.get(Note, note_id="p2100")
    assert loaded is not None
    loaded.body = "short"  # priced on the larger of before and after: 3 units
    s.save(loaded)
    found, got = committed(s, local)
    assert found.by_table() == got == {app.name: 3.0}
    s.update(Note, note_id="p5000").set(body="y" * 10)  # blind: the stored item unread
    found, got = committed(s, local)
    assert not found.exact and "priced on its new item only" in str(found)
    assert found.by_table() == {app.name: 1.0} and got == {app.name: 5.0}  # (at least)
    s.delete(loaded)
    found, got = committed(s, local)
    assert found.by_table() == got == {app.name: 1.0}


def test_a_save_with_gsi_keys_writes_each_index_entry(local: TestBackend) -> None:
    s = local.session()
    sparse = TplSparse(sid="s1", status="open", body="y" * 1500)
    s.save(sparse)
    found, got = committed(s, local)
    assert found.by_table() == got == {app.name: 2.0, f"{app.name}/gsi2": 2.0}
    sparse.status = "closed"  # the entry's key moves: deleted and put again
    s.save(sparse)
    found, got = committed(s, local)
    assert found.by_table() == got
    sparse.status = None  # leaves the index
    s.save(sparse)
    found, got = committed(s, local)
    assert found.by_table() == got


def test_a_unique_versioned_save_is_a_transaction_at_twice_the_units(
        local: TestBackend) -> None:
    s = local.session()
    s.save(User(user_id="u1", username="ann", email="a@x.io", full_name="f" * 1500))
    found, got = committed(s, local)
    assert found.requests[0].operation == "TransactWriteItems"
    assert priced(found) == got, found
    s.save(Audit(equipment_id="e1", part="p", notes="n" * 2000))
    found, got = committed(s, local)
    assert priced(found) == got, found
    audit = s.get(Audit, equipment_id="e1", part="p")
    assert audit is not None
    audit.notes = "m" * 3000
    s.save(audit)
    found, got = committed(s, local)
    assert priced(found) == got, found
    user = s.get(User, user_id="u1")
    assert user is not None
    user.username = "anne"  # one guard released, one claimed, the gsi1 entry moves
    s.save(user)
    found, got = committed(s, local)
    assert priced(found) == got, found


def test_a_keyed_commit_writes_its_receipt(local: TestBackend) -> None:
    s = Session(local.table, idempotency_key="order-17")
    s.save(Note(note_id="k1", body="k" * 1500))
    found, got = committed(s, local)
    assert "receipt" in {r.role for r in found.rows}
    assert priced(found) == got, found
    s = Session(local.table, idempotency_key="order-18")
    s.save(Note(note_id="k2", body="k" * 100))
    s.save(User(user_id="u7", username="kim", email="k@x.io"))
    found, got = committed(s, local)
    assert priced(found) == got, found


def test_a_query_page(local: TestBackend) -> None:
    s = local.session()
    users = [User(user_id=f"q{i}", username=f"n{i}", email=f"{i}@x.io",
                  full_name="f" * 1400) for i in range(7)]
    for user in users:
        s.save(user)
    s.commit()
    ordered = sorted(users, key=lambda u: u.username)
    on_index = s.query(User, index="gsi1", org_id="acme")
    for query, items in ((on_index, ordered), (on_index.page_size(3), ordered),
                         (on_index.limit(2), ordered[:2]),
                         (s.query(User, user_id="q3"), [users[3]]),
                         (s.query(User, user_id="q3").consistent(), [users[3]])):
        found = explain(query, items=items)
        assert found.exact
        got = reported(query.all)
        assert found.by_table() == got, (found, got)
    single = explain(on_index.limit(2), items=ordered[:2])
    assert single.by_table() == raw(local, single)


#: a fresh key for each example
_KEYS = itertools.count()
#: examples of each property (DynamoDB Local only; CI's 30 minutes)
EXAMPLES = int(__import__("os").environ.get("EXPLAIN_EXAMPLES", "10"))
#: sizes around the 1 KB write and 4 KB read unit boundaries
SIZES = st.one_of(st.integers(900, 1100), st.integers(1950, 2100), st.integers(3950, 4150),
                  st.integers(8050, 8250))


@settings(max_examples=examples(EXAMPLES), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=SIZES, consistent=st.booleans())
def test_put_and_get_price_what_dynamodb_local_reports_around_the_boundaries(
        local: TestBackend, size: int, consistent: bool) -> None:
    s = local.session()
    note = Note(note_id=f"h{next(_KEYS)}", body="z" * size)
    s.save(note)
    found, got = committed(s, local)
    assert found.by_table() == got, size
    read = explain(Note, items=[note], consistent=consistent, note_id=note.note_id)
    assert read.by_table() == reported(lambda: s.get(
        Note, consistent=consistent, note_id=note.note_id)), (size, consistent)


def test_a_find_reads_the_guard_then_its_owner(local: TestBackend) -> None:
    s = local.session()
    user = User(user_id="f1", username="fay", email="f@x.io", full_name="f" * 5000)
    s.save(user)
    s.commit()
    for consistent in (False, True):
        found = explain(User, items=[user], consistent=consistent, email="f@x.io")
        got = reported(partial(s.find, User, consistent=consistent, email="f@x.io"))
        assert found.by_table() == got, (consistent, found)


def test_a_condition_check_beside_a_write(local: TestBackend) -> None:
    s = local.session()
    s.save(Note(note_id="c1", body="c" * 5000))
    s.commit()
    s.save(Note(note_id="c2", body="c" * 3000))
    s.commit()
    for checked in ("c1", "c2", "absent"):  # checks of 5 KB, 3 KB and no item
        s.check(Note, condition=F("body").exists() | F("body").not_exists(),
                note_id=checked)
        s.save(Note(note_id=f"d{checked}", body="d" * 1500))
        found, got = committed(s, local)
        assert not found.exact  # the stored item a check reads is not known to explain
        if checked == "c1":  # 4 units, as the put: DynamoDB Local counts them once
            assert priced(found) == {app.name: 6.0} and got == {app.name: 4.0}
        else:
            assert priced(found) == got == {app.name: 6.0}, found


def test_a_rule_s_own_rows_beside_a_write(local: TestBackend) -> None:
    from tests.support.user_rules import audited_entities

    order_cls, ticket_cls = audited_entities()
    s = local.session()
    s.save(order_cls(order_id="o1", total=3))
    s.save(ticket_cls(ticket_id="t1"))
    found, got = committed(s, local)
    assert priced(found) == got, found
    s.save(order_cls(order_id="o2", total=3))
    found, got = committed(s, local)
    assert priced(found) == got, found


def test_an_updated_result_read_back(local: TestBackend) -> None:
    s = local.session()
    s.save(Note(note_id="r1", body="r" * 100))
    s.save(User(user_id="r2", username="rob", email="r@x.io"))
    s.commit()
    s.update(Note, note_id="r1").set(body="s" * 50).returning()
    s.save(Note(note_id="r3", body="t" * 2000))
    found, got = committed(s, local)
    assert priced(found) == got, found


def test_an_overwrite_that_reads_first(local: TestBackend) -> None:
    s = local.session()
    s.save(User(user_id="w1", username="wes", email="w@x.io"), overwrite=True)
    found, got = committed(s, local)
    assert found.reads_first
    assert priced(found) == got, found


@pytest.fixture
def moving(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The migration tests' table in its current design, with its previous design (its
    own client, as the previous release's process had) writing the items to move."""
    from dynaorm import Client
    from tests.support.migration_models import mig, old

    with use_tables(mig, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        saved = (old.name, old.binding())
        old.name = mig.name
        old.restore((None, {}, Client(mig.endpoint_url)))
        mig.return_consumed_capacity = "INDEXES"
        tb.table.on_request(SEEN.append)
        try:
            yield tb
        finally:
            mig.return_consumed_capacity = None
            old.name = saved[0]
            old.restore(saved[1])
            del SEEN[:]


def test_a_save_moving_an_item_out_of_its_previous_layout(moving: TestBackend) -> None:
    from tests.support.migration_models import Account, Ledger, OldAccount, OldLedger, old

    with Session(old) as o:
        o.save(OldAccount(id="a1", mail="Ann@X.io", name="n" * 1500))
        o.save(OldLedger(id="l1", code="C1"))
    s = moving.session()
    account = s.get(Account, id="a1")
    assert account is not None
    account.name = "moved"  # the old row deleted, the new one put, its guard rewritten
    s.save(account)
    found, got = committed(s, moving)
    assert priced(found) == got, found
    ledger = s.get(Ledger, id="l1")
    assert ledger is not None
    ledger.balance = 3  # with its kept history
    s.save(ledger)
    found, got = committed(s, moving)
    assert priced(found) == got, found


@settings(max_examples=examples(EXAMPLES), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=SIZES, wide=st.sampled_from(["", "é", "€", "𝄞"]),
       tags=st.lists(st.text(max_size=30), max_size=6), status=st.text(st.characters(
           exclude_characters="#", exclude_categories=["Cs"]), min_size=1, max_size=40))
def test_text_of_any_width_and_index_entries_price_what_dynamodb_local_reports(
        local: TestBackend, size: int, wide: str, tags: list[str], status: str) -> None:
    """UTF-8 bytes, not characters; lists; a GSI entry (gsi2 projects every attribute)
    written, moved, then read through the index."""
    s = local.session()
    body = (wide * (size // 4)) + "a" * (size - len((wide * (size // 4)).encode()))
    note = Note(note_id=f"w{next(_KEYS)}", body=body, tags=tags)
    s.save(note)
    found, got = committed(s, local)
    assert found.by_table() == got
    assert explain(Note, items=[note], note_id=note.note_id).by_table() == reported(
        lambda: s.get(Note, note_id=note.note_id))
    sparse = TplSparse(sid=f"w{next(_KEYS)}", status=f"{status}{next(_KEYS)}", body=body)
    s.save(sparse)
    found, got = committed(s, local)
    assert found.by_table() == got
    sparse.status = f"{sparse.status}!"
    s.save(sparse)
    found, got = committed(s, local)
    assert found.by_table() == got
    query = s.query(TplSparse, index="gsi2", status=sparse.status)
    found = explain(query, items=[sparse])
    assert found.by_table() == reported(query.all), found


#: a table whose indexes project less than every attribute, and a local one
proj = Table("dynaorm-explain-proj", indexes=[
    GSI("keys", pk="kpk", sk="ksk", projection="KEYS_ONLY"),
    GSI("some", pk="spk", sk="ssk", projection=["title"]),
    LSI("local", sk="lsk"), LSI("hist", sk="hsk", projection="KEYS_ONLY")])


class Doc(Entity):
    class Meta:
        table = proj
        pk = "DOC#{owner}"
        sk = "DOC#{doc_id}"
        indexes = {"keys": ("K#{kind}", "D#{doc_id}"), "some": ("S#{kind}", "D#{doc_id}"),
                   "local": ("DOC#{owner}", "T#{label}")}

    owner: str
    doc_id: str
    kind: str
    title: str = ""
    label: str = "a"
    body: str = ""


class Page(Entity):
    class Meta:
        table = proj
        pk = "PAGE#{book}"
        sk = "{page}"
        versioned = True
        history_index = "hist"

    book: str
    page: str
    text: str = ""


@pytest.fixture
def projected(backend: str | None) -> Iterator[TestBackend]:
    """``proj`` on DynamoDB Local, every request asking for capacity by index."""
    with use_tables(proj, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        proj.return_consumed_capacity = "INDEXES"
        tb.table.on_request(SEEN.append)
        try:
            yield tb
        finally:
            proj.return_consumed_capacity = None
            del SEEN[:]


def test_index_entries_of_projections_and_local_indexes(projected: TestBackend) -> None:
    s = projected.session()
    docs = [Doc(owner="o1", doc_id=f"d{i}", kind="memo", title="t" * (300 * i),
                body="b" * 1500) for i in range(1, 5)]
    for doc in docs:
        s.save(doc)
        found, got = committed(s, projected)
        assert found.exact and found.by_table() == got, found
    docs[0].title = "x" * 1100  # the INCLUDE entry grows
    docs[0].label = "b"  # the local entry moves
    s.save(docs[0])
    found, got = committed(s, projected)
    assert found.by_table() == got, found
    docs[1].body = "y" * 3000  # in the table and the local index only
    s.save(docs[1])
    found, got = committed(s, projected)
    assert found.by_table() == got, found
    for index in ("keys", "some", "local"):
        query = (s.query(Doc, index=index, kind="memo") if index != "local" else
                 s.query(Doc, index=index, owner="o1").consistent())
        found = explain(query, items=docs)
        got = reported(query.all)
        assert found.by_table() == got, (index, found, got)
    s.delete(docs[2])
    found, got = committed(s, projected)
    assert found.by_table() == got, found
    page = Page(book="b1", page="p1", text="p" * 1800)
    s.save(page)
    found, got = committed(s, projected)
    assert priced(found) == got, found
    page.text = "q" * 2500
    s.save(page)
    found, got = committed(s, projected)
    assert priced(found) == got, found


#: a table with a TTL attribute and a keyring: entities whose stored items carry what a
#: save adds (timestamps, a TTL, compressed and sealed values)
stamped = Table("dynaorm-explain-stamped", ttl="expires", keyring=StaticKeyring(b"e" * 32))


class Stamped(Entity):
    class Meta:
        table = stamped
        pk = "ST#{sid}"
        sk = "ST"
        timestamps = ("created", "updated")

    sid: str
    body: str = ""
    expires: datetime | None = None


class Packed(Entity):
    class Meta:
        table = stamped
        pk = "PK#{pid}"
        sk = "PK"

    pid: str
    zipped: Annotated[str, Compressed(min_size=8)] = ""
    sealed: Encrypted[str] = ""


@pytest.fixture
def stamping(backend: str | None) -> Iterator[TestBackend]:
    """``stamped`` on DynamoDB Local, every request asking for capacity by index."""
    with use_tables(stamped, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        stamped.return_consumed_capacity = "INDEXES"
        tb.table.on_request(SEEN.append)
        try:
            yield tb
        finally:
            stamped.return_consumed_capacity = None
            del SEEN[:]


def test_what_a_save_adds_is_priced(stamping: TestBackend) -> None:
    s = stamping.session()
    for size in range(880, 1000, 8):
        obj = Stamped(sid=f"s{size}", body="x" * size, expires=datetime(2100, 1, 1, tzinfo=UTC))
        s.save(obj)
        found, got = committed(s, stamping)
        assert found.by_table() == got, (size, found)
        obj.body += "y"
        s.save(obj)
        found, got = committed(s, stamping)
        assert found.by_table() == got, (size, found)
        assert explain(Stamped, items=[obj], sid=obj.sid).by_table() == reported(
            partial(s.get, Stamped, sid=obj.sid))
    for size in (500, 900, 1000, 1100, 3000, 4050):
        import random
        text = "".join(random.Random(size).choice("abcdefghijklmnop") for _ in range(size))
        obj2 = Packed(pid=f"p{size}", zipped=text, sealed=text)
        s.save(obj2)
        found, got = committed(s, stamping)
        assert found.by_table() == got, (size, found)
        assert explain(Packed, items=[obj2], pid=obj2.pid).by_table() == reported(
            partial(s.get, Packed, pid=obj2.pid))


def test_deletes_of_rows_with_rules(local: TestBackend) -> None:
    s = local.session()
    audit = Audit(equipment_id="x1", part="p", notes="n" * 1200)
    s.save(audit)
    s.commit()
    for text in ("a" * 3000, "b" * 10):
        audit.notes = text
        s.save(audit)
        s.commit()
    user = User(user_id="x2", username="xan", email="x@x.io", full_name="f" * 2000)
    s.save(user)
    s.commit()
    loaded = s.get(Audit, equipment_id="x1", part="p")
    assert loaded is not None
    s.delete(loaded, history=True)
    found, got = committed(s, local)
    assert priced(found) == got or not found.exact, (found, got)
    s.delete(User, user_id="x2")
    found, got = committed(s, local)
    assert priced(found) == got or not found.exact, (found, got)


def test_reads_of_entities_with_rules(local: TestBackend) -> None:
    s = local.session()
    wrong: list[tuple[Any, ...]] = []
    for size in (3900, 3950, 4000, 4050, 8000, 8100):
        audit = Audit(equipment_id=f"r{size}", part="p", notes="n" * size)
        user = User(user_id=f"r{size}", username=f"r{size}", email=f"r{size}@x.io",
                    full_name="f" * size)
        sparse = TplSparse(sid=f"r{size}", status="on", body="b" * size)
        s.save(audit)
        s.save(user)
        s.save(sparse)
        s.commit()
        audit.notes += "x"
        s.save(audit)
        s.commit()
        keys: list[tuple[type[Entity], Entity, dict[str, Any]]] = [
            (Audit, audit, {"equipment_id": audit.equipment_id, "part": "p"}),
            (User, user, {"user_id": user.user_id}), (TplSparse, sparse, {"sid": sparse.sid})]
        for cls, read, key in keys:
            found = explain(cls, items=[read], **key)
            got = reported(partial(s.get, cls, **key))
            if found.by_table() != got:
                wrong.append(("get", cls.__name__, size, found.by_table(), got))
            query = s.query(cls, **{k: v for k, v in key.items() if k != "part"})
            found = explain(query, items=[read])
            got = reported(query.all)
            if found.exact and found.by_table() != got:
                wrong.append(("query", cls.__name__, size, found.by_table(), got))
        found = explain(User, items=[user], email=user.email)
        got = reported(partial(s.find, User, email=user.email))
        if found.by_table() != got:
            wrong.append(("find", size, found.by_table(), got))
    assert wrong == []


@settings(max_examples=examples(EXAMPLES), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=SIZES, grow=st.integers(0, 1100), tags=st.lists(st.text(max_size=20),
                                                            max_size=4))
def test_transactions_and_updates_of_known_items_around_the_boundaries(
        local: TestBackend, size: int, grow: int, tags: list[str]) -> None:
    """A unique save with a GSI entry (a transaction), then updates of the loaded objects
    (set, append, remove: priced on the larger of the item before and after)."""
    n = next(_KEYS)
    s = local.session()
    s.save(User(user_id=f"t{n}", username=f"t{n}", email=f"t{n}@x.io", full_name="f" * size))
    found, got = committed(s, local)
    assert priced(found) == got, found
    s.save(Note(note_id=f"t{n}", body="b" * size, tags=tags))
    s.commit()
    user = s.get(User, user_id=f"t{n}")
    note = s.get(Note, note_id=f"t{n}")
    assert user is not None and note is not None
    s.update(user).set(full_name="g" * grow)  # the gsi1 entry (ALL) changes with it
    found, got = committed(s, local)
    assert found.exact and priced(found) == got, found
    s.update(note).append(tags=["x" * grow])
    found, got = committed(s, local)
    assert found.exact and priced(found) == got, found
    note = s.get(Note, note_id=f"t{n}")
    assert note is not None
    s.update(note).remove("body")
    found, got = committed(s, local)
    assert found.exact and priced(found) == got, found


def test_reads_that_find_nothing(local: TestBackend) -> None:
    s = local.session()
    wrong: list[tuple[Any, ...]] = []
    for label, query in (("query", s.query(Note, note_id="nobody")),
                         ("consistent query", s.query(Note, note_id="nobody").consistent()),
                         ("index query", s.query(User, index="gsi1", org_id="nobody")),
                         ("limited", s.query(User, index="gsi1", org_id="nobody").limit(3))):
        found = explain(query, items=[])
        got = reported(query.all)
        if found.by_table() != got:
            wrong.append((label, found.exact, found.by_table(), got))
    for consistent in (False, True):
        found = explain(Note, items=[], consistent=consistent, note_id="nobody")
        got = reported(partial(s.get, Note, consistent=consistent, note_id="nobody"))
        if found.by_table() != got:
            wrong.append(("get", found.exact, found.by_table(), got))
    assert wrong == []


def test_a_sharded_query_and_a_scan(local: TestBackend) -> None:
    s = local.session()
    orders = [SOrder(order_id=f"o{i}", status="open", created=f"2026-01-{i + 1:02d}",
                     total=i) for i in range(9)]
    for order in orders:
        s.save(order)
    s.commit()
    query = s.query(SOrder, index="gsi1", status="open")
    found = explain(query, items=orders)
    assert len(found.requests) == SHARDS and found.exact
    assert found.by_table() == reported(query.all), found
    scan = s.scan(SOrder)  # the table holds these orders only
    found = explain(scan, items=orders)
    assert not found.exact  # (at least: a scan reads every item of the table)
    assert found.by_table() == reported(scan.all), found


def test_a_keyed_commit_of_many_writes(local: TestBackend) -> None:
    """The receipt names the writes of its commit: over 1 KB with many."""
    for count in (12, 40):
        s = Session(local.table, idempotency_key=f"batch-{count}-" + "k" * 100)
        for i in range(count):
            s.save(Note(note_id=f"m{count}-{i}", body="m" * (i * 37)))
        found, got = committed(s, local)
        (receipt,) = [r for r in found.rows if r.role == "receipt"]
        assert receipt.units == (2 if count == 12 else 4), found  # (over 1 KB with 40)
        assert priced(found) == got, found


def test_a_query_of_a_keys_only_index_that_finds_nothing(projected: TestBackend) -> None:
    """No hit, no ``BatchGetItem`` of the hits: nothing read but the empty page."""
    s = projected.session()
    s.save(Doc(owner="o1", doc_id="d1", kind="memo", body="b" * 5000))
    s.commit()
    for kind, items in (("none", []), ("memo", None)):
        query = s.query(Doc, index="keys", kind=kind)
        found = explain(query, items=items if items is not None else [
            s.get(Doc, owner="o1", doc_id="d1")])
        got = reported(query.all)
        assert found.exact and found.by_table() == got, (kind, found, got)
