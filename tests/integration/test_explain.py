"""``dynaorm.explain`` against the reference engine (contract 21, "what it costs"): its
units equal what DynamoDB Local reports as ``ConsumedCapacity`` for the same operations
(single writes of items under and over 1 KB, transactions with unique guards and version
rows, index entries put, moved and deleted, gets, queries and scans over 4 KB), it sends
nothing, and at run time the reported capacity is attributed by entity and row role
(``client.capacity()`` and span attributes). The explanation of the command's patterns is
in ``system/test_cli.py``; the model in ``unit/test_model.py``.

DynamoDB Local counts the actions of a transaction whose capacities are equal once (see
:func:`tests.support.engines.local_transaction_units`); the test that shows it fails the
day a build counts each, as DynamoDB does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import RequestEvent, Session, explain
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.engines import local_transaction_units
from tests.support.models import Audit, Note, TplSparse, User, app
from tests.support.recording import send
from tests.support.spans import Spans

pytestmark = pytest.mark.sync_only  # (on DynamoDB Local itself, through the sync session)

WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")


@pytest.fixture
def local(ddb_local: str) -> Iterator[TestBackend]:
    with use_tables(app, endpoint_url=ddb_local, name_suffix=worker_suffix()) as tb:
        yield tb
    app.return_consumed_capacity = None


@pytest.fixture
def events(local: TestBackend) -> list[RequestEvent]:
    seen: list[RequestEvent] = []
    local.table.on_request(seen.append)
    return seen


def _committed(s: Session, events: list[RequestEvent]) -> tuple[Any, dict[str, float]]:
    """The explanation of ``s``'s staged work, and what its commit's write consumed."""
    found = explain(s)
    del events[:]
    s.commit()
    (write,) = [e for e in events if e.operation in WRITES]
    assert write.operation == found.requests[0].operation
    return found, write.consumed_capacity


def test_single_writes_cost_what_dynamodb_local_reports(local: TestBackend,
                                                        events: list[RequestEvent]) -> None:
    s = local.session()
    small, big = Note(note_id="n1", body="x" * 100), Note(note_id="n2", body="x" * 1500)
    for obj in (small, big):
        s.save(obj)
        found, consumed = _committed(s, events)
        assert found.by_table() == consumed == {app.name: 1.0 if obj is small else 2.0}
        assert found.exact and found.rows[0].role == "row"
    loaded = s.get(Note, note_id="n2")
    assert loaded is not None
    loaded.body = "short"  # an update priced on the larger of before and after
    s.save(loaded)
    found, consumed = _committed(s, events)
    assert found.by_table() == consumed == {app.name: 2.0}
    sparse = TplSparse(sid="s1", status="open", body="y" * 1200)  # in gsi2: an entry too
    s.save(sparse)
    found, consumed = _committed(s, events)
    assert found.by_table() == consumed == {app.name: 2.0, f"{app.name}/gsi2": 2.0}
    sparse.status = "closed"  # the entry moves: deleted and put again
    s.save(sparse)
    found, consumed = _committed(s, events)
    assert [r.action for r in found.rows if r.index] == ["delete", "put"]
    assert found.by_table() == consumed == {app.name: 2.0, f"{app.name}/gsi2": 4.0}
    s.delete(sparse)
    found, consumed = _committed(s, events)
    assert found.by_table() == consumed == {app.name: 2.0, f"{app.name}/gsi2": 2.0}


def test_transactions_with_guards_and_history_cost_what_dynamodb_local_reports(
        local: TestBackend, events: list[RequestEvent]) -> None:
    s = local.session()
    steps: list[tuple[str, Any]] = [
        ("a user with two unique guards and a gsi1 entry",
         lambda: s.save(User(user_id="u1", username="ann", email="a@x.io",
                             full_name="f" * 1500))),
        ("a new versioned entity: version 1 and its latest copy",
         lambda: s.save(Audit(equipment_id="e1", part="p", notes="n" * 2000))),
        ("three entities in one transaction", lambda: (
            s.save(User(user_id="u2", username="bob", email="b@x.io")),
            s.save(Note(note_id="n9", body="z" * 5000)),
            s.save(Audit(equipment_id="e2", part="q", notes="m" * 300)))),
    ]
    for what, stage in steps:
        stage()
        found, consumed = _committed(s, events)
        assert found.requests[0].operation == "TransactWriteItems", what
        assert local_transaction_units(found.rows) == consumed, what
    user = s.get(User, user_id="u1")
    assert user is not None
    user.email = "c@x.io"  # releases one guard, claims another
    s.save(user)
    found, consumed = _committed(s, events)
    assert [(r.role, r.action) for r in found.rows] == [
        ("row", "Update"), ("index entry", "update"), ("unique guard", "Delete"),
        ("unique guard", "Put")]
    assert local_transaction_units(found.rows) == consumed
    audit = s.get(Audit, equipment_id="e1", part="p")
    assert audit is not None
    audit.notes = "short"  # version 2: a new version row, the latest copy replaced
    s.save(audit)
    found, consumed = _committed(s, events)
    assert {r.role: r.units for r in found.rows} == {"version row": 2.0, "latest copy": 6.0}
    assert local_transaction_units(found.rows) == consumed == {app.name: 8.0}
    s.delete(user)
    found, consumed = _committed(s, events)
    assert found.by_role() == {"User": {"row": 4.0, "index entry": 4.0,
                                        "unique guard": 4.0}}
    assert local_transaction_units(found.rows) == consumed


def test_dynamodb_local_counts_equal_transaction_actions_once(local: TestBackend) -> None:
    item = {"pk": {"S": "p"}, "_type": {"S": "raw"}, "x": {"S": "y"}}
    out = send(local.table, "TransactWriteItems", {
        "TransactItems": [{"Put": {"TableName": app.name, "Item": {**item, "sk": {"S": s}}}}
                          for s in ("a", "b", "c")], "ReturnConsumedCapacity": "TOTAL"})
    # DynamoDB: 2 units for each of the three puts; DynamoDB Local: 2 in all
    assert out["ConsumedCapacity"] == [{"TableName": app.name, "CapacityUnits": 2.0}]


@pytest.mark.dynaorm_index_lag(0, reason="compares with what DynamoDB Local reports")
def test_reads_cost_what_dynamodb_local_reports(local: TestBackend,
                                                events: list[RequestEvent]) -> None:
    app.return_consumed_capacity = "INDEXES"
    s = local.session()
    notes = [Note(note_id="q", body=str(i) * 1500) for i in range(1)]
    users = [User(user_id=f"u{i}", username=f"n{i}", email=f"{i}@x.io", full_name="f" * 1400)
             for i in range(9)]  # 9 x 1.5 KB in gsi1's partition ORG#acme: over 4 KB
    for obj in (*notes, *users):
        s.save(obj)
    s.commit()

    def read(x: Any, run: Any, items: Any = None, **key: Any) -> None:
        found = explain(x, items=items, **key)
        del events[:]
        run()
        consumed: dict[str, float] = {}
        for e in events:
            for name, units in e.consumed_capacity.items():
                if units:  # (an index read reports the table's 0 too)
                    consumed[name] = consumed.get(name, 0.0) + units
        assert found.exact and found.by_table() == consumed, (found, consumed)

    big = Note(note_id="big", body="b" * 9000)  # over 8 KB: 3 units of 4 KB
    s.save(big)
    s.commit()
    read(Note, lambda: s.get(Note, note_id="big"), [big], note_id="big")
    read(Note, lambda: s.get(Note, consistent=True, note_id="big"), [big], consistent=True,
         note_id="big")
    on_index = s.query(User, index="gsi1", org_id="acme")
    read(on_index, on_index.all, users)
    paged = on_index.page_size(4)  # three pages, each rounded up on its own
    read(paged, paged.all, users)
    by_key = s.query(Note, note_id="q")
    read(by_key, by_key.all, notes)
    assert explain(on_index, items=users).index == "gsi1"


def test_explain_sends_nothing_and_says_what_a_commit_reads_first(
        local: TestBackend, events: list[RequestEvent]) -> None:
    s = local.session()
    s.save(User(user_id="u1", username="ann", email="a@x.io"), overwrite=True)
    s.delete(Audit, equipment_id="e1", part="p")
    del events[:]
    found = explain(s)
    assert events == []  # nothing sent
    assert [r.split(" ")[0] for r in found.reads_first] == ["GetItem", "GetItem"]
    assert "planned here as absent" in found.reads_first[0]
    assert "reads first: GetItem" in str(found)
    query = s.query(Note, note_id="n1")
    assert not explain(query).exact and events == []
    assert "pass items=" in str(explain(query))


def test_consumed_capacity_is_attributed_by_entity_and_role(
        local: TestBackend, events: list[RequestEvent]) -> None:
    client = local.table.db  # (the dynaorm Client)
    client.capacity(reset=True)
    spans = Spans()
    spans.attach()
    s = local.session()
    s.save(Note(note_id="n1", body="x" * 1500))
    s.commit()
    assert client.capacity() == {"Note": {"row": 2.0}}
    s.save(User(user_id="u1", username="ann", email="a@x.io", full_name="f" * 1500))
    s.save(Audit(equipment_id="e1", part="p"))
    s.commit()
    totals = client.capacity(reset=True)
    assert {e: set(r) for e, r in totals.items()} == {
        "Note": {"row"}, "User": {"row", "unique guard", "index entry"},
        "Audit": {"latest copy", "version row"}}
    reported = sum(u for e in events for u in e.consumed_capacity.values())
    assert sum(u for r in totals.values() for u in r.values()) == pytest.approx(reported)
    assert totals["User"]["index entry"] == 4.0  # gsi1's units, the user's alone
    assert client.capacity() == {}
    (attempt,) = [sp for sp in spans.named("DynamoDB.TransactWriteItems")]
    attributes = dict(attempt.attributes or {})
    by_role = {k: v for k, v in attributes.items() if k.startswith("dynaorm.capacity.")}
    assert set(by_role) == {"dynaorm.capacity.User.row", "dynaorm.capacity.User.unique_guard",
                            "dynaorm.capacity.User.index_entry",
                            "dynaorm.capacity.Audit.latest_copy",
                            "dynaorm.capacity.Audit.version_row"}
    assert sum(by_role.values()) == pytest.approx(events[-1].consumed_capacity[app.name] +
                                                  events[-1].consumed_capacity[
                                                      f"{app.name}/gsi1"])
    (commit,) = [sp for sp in spans.named("dynaorm.commit") if "dynaorm.capacity.User.row"
                 in (sp.attributes or {})]
    assert commit.attributes["dynaorm.capacity.User.row"] == by_role[  # type: ignore[index]
        "dynaorm.capacity.User.row"]


def test_an_async_session_s_commits_are_attributed_too(local: TestBackend,
                                                      events: list[RequestEvent]) -> None:
    """Twenty commits at once on one event loop (an AsyncSession each): every unit
    DynamoDB Local reported is in the client's totals, by entity and role."""
    import asyncio

    from dynaorm import AsyncSession
    from dynaorm.aio import close

    client = local.table.db
    client.capacity(reset=True)

    async def commit(i: int) -> None:
        async with AsyncSession(app) as s:
            s.save(User(user_id=f"u{i}", username=f"n{i}", email=f"{i}@x.io"))
            s.save(Note(note_id=f"n{i}", body="x" * (300 * i)))

    async def main() -> None:
        try:
            await asyncio.gather(*(commit(i) for i in range(20)))
        finally:
            await close()

    asyncio.run(main())
    totals = client.capacity()
    assert set(totals) == {"User", "Note"} and set(totals["Note"]) == {"row"}
    reported = sum(u for e in events for u in e.consumed_capacity.values())
    assert sum(u for r in totals.values() for u in r.values()) == pytest.approx(reported)
    assert totals["User"]["index entry"] == pytest.approx(sum(
        e.consumed_capacity.get(f"{app.name}/gsi1", 0.0) for e in events))


