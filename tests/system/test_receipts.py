"""Red team of issue 68's receipts as rows of the plan (contract 22 "Exactly once across
invocations", amended by 23 "Receipts are rows of the plan"), attacked where its surfaces
meet: lost answers with a second writer in the fault's window, scoped sessions and scoped
MCP servers sharing a key, a retried handler whose values default factories made (nested,
and changed in place after construction), versioned and unique entities replayed, the
limits of a transaction with receipts and other tables' checks, the IAM policy of a scoped
write role over the requests a keyed commit really sends, and ``dynaorm check`` on a row
0.7 stored under a key the grammar now reads otherwise. What holds is a guarantee here; a
defect found was fixed with its test, or is left ``xfail(strict=True)`` describing it.
Engines: moto and DynamoDB Local, sync and async (the ``db`` fixture's session kinds).
The main path's tests are in tests/integration/test_idempotency.py and
tests/system/test_exactly_once*.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, Field

import dynaorm.mcp
from dynaorm import (
    Entity,
    IdempotencyMismatchError,
    Session,
    Table,
    TransactionTooLargeError,
    ksuid,
)
from dynaorm.formats import iam
from dynaorm.jobs.audit import audit_items
from dynaorm.jobs.checking import check_table
from dynaorm.schema.rules.receipts import RECEIPT_TYPE
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.iam_eval import allowed, checks_of
from tests.support.mcp_client import call, text
from tests.support.recording import recording, send

#: keys of this run (DynamoDB Local keeps tokens for ten minutes across recreated tables)
RUN = uuid.uuid4().hex[:8]

rr = Table("red_receipts")
#: a second table bound to the same client (a keyed commit checks its receipt key there)
ledger = Table("red_receipts_ledger")


class Line(BaseModel):
    """A nested model whose id a default factory makes."""

    line_id: str = Field(default_factory=ksuid)
    sku: str
    qty: int = 1


class Cart(Entity):
    """A handler's entity: its id, time, tags and lines are made by default factories."""

    class Meta:
        table = rr
        pk = "CART#{cart_id}"
        sk = "CART"

    cart_id: str = Field(default_factory=ksuid)
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    owner: str
    tags: list[str] = Field(default_factory=list)
    lines: list[Line] = Field(default_factory=list)


class Wide(Entity):
    """Long keys (near DynamoDB's 2048/1024 byte key limits)."""

    class Meta:
        table = rr
        pk = "W#{a}"
        sk = "S#{b}"

    a: str
    b: str


class Account(Entity):
    """Versioned, with a unique handle and an id a default factory makes."""

    class Meta:
        table = rr
        pk = "ACC#{account_id}"
        sk = "ACC"
        versioned = True
        unique = ("handle",)

    account_id: str = Field(default_factory=ksuid)
    handle: str
    name: str = ""


class Doc(Entity):
    """Scoped by tenant."""

    class Meta:
        table = rr
        pk = "TENANT#{tenant_id}"
        sk = "DOC#{doc_id}"

    tenant_id: str
    doc_id: str
    body: str = ""


class Dash(Entity):
    """A tenant's doc under a template whose scope field is followed by ``-``."""

    class Meta:
        table = rr
        pk = "T-{tenant_id}-{doc_id}"
        sk = "DASH"

    tenant_id: str
    doc_id: str
    body: str = ""


class Entry(Entity):
    """Scoped by tenant, in the second table."""

    class Meta:
        table = ledger
        pk = "T#{tenant_id}#E"
        sk = "{entry_id}"

    tenant_id: str
    entry_id: str
    cents: int = 0


