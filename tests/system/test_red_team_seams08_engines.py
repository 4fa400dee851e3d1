"""Seams of release 0.8 that depend on the engine (conditional transactions, a receipt's
refusal), attacked by someone who wrote none of them: a keyed commit (receipts as rows of
the plan) that moves an entity out of its previous layout (``Meta.previous``, a rule of its
own), in a tenant's scoped session. The engine-independent seams are in
``test_red_team_seams08.py``. Each test states what must never happen; every engine."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any, cast

import pytest

from dynaorm import (
    AsyncSession,
    Entity,
    IdempotencyMismatchError,
    Previous,
    ScopeError,
    Session,
    Table,
)
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.protocol.steps import call
from dynaorm.schema.rules.receipts import RECEIPT_TYPE
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import wire_of

moved = Table("seams08_moved")
RUN = uuid.uuid4().hex[:8]

#: moto and DynamoDB Local (with its async variant): a lost answer settles the same way on
#: every engine (CI's 30 minutes)
pytestmark = pytest.mark.engines("moto", "local")


class Acct(Entity):
    """Scoped by ``tenant_id``, in a migration window: its old layout has its own
    separator (``.``)."""

    class Meta:
        table = moved
        pk = "ACCT#{tenant_id}"
        sk = "A#{aid}"
        type_name = "Acct"
        previous = Previous(pk="OLD.{tenant_id}.{aid}", sk="A", type_name="OldAcct")

    tenant_id: str
    aid: str
    body: str = ""


@pytest.fixture
def mdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(moved, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        moved.max_wait = 0
        yield tb


def _session(kind: str | None, tenant: str | None) -> Session:
    scope = {"tenant_id": tenant} if tenant is not None else None
    if kind == "async":
        return cast(Session, BlockingAsyncSession(AsyncSession(moved, scope=scope)))
    return Session(moved, scope=scope)


def _plant(tenant: str, aid: str, body: str) -> None:
    """An item of the old layout, as 0.7's code stored it."""
    moved.db.driver.run(call("PutItem", {"TableName": moved.name, "Item": {
        "pk": {"S": f"OLD.{tenant}.{aid}"}, "sk": {"S": "A"}, "_type": {"S": "OldAcct"},
        "tenant_id": {"S": tenant}, "aid": {"S": aid}, "body": {"S": body}}}))


def _rows(tb: TestBackend) -> list[str]:
    """The table's items that are not receipts, order-independent."""
    return sorted(json.dumps(i, sort_keys=True) for i in tb.scan_raw(moved)
                  if i.get("_type", {}).get("S") != RECEIPT_TYPE)


def _receipts(tb: TestBackend) -> list[dict[str, Any]]:
    return [i for i in tb.scan_raw(moved) if i.get("_type", {}).get("S") == RECEIPT_TYPE]


def _key(tb: TestBackend, name: str) -> str:
    return f"{name}-{tb.session_kind}-{RUN}"


def _handler(tb: TestBackend, tenant: str, aid: str, key: str, *,
             delete: bool = False) -> Any:
    """What a retried handler does: load the account and change it (or delete it by
    key), commit under ``key`` in the tenant's scope."""
    s = _session(tb.session_kind, tenant)
    if delete:  # (by key: the handler's retry finds nothing to load)
        s.delete(Acct, tenant_id=tenant, aid=aid)
    else:
        acct = s.get(Acct, tenant_id=tenant, aid=aid)
        assert acct is not None
        acct.body = "changed"
        s.save(acct)
    return s.commit(idempotency_key=key)


# -- receipts x previous layout x scope --------------------------------------------------
@pytest.mark.parametrize("delete", [False, True], ids=["move", "delete"])
def test_a_retried_keyed_move_out_of_the_old_layout_replays(mdb: TestBackend,
                                                            delete: bool) -> None:
    """A handler loads an account still in its old layout and saves it changed (the move:
    the old row deleted, the new one put) or deletes it by key, under an idempotency key;
    its retry does the same (the account now in the new layout, or gone).
    Never: the retry applied again, told a mismatch for the same call, a row left in the
    old layout, the entity stored twice, a second receipt."""
    _plant("t-1", "a_1", "old")
    key = _key(mdb, "move-delete" if delete else "move")
    first = _handler(mdb, "t-1", "a_1", key, delete=delete)
    assert not first.replayed
    after = _rows(mdb)
    assert not any('"OLD.' in r for r in after), after
    assert len(after) == (0 if delete else 1)
    again = _handler(mdb, "t-1", "a_1", key, delete=delete)
    assert again.replayed
    assert _rows(mdb) == after
    assert len(_receipts(mdb)) == 1


def test_a_keyed_move_whose_answer_is_lost_is_settled_by_its_receipt(
        mdb: TestBackend) -> None:
    """The move's transaction applied, its answer lost: the commit is settled (applied,
    not an unknown outcome nor a conflict with its own delete of the old row), the account
    is stored once in the new layout, and the retry under the same key replays."""
    _plant("t1", "a", "old")
    key = _key(mdb, "lost-move")
    with inject_faults(moved) as faults:
        faults.lose_answer("TransactWriteItems", times=1)
        result = _handler(mdb, "t1", "a", key)
    assert not result.replayed
    rows = [json.loads(r) for r in _rows(mdb)]
    assert [(r["pk"]["S"], r["sk"]["S"], r["body"]["S"]) for r in rows] == [
        ("ACCT#t1", "A#a", "changed")]
    assert _handler(mdb, "t1", "a", key).replayed


def test_another_tenants_retry_of_a_move_never_replays_nor_moves_it(
        mdb: TestBackend) -> None:
    """t1 moves its account under key ``K``; t2 (``t1`` with a suffix) under the same key
    moves its own account of the same id: it applies (t1's receipt is not t2's), and
    neither tenant's scoped session can load or move the other's old row."""
    _plant("t1", "a", "old-1")
    _plant("t1_x", "a", "old-2")
    key = _key(mdb, "tenants")
    assert not _handler(mdb, "t1", "a", key).replayed
    assert not _handler(mdb, "t1_x", "a", key).replayed
    assert _handler(mdb, "t1_x", "a", key).replayed
    keys = sorted((json.loads(r)["pk"]["S"], json.loads(r)["body"]["S"]) for r in _rows(mdb))
    assert keys == [("ACCT#t1", "changed"), ("ACCT#t1_x", "changed")]
    assert len(_receipts(mdb)) == 2
    with pytest.raises(ScopeError):
        _session(mdb.session_kind, "t1").get(Acct, tenant_id="t1_x", aid="a")
    s = _session(mdb.session_kind, "t1")
    other = s.get(Acct, tenant_id="t1", aid="a")
    assert other is not None
    other.body = "another call"
    s.save(other)
    with pytest.raises(IdempotencyMismatchError):
        s.commit(idempotency_key=key)