def _consumed(events: list[RequestEvent]) -> dict[str, float]:
    consumed: dict[str, float] = {}
    for e in events:
        for name, units in e.consumed_capacity.items():
            if units:  # (an index read reports the table's 0 too)
                consumed[name] = consumed.get(name, 0.0) + units
    return consumed


@pytest.mark.dynaorm_index_lag(0, reason="compares with what DynamoDB Local reports")
def test_reads_explain_cannot_price_say_so_and_shards_cost_each(
        local: TestBackend, events: list[RequestEvent]) -> None:
    """(issue 59) ``explain`` said ``exact=True`` for reads whose units it cannot know
    before reading -- a query with a filter (DynamoDB charges for every item the key
    condition reads, kept or not), a scan of one entity among others (it reads the whole
    table) -- and priced a sharded query's items as one page (each shard's request reads,
    and is charged for, its own). Now: exact where it can be (equal to DynamoDB Local),
    ``exact=False`` and why where it cannot, its units then a lower bound."""
    from dynaorm import F
    from tests.support.models import SOrder

    app.return_consumed_capacity = "INDEXES"
    s = local.session()
    users = [User(user_id=f"u{i}", username=f"n{i}", email=f"{i}@x.io", full_name="f" * 1400)
             for i in range(9)]
    orders = [SOrder(order_id=i, status="open", created="2026-01-01")
              for i in ("o0", "o1")]  # (in two shards: 3 and 1)
    for obj in (*users, *orders, Note(note_id="n", body="x" * 3000)):
        s.save(obj)
    s.commit()

    def run(x: Any, items: list[Any]) -> tuple[Any, dict[str, float]]:
        found = explain(x, items=items)
        del events[:]
        assert x.all() == items
        return found, _consumed(events)

    filtered = s.query(User, index="gsi1", org_id="acme").filter(F("username") == "n1")
    found, consumed = run(filtered, [users[1]])
    assert not found.exact and "filter" in " ".join(found.notes)
    assert found.by_table()[f"{app.name}/gsi1"] <= consumed[f"{app.name}/gsi1"]
    scan = s.scan(Note)
    found, consumed = run(scan, [s.get(Note, note_id="n")])
    assert not found.exact and "every item" in " ".join(found.notes)
    assert found.by_table()[app.name] <= consumed[app.name]
    sharded = s.query(SOrder, index="gsi1", status="open")
    found, consumed = run(sharded, orders)
    assert [r.read_units for r in found.requests] == [0.0, 0.5, 0.0, 0.5]
    assert found.exact and found.by_table() == consumed, (found, consumed)
    plain = s.query(User, index="gsi1", org_id="acme")  # no filter: exact, as before
    found, consumed = run(plain, sorted(users, key=lambda u: u.user_id))
    assert found.exact and found.by_table() == consumed


