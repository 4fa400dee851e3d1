"""The model as data and what it costs: ``table.model()`` (which entity lands in which
index, the rows each write writes), the design in the AWS DynamoDB MCP server's
``schema.json``, ``dynaorm.explain`` of a save with unique guards and of a query over
4 KB (sending nothing), and the consumed capacity of the real commit by entity and role
(DynamoDB Local counts the equal actions of a transaction once; moto reports none for a
transaction).

Run: ``python examples/model_and_cost.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run

from dynaorm import GSI, Entity, Table, Unique, explain
from dynaorm.formats import export

shop = Table("dynaorm-example-model", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Customer(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "PROFILE"
        unique = (Unique("email", normalize=str.lower),)

    customer_id: str
    email: str
    name: str = ""


class Order(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "ORDER#{order_id}"
        indexes = {"gsi1": ("STATUS#{status}", "{order_id}")}

    customer_id: str
    order_id: str
    status: str = "open"
    lines: list[str] = []


def main() -> None:
    with run(shop, "the model as data, and what it costs") as db:
        model = shop.model()
        for entity in model["entities"]:
            print(f"{entity['name']}: lands in {entity['lands_in'] or '-'}; "
                  f"a save writes {entity['writes']['insert']}")
        (schema,) = export(model, "mcp")[0]["tables"]
        print(f"schema.json: entities {sorted(schema['entities'])}, GSIs "
              f"{[g['name'] for g in schema['gsi_list']]}")

        s = db.session()
        s.save(Customer(customer_id="c1", email="Ada@example.com", name="Ada"))
        found = explain(s)
        print(found)
        print(f"by role: {found.by_role()}")
        s.commit()
        print(f"consumed, by entity and role: {shop.db.capacity(reset=True)}")

        orders = [Order(customer_id="c1", order_id=f"o{i}", lines=["item" * 60] * 5)
                  for i in range(6)]
        query = s.query(Order, index="gsi1", status="open")
        print(f"a query of {len(orders)} open orders: "
              f"{explain(query, items=orders).read_units} read units (eventually consistent)")
        print(f"consistent, of the customer's partition: "
              f"{explain(s.query(Order, customer_id='c1').consistent(), items=orders).read_units}")


if __name__ == "__main__":
    main()
