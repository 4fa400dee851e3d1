"""One idempotency key across tables (contract 22 "Exactly once across invocations",
issue 60): a keyed commit writes a receipt in every table it writes, each carrying the
digest of the whole commit, so a later commit under the key that writes any of those
tables meets one: the same writes replay, a subset, a superset or other tables'
writes mismatch (nothing written); a replay is a replay only when every receipt it
meets is of the same writes. Receipts count as actions of the one transaction. Lost
answers of a two-table commit with a second writer using the same key in the window.
Every engine chosen, sync and async."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dynaorm import IdempotencyMismatchError, Session, TransactionTooLargeError
from dynaorm.testing import TestBackend
from dynaorm.write.save import SaveEntry
from tests.conftest import wire_of
from tests.support.exactly_once import (
    Order,
    Stock,
    home,
    key_of,
    keyed_commits_at_once,
    lost_commit,
    no_waits,
    notes,
    orders,
    receipts,
    receipts_home,
    second_writer,
    stock,
    tables_beside,
)
from tests.support.models import Note, app


@pytest.fixture
def three(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """``db``'s table, ``orders`` and ``stock``, fresh and bound to one client."""
    with no_waits(), tables_beside(db, orders, stock, wire=wire_of(request)) as tb:
        yield tb


def _both(s: Any, body: str = "x", cents: int = 5) -> None:
    s.save(Note(note_id="n1", body=body))
    s.update(Order, order_id="o1", upsert=True).add(cents=cents)


def _everything(db: TestBackend) -> list[list[dict[str, Any]]]:
    return [db.scan(), db.scan(orders), db.scan(stock)]


def _cents(db: TestBackend) -> int:
    (order,) = [i for i in db.scan(orders) if i.get("kind") == "Order"]
    return int(order["cents"])


def test_a_two_table_commit_keeps_a_receipt_in_each_table_and_replays(
        three: TestBackend) -> None:
    db, key = three, key_of(three, "both")
    s = db.session()
    _both(s)
    first = s.commit(idempotency_key=key)
    assert not first.replayed
    (sent,) = [body for op, body in first.requests if op == "TransactWriteItems"]
    puts = [a["Put"] for a in sent["TransactItems"] if "Put" in a]
    assert len(sent["TransactItems"]) == 4  # (two writes, their two receipts)
    mine = [p for p in puts if "dynaorm:digest" in p["Item"]]
    assert sorted(p["TableName"] for p in mine) == sorted([db.table.name, orders.name])
    (app_receipt,), (order_receipt,) = receipts(db), receipts(db, orders)
    assert app_receipt["dynaorm:digest"] == order_receipt["dynaorm:digest"]
    assert order_receipt["PK"] == order_receipt["SK"] == app_receipt["pk"]
    with Session(db.table) as other:  # another writer after it: a replay must keep it
        got = other.get(Note, note_id="n1")
        assert got is not None
        got.body = "later"
        other.save(got)
    again = db.session()
    _both(again)
    replay = again.commit(idempotency_key=key)
    assert replay.replayed and replay.requests == [
        (op, {"Keys": keys["Keys"]}) for op, keys in replay.requests]
    assert notes(db) == {"n1": "later"} and _cents(db) == 5


@pytest.mark.parametrize("which", ["note", "order"])
def test_a_subset_of_a_two_table_commit_under_its_key_is_a_mismatch(
        three: TestBackend, which: str) -> None:
    db, key = three, key_of(three, f"subset-{which}")
    s = db.session()
    _both(s)
    s.commit(idempotency_key=key)
    before = _everything(db)
    s2 = db.session()
    if which == "note":
        s2.save(Note(note_id="n1", body="x"))
    else:
        s2.update(Order, order_id="o1", upsert=True).add(cents=5)
    with pytest.raises(IdempotencyMismatchError, match="its receipt in table") as err:
        s2.commit(idempotency_key=key)
    assert err.value.key == key
    assert _everything(db) == before and _cents(db) == 5


def test_a_superset_under_a_key_first_used_on_one_table_is_a_mismatch(
        three: TestBackend) -> None:
    db, key = three, key_of(three, "superset")
    s = db.session()
    s.save(Note(note_id="n1", body="x"))
    s.commit(idempotency_key=key)
    before = _everything(db)
    s2 = db.session()
    _both(s2)
    with pytest.raises(IdempotencyMismatchError):
        s2.commit(idempotency_key=key)
    assert _everything(db) == before and receipts(db, orders) == []