def test_capacity_splits_a_transaction_by_priced_units(local: TestBackend,
                                                      events: list[RequestEvent]) -> None:
    """(issue 59) ``client.capacity()`` split a transaction's units by the bytes of its
    request: a unique change of an 8 KB row (an Update of one attribute, a guard deleted,
    one put) gave the row ~3 and the guards ~15 where DynamoDB prices the row 16 (its
    8 KB, twice in a transaction) and the guards 4. The split now follows the units each
    row is priced at, as ``explain`` says them."""
    client = local.table.db
    s = local.session()
    s.save(User(user_id="u8", username="big", email="a@x.io", full_name="f" * 8000))
    s.commit()
    user = s.get(User, user_id="u8")
    assert user is not None
    user.email = "b@x.io"
    s.save(user)
    found = explain(s)
    assert {r.role: r.units for r in found.rows if r.index is None} == {
        "row": 16, "unique guard": 2}
    assert found.by_role()["User"]["unique guard"] == 4.0
    client.capacity(reset=True)
    del events[:]
    s.commit()
    (write,) = [e for e in events if e.operation == "TransactWriteItems"]
    totals = client.capacity()["User"]
    for name, consumed in write.consumed_capacity.items():  # (DynamoDB Local's total,
        priced = [r for r in found.rows  # split as the rows are priced)
                  if (r.table if r.index is None else f"{r.table}/{r.index}") == name]
        whole = sum(r.units for r in priced)
        for role in {r.role for r in priced}:
            share = sum(r.units for r in priced if r.role == role) / whole
            assert totals[role] == pytest.approx(consumed * share), (role, totals)
    assert totals["row"] > totals["unique guard"]  # (0.6: ~3 and ~15)