@pytest.fixture
def rdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(rr, ledger, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        yield tb


def key_of(tb: TestBackend, name: str) -> str:
    return f"{name}-{tb.session_kind}-{RUN}"


def _rows(tb: TestBackend, type_name: str) -> list[dict[str, Any]]:
    return [i for i in tb.scan(rr) if i.get("_type") == type_name]


def _receipts(tb: TestBackend) -> list[dict[str, Any]]:
    return [i for i in tb.scan(rr) if i.get("_type") == RECEIPT_TYPE]


# -- 3. a retried handler: values the caller gave, values factories made --------------------------
def test_a_factory_made_list_changed_in_place_is_a_value_the_caller_gave(
        rdb: TestBackend) -> None:
    """``cart.tags.append(...)`` after construction: the list a factory made holds what
    the caller put there. A retry that appends other tags is other writes: it must raise
    IdempotencyMismatchError, never be told "replayed" while its tags were never stored."""
    key = key_of(rdb, "tags")

    def handler(tag: str) -> Any:
        s = rdb.session()
        cart = Cart(owner="ada", cart_id="c-tags")
        cart.tags.append(tag)
        s.save(cart)
        return s.commit(idempotency_key=key)

    assert not handler("gift").replayed
    with pytest.raises(IdempotencyMismatchError):
        handler("express")
    assert [i["tags"] for i in _rows(rdb, "Cart")] == [["gift"]]
    assert handler("gift").replayed


def test_a_nested_model_s_factory_made_id_does_not_make_a_retry_a_mismatch(
        rdb: TestBackend) -> None:
    """A caller gives the lines (sku, qty); each line's id is made by a factory of the
    nested model, anew on every run of the handler. The retry gave the same values: it
    replays, and its lines hold the first commit's ids."""
    key = key_of(rdb, "lines")

    def handler(qty: int = 2) -> tuple[Any, Cart]:
        s = rdb.session()
        cart = Cart(owner="ada", lines=[Line(sku="pen", qty=qty)])
        s.save(cart)
        return s.commit(idempotency_key=key), cart

    first, cart = handler()
    again, cart2 = handler()
    assert not first.replayed and again.replayed
    assert cart2.cart_id == cart.cart_id
    assert [x.line_id for x in cart2.lines] == [x.line_id for x in cart.lines]
    assert len(_rows(rdb, "Cart")) == 1
    with pytest.raises(IdempotencyMismatchError):
        handler(3)


# -- 4. limits counted once ----------------------------------------------------------------------
def test_a_keyed_commit_whose_receipt_would_exceed_400_kb_is_refused_before_sending(
        rdb: TestBackend) -> None:
    """A receipt keeps the keys its commit wrote (what a replay returns). 90 writes whose
    keys are long and not ASCII (each 2 KB + 1 KB of UTF-8, escaped to 4x that in the
    receipt's JSON) make a receipt over DynamoDB's 400 KB item limit: the commit must be
    refused before sending (TransactionTooLargeError or the item-size error), never sent
    to be refused by the engine."""
    s = rdb.session()
    for n in range(90):  # (room for the checks of the client's other tables)
        s.save(Wide(a=f"{n:03}" + "\U0001f600" * 510, b=f"{n:03}" + "\U0001f600" * 254))
    with pytest.raises(TransactionTooLargeError):
        s.commit(idempotency_key=key_of(rdb, "wide"))
    assert rdb.scan(rr) == []



def test_a_keyed_commit_at_100_actions_is_sent_and_at_101_refused_before_sending(
        rdb: TestBackend) -> None:
    """The receipt and the checks of the client's other tables count once with the writes:
    a keyed commit of exactly 100 actions is sent and applies; one more write is
    TransactionTooLargeError with nothing sent."""
    recorder = recording(rr)  # (rebinds rr: the tables its client holds change)
    ledger.max_wait = 0
    assert ledger.db is rr.db
    probe = rdb.session()
    probe.save(Doc(tenant_id="t0", doc_id="probe"))
    first = probe.commit(idempotency_key=key_of(rdb, "probe"))
    extra = len(first.requests[-1][1]["TransactItems"]) - 1  # (its receipt)
    assert extra >= 1
    for writes, key in ((101 - extra, "over"), (100 - extra, "at")):
        recorder.clear()
        s = rdb.session()
        for n in range(writes):
            s.save(Doc(tenant_id="t0", doc_id=f"{key}{n}"))
        if key == "over":
            with pytest.raises(TransactionTooLargeError):
                s.commit(idempotency_key=key_of(rdb, key))
            assert recorder.writes == []
            s.rollback()
        else:
            result = s.commit(idempotency_key=key_of(rdb, key))
            assert len(result.requests[-1][1]["TransactItems"]) == 100
    assert len(_rows(rdb, "Doc")) == 101 - extra

# -- 3. replayed objects are usable: versioned, unique ------------------------------------------
def _guards(tb: TestBackend) -> list[tuple[str, str]]:
    return sorted((i["pk"], i["owner_pk"]) for i in tb.scan(rr)
                  if i.get("_type") == "dynaorm:unique")


def test_a_replayed_versioned_unique_object_saves_again_as_its_next_version(
        rdb: TestBackend) -> None:
    """A retried handler creates a versioned account with a unique handle and an id its
    factory makes: the retry replays, its object holds the first commit's id and is
    persisted at the first commit's version. Saving it again with a new handle is the
    next version (not a duplicate, not a conflict) and moves the guard."""
    key = key_of(rdb, "acc")

    def handler() -> tuple[Any, Account]:
        s = rdb.session()
        acc = Account(handle="ada", name="A")
        s.save(acc)
        return s.commit(idempotency_key=key), acc

    first, acc = handler()
    again, acc2 = handler()
    assert not first.replayed and again.replayed
    assert acc2.account_id == acc.account_id
    s = rdb.session()
    acc2.name, acc2.handle = "B", "ada2"
    s.save(acc2)
    s.commit()
    got = rdb.session().get(Account, account_id=acc.account_id)
    assert got is not None and (got.name, got.handle) == ("B", "ada2")
    versions = [v.name for v in rdb.session().history(Account, account_id=acc.account_id)]
    assert sorted(versions) == ["A", "B"]
    owner = f"ACC#{acc.account_id}"
    assert _guards(rdb) == [("handle#ada2", owner)]


def test_a_replayed_versioned_update_of_a_loaded_object_saves_again(rdb: TestBackend) -> None:
    """A handler loads an account and renames it under a key; its retry loads it again (one
    version later), stages the same change and replays. The replay's object is at the
    version stored: saving it again applies the next version."""
    s = rdb.session()
    s.save(Account(account_id="a1", handle="h1", name="v1"))
    s.commit()
    key = key_of(rdb, "rename")

    def handler() -> tuple[Any, Account]:
        s = rdb.session()
        acc = s.get(Account, account_id="a1")
        assert acc is not None
        acc.name = "renamed"
        s.save(acc)
        return s.commit(idempotency_key=key), acc

    first, _ = handler()
    again, acc = handler()
    assert not first.replayed and again.replayed
    s = rdb.session()
    acc.name = "after"
    s.save(acc)
    s.commit()
    names = sorted(v.name for v in rdb.session().history(Account, account_id="a1"))
    assert names == ["after", "renamed", "v1"]
    assert _guards(rdb) == [("handle#h1", "ACC#a1")]


# -- 1 and 2. tenants under one key, a second writer in a lost answer's window -------------------
def _scoped(tb: TestBackend, tenant: str | None) -> Any:
    s = tb.session()
    return s if tenant is None else type(s)(rr, scope={"tenant_id": tenant}) if (
        tb.session_kind == "sync") else _async_scoped(tenant)


def _async_scoped(tenant: str) -> Any:
    from dynaorm.aio.blocking import BlockingAsyncSession
    from dynaorm.aio.session import AsyncSession

    return BlockingAsyncSession(AsyncSession(rr, scope={"tenant_id": tenant}))


def test_another_tenant_commits_the_same_key_in_a_lost_answer_s_window(
        rdb: TestBackend) -> None:
    """Tenant t1's keyed commit applies and its answer is lost; in the window tenant t2
    commits other writes under the same key, and an unscoped session too. Each applies its
    own (t1's receipt neither blocks nor is met by theirs); t1 is told applied, not
    replayed and not unknown; each retry replays its own; a mismatch of t2 says nothing
    of t1's use."""
    key = key_of(rdb, "tenants")
    told: dict[str, Any] = {}

    def others() -> None:
        with Session(rr, scope={"tenant_id": "t2"}) as t2:
            t2.save(Doc(tenant_id="t2", doc_id="d2", body="t2's"))
            told["t2"] = t2.commit(idempotency_key=key)
        with Session(rr) as plain:
            plain.save(Doc(tenant_id="t3", doc_id="d3", body="unscoped"))
            told["plain"] = plain.commit(idempotency_key=key)

    with inject_faults(rr) as faults:
        faults.lose_answer("TransactWriteItems", after=others)
        s = _scoped(rdb, "t1")
        s.save(Doc(tenant_id="t1", doc_id="d1", body="t1's"))
        result = s.commit(idempotency_key=key)
    assert not result.replayed
    assert not told["t2"].replayed and not told["plain"].replayed
    assert sorted(i["body"] for i in _rows(rdb, "Doc")) == ["t1's", "t2's", "unscoped"]
    assert len(_receipts(rdb)) == 3
    s = _scoped(rdb, "t1")
    s.save(Doc(tenant_id="t1", doc_id="d1", body="t1's"))
    assert s.commit(idempotency_key=key).replayed
    with Session(rr, scope={"tenant_id": "t2"}) as t2:
        t2.save(Doc(tenant_id="t2", doc_id="d9", body="other"))
        with pytest.raises(IdempotencyMismatchError) as err:
            t2.commit(idempotency_key=key)
        t2.rollback()
    told_t2 = str(err.value).replace(key, "<key>")  # (a random key may hold "d1")
    assert "t1" not in told_t2 and "d1" not in told_t2
    assert sorted(i["body"] for i in _rows(rdb, "Doc")) == ["t1's", "t2's", "unscoped"]


@pytest.mark.sync_only  # (the servers make their own sessions)
def test_scoped_mcp_servers_never_share_a_key(rdb: TestBackend) -> None:
    """Two MCP servers scoped to t1 and t2 and an unscoped one save under one key: each
    applies its own, each retry replays its own, nothing crosses."""
    key = key_of(rdb, "mcp")
    servers = {t: dynaorm.mcp.server(rr, writes=["Doc"], scope=None if t == "all" else
                                     {"tenant_id": t}) for t in ("t1", "t2", "all")}

    def save(t: str, body: str) -> str:
        item = {"doc_id": "d", "body": body, **({"tenant_id": "t9"} if t == "all" else {})}
        [result] = call(servers[t], ("save_doc", {"item": item, "idempotency_key": key}))
        return text(result)

    first = [save(t, f"by {t}") for t in servers]
    again = [save(t, f"by {t}") for t in servers]
    assert all('"replayed": false' in r or '"replayed":false' in r for r in first), first
    assert all('"replayed": true' in r or '"replayed":true' in r for r in again), again
    assert sorted((i["tenant_id"], i["body"]) for i in _rows(rdb, "Doc")) == [
        ("t1", "by t1"), ("t2", "by t2"), ("t9", "by all")]


# -- 5. the IAM policy of a scoped write role over what a keyed commit sends ---------------------
def test_a_scoped_write_role_s_policies_allow_what_its_keyed_commits_send(
        rdb: TestBackend) -> None:
    """The policies ``dynaorm iam --role write --scope tenant_id`` prints for the two
    tables a session's client holds, evaluated over every request a scoped keyed commit
    of t1 really sends (recorded: its transaction with the receipt's Put in the table it
    writes and the check of its receipt key in the other; the GetItem settling a lost
    answer; then a commit to both tables): all allowed to a principal tagged t1, and none
    naming a row of t1 allowed to one tagged t2. (The suite's own test table, bound to
    the same client too, is left out: its policy is not this role's.)"""
    policies = [iam.to_format(t.model(), "write", scope="tenant_id")[0] for t in (rr, ledger)]
    recorder = recording(rr)
    ledger.max_wait = 0  # (bound as rr now is: one client; used, so a key checks it)
    assert ledger.db is rr.db
    key = key_of(rdb, "iam")
    with inject_faults(rr) as faults:
        faults.lose_answer("TransactWriteItems", times=None)  # (settled by a GetItem)
        s = _scoped(rdb, "t1")
        s.save(Doc(tenant_id="t1", doc_id="d1"))
        assert not s.commit(idempotency_key=key).replayed
    s = _scoped(rdb, "t1")
    s.save(Doc(tenant_id="t1", doc_id="d2"))
    s.save(Entry(tenant_id="t1", entry_id="e1"))
    s.commit(idempotency_key=key + "-both")
    names = {rr.name: rr.pk, ledger.name: ledger.pk}
    checks = []
    for operation, request in recorder.sent:
        if operation == "TransactWriteItems":
            for item in request["TransactItems"]:
                ((_, body),) = item.items()
                if body["TableName"] in names:
                    checks += checks_of("TransactWriteItems", {"TransactItems": [item]},
                                        {None: names[body["TableName"]]})
        elif request.get("TableName") in names:
            checks += checks_of(operation, request, {None: names[request["TableName"]]})

    actions = {c.action for c in checks}
    assert {"PutItem", "GetItem"} <= actions, actions
    assert any(c.action == "PutItem" and ledger.name in c.resource for c in checks)
    for check in checks:
        assert any(allowed(p, check, {"tenant_id": "t1"}) for p in policies), check
        assert not any(allowed(p, check, {"tenant_id": "t2"}) for p in policies), check


# -- 6. dynaorm check on a row 0.7 stored under a key the grammar now reads otherwise -----------
def _plant_0_7_row() -> None:
    """0.7 stored tenant ``acme-corp``'s doc ``123`` as ``T-acme-corp-123`` (its values could
    hold ``-`` then); the grammar reads that key as tenant ``acme``'s doc ``corp-123``."""
    send(rr, "PutItem", {"TableName": rr.name, "Item": {
        "pk": {"S": "T-acme-corp-123"}, "sk": {"S": "DASH"}, "_type": {"S": "Dash"},
        "tenant_id": {"S": "acme-corp"}, "doc_id": {"S": "123"}, "body": {"S": "corp's"}}})


def test_check_reports_a_0_7_row_whose_key_parses_to_another_tenant(rdb: TestBackend) -> None:
    """``dynaorm check`` reports the row (a stale-key finding naming the refused value,
    not repairable, never a crash); it was silent (a value the grammar refuses made the
    key unrenderable, and the row was skipped)."""
    _plant_0_7_row()
    problems = audit_items(rr, rdb.scan_raw(rr))
    assert [(p.kind, p.key, p.repairable) for p in problems] == [
        ("stale-key", ("T-acme-corp-123", "DASH"), False)]
    assert "'-'" in problems[0].detail and "tenant_id" in problems[0].detail
    result = check_table(rr)
    assert result.unrepairable == 1 and "T-acme-corp-123" in result.problems[0]


def test_a_scoped_session_never_returns_a_row_whose_attributes_name_another_tenant(
        rdb: TestBackend) -> None:
    """(was a strict xfail of 0.8: acme's session returned the row; contract 24 skips a
    row whose stored scope fields disagree with its key's parse, a stale key)"""
    _plant_0_7_row()
    with Session(rr, scope={"tenant_id": "acme"}) as acme:
        got = acme.get(Dash, tenant_id="acme", doc_id="corp-123")
        assert got is None or got.tenant_id == "acme"
