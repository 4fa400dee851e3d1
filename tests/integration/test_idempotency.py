"""Exactly once across invocations (contract 22, issue 60): ``commit(idempotency_key=)``
and ``Session(..., idempotency_key=)`` apply the staged writes at most once for the key,
whatever engine, sync and async (the ``db`` fixture runs both)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from dynaorm import (
    GSI,
    LSI,
    ConcurrentModificationError,
    DynaormError,
    Encrypted,
    Entity,
    IdempotencyMismatchError,
    ItemExistsError,
    Offloaded,
    Session,
    StaticKeyring,
    Table,
    Versioned,
    ksuid,
)
from dynaorm.schema.rules.receipts import RECEIPT_TYPE
from dynaorm.testing import TestBackend, inject_faults, moto_backend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.examples import examples
from tests.support.models import Audit, Note, User, app
from tests.support.offload import Bucket, bucket, referenced
from tests.support.receipt_models import Order, Sku, receipts_table

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

#: keys of this run (DynamoDB Local keeps tokens for ten minutes across the tables tests
#: recreate: a key reused by another test's variant would find its token taken)
RUN = uuid.uuid4().hex[:8]


def _rows(db: TestBackend) -> list[dict[str, Any]]:
    """Every stored item but receipts."""
    return [i for i in db.scan() if i.get("_type") != RECEIPT_TYPE]


def _receipts(db: TestBackend) -> list[dict[str, Any]]:
    return [i for i in db.scan() if i.get("_type") == RECEIPT_TYPE]


def test_a_replay_applies_nothing_and_returns_the_first_result(db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="n1", body="hello", tags=["a", "b"]))
    first = s.commit(idempotency_key=f"order-1-{db.session_kind}-{RUN}")
    assert not first.replayed
    assert [op for op, _ in first.requests] == ["TransactWriteItems"]
    (sent,) = first.requests[0][1]["TransactItems"][-1].values()
    assert sent["Item"]["_type"] == {"S": RECEIPT_TYPE}
    stored = _rows(db)
    assert [r["body"] for r in stored] == ["hello"]
    assert len(_receipts(db)) == 1
    # another writer changes the note: a replay must not put it back
    s2 = db.session()
    n = s2.get(Note, note_id="n1")
    assert n is not None
    n.body = "changed since"
    s2.save(n)
    s2.commit()
    s3 = db.session()
    s3.save(Note(note_id="n1", body="hello", tags=["a", "b"]))
    again = s3.commit(idempotency_key=f"order-1-{db.session_kind}-{RUN}")
    assert again.replayed
    assert again.requests[-1][0] == "TransactWriteItems"
    assert again.requests == [("TransactWriteItems", {"Keys": [
        {"pk": "NOTE#n1", "sk": "NOTE"}]})]
    assert again.consumed_capacity == {}
    assert [r["body"] for r in _rows(db)] == ["changed since"]


def test_other_writes_under_a_used_key_raise_and_write_nothing(db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="n1", body="hello"))
    s.commit(idempotency_key=f"k-1-{db.session_kind}-{RUN}")
    before = db.scan()
    s.save(Note(note_id="n2", body="other"))
    with pytest.raises(IdempotencyMismatchError) as err:
        s.commit(idempotency_key=f"k-1-{db.session_kind}-{RUN}")
    assert isinstance(err.value, DynaormError)
    assert err.value.key == f"k-1-{db.session_kind}-{RUN}"
    assert db.scan() == before


def test_a_session_key_and_a_single_write_still_go_as_one_transaction(
        db: TestBackend) -> None:
    key = f"sess-1-{db.session_kind}-{RUN}"
    s = Session(db.table, idempotency_key=key) if db.session_kind == "sync" else db.session()
    s.save(Note(note_id="n1", body="x"))
    key = None if db.session_kind == "sync" else key
    result = s.commit(idempotency_key=key) if key else s.commit()
    assert [op for op, _ in result.requests] == ["TransactWriteItems"]
    assert len(result.requests[0][1]["TransactItems"]) == 2
    assert len(_receipts(db)) == 1


def test_the_same_writes_staged_in_another_order_replay(db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="n1", body="one", tags=["x"]))
    s.save(User(user_id="u1", username="ann", email="ann@example.com"))
    s.commit(idempotency_key=f"pair-{db.session_kind}-{RUN}")
    s2 = db.session()
    s2.save(User(user_id="u1", username="ann", email="ann@example.com"))
    s2.save(Note(note_id="n1", body="one", tags=["x"]))
    assert s2.commit(idempotency_key=f"pair-{db.session_kind}-{RUN}").replayed


def test_a_replayed_object_is_persisted_and_saves_as_an_update(db: TestBackend) -> None:
    s = db.session()
    s.save(Audit(equipment_id="e1", part="p", auditor="a"))
    s.commit(idempotency_key=f"audit-1-{db.session_kind}-{RUN}")
    s2 = db.session()
    replay = Audit(equipment_id="e1", part="p", auditor="a")
    s2.save(replay)
    assert s2.commit(idempotency_key=f"audit-1-{db.session_kind}-{RUN}").replayed
    replay.notes = "later"
    s2.save(replay)
    s2.commit()
    got = db.session().get(Audit, equipment_id="e1", part="p")
    assert got is not None and got.notes == "later" and got.version == 2


def test_a_failed_keyed_commit_keeps_no_receipt_and_the_key_applies_later(
        db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="n1", body="first"))
    s.commit()
    s.save(Note(note_id="n1", body="dup"))
    with pytest.raises(ItemExistsError):
        s.commit(idempotency_key=f"k-fail-{db.session_kind}-{RUN}")
    assert _receipts(db) == []
    s.save(Note(note_id="n9", body="dup"))
    # (other writes: a new token)
    assert not s.commit(idempotency_key=f"k-fail-{db.session_kind}-{RUN}").replayed
    s.save(Note(note_id="n9", body="dup"))
    assert s.commit(idempotency_key=f"k-fail-{db.session_kind}-{RUN}").replayed


def test_receipts_are_never_read_back(db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="n1", body="x"))
    s.commit(idempotency_key=f"hidden-{db.session_kind}-{RUN}")
    assert [n.note_id for n in s.scan(Note).all()] == ["n1"]
    assert [type(o).__name__ for o in s.scan(Note, User, Audit).all()] == ["Note"]


def test_receipts_expire_after_the_table_ttl(db: TestBackend) -> None:
    t = Table("x-receipts", receipts_ttl=timedelta(hours=2))
    assert t.receipts_ttl == timedelta(hours=2)
    assert db.table.receipts_ttl == timedelta(days=7)
    s = db.session()
    s.save(Note(note_id="n1", body="x"))
    s.commit(idempotency_key=f"ttl-{db.session_kind}-{RUN}")
    (receipt,) = _receipts(db)
    # (at: the commit's start, whole seconds down; expires: when its row was built, rounded
    # up: under load the two are seconds apart, never a minute)
    assert abs(receipt["dynaorm:expires"] - receipt["dynaorm:at"] - 7 * 86400) <= 60


@pytest.mark.parametrize("bad", ["", 3, "x" * 2049])
def test_a_bad_key_is_refused_before_sending(db: TestBackend, bad: Any) -> None:
    s = db.session()
    s.save(Note(note_id="n1"))
    with pytest.raises(DynaormError, match="idempotency_key"):
        s.commit(idempotency_key=bad)
    assert db.scan() == []


def test_a_bad_receipts_ttl_is_refused() -> None:
    with pytest.raises(DynaormError, match="receipts_ttl"):
        Table("x-receipts", receipts_ttl=timedelta(0))


def test_check_streams_and_unclaimed_know_receipts(db: TestBackend) -> None:
    from dynaorm.jobs.checking import check_table
    from dynaorm.schema.unclaimed import unclaimed_name

    s = db.session()
    s.save(Note(note_id="n1", body="x"))
    s.commit(idempotency_key=f"known-{db.session_kind}-{RUN}")
    result = check_table(db.table)
    assert result.problems == [] and result.unclaimed == {}
    (raw,) = [i for i in db.scan_raw() if i["_type"]["S"] == RECEIPT_TYPE]
    assert unclaimed_name(db.table, raw) is None
    keys = {a: raw[a] for a in ("pk", "sk")}
    records = [{"eventName": name, "eventID": str(n), "dynamodb": dict(section)}
               for n, (name, section) in enumerate([
                   ("INSERT", {"Keys": keys, "NewImage": raw}),
                   ("REMOVE", {"Keys": keys, "OldImage": raw}),
                   ("REMOVE", {"Keys": keys})])]  # (a keys-only view)
    assert list(db.table.changes(records)) == []


def test_the_same_writes_again_after_a_refused_attempt_apply(db: TestBackend) -> None:
    """A first attempt under the key that applied nothing (refused: the item existed)
    leaves its token with DynamoDB for ten minutes; the same writes again, once the
    conflict is gone, are sent with a fresh token and applied (the receipt keeps them at
    most once)."""
    key = f"again-{db.session_kind}-{RUN}"
    with db.session() as s:
        s.save(Note(note_id="n1", body="in the way"))
    s = db.session()
    s.save(Note(note_id="n1", body="mine"))
    with pytest.raises(ItemExistsError):
        s.commit(idempotency_key=key)
    with db.session() as other:
        stored = other.get(Note, note_id="n1")
        assert stored is not None
        other.delete(stored)
    s.save(Note(note_id="n1", body="mine"))
    assert not s.commit(idempotency_key=key).replayed
    s.save(Note(note_id="n1", body="mine"))
    assert s.commit(idempotency_key=key).replayed
    assert [r["body"] for r in _rows(db)] == ["mine"]


def test_a_table_with_number_keys_keeps_no_receipts() -> None:
    from dynaorm import Entity

    numbered = Table("x-numbered", pk="id", sk=None, key_types={"id": "N"})

    class Counter(Entity):
        class Meta:
            table = numbered
            pk = "{n}"

        n: int

    s = Session(numbered)
    s.save(Counter(n=1))
    with pytest.raises(DynaormError, match="not strings"):
        s.commit(idempotency_key="k")


@pytest.mark.parametrize("mode", [None, "TOTAL"])
def test_a_replay_reports_the_capacity_its_own_requests_reported(
        db: TestBackend, mode: str | None, request: pytest.FixtureRequest) -> None:
    """DynamoDB's answer to the replay's cancelled transaction reports no capacity: the
    replay's ``consumed_capacity`` holds only what its reads reported (a versioned
    entity's replay reads its last version first), when the client asks reads for it.
    (moto reports no capacity for transactions, only for reads.)"""
    reports = engine_of(request) != "moto"
    before = db.table.binding()
    db.table.return_consumed_capacity = mode
    key = f"capacity-{mode}-{db.session_kind}-{RUN}"
    events: list[Any] = []
    try:
        s = db.session()
        s.save(Audit(equipment_id="e1", part="p", auditor="a"))
        first = s.commit(idempotency_key=key)
        assert (sum(first.consumed_capacity.values()) > 0) is reports
        db.table.on_request(events.append)
        s2 = db.session()
        s2.save(Audit(equipment_id="e1", part="p", auditor="a"))
        replay = s2.commit(idempotency_key=key)
    finally:
        db.table.restore(before)
    assert replay.replayed
    (cancelled,) = [e for e in events if e.operation == "TransactWriteItems"]
    assert cancelled.error is not None and cancelled.consumed_capacity == {}
    reads: dict[str, float] = {}
    for e in events:
        for name, units in e.consumed_capacity.items():
            reads[name] = reads.get(name, 0.0) + units
    assert replay.consumed_capacity == reads
    assert (sum(reads.values()) > 0) is (mode is not None)


def test_model_import_carries_receipts_ttl() -> None:
    """``dynaorm model --import`` of a table keeping receipts 2 hours prints code whose
    table keeps them 2 hours (the same model); the default is left unsaid; a receipt row
    whose ttl is not a positive whole number of seconds is the file's error."""
    import json

    from dynaorm import Entity, ModelFileError
    from dynaorm.formats.code import import_code

    for ttl, said in ((timedelta(hours=2), True), (timedelta(days=7), False)):
        t = Table("x-import-receipts", receipts_ttl=ttl)

        class Item(Entity):
            class Meta:
                table = t
                pk = "I#{i}"
                sk = "I"

            i: str

        code = import_code(json.dumps(t.model()))
        assert ("receipts_ttl=_dt.timedelta(seconds=7200)" in code) is said
        defined: dict[str, Any] = {}
        exec(compile(code, "<imported>", "exec"), defined)
        assert defined["x_import_receipts"].receipts_ttl == ttl
        assert defined["x_import_receipts"].model() == t.model()
    model = t.model()
    for bad in (0, -5, "7200", 1.5, True):
        model["table"]["rows"][0]["ttl_seconds"] = bad
        with pytest.raises(ModelFileError, match=r"ttl_seconds"):
            import_code(json.dumps(model))