def test_get_many_is_counted_under_its_entity(local: TestBackend) -> None:
    """(issue 59) ``get_many``'s read units were counted under the entity ``-``."""
    app.return_consumed_capacity = "TOTAL"
    client = local.table.db
    s = local.session()
    for i in range(3):
        s.save(Note(note_id=f"m{i}", body="x" * 100))
    s.commit()
    client.capacity(reset=True)
    assert len(s.get_many(Note, [{"note_id": f"m{i}"} for i in range(3)])) == 3
    assert set(client.capacity()) == {"Note"}


def test_a_transaction_is_exact_only_where_dynamodb_local_reports_its_units(
        local: TestBackend, events: list[RequestEvent]) -> None:
    """(issue 59) ``explain`` of a transaction said ``exact=True`` though DynamoDB Local
    reported less. Now ``exact`` only where the units are both what DynamoDB charges (each
    action twice its own) and what DynamoDB Local reports; where two actions cost the same
    on the same table and indexes, not ``exact``, with a note, and DynamoDB Local reports
    them once."""
    s = local.session()
    s.save(Note(note_id="x1", body="x" * 100))  # 2 units
    s.save(Note(note_id="x2", body="x" * 1500))  # 4 units
    s.save(User(user_id="x3", username="xan", email="x@x.io", full_name="f" * 3000))
    found, consumed = _committed(s, events)  # (the user's two guards: 2 units each)
    assert found.requests[0].operation == "TransactWriteItems"
    assert not found.exact and "DynamoDB Local counts them once" in found.notes[-1]
    assert consumed == local_transaction_units(found.rows) != found.by_table()
    assert consumed[app.name] < found.by_table()[app.name]
    for n, body in ((1, "y" * 100), (2, "y" * 1500), (3, "y" * 5000)):  # 2, 4, 10 units
        s.save(Note(note_id=f"y{n}", body=body))
    found, consumed = _committed(s, events)
    assert found.exact and len(found.notes) == 1, found.notes
    assert found.by_table() == consumed == {app.name: 16.0}
    user = s.get(User, user_id="x3")
    assert user is not None
    user.email = "y@x.io"  # the row and its entry, one guard deleted, one put: all differ?
    s.save(user)
    found, consumed = _committed(s, events)
    assert found.exact == (found.by_table() == consumed), (found, consumed)


