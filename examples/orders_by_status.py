"""Write sharding: orders by status on a GSI whose partition key carries ``{shard}``, so a
hot status ("open") is spread over several partitions; a query that names no shard reads
all of them concurrently and merges the results in sort-key order (scatter-gather).

Run: ``python examples/orders_by_status.py [--endpoint-url URL]``
"""

from __future__ import annotations

from collections import Counter

from _support import run, show

from dynaorm import GSI, Entity, F, Table

shop = Table("dynaorm-example-orders", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "ORDER"
        indexes = {"gsi1": ("STATUS#{status}#{shard}", "{created}#{order_id}")}
        shards = {"gsi1": 3}

    order_id: str
    status: str
    created: str
    total: int


def line(o: Order) -> str:
    return f"{o.created}  {o.order_id}  {o.status:<8} {o.total:>5}"


def main() -> None:
    with run(shop, "orders by status through a write-sharded GSI") as db:
        s = db.session()
        statuses = ["open", "open", "working", "open", "closed"]
        s.save_many([Order(order_id=f"o{i:02d}", status=statuses[i % 5],
                           created=f"2020-0{1 + i % 5}-{10 + i}", total=10 * i + 5)
                     for i in range(15)])
        spread = Counter(i["gsi1pk"] for i in db.scan())
        print("items per gsi1 partition:")
        for pk, n in sorted(spread.items()):
            print(f"    {pk:<18} {n}")

        o7 = s.get(Order, order_id="o07")   # no shard needed to read by key
        print(f"\ns.get(Order, order_id='o07') -> {line(o7) if o7 else None}")
        q = s.query(Order, index="gsi1", status="open")
        show('s.query(Order, index="gsi1", status="open")  # 3 partitions, merged', q, line)
        show('s.query(Order, index="gsi1", status="open").reverse().limit(3)  # latest 3',
             q.reverse().limit(3), line)
        show('s.query(Order, index="gsi1", status="open").filter(F("total") > 100)',
             q.filter(F("total") > 100), line)
        print('\n>>> pages of 2: q.page_size(2).page(cursor) until the cursor is None')
        page = q.page_size(2).page()
        number = 1
        while True:
            print(f"    page {number}: {[o.order_id for o in page.items]}")
            if page.cursor is None:
                break
            page = q.page_size(2).page(page.cursor)
            number += 1


if __name__ == "__main__":
    main()
