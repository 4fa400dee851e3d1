"""Two key layouts from published designs: a literal sort key beside a template in one
partition (the literal wins), and fields stored only inside their key (``Meta.key_only``).

Run: ``python examples/key_layouts.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run, show

from dynaorm import Entity, KeyTemplateError, Table

# The AWS layout: per store, one METADATA item and one item per order, keyed by its time.
# No type attribute: items are told apart by their keys.
shop = Table("dynaorm-example-key-layouts", pk="PK", sk="SK", type_attribute=None)


class Store(Entity):
    class Meta:
        table = shop
        pk = "STORE#{store_id}"
        sk = "METADATA"  # a literal: it wins over Order's "{timestamp}" where both fit
        key_only = ("store_id",)

    store_id: str
    name: str


class Order(Entity):
    class Meta:
        table = shop
        pk = "STORE#{store_id}"
        sk = "{timestamp}"
        key_only = ("store_id", "timestamp")  # stored only inside PK and SK

    store_id: str
    timestamp: str
    total: int


def main() -> None:
    with run(shop, "a literal sort key beside a template; key-only fields") as db:
        s = db.session()
        s.save(Store(store_id="s1", name="Main street"))
        for at, total in (("2024-05-01T09:00", 12), ("2024-05-01T10:30", 30),
                          ("2024-05-02T08:15", 7)):
            s.save(Order(store_id="s1", timestamp=at, total=total))
        s.commit()

        show('s.query(Store, Order, store_id="s1")', s.query(Store, Order, store_id="s1"),
             lambda x: f"{type(x).__name__}: {x!r}")
        show('s.query(Order, store_id="s1")', s.query(Order, store_id="s1"),
             lambda o: f"{o.timestamp}: {o.total}")
        page = s.query(Order, store_id="s1").page()
        print(f"orders page: {len(page.items)} orders, {page.skipped} skipped "
              "(the METADATA row is the store's)")
        try:  # (the key is the store's literal: an Order there would never read back)
            s.get(Order, store_id="s1", timestamp="METADATA")
        except KeyTemplateError as e:
            print(f"s.get(Order, timestamp='METADATA'): refused, {type(e).__name__}")
        print(f"order count: {s.query(Order, store_id='s1').count()}")

        show("stored items", db.scan(), lambda i: " ".join(  # (_rev: a fresh random
            f"{k}={'<revision>' if k == '_rev' else repr(i[k])}" for k in sorted(i)))  # value)


if __name__ == "__main__":
    main()
