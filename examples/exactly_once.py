"""Exactly once across invocations: a handler run twice for one message (an SQS
redelivery, a retried Lambda) commits with the message id as its idempotency key; the
second run applies nothing and says so (``replayed``), and other writes under a used key
are refused. A commit across two tables keeps a receipt in each: the writes of one of
them alone under its key are other writes, refused too. A client given a receipts table
keeps every receipt there: a key is then known to every table it writes.

Run: ``python examples/exactly_once.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run

from dynaorm import Entity, IdempotencyMismatchError, Table

shop = Table("dynaorm-example-exactly-once")


class Payment(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "PAYMENT"

    order_id: str
    cents: int


class Balance(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer}"
        sk = "BALANCE"

    customer: str
    cents: int = 0


ledger = Table("dynaorm-example-exactly-once-ledger")
#: where a client may keep every receipt of its keyed commits (``Client(receipts=)``)
receipts = Table("dynaorm-example-exactly-once-receipts", pk="id", sk=None)


class Entry(Entity):
    """The ledger's line for an order, in a table of its own."""

    class Meta:
        table = ledger
        pk = "ORDER#{order_id}"
        sk = "ENTRY"

    order_id: str
    cents: int


def handle(db: object, message_id: str, order_id: str, cents: int) -> bool:
    """Record a payment and debit the balance, once per message; True when replayed."""
    s = db.session()  # type: ignore[attr-defined]
    s.save(Payment(order_id=order_id, cents=cents))
    s.update(Balance, customer="ada", upsert=True).add(cents=-cents)
    return bool(s.commit(idempotency_key=message_id).replayed)


def main() -> None:
    with run(shop, "exactly once with an idempotency key", also=[ledger, receipts]) as db:
        assert handle(db, "msg-1", "o1", 500) is False  # applied
        assert handle(db, "msg-1", "o1", 500) is True  # redelivered: applied nothing
        balance = db.session().get(Balance, customer="ada")
        assert balance is not None and balance.cents == -500
        print(f"after two deliveries of msg-1: balance {balance.cents} (debited once)")
        try:
            handle(db, "msg-1", "o2", 900)  # another order under a used key
        except IdempotencyMismatchError as exc:
            print(f"refused: {type(exc).__name__}")
        else:
            raise AssertionError("a used key took other writes")
        s = db.session()  # one commit, two tables: a receipt in each
        s.save(Payment(order_id="o3", cents=700))
        s.save(Entry(order_id="o3", cents=700))
        s.commit(idempotency_key="msg-3")
        s.save(Entry(order_id="o3", cents=700))  # the ledger's write alone, same key
        try:
            s.commit(idempotency_key="msg-3")
        except IdempotencyMismatchError:
            print("msg-3 across two tables, then the ledger's write alone: refused")
        else:
            raise AssertionError("a subset of a two-table commit applied again")
        s.rollback()
        # without a receipts table, a key used on the shop is unknown to the ledger; with
        # one (Client(receipts=...), here set on the tables' client), every keyed commit
        # keeps its one receipt there: the key is known whatever tables it writes
        shop.db.receipts = receipts
        s = db.session()  # (a session keeps the receipts table its client had when made)
        try:
            s.save(Payment(order_id="o4", cents=100))
            s.commit(idempotency_key="msg-4")
            s.save(Entry(order_id="o4", cents=100))  # the ledger alone, same key
            try:
                s.commit(idempotency_key="msg-4")
            except IdempotencyMismatchError:
                print("with a receipts table: msg-4 on the shop, then on the ledger: refused")
            else:
                raise AssertionError("a key used on the shop applied on the ledger")
        finally:
            shop.db.receipts = None


if __name__ == "__main__":
    main()
