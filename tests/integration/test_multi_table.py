"""Transactions across tables (contract 19): one session stages entities of several tables
bound to one client and commits them as one TransactWriteItems; guards and version rows
stay on their entity's table; limits count the whole commit; a failure anywhere leaves
every table as it was; errors, outcomes and ``CommitResult`` name the tables. On every
engine, through ``Session`` and (on DynamoDB Local) ``AsyncSession``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import (
    Client,
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    Entity,
    F,
    Session,
    Table,
    TransactionTooLargeError,
    UniqueConstraintError,
)
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.models import Audit, Note, User, app
from tests.support.recording import Requests

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

#: a second table with its own key names and discriminator, as a legacy table has
ledger = Table("dynaorm-ledger", pk="PK", sk="SK", type_attribute="kind")


class Entry(Entity):
    """A ledger entry: a unique reference (its guard lives on the ledger table)."""

    class Meta:
        table = ledger
        pk = "ACCOUNT#{account}"
        sk = "ENTRY#{entry_id}"
        unique = ("reference",)

    account: str
    entry_id: str
    amount: int
    reference: str


class Tally(Entity):
    """A counter on the ledger table: an ``add`` applied twice would show."""

    class Meta:
        table = ledger
        pk = "TALLY#{name}"
        sk = "TALLY"

    name: str
    hits: int = 0


class Balance(Entity):
    """An account's balance on the ledger table, versioned (history on that table)."""

    class Meta:
        table = ledger
        pk = "ACCOUNT#{account}"
        sk = "BALANCE"
        versioned = True

    account: str
    total: int = 0


