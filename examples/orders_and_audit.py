"""A transaction across two tables: an order in the application's single table and a row
in a legacy audit table (its own key names, no dynaorm guards), committed together by one
session of one client. If either side fails (here: an order number already taken), neither
table changes.

Run: ``python examples/orders_and_audit.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run, show

from dynaorm import Entity, Session, Table, Unique, UniqueConstraintError

# Both tables give no connection keywords: they share the process's default client, so
# a session commits them together (Table(..., client=db) binds them to a Client of yours).
shop = Table("dynaorm-example-shop")
audit = Table("dynaorm-example-audit", pk="stream", sk="seq", type_attribute=None,
              key_types={"seq": "N"})


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "ORDER"
        unique = (Unique("number", prefix="order_number"),)

    order_id: str
    number: str
    total: int


class AuditRow(Entity):
    """A row of the legacy audit table, as another tool writes it."""

    class Meta:
        table = audit
        pk = "{stream}"
        sk = "{seq}"

    stream: str
    seq: int
    what: str


def main() -> None:
    with run(shop, "one commit across two tables", also=[audit]) as db:
        s = Session(shop)  # or Session(shop.db): any table of the client
        s.save(Order(order_id="o1", number="2024-0001", total=120))
        s.save(AuditRow(stream="orders", seq=1, what="order o1 placed"))
        result = s.commit()
        print(f"\ncommit: {[op for op, _ in result.requests]}")
        show("shop table", db.scan(shop), lambda r: f"{r['pk']} / {r['sk']}")
        show("audit table", db.scan(audit), lambda r: f"{r['stream']} #{r['seq']}: {r['what']}")

        s.save(Order(order_id="o2", number="2024-0001", total=80))  # the number is taken
        s.save(AuditRow(stream="orders", seq=2, what="order o2 placed"))
        try:
            s.commit()
        except UniqueConstraintError as exc:
            print(f"\nrefused: {type(exc).__name__}: field={exc.field!r} value={exc.value!r}")
        show("shop table, after the refused commit", db.scan(shop),
             lambda r: f"{r['pk']} / {r['sk']}")
        show("audit table, after the refused commit", db.scan(audit),
             lambda r: f"{r['stream']} #{r['seq']}: {r['what']}")


if __name__ == "__main__":
    main()
