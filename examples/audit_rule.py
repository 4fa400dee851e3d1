"""A rule of your own that adds rows: an audit row beside every write of an entity.

``Meta.audited = True`` gives an entity one audit row per write (``AUDIT#<its pk>`` /
``<what>#<its sk>#<when>``), written in the same transaction as the row itself, so a
failed commit leaves none and a successful one always has it. The rule answers one hook,
``rows(change)``: the write records it adds to a write of the entity (here one ``Put``,
placed after the entity's own row). Everything else follows from it: saves, updates by
key (read first, since a rule that adds rows may follow the stored values: ``reads``),
deletes, the cost ``explain`` gives, and the row kinds ``table.model()`` lists. Nothing
else in dynaorm changes (docs/guide/rules.md, "A rule that adds rows").

Run: ``python examples/audit_rule.py [--endpoint-url URL]``
"""

from __future__ import annotations

import itertools
from typing import Any

from _support import run

from dynaorm import Entity, Table
from dynaorm.rules import Change, Declaration, Fail, Put, Role, Rows, Rule, register_rule

#: the type attribute of an audit row (never an entity's: reads skip it)
AUDIT_TYPE = "example:audit"
_ticks = itertools.count(1)  # (a real rule would take a timestamp)


@register_rule
class Audited(Rule):
    """``Meta.audited = True``: an audit row beside every write."""

    __slots__ = ("pk", "sk", "type_attr")
    name = "audited"
    options = ("audited",)  # (the Meta option it reads)
    order = 90
    transforms = False  # (it changes no value: reads may stay on their fastest path)
    answers = {  # (what it means on each surface: the interaction matrix asks every rule)
        "save": "an audit row in the same transaction", "update": "an audit row too (read "
        "first)", "delete": "an audit row too", "get": "audit rows are never entities",
        "query": "audit rows are skipped (their own type)", "values": "as query",
        "scan": "as query", "stream": "an audit row is a record of its own type",
        "history": "nothing of its own", "migrate": "a move writes an audit row",
        "backfill": "each write an audit row", "check": "nothing of its own",
        "export": "audit rows are not the entity's", "search": "nothing of its own",
        "messages": "nothing of its own", "logs": "nothing of its own",
        "spans": "nothing of its own",
    }

    def __init__(self, pk: str, sk: str | None, type_attr: str | None) -> None:
        self.pk, self.sk, self.type_attr = pk, sk, type_attr

    @classmethod
    def build(cls, decl: Declaration) -> Audited | None:
        if not decl.meta.get("audited"):
            return None  # (not for this entity)
        return cls(decl.table.pk, decl.table.sk, decl.table.type_attribute)

    def rows(self, change: Change) -> Rows:
        key = change.new_key or change.old_key
        assert key is not None
        what = ("delete" if change.new is None else "insert" if change.old is None
                else "update")
        at = {self.pk: f"AUDIT#{key[self.pk]}"}
        if self.sk is not None:
            at[self.sk] = f"{what}#{key[self.sk]}#{next(_ticks):06d}"
        item = {a: {"S": v} for a, v in at.items()}
        if self.type_attr is not None:
            item[self.type_attr] = {"S": AUDIT_TYPE}
        return Rows(after=(Put(at, item, None, change.origin(Role.ROW, Fail.CALLER,
                                                             owner=at)),))


shop = Table("dynaorm-example-audit-rule")


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "ORDER"
        audited = True

    order_id: str
    total: int


def _audit(db: Any) -> list[str]:
    return sorted(i["sk"]["S"] for i in db.scan_raw() if i["pk"]["S"] == "AUDIT#ORDER#o1")


def main() -> None:
    with run(shop, "a rule of your own that adds rows: an audit row per write") as db:
        s = db.session()
        s.save(Order(order_id="o1", total=10))
        s.commit()
        s.update(Order, order_id="o1").set(total=12)
        s.commit()
        got = s.get(Order, order_id="o1")
        assert got is not None
        print("read back:", got.total, "| orders in a scan:", len(s.scan(Order).all()))
        s.delete(got)
        s.commit()
        print("audit rows:", _audit(db))
        (model,) = [e for e in shop.model()["entities"] if e["name"] == "Order"]
        print("row kinds:", sorted(k["role"] for k in model["rows"]))
        print("a save writes:", model["writes"]["insert"])


if __name__ == "__main__":
    main()
