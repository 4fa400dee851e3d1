"""Writing beside another mapper: a Java order service (the AWS SDK's Enhanced Client,
``@DynamoDbVersionAttribute``) keeps writing the table dynaorm adopted; ``Meta.lock``
keeps its optimistic lock, so neither side loses the other's updates.

Run: ``python examples/beside_another_mapper.py [--endpoint-url URL]``
"""

from __future__ import annotations

from typing import Any

from _support import run

from dynaorm import ConcurrentModificationError, Entity, Table

orders = Table("dynaorm-example-beside", pk="pk", sk="sk", type_attribute=None)


class Order(Entity):
    class Meta:
        table = orders
        pk = "ORDER#{order_id}"
        sk = "ORDER"
        lock = "version"  # the Java side's version: N, 1 for a new item, +1 per write

    order_id: str
    status: str = "NEW"
    qty: int = 0
    version: int | None = None


def java_save(client: Any, item: dict[str, Any], loaded: int | None) -> str:
    """The Enhanced Client's putItem: the next version, conditioned on the loaded one."""
    item = {**item, "version": {"N": str(1 if loaded is None else loaded + 1)}}
    cond = {"ConditionExpression": "attribute_not_exists(#v)"} if loaded is None else {
        "ConditionExpression": "#v = :old", "ExpressionAttributeValues": {
            ":old": {"N": str(loaded)}}}
    try:
        client.put_item(TableName=orders.name, Item=item,
                        ExpressionAttributeNames={"#v": "version"}, **cond)
    except client.exceptions.ConditionalCheckFailedException:
        return "refused"
    return "saved"


def main() -> None:
    with run(orders, "writing beside another mapper (Meta.lock)") as db:
        client = orders.client
        java_item = {"pk": {"S": "ORDER#o1"}, "sk": {"S": "ORDER"}, "order_id": {"S": "o1"},
                     "status": {"S": "NEW"}, "qty": {"N": "1"}}
        print(f"java creates o1: {java_save(client, java_item, None)}")
        s = db.session()
        order = s.get(Order, order_id="o1")
        assert order is not None
        print(f"dynaorm loads o1 at version {order.version}")
        order.qty = 3
        s.save(order)
        s.commit()
        print(f"dynaorm saves qty=3: version {order.version}")
        stale = {**java_item, "status": {"S": "PAID"}}  # (the Java side loaded version 1)
        print(f"java saves from its stale copy: {java_save(client, stale, 1)}")
        loaded = s.get(Order, order_id="o1")  # (loaded at 2)
        assert loaded is not None
        s.delete(loaded)
        reloaded = {**stale, "qty": {"N": "3"}}  # (the Java side reloads: version 2)
        print(f"java saves from a fresh copy: {java_save(client, reloaded, 2)}")
        try:
            s.commit()
        except ConcurrentModificationError:
            print("dynaorm's delete from its stale copy: refused")
        fresh = s.get(Order, order_id="o1")
        assert fresh is not None
        print(f"o1 now: {fresh.status}, qty {fresh.qty}, version {fresh.version}")
        new = Order(order_id="o2")
        s.save(new)
        s.commit()
        print(f"dynaorm creates o2 at version {new.version}")


if __name__ == "__main__":
    main()
