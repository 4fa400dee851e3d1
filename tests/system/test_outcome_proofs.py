"""Outcomes are proofs (contract 20, issue 40): a second writer acts *inside* the window of
an injected fault (after DynamoDB applied the write, or refused it with a 500, and before
the answer arrives), with the public injector (``dynaorm.testing.inject_faults``).

The three counterexamples 0.4 failed are named regression cases; each asserts the table
afterwards (the second writer's commit is never erased) and the outcome each writer is
told (never two winners of one change). Every engine; DynamoDB Local is the reference
(the transaction cases run where ``ClientRequestToken`` holds: not on dynoxide).

Also here: the costless cases stay available (a 500 that provably did not apply, a
throttle: retried, and the operation succeeds), ``save(obj, overwrite=True)`` honouring a
caller-set version (If-Match), and a loaded object's persistence state through
``pickle`` (into another process too), ``copy.copy``, ``copy.deepcopy`` and
``model_copy``.
"""

from __future__ import annotations

import copy
import multiprocessing
import pickle
from collections.abc import Iterator
from typing import Any

import pytest

import dynaorm
from dynaorm import (
    ConcurrentModificationError,
    Entity,
    OutcomeUnknownError,
    Session,
)
from dynaorm.testing import TestBackend, inject_faults
from tests.conftest import engine_of
from tests.support.models import app
from tests.support.raw import raw_get, raw_set

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")


class Wallet(Entity):
    """A plain entity: its writes are single-item requests."""

    class Meta:
        table = app
        pk = "WALLET#{wallet_id}"
        sk = "WALLET"

    wallet_id: str
    balance: int = 100


class VWallet(Entity):
    """A versioned entity: its writes are transactions (a version row and the latest copy)."""

    class Meta:
        table = app
        pk = "VWALLET#{wallet_id}"
        sk = "VWALLET"
        versioned = True

    wallet_id: str
    balance: int = 100


KEY = {"pk": "WALLET#w1", "sk": "WALLET"}


@pytest.fixture(autouse=True)
def _no_waits() -> Iterator[None]:
    before = app.binding()
    app.max_wait = 0
    yield
    app.restore(before)


def _other(db: TestBackend) -> Session:
    """The second writer: a session of its own."""
    return Session(db.table)


def _balance(db: TestBackend, cls: type[Entity] = Wallet) -> int | None:
    found = Session(db.table).get(cls, wallet_id="w1", consistent=True)
    return None if found is None else int(found.balance)  # type: ignore[attr-defined]


def _load(db: TestBackend, cls: type[Any] = Wallet) -> Any:
    found = Session(db.table).get(cls, wallet_id="w1", consistent=True)
    assert found is not None
    return found


def _stored(db: TestBackend, cls: type[Entity] = Wallet) -> Any:
    with Session(db.table) as s:
        s.save(cls(wallet_id="w1"))
    return _load(db, cls)


def _commit(db: TestBackend, stage: Any) -> BaseException | None:
    s = db.session()
    stage(s)
    try:
        s.commit()
    except Exception as exc:  # (the outcome told to the caller)
        s.rollback()
        return exc
    return None


# -- the three counterexamples of issue 40 -------------------------------------------------
def test_counterexample_1_insert_applied_then_deleted_stays_deleted(db: TestBackend) -> None:
    """0.4: the read back after the 500 found nothing, the insert was sent again, and the
    second writer's committed delete was erased; the first writer was told success."""
    def delete() -> None:
        with _other(db) as b:
            b.delete(Wallet, wallet_id="w1")

    with inject_faults(db.table) as faults:
        faults.lose_answer("PutItem", how="500", after=delete)
        error = _commit(db, lambda s: s.save(Wallet(wallet_id="w1")))
    assert isinstance(error, OutcomeUnknownError)
    assert error.keys == [KEY]
    assert faults.sent["PutItem"] == 1  # never resent
    assert _balance(db) is None  # the second writer's delete stands


