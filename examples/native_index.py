"""Orders by tenant and region, newest first: a native multi-attribute index (no synthetic
key, no backfill), queried by every partition attribute and a leading run of sort ones.

Run: ``python examples/native_index.py [--endpoint-url URL]``
"""

from __future__ import annotations

from datetime import UTC, datetime

from _support import run

from dynaorm import GSI, Entity, KeyTemplateError, Table

shop = Table("dynaorm-example-native-index", indexes=[
    GSI("by_place", pk=("tenant_id", "region"), sk=("placed", "total")),
], key_types={"total": "N"})


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "ORDER"

    order_id: str
    tenant_id: str
    region: str
    placed: datetime
    total: int


def main() -> None:
    with run(shop, "a native multi-attribute index") as db:
        s = db.session()
        day = datetime(2026, 3, 1, tzinfo=UTC)
        for i, (region, total) in enumerate([("eu", 30), ("eu", 12), ("us", 99), ("eu", 45)]):
            s.save(Order(order_id=f"o{i}", tenant_id="acme", region=region,
                         placed=day.replace(hour=9 + i), total=total))
        s.commit()
        eu = s.query(Order, index="by_place", tenant_id="acme", region="eu")
        print("acme/eu newest first:", [o.order_id for o in eu.reverse()])
        print("acme/eu from 10:00:", [o.order_id for o in eu.gte(placed=day.replace(hour=10))])
        at_nine = s.query(Order, index="by_place", tenant_id="acme", region="eu",
                          placed=day.replace(hour=9))
        print("acme/eu at 09:00 over 20:", [o.order_id for o in at_nine.gt(total=20)])
        try:
            s.query(Order, index="by_place", tenant_id="acme").all()
        except KeyTemplateError:
            print("a query without every partition attribute: refused before sending")


if __name__ == "__main__":
    main()
