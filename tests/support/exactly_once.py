"""What the exactly-once tests share (contract 22, issue 60): keys unique to a run, the
notes and receipts a backend holds, a second writer acting in a lost answer's window, a
keyed commit whose answers are lost after it applied (the public fault injector: the
request reaches the engine, its answer is dropped), and tables of their own bound to the
test table's client (a commit across tables, one key)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from pydantic import Field

from dynaorm import CommitResult, DynaormError, Entity, Session, Table
from dynaorm.schema.rules.receipts import RECEIPT_TYPE
from dynaorm.testing import FaultInjector, TestBackend, inject_faults, use_tables, worker_suffix
from tests.support.concurrency import join_all
from tests.support.models import Note, app

#: keys of this run (DynamoDB Local keeps tokens for ten minutes across the tables tests
#: recreate: a key reused by another test's variant would find its token taken)
RUN = uuid.uuid4().hex[:8]

#: a second table with key names and a type attribute of its own (as a legacy table has)
orders = Table("dynaorm-once-orders", pk="PK", sk="SK", type_attribute="kind")
#: a third table, keyed as the test table is
stock = Table("dynaorm-once-stock")
#: the table a client keeps its receipts in (``Client(receipts=)``), with a TTL attribute
#: and key names of its own
home = Table("dynaorm-once-receipts", pk="id", sk=None, ttl="gone_at")


class Order(Entity):
    class Meta:
        table = orders
        pk = "ORDER#{order_id}"
        sk = "ORDER"

    order_id: str
    cents: int = 0


class Stock(Entity):
    class Meta:
        table = stock
        pk = "SKU#{sku}"
        sk = "STOCK"

    sku: str
    left: int = 0


class DigestStamped(Entity):
    """A note with the times a commit stamps (``created_at`` only where the object holds
    none) and an id a default factory makes: what a keyed commit's digest counts is
    decided per object (contract 24)."""

    class Meta:
        table = app
        pk = "DSTAMPED#{stamped_id}"
        sk = "STAMPED"
        timestamps = ("created_at", "updated_at")

    stamped_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    body: str = ""
    n: int = 0
    created_at: datetime | None = None
    updated_at: datetime | None = None


@contextmanager
def no_waits() -> Iterator[None]:
    """The test table's writes never wait out a throttle (a fault test's retries are
    immediate); restored after."""
    before = app.binding()
    app.max_wait = 0
    try:
        yield
    finally:
        app.restore(before)


def key_of(db: TestBackend, name: str) -> str:
    """A key unique to the test's variant and this run."""
    return f"{name}-{db.session_kind}-{RUN}"


def notes(db: TestBackend) -> dict[str, str]:
    """Every stored note's body, by id."""
    return {i["note_id"]: i.get("body", "") for i in db.scan() if i.get("_type") == "Note"}


def receipts(db: TestBackend, table: Table | None = None) -> list[dict[str, Any]]:
    """The receipts ``table`` (default: the test table) holds."""
    attribute = (table or db.table).type_attribute
    return [i for i in db.scan(table) if i.get(attribute or "") == RECEIPT_TYPE]


def second_writer(table: Table, note_id: str, body: str = "theirs") -> Callable[[], None]:
    """A writer of its own session that sets note ``note_id``'s body (when it is stored):
    run in a lost answer's window, after the transaction applied."""
    def write() -> None:
        with Session(table) as other:
            theirs = other.get(Note, note_id=note_id)
            if theirs is not None:
                theirs.body = body
                other.save(theirs)
    return write


def lost_commit(db: TestBackend, key: str, stage: Callable[[Any], None],
                after: Callable[[], None] | None = None, times: int | None = None
                ) -> tuple[CommitResult, FaultInjector]:
    """A commit of what ``stage(session)`` stages under ``key``, every answer to its
    transaction (``times``: the first so many) lost after the engine applied it, ``after``
    run in each window; its result and the injector (``sent`` counts the attempts)."""
    with inject_faults(db.table) as faults:
        faults.lose_answer("TransactWriteItems", times=times, after=after)
        s = db.session()
        stage(s)
        result: CommitResult = s.commit(idempotency_key=key)
    return result, faults


@contextmanager
def tables_beside(db: TestBackend, *tables: Table, wire: str | None = None
                  ) -> Iterator[TestBackend]:
    """``tables``, fresh on ``db``'s engine, bound as the test table is (so to its one
    client: a session commits them in one transaction); ``db`` back."""
    saved = [t.binding() for t in tables]
    for t in tables:
        t.max_wait = app.max_wait
    try:
        with use_tables(*tables, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                        wire=wire):
            for t in tables:
                assert t.db is app.db, f"{t.name} is not bound to the test table's client"
            yield db
    finally:
        for t, binding in zip(tables, saved, strict=True):
            t.restore(binding)


@contextmanager
def receipts_home(db: TestBackend, wire: str | None = None) -> Iterator[Table]:
    """:data:`home`, fresh on ``db``'s engine, named the receipts table of the test table's
    client for the block (``client.receipts``), and not after."""
    with tables_beside(db, home, wire=wire):
        client = app.db
        before = client.receipts
        client.receipts = home
        try:
            yield home
        finally:
            client.receipts = before


def keyed_commits_at_once(table: Table, key: str, stage: Callable[[Session], None],
                          n: int = 4) -> list[str]:
    """``n`` invocations each staging ``stage`` in a session of its own, then committing
    under ``key`` together (a barrier): what each was told (``"applied"``,
    ``"replayed"``, or the class name of its DynaormError)."""
    answers: list[str] = []
    lock = threading.Lock()
    go = threading.Barrier(n)

    def run() -> None:
        s = Session(table)
        stage(s)
        go.wait()
        try:
            out = "replayed" if s.commit(idempotency_key=key).replayed else "applied"
        except DynaormError as exc:
            out = type(exc).__name__
        with lock:
            answers.append(out)

    join_all([threading.Thread(target=run) for _ in range(n)])
    return answers