# -- receipts and the table's key and index attributes (contract 23) ---------------------------
#: tables whose key and index attributes are named as 0.7's receipts named theirs: a
#: receipt wrote over them (a sort key ``nonce``: every replay applied again; a partition
#: key ``digest``/``rev``: a reused key applied; a sort key or index key ``at``: a number
#: where a string is declared, every keyed commit failed in the engine)
_named = {
    "digest-nonce": Table("dynaorm-once-named-a", pk="digest", sk="nonce"),
    "rev-at": Table("dynaorm-once-named-b", pk="rev", sk="at", type_attribute="kind"),
    "indexed": Table("dynaorm-once-named-c", indexes=[
        GSI("by_result", pk="result", sk="nonce"), GSI("by_type", pk="_type"),
        LSI("by_at", sk="at"), GSI("by_expiry", pk="_expires")]),
}


def _counted(t: Table) -> type[Entity]:
    """An entity of ``t`` counting what was added to it."""
    class Counted(Entity):
        class Meta:
            table = t
            pk = "C#{cid}"
            sk = "C"

        cid: str
        n: int = 0

    return Counted


@pytest.mark.parametrize("named", sorted(_named))
def test_receipts_never_write_over_key_or_index_attributes(
        db: TestBackend, named: str, request: pytest.FixtureRequest) -> None:
    """A key used once applies once, replays, and refuses other writes, whatever the
    table's key and index attributes are named; no receipt lands in an index."""
    from dynaorm.protocol.steps import call
    from tests.conftest import wire_of
    from tests.support.exactly_once import no_waits, tables_beside

    table = _named[named]
    counted = _counted(table)
    key = f"named-{named}-{db.session_kind}-{RUN}"

    def add(n: int = 1) -> Any:
        s = db.session()
        s.update(counted, cid="c1", upsert=True).add(n=n)
        return s.commit(idempotency_key=key)

    with no_waits(), tables_beside(db, table, wire=wire_of(request)):
        assert not add().replayed
        assert add().replayed
        with pytest.raises(IdempotencyMismatchError):
            add(2)
        assert [i["n"] for i in db.scan(table) if "n" in i] == [1]
        for index in table.indexes:
            rows = table.db.driver.run(call("Scan", {"TableName": table.name,
                                                     "IndexName": index}))["Items"]
            assert not [r for r in rows if "n" not in r], index