@pytest.fixture
def both(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """``db``'s table and the ledger, fresh, bound alike (so to one client)."""
    with use_tables(ledger, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        assert ledger.db is app.db
        yield db


def rows(db: TestBackend) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every item of the app table and of the ledger, as plain values."""
    return db.scan(app), db.scan(ledger)


def test_one_commit_writes_both_tables_in_one_transaction(
        both: TestBackend, request: pytest.FixtureRequest) -> None:
    seen = Requests(app)
    s = both.session()
    s.save(User(user_id="u1", username="ada", email="ada@example.com"))
    s.save(Entry(account="a1", entry_id="e1", amount=5, reference="INV-1"))
    s.save(Balance(account="a1", total=5))
    result = s.commit()
    ops = [op for op, _ in seen.calls]
    assert ops == ["TransactWriteItems"]
    sent = seen.calls[0][1]
    tables = [next(iter(item.values()))["TableName"] for item in sent["TransactItems"]]
    # the user's row and two guards, the entry and its guard, the balance's v1 and v0
    assert tables == [app.name] * 3 + [ledger.name] * 4
    assert {r["pk"] for r in both.scan(app)} == {
        "USER#u1", "username#ada", "email#ada@example.com"}
    stored = {(r["PK"], r["SK"]): r for r in both.scan(ledger)}
    assert set(stored) == {("ACCOUNT#a1", "ENTRY#e1"), ("reference#INV-1", "reference#INV-1"),
                           ("ACCOUNT#a1", "v0_BALANCE"), ("ACCOUNT#a1", "v00000001_BALANCE")}
    guard = stored[("reference#INV-1", "reference#INV-1")]  # the ledger's own key names
    assert (guard["kind"], guard["owner_pk"], guard["owner_sk"], guard["owner_type"]) == (
        "dynaorm:unique", "ACCOUNT#a1", "ENTRY#e1", "Entry")
    assert stored[("ACCOUNT#a1", "ENTRY#e1")]["kind"] == "Entry"
    if engine_of(request) != "moto":  # moto reports no capacity for a transaction
        assert set(result.consumed_capacity) >= {app.name, ledger.name}
    # a new versioned entity is planned as version 1: no history read first (issue 39)
    assert [(op, r.get("TableName")) for op, r in result.requests] == [
        ("TransactWriteItems", None)]


def test_a_unique_clash_on_one_table_writes_nothing_on_either(both: TestBackend) -> None:
    with both.session() as s:
        s.save(Entry(account="a0", entry_id="e0", amount=1, reference="INV-9"))
    before = rows(both)
    s = both.session()
    s.save(Note(note_id="n1", body="order"))
    s.save(Entry(account="a1", entry_id="e1", amount=2, reference="INV-9"))
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert err.value.field == "reference" and err.value.entity is Entry
    assert err.value.table == ledger.name and repr(ledger.name) in str(err.value)
    assert rows(both) == before


def test_a_stale_writer_on_one_table_writes_nothing_on_either(both: TestBackend) -> None:
    with both.session() as s:
        s.save(Balance(account="a1", total=1))
    mine = both.session().get(Balance, account="a1")
    theirs = both.session().get(Balance, account="a1")
    assert mine is not None and theirs is not None
    theirs.total = 2
    with both.session() as s:
        s.save(theirs)
    before = rows(both)
    mine.total = 3
    s = both.session()
    s.save(mine)
    s.save(Audit(equipment_id="E1", part="P1", status="ok"))
    with pytest.raises(ConcurrentModificationError) as err:
        s.commit()
    assert err.value.entity is Balance and err.value.table == ledger.name
    assert repr(ledger.name) in str(err.value)
    assert rows(both) == before


def test_limits_count_the_whole_commit(both: TestBackend) -> None:
    """100 actions across two tables are allowed; 101 are refused before anything is
    sent (each Entry is a row and a guard: 2 actions)."""
    seen = Requests(app)
    s = both.session()
    for i in range(50):
        s.save(Note(note_id=f"n{i}"))
    for i in range(25):
        s.save(Entry(account="a", entry_id=f"e{i}", amount=i, reference=f"R{i}"))
    s.save(Note(note_id="one-too-many"))
    with pytest.raises(TransactionTooLargeError, match="101 actions"):
        s.commit()
    assert seen.calls == [] and rows(both) == ([], [])
    s = both.session()
    for i in range(50):
        s.save(Note(note_id=f"n{i}"))
    for i in range(25):
        s.save(Entry(account="a", entry_id=f"e{i}", amount=i, reference=f"R{i}"))
    s.commit()
    assert len(both.scan(app)) == 50 and len(both.scan(ledger)) == 50


def test_a_caller_condition_on_the_other_table_guards_the_commit(both: TestBackend) -> None:
    with both.session() as s:
        s.save(Balance(account="a1", total=10))
    s = both.session()
    s.save(Note(note_id="n1"))
    s.check(Balance, account="a1", condition=F("total") >= 100)
    with pytest.raises(ConditionFailedError) as err:
        s.commit()
    assert err.value.entity is Balance and err.value.table == ledger.name
    assert [r["pk"] for r in both.scan(app)] == []
    s = both.session()
    s.save(Note(note_id="n1"))
    s.check(Balance, account="a1", condition=F("total") >= 10)
    s.commit()
    assert [r["pk"] for r in both.scan(app)] == ["NOTE#n1"]


@pytest.mark.sync_only  # a session of a Client: db.session() makes one of the table
def test_a_session_of_the_client_commits_any_of_its_tables(both: TestBackend) -> None:
    s = Session(app.db)
    assert s.table is None and s.client is app.db
    s.save(Note(note_id="n1"))
    s.save(Entry(account="a", entry_id="e", amount=1, reference="R"))
    s.commit()
    assert len(both.scan(app)) == 1 and len(both.scan(ledger)) == 2
    got = Session(app.db).get(Entry, account="a", entry_id="e")
    assert got is not None and got.reference == "R"


def test_an_entity_of_another_clients_table_is_refused_before_sending(
        both: TestBackend) -> None:
    other = Table("dynaorm-elsewhere", client=Client("http://127.0.0.1:9"))

    class Far(Entity):
        class Meta:
            table = other
            pk = "FAR#{far_id}"
            sk = "FAR"

        far_id: str

    seen = Requests(app)
    s = both.session()
    s.save(Note(note_id="n1"))
    with pytest.raises(DynaormError, match="dynaorm-elsewhere"):
        s.save(Far(far_id="f"))
    s.commit()  # what was staged before goes on its own
    assert [op for op, _ in seen.calls] == ["PutItem"]


def test_a_lost_answer_of_a_cross_table_commit_is_applied_once(
        both: TestBackend) -> None:
    """The answer of a commit across both tables is lost after DynamoDB applied it: the
    retry carries the same token, so it is applied once, and the commit succeeds."""
    with both.session() as s:
        s.save(Tally(name="orders"))
    seen = Requests(app)
    with inject_faults(ledger) as faults:
        faults.lose_answer("TransactWriteItems")
        s = both.session()
        s.save(User(user_id="u1", username="ada", email="ada@example.com"))
        s.update(Tally, name="orders").add(hits=1)  # applied twice, it would read 2
        s.commit()
    sent = seen.of("TransactWriteItems")
    assert len(sent) == 2 and sent[0]["ClientRequestToken"] == sent[1]["ClientRequestToken"]
    assert faults.sent["TransactWriteItems"] == 2
    assert len(both.scan(app)) == 3
    tally = both.session().get(Tally, name="orders")
    assert tally is not None and tally.hits == 1


def test_a_server_error_after_a_cross_table_commit_applied_is_a_success(
        both: TestBackend) -> None:
    """DynamoDB applies the commit and the answer is a 500: the retry carries the same
    token, so the commit is applied once and reported as the success it is (the fault
    planned on the app table's client sees the transaction naming both tables)."""
    with both.session() as s:
        s.save(Tally(name="orders"))
    seen = Requests(ledger)
    with inject_faults(app) as faults:
        faults.lose_answer("TransactWriteItems", how="500")
        s = both.session()
        s.save(Note(note_id="n1", body="x"))
        s.save(Entry(account="a1", entry_id="e1", amount=5, reference="INV-1"))
        s.update(Tally, name="orders").add(hits=1)
        s.commit()
    sent = seen.of("TransactWriteItems")
    assert len(sent) == 2 and sent[0]["ClientRequestToken"] == sent[1]["ClientRequestToken"]
    assert [r["pk"] for r in both.scan(app)] == ["NOTE#n1"]
    tally = both.session().get(Tally, name="orders")
    assert tally is not None and tally.hits == 1


def test_a_pynamodb_bridged_table_commits_with_the_single_table(both: TestBackend) -> None:
    """A legacy table mapped from a PynamoDB model, bound to the same client, takes part
    in the same transaction; PynamoDB reads what dynaorm wrote there."""
    pytest.importorskip("pynamodb")
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute
    from pynamodb.models import Model

    from dynaorm.client.settings import local_credentials
    from dynaorm.pynamodb import entity_from_pynamodb, table_from_pynamodb

    class AuditLog(Model):
        class Meta:
            table_name = "dynaorm-audit-log" + worker_suffix()
            host = both.endpoint_url
            region = app.client.meta.region_name

        stream = UnicodeAttribute(hash_key=True)
        seq = NumberAttribute(range_key=True)
        what = UnicodeAttribute()

    for name, value in local_credentials(both.endpoint_url).items():
        setattr(AuditLog.Meta, name, value)
    audit = table_from_pynamodb(AuditLog, client=app.db)
    AuditRow = entity_from_pynamodb(AuditLog, table=audit, name="AuditRow")
    audit.create()
    try:
        seen = Requests(app)
        s = both.session()
        s.save(Note(note_id="n1", body="order placed"))
        s.save(AuditRow(stream="orders", seq=1, what="placed n1"))
        s.commit()
        assert [op for op, _ in seen.calls] == ["TransactWriteItems"]
        assert AuditLog.get("orders", 1).what == "placed n1"
        assert [r["pk"] for r in both.scan(app)] == ["NOTE#n1"]
    finally:
        audit.delete()


def test_a_table_rebound_after_staging_is_refused_at_commit(
        both: TestBackend, request: pytest.FixtureRequest) -> None:
    """A table staged in a session and then bound to another client (``connect``, a
    changed keyword) would have its writes go elsewhere: the commit refuses it before
    anything is sent, and drops the stage."""
    seen = Requests(app)
    s = both.session()
    s.save(Note(note_id="n1"))
    s.save(Entry(account="a", entry_id="e", amount=1, reference="R"))
    bound = ledger.binding()
    ledger.connect("http://127.0.0.1:9")
    try:
        with pytest.raises(DynaormError, match=ledger.name):
            s.commit()
    finally:
        ledger.restore(bound)  # (the fixture deletes it where it was made)
    assert seen.calls == [] and both.scan(app) == []
    seen.clear()
    s.commit()  # the stage was dropped: nothing left to send
    assert seen.calls == []
