"""A rule of your own, in one module: prices stored as whole cents.

``price: Cents[Decimal]`` is read and written as a ``Decimal`` (``Decimal("12.34")``) and
stored as a number of cents (``1234``), as another service of the same table expects it.
The rule is written against dynaorm's public rule protocol only (``dynaorm.Rule``,
``dynaorm.register_rule``; docs/guide/rules.md): ``build`` reads the entity's
declaration, ``encode`` changes every row written, ``decode`` every row read (get, query,
scan, ``values()``, streams, history, exports: nothing else in dynaorm changes), and
``refuse`` keeps the field out of conditions and filters, where a value in dollars would
be compared with cents. A value with a fraction of a cent is refused before sending.

A value transform like this one composes with the built-in ones: rules encode in the
order they run (``order``) and decode in the reverse order. dynaorm's own ``Compressed``
and ``Encrypted`` are written the same way.

Run: ``python examples/cents_rule.py [--endpoint-url URL]``
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any, TypeVar

from _support import run

from dynaorm import DynaormError, Entity, F, Rule, Table, register_rule

T = TypeVar("T")
#: the marker of a field stored in cents: ``price: Cents[Decimal]``
CENTS = "example:cents"
Cents = Annotated[T, CENTS]


@register_rule
class InCents(Rule):
    """``Cents[Decimal]`` fields, stored as a whole number of cents."""

    __slots__ = ("fields", "owner")
    name = "cents"
    answers = {  # (what it means on each surface: the interaction matrix asks every rule)
        "save": "stored as a whole number of cents; a fraction of a cent is refused",
        "update": "set() is stored in cents as a save is; add() and conditions are refused",
        "delete": "nothing of its own",
        "get": "read back in units", "query": "filters naming it are refused; results in units",
        "values": "in units", "scan": "as query", "stream": "images read in units",
        "history": "version rows read in units", "migrate": "moved as stored",
        "backfill": "fn sees units", "check": "nothing of its own", "export": "in units",
        "search": "nothing of its own", "messages": "in units", "logs": "as messages",
        "spans": "as messages",
    }

    def __init__(self, fields: Mapping[str, str], owner: str) -> None:
        self.fields = fields  # stored attribute -> field name
        self.owner = owner

    @classmethod
    def build(cls, decl: Any) -> InCents | None:
        fields = {decl.attr(n): n for n, info in decl.cls.model_fields.items()
                  if CENTS in info.metadata}
        return cls(fields, decl.owner) if fields else None

    def encode(self, item: dict[str, Any], key: Mapping[str, Any],
               stored: Mapping[str, Any] | None) -> None:
        for attr in self.fields.keys() & item.keys():
            if "N" in item[attr]:
                cents = Decimal(item[attr]["N"]) * 100
                if cents != cents.to_integral_value():
                    raise DynaormError(f"{self.owner}.{self.fields[attr]}: "
                                       f"{item[attr]['N']} is not a whole number of cents")
                item[attr] = {"N": str(int(cents))}

    def decode(self, item: dict[str, Any]) -> dict[str, Any]:
        return {a: {"N": str(Decimal(v["N"]) / 100)} if a in self.fields and "N" in v else v
                for a, v in item.items()}

    def refuse(self, use: str, name: str) -> None:
        if name in self.fields.values() and use not in ("set", "remove", "projection"):
            raise DynaormError(f"{self.owner}.{name}: stored in cents, it cannot be in {use}")


shop = Table("dynaorm-example-cents")


class Product(Entity):
    class Meta:
        table = shop
        pk = "PRODUCT#{sku}"
        sk = "PRODUCT"

    sku: str
    title: str
    price: Cents[Decimal]


def main() -> None:
    with run(shop, "a rule of your own: prices stored in cents") as db:
        s = db.session()
        s.save(Product(sku="p1", title="Pen", price=Decimal("12.34")))
        s.commit()
        raw = next(i for i in db.scan_raw() if i["pk"]["S"] == "PRODUCT#p1")
        print("stored price:", raw["price"])
        got = s.get(Product, sku="p1")
        assert got is not None
        print("read back:", repr(got.price))
        print("values():", s.query(Product, sku="p1").values("price"))
        s.update(Product, sku="p1").set(price=Decimal("9.99"))
        s.commit()
        print("after set():", next(i for i in db.scan_raw())["price"])
        try:
            s.save(Product(sku="p2", title="Ink", price=Decimal("0.125")))
            s.commit()
        except DynaormError as exc:
            print("refused:", exc)
        try:
            s.scan(Product).filter(F("price") > 5).all()
        except DynaormError as exc:
            print("filter refused:", exc)


if __name__ == "__main__":
    main()