@pytest.mark.parametrize("attribute", ["dynaorm:digest", "dynaorm:nonce", "dynaorm:at"])
def test_a_table_keyed_on_a_receipt_attribute_is_refused_before_sending(
        attribute: str) -> None:
    for table in (Table("x-clash", pk=attribute, region="us-east-1"),
                  Table("x-clash", sk=attribute, region="us-east-1"),
                  Table("x-clash", indexes=[GSI("gsi", pk=attribute)], region="us-east-1")):
        s = Session(table)
        s.save(_counted(table)(cid="c1"))
        with pytest.raises(DynaormError, match=f"'{attribute}'"):
            s.commit(idempotency_key="k")


# -- receipts of a scoped session (contract 23) -------------------------------------------------
def test_tenants_never_share_a_receipt(db: TestBackend, request: pytest.FixtureRequest) -> None:
    """Two tenants commit under one key: each applies its own writes once, neither blocks
    nor learns of the other's; each receipt's key renders the tenant
    (``dynaorm:receipt#<tenant>#<hash of the scope and the key>``)."""
    import re

    from dynaorm import AsyncSession
    from dynaorm.aio.blocking import BlockingAsyncSession
    from dynaorm.testing import use_tables, worker_suffix
    from tests.conftest import wire_of
    from tests.support.tenant_models import Memo, tenants

    key = f"order-1-{db.session_kind}-{RUN}"

    def commit(tenant: str, text: str) -> Any:
        scope = {"tenant_id": tenant}
        s: Any = Session(tenants, scope=scope) if db.session_kind == "sync" else (
            BlockingAsyncSession(AsyncSession(tenants, scope=scope)))
        s.save(Memo(tenant_id=tenant, memo_id="m1", text=text))
        return s.commit(idempotency_key=key)

    with use_tables(tenants, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        assert not commit("t1", "one").replayed
        assert not commit("t2", "two").replayed
        assert commit("t1", "one").replayed and commit("t2", "two").replayed
        with pytest.raises(IdempotencyMismatchError) as err:
            commit("t2", "other")
        assert "t1" not in str(err.value)
        stored = [i for i in tb.scan() if i.get("_type") == RECEIPT_TYPE]
        assert sorted(re.sub("[0-9a-f]{40}$", "<hash>", i["pk"]) for i in stored) == [
            "dynaorm:receipt#t1#<hash>", "dynaorm:receipt#t2#<hash>"]
        assert all(i["pk"] == i["sk"] for i in stored)
        assert sorted(i["text"] for i in tb.scan() if i.get("_type") == "Memo"
                      and i["sk"].startswith("v0_")) == ["one", "two"]


# -- values the caller did not give (contract 23) -----------------------------------------------
class Stamped(Entity):
    """An entity whose id and time come from default factories, as a handler's do."""

    class Meta:
        table = app
        pk = "STAMPED#{stamped_id}"
        sk = "STAMPED"

    stamped_id: str = Field(default_factory=ksuid)
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    order_id: str
    cents: int = 0


def test_a_retried_handler_whose_ids_and_times_are_made_replays(db: TestBackend) -> None:
    """Each run of the handler makes a new id and time (default factories): the retry is
    the same writes (the caller gave the same values), replays, and its objects hold the
    first commit's id and time, persisted (saving one again updates the stored item).
    Another value the caller gave under the key is still a mismatch."""
    key = f"handler-{db.session_kind}-{RUN}"

    def handler(cents: int = 500) -> tuple[Any, Stamped, User]:
        s = db.session()
        paid = Stamped(order_id="o1", cents=cents)
        user = User(username="ada", email="ada@example.com")
        s.save(paid)
        s.save(user)
        return s.commit(idempotency_key=key), paid, user

    first, paid, user = handler()
    time.sleep(0.01)
    again, paid2, user2 = handler()
    assert not first.replayed and again.replayed
    assert (paid2.stamped_id, paid2.at, user2.user_id) == (paid.stamped_id, paid.at,
                                                          user.user_id)
    stored = [i for i in _rows(db) if i.get("_type") == "Stamped"]
    assert [i["stamped_id"] for i in stored] == [paid.stamped_id]
    s = db.session()
    paid2.cents = 700
    s.save(paid2)
    s.commit()
    got = db.session().get(Stamped, stamped_id=paid.stamped_id)
    assert got is not None and got.cents == 700 and got.at == paid.at
    assert len([i for i in _rows(db) if i.get("_type") == "Stamped"]) == 1
    with pytest.raises(IdempotencyMismatchError):
        handler(900)


# -- receipts are rows of the plan (contract 23) ------------------------------------------------
def test_receipts_are_rows_of_the_plan(db: TestBackend) -> None:
    """A keyed commit's receipt is a row of its plan: hooks are told its origin (one per
    action of the transaction, the receipt's role ``receipt``), as for every other row."""
    events: list[Any] = []
    before = db.table.binding()
    db.table.on_request(events.append)
    try:
        s = db.session()
        s.save(User(username="ann", email="ann@example.com"))
        s.commit(idempotency_key=f"rows-{db.session_kind}-{RUN}")
    finally:
        db.table.restore(before)
    (sent,) = [e for e in events if e.operation == "TransactWriteItems"]
    assert len(sent.origins) == len(sent.request["TransactItems"]) == 4
    assert [role for _, _, role in sent.origins].count("receipt") == 1


@pytest.mark.parametrize("live", [True, False])
def test_a_receipt_0_7_wrote_is_refused_until_it_expires(db: TestBackend, live: bool) -> None:
    """A receipt of 0.7 (attributes ``digest``, ``_expires``...) at the key's receipt key:
    live, the commit is an ``IdempotencyMismatchError`` (never the request's error, nothing
    written); expired, the key applies."""
    import hashlib

    from dynaorm.protocol.steps import call

    key = f"old-{live}-{db.session_kind}-{RUN}"
    hashed = hashlib.sha256(("dynaorm-receipt\0" + key).encode()).hexdigest()[:40]
    at = {"S": f"{RECEIPT_TYPE}#{hashed}"}
    old = {"pk": at, "sk": at, "_type": {"S": RECEIPT_TYPE}, "digest": {"S": "0" * 64},
           "nonce": {"S": "0" * 16}, "rev": {"S": "0" * 16}, "at": {"N": "1"},
           "_expires": {"N": str(int(time.time()) + (600 if live else -600))},
           "result": {"S": "[]"}}
    db.table.db.driver.run(call("PutItem", {"TableName": db.table.name, "Item": old}))
    s = db.session()
    s.save(Note(note_id="n1", body="x"))
    if live:
        with pytest.raises(IdempotencyMismatchError):
            s.commit(idempotency_key=key)
        assert _rows(db) == []
    else:
        assert not s.commit(idempotency_key=key).replayed
        assert [r["body"] for r in _rows(db)] == ["x"]


_NAMES = ["digest", "nonce", "rev", "at", "result", "made", "_expires", "expires", "pk", "sk",
          "_type"]


@settings(max_examples=examples(6), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(_NAMES[:-1]), min_size=2, max_size=2, unique=True),
       st.sampled_from(_NAMES))