def test_other_tables_overlapping_the_first_commit_s_are_a_mismatch(
        three: TestBackend) -> None:
    db, key = three, key_of(three, "overlap")
    s = db.session()
    _both(s)
    s.commit(idempotency_key=key)
    before = _everything(db)
    s2 = db.session()
    s2.update(Order, order_id="o1", upsert=True).add(cents=5)
    s2.save(Stock(sku="k1", left=3))
    with pytest.raises(IdempotencyMismatchError, match=orders.name):
        s2.commit(idempotency_key=key)
    assert _everything(db) == before


def test_without_a_receipts_home_a_key_is_known_to_the_tables_it_wrote(
        three: TestBackend) -> None:
    """0.8's rule, kept where the client names no receipts table (contract 24): a key
    first used on the test table is unknown to a commit writing ``stock`` alone, which
    applies (the guide's "One key, several tables")."""
    db, key = three, key_of(three, "disjoint")
    s = db.session()
    s.save(Note(note_id="n1", body="x"))
    s.commit(idempotency_key=key)
    other = db.session(stock)
    other.save(Stock(sku="k1", left=3))
    assert not other.commit(idempotency_key=key).replayed
    assert len(receipts(db, stock)) == 1


# -- a receipts home: Client(receipts=TABLE) (contract 24) --------------------------------------
@pytest.fixture
def homed(three: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """``three``'s tables and the receipts home, named on their client."""
    with receipts_home(three, wire=wire_of(request)):
        yield three


def _home_receipts(db: TestBackend) -> list[dict[str, Any]]:
    return [i for i in db.scan(home) if i.get("dynaorm:digest")]


def test_with_a_receipts_home_a_key_is_known_to_every_table_its_client_writes(
        homed: TestBackend) -> None:
    """Its one receipt in the home, none in the tables written: a later commit under the
    key writing ``stock`` alone, from a session of the test table or of ``stock``'s own,
    meets it (a mismatch, nothing written); the same writes replay."""
    db, key = homed, key_of(homed, "home-disjoint")
    s = db.session()
    _both(s)
    first = s.commit(idempotency_key=key)
    (sent,) = [b for op, b in first.requests if op == "TransactWriteItems"]
    kept = [a["Put"]["TableName"] for a in sent["TransactItems"]
            if "Put" in a and "dynaorm:digest" in a["Put"]["Item"]]
    assert kept == [home.name] and len(sent["TransactItems"]) == 3
    assert receipts(db) == receipts(db, orders) == [] and len(_home_receipts(db)) == 1
    (stored,) = _home_receipts(db)
    assert int(stored["gone_at"]) > time.time()  # (the home's TTL attribute)
    before = _everything(db)
    for session in (db.session(), db.session(stock)):
        session.save(Stock(sku="k1", left=3))
        with pytest.raises(IdempotencyMismatchError, match=home.name):
            session.commit(idempotency_key=key)
        session.rollback()
    assert _everything(db) == before and len(_home_receipts(db)) == 1
    again = db.session()
    _both(again)
    assert again.commit(idempotency_key=key).replayed and _cents(db) == 5


def test_with_a_receipts_home_a_lost_answer_is_settled_by_it(homed: TestBackend) -> None:
    """The transaction applies, every answer lost, a plain writer changing the note in
    each window: the home's receipt says the commit applied (never
    OutcomeUnknownError), the add applied once; a subset in the window is a mismatch."""
    db, key = homed, key_of(homed, "home-lost")
    errors: list[str] = []

    def window() -> None:
        second_writer(db.table, "n1")()
        with Session(stock) as twin:
            twin.save(Stock(sku="k1", left=1))
            try:
                twin.commit(idempotency_key=key)
            except IdempotencyMismatchError as exc:
                errors.append(type(exc).__name__)

    result, faults = lost_commit(db, key, _both, after=window)
    assert not result.replayed and faults.sent["TransactWriteItems"] >= 2
    assert notes(db) == {"n1": "theirs"} and _cents(db) == 5
    assert set(errors) == {"IdempotencyMismatchError"} and db.scan(stock) == []


@pytest.mark.engines("moto")
def test_a_receipts_home_that_does_not_exist_fails_every_keyed_commit(
        three: TestBackend) -> None:
    """What a home costs: every keyed commit of its client writes there, so one missing
    fails them all (the engine's error, nothing written); plain commits go on."""
    from dynaorm import DynaormError, Table

    client, missing = app.db, Table("dynaorm-once-no-such-home", pk="id", sk=None)
    before = client.receipts
    client.receipts = missing
    try:
        s = three.session()
        s.save(Note(note_id="n1", body="x"))
        with pytest.raises(DynaormError, match=missing.name):
            s.commit(idempotency_key=key_of(three, "home-missing"))
        s.rollback()
        assert notes(three) == {}
        s.save(Note(note_id="n1", body="x"))
        s.commit()
        assert notes(three) == {"n1": "x"}
    finally:
        client.receipts = before


def test_with_a_receipts_home_a_scoped_key_is_the_tenant_s(
        homed: TestBackend, request: pytest.FixtureRequest) -> None:
    """In scoped sessions the home's receipt key renders the scope: two tenants' commits
    under one key are two receipts, neither blocks the other."""
    from tests.support.tenant_models import Tag, tenants

    db = homed
    key = key_of(db, "home-scoped")
    with tables_beside(db, tenants, wire=wire_of(request)):
        for tenant in ("t1", "t2"):
            s = Session(tenants, scope={"tenant_id": tenant})
            s.save(Tag(tenant_id=tenant, tag="g1", note="x"))
            assert not s.commit(idempotency_key=key).replayed
        ids = sorted(str(i["id"]) for i in _home_receipts(db))
        assert [i.split("#")[1] for i in ids] == ["t1", "t2"]


def test_a_replay_is_a_replay_only_if_every_receipt_it_meets_is_of_the_same_writes() -> None:
    """Receipts of one key in two tables, one of the same writes and one of other writes
    (left where a table was not bound to the client of the commit that wrote it): a
    mismatch, never a replay, in either order."""
    from dynaorm.schema.rules.receipts import DIGEST

    receipt = app.receipts.start([SaveEntry(Note(note_id="n1"))], "k")
    assert receipt is not None
    same = receipt.item("rev", [], app)
    other = {**same, DIGEST: {"S": "0" * 64}, "dynaorm:nonce": {"S": "theirs"}}
    same["dynaorm:nonce"] = {"S": "earlier"}
    assert receipt.explain([(app, same)]).value == "replayed"
    for stored in ([(app, same), (orders, other)], [(orders, other), (app, same)]):
        with pytest.raises(IdempotencyMismatchError, match=orders.name):
            receipt.explain(stored)


# -- the 100-action limit ---------------------------------------------------------------------
def test_receipts_count_as_actions_of_the_one_transaction(three: TestBackend) -> None:
    """98 writes to two tables and their two receipts are 100 actions (sent); 99 would
    be 101: the typed error before anything is sent."""
    db = three
    for count, fits in ((98, True), (99, False)):
        key = key_of(db, f"limit-{count}")
        s = db.session()
        for n in range(count - 1):
            s.save(Note(note_id=f"n{count}-{n}"))
        s.save(Order(order_id=f"o{count}"))
        if fits:
            result = s.commit(idempotency_key=key)
            (sent,) = [b for op, b in result.requests if op == "TransactWriteItems"]
            assert len(sent["TransactItems"]) == 100
            continue
        before = _everything(db)
        with pytest.raises(TransactionTooLargeError,
                           match="commit needs 101 actions"):
            s.commit(idempotency_key=key)
        assert _everything(db) == before


# -- lost answers, a second writer with the same key in the window -----------------------------
def test_a_lost_answer_with_a_same_key_replay_in_the_window(three: TestBackend) -> None:
    """The two-table transaction applies, its answer is lost; in the window another
    invocation commits the same writes under the same key (replayed: it applies nothing)
    and a plain writer changes the note. The first is settled as applied, the add is
    applied once, the plain writer's change is kept."""
    db, key = three, key_of(three, "lost-replay")
    seen: list[bool] = []

    def window() -> None:
        with Session(db.table) as twin:
            _both(twin)
            seen.append(twin.commit(idempotency_key=key).replayed)
        second_writer(db.table, "n1")()

    result, faults = lost_commit(db, key, _both, after=window, times=1)
    assert not result.replayed and seen == [True]
    assert faults.sent["TransactWriteItems"] >= 2
    assert notes(db) == {"n1": "theirs"} and _cents(db) == 5
    assert len(receipts(db)) == len(receipts(db, orders)) == 1
    again = db.session()
    _both(again)
    assert again.commit(idempotency_key=key).replayed and _cents(db) == 5


def _subset(s: Any) -> None:
    s.update(Order, order_id="o1", upsert=True).add(cents=5)


def _superset(s: Any) -> None:
    _both(s)
    s.save(Stock(sku="k1", left=3))


@pytest.mark.parametrize("twin_writes", [_subset, _superset], ids=["subset", "superset"])
def test_a_lost_answer_with_a_same_key_subset_or_superset_in_the_window(
        three: TestBackend, twin_writes: Callable[[Any], None]) -> None:
    """In the window another invocation commits under the key a subset (the orders write
    alone) or a superset (the two writes and a third table's): a mismatch (the receipts of
    the first two tables are live), nothing written, no receipt in the third table; the
    first is settled as applied."""
    db, key = three, key_of(three, f"lost{twin_writes.__name__}")
    errors: list[str] = []

    def window() -> None:
        with Session(db.table) as twin:
            twin_writes(twin)
            try:
                twin.commit(idempotency_key=key)
            except IdempotencyMismatchError as exc:
                errors.append(type(exc).__name__)

    result, _ = lost_commit(db, key, _both, after=window, times=1)
    assert not result.replayed and errors == ["IdempotencyMismatchError"]
    assert notes(db) == {"n1": "x"} and _cents(db) == 5
    assert db.scan(stock) == []


def test_every_answer_lost_is_settled_by_the_receipts_of_both_tables(
        three: TestBackend) -> None:
    """Every attempt's answer lost, a plain writer changing the note in each window: the
    receipts say the commit applied (never OutcomeUnknownError), the add applied once."""
    db, key = three, key_of(three, "lost-every")
    result, faults = lost_commit(db, key, _both, after=second_writer(db.table, "n1"))
    assert not result.replayed and faults.sent["TransactWriteItems"] >= 2
    assert notes(db) == {"n1": "theirs"} and _cents(db) == 5


@pytest.mark.sync_only
def test_threads_racing_one_key_on_two_tables_apply_once(three: TestBackend) -> None:
    """Four invocations commit the two-table writes under one key at once (a barrier): at
    most one applies, the others are replayed or conflict having applied nothing; the add
    is applied once, one receipt in each table."""
    db, key = three, key_of(three, "threads")
    answers = keyed_commits_at_once(db.table, key, _both)
    assert answers.count("applied") <= 1, answers
    assert set(answers) <= {"applied", "replayed", "TransactionConflictError"}, answers
    if "applied" in answers or "replayed" in answers:
        assert _cents(db) == 5 and notes(db) == {"n1": "x"}
        assert len(receipts(db)) == len(receipts(db, orders)) == 1
    else:  # (every one conflicted: none applied anything)
        assert _everything(db) == [[], [], []], answers


# -- red team (redw): attacks on the receipts of several tables --------------------------------
def test_a_used_key_whose_writes_fail_their_own_condition_says_so_or_mismatches(
        three: TestBackend) -> None:
    """Under a key already used for other writes, a commit whose own write's condition
    fails (a create of a stored note) is refused: never a replay, nothing written."""
    from dynaorm import DynaormError

    db, key = three, key_of(three, "own-cond")
    s = db.session()
    _both(s)
    s.commit(idempotency_key=key)
    before = _everything(db)
    s2 = db.session()
    s2.save(Note(note_id="n1", body="again"))  # (an insert: conditioned on absence)
    s2.update(Order, order_id="o1", upsert=True).add(cents=5)
    with pytest.raises(DynaormError) as err:
        s2.commit(idempotency_key=key)
    assert not isinstance(err.value, TransactionTooLargeError)
    assert _everything(db) == before


@pytest.mark.parametrize("twin_writes", ["same", "subset"])
def test_an_unapplied_attempt_with_a_same_key_twin_in_the_window(
        three: TestBackend, twin_writes: str) -> None:
    """The first commit's attempt answered with a 500 that never reached the
    engine; in the first window another invocation commits under the key the same
    writes (the first is then a replay: those writes were applied, once) or a subset
    (the first is a mismatch, having written nothing)."""
    from dynaorm.testing import inject_faults

    db, key = three, key_of(three, f"unapplied-{twin_writes}")
    done: list[bool] = []

    def window() -> None:
        if done:
            return
        with Session(db.table) as twin:
            if twin_writes == "same":
                _both(twin)
            else:
                twin.update(Order, order_id="o1", upsert=True).add(cents=5)
            done.append(twin.commit(idempotency_key=key).replayed)

    with inject_faults(db.table) as faults:
        faults.server_error("TransactWriteItems", times=1, after=window)
        s = db.session()
        _both(s)
        if twin_writes == "same":
            assert s.commit(idempotency_key=key).replayed
        else:
            with pytest.raises(IdempotencyMismatchError):
                s.commit(idempotency_key=key)
    assert done == [False] and _cents(db) == 5
    assert notes(db) == ({"n1": "x"} if twin_writes == "same" else {})
