"""Outcomes are proofs (0.5): a write whose answer was lost is reported applied only when
its row holds the revision this write stamped, resent only when the row still holds the
revision the object was loaded with, else ``OutcomeUnknownError``. Shown with the public
fault injector and a second writer acting inside the fault's window; then ``delete_many``
of loaded objects (one request each), an If-Match overwrite, and a loaded object that
goes through ``pickle``.

Run: ``python examples/outcome_proofs.py [--endpoint-url URL]``
"""

from __future__ import annotations

import pickle

from _support import run, show

import dynaorm
from dynaorm import (
    BulkWriteError,
    ConcurrentModificationError,
    Entity,
    OutcomeUnknownError,
    Session,
    Table,
    Versioned,
)
from dynaorm.testing import inject_faults

wallets = Table("dynaorm-example-proofs")


class Wallet(Entity):
    class Meta:
        table = wallets
        pk = "WALLET#{wallet_id}"
        sk = "WALLET"

    wallet_id: str
    balance: int = 100


class Ledger(Versioned):
    class Meta:
        table = wallets
        pk = "LEDGER#{ledger_id}"
        sk = "LEDGER"

    ledger_id: str
    total: int = 0


def main() -> None:
    with run(wallets, "outcomes are proofs: a second writer inside a fault's window") as db:
        wallets.max_wait = 0  # (retries without waiting, for the example)
        with Session(wallets) as s:
            s.save(Wallet(wallet_id="w1"))

        # an insert applied, its answer lost as a 500, and deleted by another writer in
        # that window: no item proves nothing, so it is not sent again
        def other_deletes() -> None:
            with Session(wallets) as other:
                other.delete(Wallet, wallet_id="w2")

        s = Session(wallets)
        s.save(Wallet(wallet_id="w2"))
        with inject_faults(wallets) as faults:
            faults.lose_answer("PutItem", how="500", after=other_deletes)
            try:
                s.commit()
            except OutcomeUnknownError as error:
                show("insert lost, then deleted by another: error, keys",
                     [(type(error).__name__, error.keys)])
        show("stored w2 (the other writer's delete stands)",
             [Session(wallets).get(Wallet, wallet_id="w2", consistent=True)])

        # two withdrawals from one load of 100: the first meets a 500 (not applied) while
        # the second makes the same change; only one is told it applied
        a = Session(wallets).get(Wallet, wallet_id="w1", consistent=True)
        b = Session(wallets).get(Wallet, wallet_id="w1", consistent=True)
        assert a is not None and b is not None

        def b_withdraws() -> None:
            b.balance -= 10
            with Session(wallets) as other:
                other.save(b)

        a.balance -= 10
        s = Session(wallets)
        s.save(a)
        with inject_faults(wallets) as faults:
            faults.server_error("UpdateItem", after=b_withdraws)
            try:
                s.commit()
                told = "applied"
            except OutcomeUnknownError:
                told = "OutcomeUnknownError"
        show("the first withdrawal is told", [told])

        # a 500 before the write reached the table: the row still holds the revision the
        # object was loaded with, so the write is resent and succeeds
        c = Session(wallets).get(Wallet, wallet_id="w1", consistent=True)
        assert c is not None
        c.balance -= 5
        with inject_faults(wallets) as faults:
            faults.server_error("UpdateItem")
            with Session(wallets) as s:
                s.save(c)
        show("after a 500 proved unapplied: UpdateItem attempts, balance",
             [(faults.sent["UpdateItem"], c.balance)])

        # a loaded object through pickle (a task queue, another process) stays loaded
        copied = pickle.loads(pickle.dumps(c))
        copied.balance += 1
        with Session(wallets) as s:
            s.save(copied)  # an update, not an ItemExistsError
        show("after pickle: persisted, balance", [(dynaorm.inspect(copied).persisted,
                                                   copied.balance)])

        # delete_many of loaded objects: one conditioned DeleteItem each; one another
        # writer changed since the load is not deleted
        with Session(wallets) as s:
            s.save_many([Wallet(wallet_id=f"m{i}") for i in range(3)])
        loaded = [Session(wallets).get(Wallet, wallet_id=f"m{i}", consistent=True)
                  for i in range(3)]
        with Session(wallets) as other:
            other.update(Wallet, wallet_id="m1").add(balance=1)
        try:
            Session(wallets).delete_many([o for o in loaded if o is not None])
        except BulkWriteError as error:
            show("delete_many: written, not written",
                 [(sorted(o.wallet_id for o in error.written),
                   [o.wallet_id for o in error.not_written])])

        # overwrite=True with a version the caller set (an If-Match) honours it
        with Session(wallets) as s:
            s.save(Ledger(ledger_id="l1"))  # version 1
        with Session(wallets) as s:
            s.save(Ledger(ledger_id="l1", total=5), overwrite=True)  # version 2
        try:
            with Session(wallets) as s:
                s.save(Ledger(ledger_id="l1", total=9, version=1), overwrite=True)
        except ConcurrentModificationError:
            show("overwrite expecting version 1 of version 2", ["ConcurrentModificationError"])
        show("stored ledger: version, total", [
            (found.version, found.total) for found in
            [db.session().get(Ledger, ledger_id="l1", consistent=True)] if found])


if __name__ == "__main__":
    main()