def test_a_keyed_commit_applies_at_most_once_whatever_the_keys_are_named(
        db: TestBackend, request: pytest.FixtureRequest, names: list[str], indexed: str
        ) -> None:
    """Whatever the table's key and index attributes are named (0.7's receipt names, the
    type attribute among them), a key applies its writes once, replays them, and a
    receipt is in no index."""
    from dynaorm.protocol.steps import call
    from tests.conftest import wire_of
    from tests.support.exactly_once import no_waits, tables_beside

    assume(indexed not in names)  # (the type attribute is no table key: only an index's)
    pk, sk = names
    table = Table("dynaorm-once-named-p", pk=pk, sk=sk, indexes=[GSI("by_name", pk=indexed)])
    counted = _counted(table)
    key = f"prop-{uuid.uuid4().hex}"

    def add() -> Any:
        s = db.session()
        s.update(counted, cid="c1", upsert=True).add(n=1)
        return s.commit(idempotency_key=key)

    with no_waits(), tables_beside(db, table, wire=wire_of(request)):
        assert [add().replayed, add().replayed] == [False, True]
        assert [i["n"] for i in db.scan(table) if "n" in i] == [1]
        rows = table.db.driver.run(call("Scan", {"TableName": table.name,
                                                 "IndexName": "by_name"}))["Items"]
        assert all("n" in r for r in rows)


