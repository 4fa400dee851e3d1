"""A conditional state machine: an order moves draft -> paid -> shipped, and a transition
only happens from the state it expects (``where``/``condition=``), whoever else is trying.

Run: ``python examples/state_machine.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run

from dynaorm import ConditionFailedError, Entity, F, Session, Table

shop = Table("dynaorm-example-state-machine")

TRANSITIONS = {"pay": ("draft", "paid"), "ship": ("paid", "shipped"),
               "cancel": ("draft", "cancelled")}


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "ORDER"

    order_id: str
    state: str = "draft"
    history: list[str] = []


def transition(s: Session, order_id: str, action: str) -> str:
    """Apply ``action`` if the order is in its source state; report what happened."""
    source, target = TRANSITIONS[action]
    s.update(Order, order_id=order_id).set(state=target).append(history=[action]).where(
        F("state") == source)
    try:
        s.commit()
    except ConditionFailedError as exc:
        stored = exc.item.state if isinstance(exc.item, Order) else None
        return f"{action}: refused (order is {stored!r}, not {source!r})"
    return f"{action}: {source} -> {target}"


def main() -> None:
    with run(shop, "a conditional state machine") as db:
        s = db.session()
        s.save(Order(order_id="o1"))
        s.commit()
        for action in ("ship", "pay", "cancel", "pay", "ship"):
            print(transition(s, "o1", action))
        order = s.get(Order, order_id="o1")
        assert order is not None
        print(f"final: state={order.state!r} history={order.history}")

        # a conditional save of a loaded object: archive only a shipped order
        order.history = [*order.history, "archived"]
        s.save(order, condition=F("state") == "shipped")
        s.commit()
        print(f"archived: {s.get(Order, order_id='o1', consistent=True)}")


if __name__ == "__main__":
    main()