def test_explain_reads_a_blocking_async_sessions_reads_as_the_sync_ones(db: TestBackend
                                                                         ) -> None:
    """(issue 73) ``TestBackend(session_kind="async")`` gives an ``AsyncSession`` behind a
    blocking adapter, whose reads are adapters too: ``explain`` refused them with
    ``TypeError`` (the async variant of a test explaining its read failed) while it
    explains the ``AsyncSession``'s own reads and a commit through the adapter."""
    blocking = TestBackend(db.tables, db.endpoint_url, session_kind="async").session()
    sync = db.session()
    users = [User(user_id=f"u{n}", username=f"n{n}", email=f"{n}@x.io") for n in range(3)]
    for read in (lambda s: s.query(User, index="gsi1", org_id="acme"),
                 lambda s: s.scan(User).limit(2), lambda s: s.query(Note, note_id="q")):
        assert str(explain(read(blocking), items=users)) == str(explain(read(sync),
                                                                        items=users))


# --- explain(exact=True) prices what DynamoDB Local reports
# (moved from integration/test_fix59_red_team_explain.py:
# Red team of issue 59's ``explain`` exactness: every read shape ``explain`` still calls
# ``exact=True`` must price what DynamoDB Local reports (item sizes near the 4 KB read-unit
# boundary, consistent reads, limits, projections, GSI queries, pages).)



BOUNDARY = (4040, 4050, 4030)  # 4106, 4116, 4096 bytes stored (with _rev)
CLEAR = (4000, 4060, 4096, 8150, 8192, 1)