@pytest.mark.sync_only  # (Session(..., idempotency_key=) itself; AsyncSession shares commit_p)
def test_a_second_commit_under_the_sessions_key_says_why_it_is_refused(
        db: TestBackend) -> None:
    """``Session(table, idempotency_key=K)`` applies K to every commit of the session: a
    second commit of other writes is a mismatch, and its error says so (it said only that
    the key was used by a commit of other writes); nothing of it is written. A second
    session under K replaying the first commit's writes replays, and one that commits
    twice with a key of its own for each is applied twice."""
    key = f"sess-2-{RUN}"
    with Session(db.table, idempotency_key=key) as s:
        s.save(Note(note_id="n1", body="first"))
    s = Session(db.table, idempotency_key=key)
    s.save(Note(note_id="n1", body="first"))
    assert s.commit().replayed  # (a retried handler: its first commit replays)
    before = db.scan()
    s.save(Note(note_id="n2", body="second"))
    with pytest.raises(IdempotencyMismatchError, match=(
            r"This session was made with idempotency_key='sess-2-.*', which applies to "
            r"every commit of the session, and 1 earlier commit\(s\) of it used the key: "
            r"give each commit its own key")) as err:
        s.commit()
    assert err.value.key == key and db.scan() == before
    fresh = Session(db.table, idempotency_key=f"sess-3-{RUN}")
    fresh.save(Note(note_id="n3", body="third"))
    assert not fresh.commit().replayed
    fresh.save(Note(note_id="n4", body="fourth"))
    assert not fresh.commit(idempotency_key=f"sess-4-{RUN}").replayed
    assert {n["note_id"] for n in db.scan() if n.get("_type") == "Note"} == {"n1", "n3", "n4"}