def test_counterexample_2_delete_applied_then_reinserted_keeps_the_reinsert(
        db: TestBackend) -> None:
    """0.4: the read back found the re-inserted item, 'proved' the delete unapplied and
    sent it again: the re-insert was erased."""
    mine = _stored(db)

    def reinsert() -> None:
        with _other(db) as b:
            b.save(Wallet(wallet_id="w1", balance=7))

    with inject_faults(db.table) as faults:
        faults.lose_answer("DeleteItem", how="500", after=reinsert)
        error = _commit(db, lambda s: s.delete(mine))
    assert isinstance(error, OutcomeUnknownError)
    assert faults.sent["DeleteItem"] == 1
    assert _balance(db) == 7  # the re-insert stands


@pytest.mark.parametrize("cls", [Wallet, VWallet], ids=["single", "transaction"])
def test_counterexample_3_two_withdrawals_never_two_winners(db: TestBackend,
                                                            request: pytest.FixtureRequest,
                                                            cls: type[Any]) -> None:
    """Two withdrawals of 10 from 100, each loaded at 100. The first is answered 500 and
    not applied; inside that window the second makes the same change and is told it
    applied. 0.4 read the first back, found 90 (the values it meant to write) and told
    it success too: one withdrawal lost, two winners."""
    if cls is VWallet and engine_of(request) == "dynoxide":
        pytest.skip("dynoxide does not apply a ClientRequestToken at most once")
    _stored(db, cls)
    a, b = _load(db, cls), _load(db, cls)
    told: list[BaseException | None] = []

    def withdraw_b() -> None:
        b.balance -= 10
        with _other(db) as s:
            s.save(b)
        told.append(None)  # (raised otherwise)

    a.balance -= 10
    with inject_faults(db.table) as faults:
        faults.server_error("TransactWriteItems" if cls is VWallet else "UpdateItem",
                            after=withdraw_b)
        error = _commit(db, lambda s: s.save(a))
    assert told == [None]  # the second writer applied its withdrawal
    assert error is not None, "both writers told they applied one change"
    assert isinstance(error, OutcomeUnknownError | ConcurrentModificationError)
    assert _balance(db, cls) == 90


# -- a second writer in the window: every move -----------------------------------------------
MOVES = ["undo", "repeat", "delete", "reinsert", "add_attribute"]


@pytest.mark.parametrize("how", ["timeout", "500"])
@pytest.mark.parametrize("move", MOVES)
def test_a_lost_update_with_any_move_in_its_window_keeps_the_move(
        db: TestBackend, move: str, how: str) -> None:
    """The update was applied (90), then the second writer moves; its commit is what is
    stored afterwards, and the first writer is told success only when the row proves its
    write (never here: the move stamps its own revision or deletes the row)."""
    mine = _stored(db)

    def act() -> None:
        with _other(db) as b:
            theirs = b.get(Wallet, wallet_id="w1", consistent=True)
            assert theirs is not None and theirs.balance == 90  # (the write was applied)
            if move == "undo":
                theirs.balance = 100
            elif move == "repeat":  # the same change again, as a write of its own
                b.update(Wallet, wallet_id="w1").set(balance=90)
            elif move in ("delete", "reinsert"):
                b.delete(theirs)
        if move == "reinsert":
            with _other(db) as b:
                b.save(Wallet(wallet_id="w1", balance=90))
        if move == "undo":
            with _other(db) as b:
                b.save(theirs)
        if move == "add_attribute":  # a newer model's dynaorm writer: its own revision
            raw_set(db.table, KEY, newer="x", _rev="a-newer-model")

    mine.balance = 90
    with inject_faults(db.table) as faults:
        faults.lose_answer("UpdateItem", how=how, after=act)
        error = _commit(db, lambda s: s.save(mine))
    assert isinstance(error, OutcomeUnknownError), error
    theirs = move in ("undo", "repeat", "add_attribute")  # (the mover's own UpdateItem)
    assert faults.sent["UpdateItem"] == 1 + theirs  # never resent
    stored = raw_get(db.table, KEY)
    expected = {"undo": 100, "repeat": 90, "delete": None, "reinsert": 90,
                "add_attribute": 90}[move]
    assert (None if stored is None else int(stored["balance"]["N"])) == expected
    if move == "add_attribute":
        assert stored is not None and stored["newer"] == {"S": "x"}