@pytest.mark.dynaorm_index_lag(0, reason="compares with what DynamoDB Local reports")
def test_exact_reads_price_what_dynamodb_local_reports(
        local: TestBackend, events: list[RequestEvent]) -> None:
    _check(local, events, CLEAR)


@pytest.mark.dynaorm_index_lag(0, reason="compares with what DynamoDB Local reports")
def test_reads_near_the_4kb_boundary_price_what_dynamodb_local_reports(
        local: TestBackend, events: list[RequestEvent]) -> None:
    """fix59 sized an entity object of ``items=`` without the revision a save stamps
    (``_rev``, 20 bytes): a Note stored at 4106 bytes was priced 0.5 units (1 consistent),
    ``exact=True``, where DynamoDB Local reports 1.0 (2)."""
    _check(local, events, BOUNDARY)


def _check(local: TestBackend, events: list[RequestEvent],
           sizes: tuple[int, ...]) -> None:
    app.return_consumed_capacity = "INDEXES"
    s = local.session()
    notes = [Note(note_id=f"n{i:02d}", body="x" * size) for i, size in enumerate(sizes)]
    users = [User(user_id=f"u{i}", username=f"n{i}", email=f"{i}@x.io", full_name="f" * 4050)
             for i in range(5)]
    for obj in (*notes, *users):
        s.save(obj)
    s.commit()
    wrong: list[Any] = []

    def check(label: str, x: Any, items: list[Any], run: Any = None) -> None:
        found = explain(x, items=items)
        del events[:]
        (run or (lambda: x.all()))()
        consumed = _consumed(events)
        if found.exact and found.by_table() != consumed:
            wrong.append((label, found.by_table(), consumed))

    for n in notes:
        check(f"get {len(n.body)}", s.query(Note, note_id=n.note_id), [n])
        check(f"consistent {len(n.body)}",
              s.query(Note, note_id=n.note_id).consistent(), [n])
    gsi = s.query(User, index="gsi1", org_id="acme")
    ordered = sorted(users, key=lambda u: u.username)
    check("gsi", gsi, ordered)
    check("gsi limit 2", s.query(User, index="gsi1", org_id="acme").limit(2), ordered[:2])
    check("gsi values", s.query(User, index="gsi1", org_id="acme"), ordered,
          run=lambda: s.query(User, index="gsi1", org_id="acme").values("username"))
    assert wrong == [], wrong


def test_capacity_splits_a_mixed_transaction_as_explain_prices_it(
        local: TestBackend, events: list[RequestEvent]) -> None:
    """A transaction of puts (a new user and its guards, a 2.5 KB note), a delete (a 3 KB
    note) and a unique change of a 5 KB user: ``client.capacity()`` sums to what DynamoDB
    Local reports, split between entities and roles as ``explain`` prices the rows."""
    app.return_consumed_capacity = "INDEXES"
    client = local.table.db
    s = local.session()
    s.save(User(user_id="u9", username="big", email="a@x.io", full_name="f" * 5000))
    s.save(Note(note_id="gone", body="g" * 3000))
    s.commit()
    user = s.get(User, user_id="u9")
    gone = s.get(Note, note_id="gone")
    assert user is not None and gone is not None
    user.email = "b@x.io"
    s.save(user)
    s.save(User(user_id="u10", username="new", email="n@x.io"))
    s.save(Note(note_id="kept", body="k" * 2500))
    s.delete(gone)
    found = explain(s)
    client.capacity(reset=True)
    del events[:]
    s.commit()
    (write,) = [e for e in events if e.operation == "TransactWriteItems"]
    totals = client.capacity()
    reported = sum(write.consumed_capacity.values())
    assert sum(u for r in totals.values() for u in r.values()) == pytest.approx(reported)
    for name, consumed in write.consumed_capacity.items():
        priced = [r for r in found.rows
                  if (r.table if r.index is None else f"{r.table}/{r.index}") == name]
        whole = sum(r.units for r in priced)
        for entity, role in {(r.entity, r.role) for r in priced}:
            share = sum(r.units for r in priced if (r.entity, r.role) == (entity, role))
            assert totals[entity][role] == pytest.approx(consumed * share / whole), (
                entity, role, totals, found.rows)