# -- a replayed object's sealed and offloaded values (issue 88) ----------------------------
#: a table sealing values (a static keyring) and keeping large ones in S3 (moto's, beside
#: the engine: tests/support/offload.py)
kept = Table("idem_kept", offload="s3://placeholder/v/", offload_threshold=1000,
             keyring=StaticKeyring(b"k" * 32, mac_key=b"m" * 32))


class Sealed(Entity):
    class Meta:
        table = kept
        pk = "SEALED#{sid}"
        sk = "SEALED"

    sid: str
    title: str = ""
    secret: Encrypted[str] = ""


class Parked(Entity):
    class Meta:
        table = kept
        pk = "PARKED#{sid}"
        sk = "PARKED"

    sid: str
    title: str = ""
    body: Offloaded[str] = ""


class Both(Entity):
    """Sealed, offloaded, and sealed then offloaded."""

    class Meta:
        table = kept
        pk = "BOTH#{sid}"
        sk = "BOTH"

    sid: str
    title: str = ""
    secret: Encrypted[str] = ""
    body: Offloaded[str] = ""
    sealed_body: Encrypted[Offloaded[str]] = ""


class Logged(Versioned):
    """Both, versioned: its history."""

    class Meta:
        table = kept
        pk = "LOGGED#{sid}"
        sk = "LOGGED"

    sid: str
    title: str = ""
    secret: Encrypted[str] = ""
    body: Offloaded[str] = ""


#: each class's sealed and offloaded fields (an offloaded one's value above the threshold)
KEPT = {Sealed: ("secret",), Parked: ("body",), Both: ("secret", "body", "sealed_body"),
        Logged: ("secret", "body")}


def _first(cls: type[Entity]) -> Entity:
    return cls(sid="1", title="t", **{f: f"{f}-" + "x" * 3000 for f in KEPT[cls]})


@pytest.fixture
def kb(backend: str | None, request: pytest.FixtureRequest,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestBackend, Bucket]]:
    """``kept`` on the test's engine, offloading into a bucket of its own."""
    with bucket(backend, request, monkeypatch, kept) as b, use_tables(
            kept, endpoint_url=backend, name_suffix=worker_suffix(),
            wire=wire_of(request)) as tb:
        yield tb, b


def _replayed(tb: TestBackend, cls: type[Entity], key: str) -> Entity:
    """The object of a keyed commit of ``_first(cls)`` replayed under ``key``."""
    s = tb.session()
    s.save(_first(cls))
    assert not s.commit(idempotency_key=key).replayed
    obj = _first(cls)
    s.save(obj)
    assert s.commit(idempotency_key=key).replayed
    return obj


@pytest.mark.engines("moto")  # (the state a replayed object holds is dynaorm's own)
@pytest.mark.parametrize("cls", list(KEPT), ids=lambda c: c.__name__)
def test_a_replayed_object_with_sealed_or_offloaded_values_saves_again(
        kb: tuple[TestBackend, Bucket], cls: type[Entity]) -> None:
    """A replayed object holds the state of what the replayed commit stored (its
    revision, its ciphertexts and S3 references as stored): a change of its sealed and
    offloaded values saves as an update of that row (it raised a false
    ConcurrentModificationError: its state held the ciphertexts and references the
    replay's own plan made, which were never stored)."""
    tb, b = kb
    obj = _replayed(tb, cls, f"kept-{cls.__name__}-{RUN}")
    for field in KEPT[cls]:
        setattr(obj, field, f"{field}-changed-" + "y" * 3000)
    s = tb.session()
    s.save(obj)
    s.commit()
    got = tb.session().get(cls, sid="1")
    assert got == obj and got is not None and got.title == "t"
    rows = [r for r in tb.scan_raw() if r.get("_type", {}).get("S") != RECEIPT_TYPE]
    assert len(rows) == (3 if cls is Logged else 1)  # (its version rows: 1, 2)
    assert b.uris() == referenced(rows)  # (no orphan left by the replay, no dangling one)
    obj.title = "again"  # (and the state the update left saves again)
    s.save(obj)
    s.commit()
    assert tb.session().get(cls, sid="1") == obj


#: (the refusal is the engine's condition, on the reference engine too; when the other
#: writer came does not depend on what kind of values the class keeps: each class once,
#: the two moments in turn)
@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize(("cls", "when"), [
    (cls, ("before the replay", "after the replay")[i % 2]) for i, cls in enumerate(KEPT)],
    ids=lambda v: getattr(v, "__name__", str(v)))
