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

from dynaorm import (
    Entity,
    IdempotencyMismatchError,
    Table,
    TransactionTooLargeError,
    ksuid,
)
from dynaorm.schema.rules.receipts import RECEIPT_TYPE
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of

#: keys of this run (DynamoDB Local keeps tokens for ten minutes across recreated tables)
RUN = uuid.uuid4().hex[:8]

rr = Table("red_receipts")


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


@pytest.fixture
def rdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(rr, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
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