# -- availability: what provably did not apply is retried -----------------------------------
def test_a_500_before_the_table_is_retried_and_succeeds(db: TestBackend) -> None:
    """The row still holds the revision the object was loaded with: not applied, resent."""
    mine = _stored(db)
    mine.balance = 90
    with inject_faults(db.table) as faults:
        faults.server_error("UpdateItem", times=2)
        assert _commit(db, lambda s: s.save(mine)) is None
    assert (faults.sent["UpdateItem"], faults.sent["GetItem"]) == (3, 2)
    assert _balance(db) == 90 and dynaorm.inspect(mine).persisted


def test_a_throttle_is_retried_and_succeeds(db: TestBackend) -> None:
    with inject_faults(db.table) as faults:
        faults.throttle("PutItem", times=2)
        assert _commit(db, lambda s: s.save(Wallet(wallet_id="w1", balance=5))) is None
    assert faults.sent["PutItem"] == 3 and _balance(db) == 5


# -- overwrite honours a caller-set version (If-Match) ---------------------------------------
def test_overwrite_honours_a_caller_set_version(db: TestBackend) -> None:
    """0.4 wrote over a newer stored version whatever version the caller set."""
    _stored(db, VWallet)
    newer = _load(db, VWallet)
    newer.balance = 50
    with Session(db.table) as s:
        s.save(newer)  # version 2
    stale = VWallet(wallet_id="w1", balance=1, version=1)  # If-Match: 1
    error = _commit(db, lambda s: s.save(stale, overwrite=True))
    assert isinstance(error, ConcurrentModificationError) and "version 2" in str(error)
    assert _balance(db, VWallet) == 50
    current = VWallet(wallet_id="w1", balance=2, version=2)  # If-Match: 2, the stored one
    assert _commit(db, lambda s: s.save(current, overwrite=True)) is None
    assert _balance(db, VWallet) == 2 and current.version == 3
    loaded = _load(db, VWallet)  # loaded at 3, the caller says 2: refused
    loaded.version = 2
    assert isinstance(_commit(db, lambda s: s.save(loaded, overwrite=True)),
                      ConcurrentModificationError)
    unset = _load(db, VWallet)  # no version set by the caller: last writer wins
    unset.balance = 4
    assert _commit(db, lambda s: s.save(unset, overwrite=True)) is None
    assert _balance(db, VWallet) == 4


# -- persistence state travels with the object ----------------------------------------------
def _in_another_process(data: bytes) -> bytes:
    obj = pickle.loads(data)
    assert dynaorm.inspect(obj).persisted, "unpickled as new"
    obj.balance = 60
    return pickle.dumps(obj)


@pytest.mark.parametrize("how", ["pickle", "process", "copy", "deepcopy", "model_copy"])
def test_a_loaded_object_keeps_its_state(db: TestBackend, how: str) -> None:
    """0.4: a pickled loaded object came back new: saving a change raised
    ItemExistsError, and with overwrite=True dropped the attributes the class does not
    declare."""
    _stored(db)
    raw_set(db.table, KEY, newer="keep me")  # (a newer model's attribute)
    obj = _load(db)
    if how == "process":
        ctx = multiprocessing.get_context("spawn")
        with ctx.Pool(1) as pool:
            moved = pickle.loads(pool.apply(_in_another_process, (pickle.dumps(obj),)))
    else:
        moved = {"pickle": lambda o: pickle.loads(pickle.dumps(o)), "copy": copy.copy,
                 "deepcopy": copy.deepcopy, "model_copy": lambda o: o.model_copy()}[how](obj)
        moved.balance = 60
    assert dynaorm.inspect(moved).persisted
    assert dynaorm.inspect(moved).loaded == dynaorm.inspect(obj).loaded
    assert _commit(db, lambda s: s.save(moved)) is None
    stored = raw_get(db.table, KEY)
    assert stored is not None and stored["balance"] == {"N": "60"}
    assert stored["newer"] == {"S": "keep me"}
    moved.balance = 61
    assert _commit(db, lambda s: s.save(moved, overwrite=True)) is None
    stored = raw_get(db.table, KEY)
    assert stored is not None and stored["newer"] == {"S": "keep me"}