def test_a_replayed_object_saved_over_a_change_since_is_refused(
        kb: tuple[TestBackend, Bucket], cls: type[Entity], when: str) -> None:
    """The other side of the test above: another writer's change of the replayed row's
    sealed and offloaded values, made between the keyed commit and its replay or after
    the replay, still refuses the replayed object's save of them
    (ConcurrentModificationError), and the row keeps the other writer's values."""
    tb, b = kb
    key = f"kept-since-{cls.__name__}-{when[0]}-{RUN}"

    def other_writer() -> Entity:
        s = tb.session()
        other = s.get(cls, sid="1")
        assert other is not None
        for field in KEPT[cls]:
            setattr(other, field, f"{field}-other-" + "z" * 3000)
        s.save(other)
        s.commit()
        return other

    if when == "before the replay":
        s = tb.session()
        s.save(_first(cls))
        s.commit(idempotency_key=key)
        other = other_writer()
        obj = _first(cls)
        s.save(obj)
        assert s.commit(idempotency_key=key).replayed
    else:
        obj = _replayed(tb, cls, key)
        other = other_writer()
    for field in KEPT[cls]:
        setattr(obj, field, f"{field}-mine-" + "w" * 3000)
    s = tb.session()
    s.save(obj)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert tb.session().get(cls, sid="1") == other
    rows = [r for r in tb.scan_raw() if r.get("_type", {}).get("S") != RECEIPT_TYPE]
    assert b.uris() == referenced(rows)


def test_a_replay_whose_read_of_the_stored_row_fails_is_still_a_replay(
        kb: tuple[TestBackend, Bucket]) -> None:
    """The replayed object's stored state is read after the receipt answered: a failure
    of that read (S3 refusing the offloaded object) leaves the replay's answer as it is
    (not an error of a commit that was applied), the object keeps the state its plan made
    (a save of its offloaded value is refused, never written over what it did not see)."""
    tb, b = kb
    key = f"kept-unread-{RUN}"
    s = tb.session()
    s.save(_first(Parked))
    s.commit(idempotency_key=key)
    stored = tb.session().get(Parked, sid="1")
    obj = _first(Parked)
    s.save(obj)
    with inject_faults(kept) as faults:
        faults.throttle("s3:GetObject", times=None)
        assert s.commit(idempotency_key=key).replayed
    obj.body = "changed " + "y" * 3000
    s.save(obj)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert tb.session().get(Parked, sid="1") == stored
    assert b.uris() == referenced(tb.scan_raw())


#: a sealing table without row revisions (``revision_attribute=None``)
unrevised = Table("idem_unrevised", revision_attribute=None,
                  keyring=StaticKeyring(b"k" * 32, mac_key=b"m" * 32))


class Unrevised(Entity):
    class Meta:
        table = unrevised
        pk = "U#{sid}"
        sk = "U"

    sid: str
    secret: Encrypted[str] = ""


@pytest.mark.engines("moto")
def test_a_replayed_sealed_object_saves_again_on_a_table_without_revisions(
        backend: str | None) -> None:
    """Defect 4 of issue 88 on a table with ``revision_attribute=None``: the replayed
    object's change of its ``Encrypted`` value is saved (nobody else wrote the row)."""
    key = f"unrevised-{RUN}"
    with use_tables(unrevised, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        s = tb.session()
        s.save(Unrevised(sid="1", secret="a"))
        s.commit(idempotency_key=key)
        obj = Unrevised(sid="1", secret="a")
        s.save(obj)
        assert s.commit(idempotency_key=key).replayed
        obj.secret = "b"
        s.save(obj)
        s.commit()  # (fails: ConcurrentModificationError)
        assert tb.session().get(Unrevised, sid="1").secret == "b"


class Timed(Entity):
    """Stamped by dynaorm (``Meta.timestamps``), nothing sealed or placed."""

    class Meta:
        table = kept
        pk = "TIMED#{sid}"
        sk = "TIMED"
        timestamps = ("created_at", "updated_at")

    sid: str
    title: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None


@pytest.mark.engines("moto")
def test_a_replayed_object_with_timestamps_holds_what_was_stored_and_saves_again(
        kb: tuple[TestBackend, Bucket]) -> None:
    """The replayed object's times are the stored ones (not the replay's clock), and a
    change of it saves."""
    tb, _ = kb
    key = f"timed-{RUN}"
    s = tb.session()
    s.save(Timed(sid="1", title="a"))
    s.commit(idempotency_key=key)
    time.sleep(0.01)
    obj = Timed(sid="1", title="a")
    s.save(obj)
    assert s.commit(idempotency_key=key).replayed
    stored = tb.session().get(Timed, sid="1")
    assert stored is not None
    assert (obj.created_at, obj.updated_at) == (stored.created_at, stored.updated_at)
    obj.title = "b"
    s.save(obj)
    s.commit()
    assert tb.session().get(Timed, sid="1").title == "b"


class _Line(BaseModel):
    model_config = ConfigDict(extra="ignore")
    sku: str = ""


class Lined(Entity):
    """Stamped by dynaorm, with a list of nested models another writer adds to."""

    class Meta:
        table = kept
        pk = "LINED#{sid}"
        sk = "LINED"
        timestamps = ("created_at", "updated_at")

    sid: str
    lines: list[_Line] = []
    created_at: datetime | None = None
    updated_at: datetime | None = None


@pytest.mark.engines("moto")
def test_a_replayed_objects_list_members_keep_what_another_writer_stored_on_them(
        kb: tuple[TestBackend, Bucket]) -> None:
    """Another writer's serial set on each stored line after the first commit: the
    replayed object takes the row as read, its lines are the members read, so a line
    appended keeps each stored line's own serial."""
    tb, _ = kb
    key = f"lined-{RUN}"
    s = tb.session()
    s.save(Lined(sid="1", lines=[_Line(sku="a"), _Line(sku="a")]))
    s.commit(idempotency_key=key)
    row = {"pk": {"S": "LINED#1"}, "sk": {"S": "LINED"}}
    kept.client.update_item(TableName=kept.name, Key=row,
                          UpdateExpression="SET #l[0].serial = :a, #l[1].serial = :b",
                          ExpressionAttributeNames={"#l": "lines"},
                          ExpressionAttributeValues={":a": {"S": "S0"}, ":b": {"S": "S1"}})
    obj = Lined(sid="1", lines=[_Line(sku="a"), _Line(sku="a")])
    s.save(obj)
    assert s.commit(idempotency_key=key).replayed
    obj.lines.append(_Line(sku="a"))
    s.save(obj)
    s.commit()
    lines = kept.client.get_item(TableName=kept.name, Key=row)["Item"]["lines"]["L"]
    assert [m["M"].get("serial", {}).get("S") for m in lines] == ["S0", "S1", None]


class LockedOrder(Entity):
    """Another writer's lock on a table dynaorm replays commits of."""

    class Meta:
        table = kept
        pk = "LOCKED#{sid}"
        sk = "LOCKED"
        lock = "version"

    sid: str
    status: str = ""
    version: int | None = None


@pytest.mark.engines("moto")
def test_a_replayed_object_carries_the_lock_the_replayed_commit_wrote(
        kb: tuple[TestBackend, Bucket]) -> None:
    """A new locked object saved under an idempotency key, then an equal one replayed:
    the replayed object holds the lock as written (1); its next save moves it to 2 under
    that condition, and one made after another writer moved it is refused."""
    from dynaorm import ConcurrentModificationError

    tb, _ = kb
    key = f"locked-{RUN}"
    s = tb.session()
    s.save(LockedOrder(sid="1"))
    s.commit(idempotency_key=key)
    obj = LockedOrder(sid="1")
    s.save(obj)
    assert s.commit(idempotency_key=key).replayed
    assert obj.version == 1
    obj.status = "PAID"
    s.save(obj)
    s.commit()
    row = {"pk": {"S": "LOCKED#1"}, "sk": {"S": "LOCKED"}}
    assert kept.client.get_item(TableName=kept.name, Key=row)["Item"]["version"] == {"N": "2"}
    kept.client.update_item(TableName=kept.name, Key=row,  # (theirs: 3)
                            UpdateExpression="SET version = :v",
                            ExpressionAttributeValues={":v": {"N": "3"}})
    obj.status = "LATE"
    s.save(obj)
    with pytest.raises(ConcurrentModificationError):
        s.commit()


# --- a key reused with another str subclass value
# (moved from system/test_red_team_08b.py:
# Red team of four changes merged for 0.8, by someone who wrote none of them: the MCP
# get/find calls on the event loop (issue 70, :func:`dynaorm.mcp.tools.run` by an AsyncSession), the
# receipt digest's shortcuts (key70), the ranking of rule rows by template specificity
# (r73, :meth:`KeyTemplate.covers`) and the separator of an inferred model (``_separator``).
# Each test states what must never happen. Nothing here depends on the engine: moto only.)

@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    with moto_backend():
        yield


# -- 2. receipts: the digest tells apart what is stored apart --------------------------------


@pytest.mark.sync_only
def test_a_key_reused_with_another_str_subclass_value_is_refused_not_replayed(
        moto: None) -> None:
    """A keyed save of ``note=Sku("a")``, then the same key with ``Sku("b")``: the second
    is refused as a reused key (it was answered as a replay, writing nothing, the caller
    told its value was stored); the same write again replays."""
    with use_tables(receipts_table, name_suffix=worker_suffix()):
        s = Session(receipts_table)
        s.save(Order(order_id="o1", note=Sku("a")))
        assert s.commit(idempotency_key="k1").replayed is False
        s.save(Order(order_id="o1", note=Sku("a")))
        assert s.commit(idempotency_key="k1").replayed is True
        s.save(Order(order_id="o1", note=Sku("b")))
        with pytest.raises(IdempotencyMismatchError):
            s.commit(idempotency_key="k1")
        s.rollback()
        stored = Session(receipts_table).get(Order, order_id="o1")
        assert stored is not None and stored.note == "a"
