"""Observe what a commit sends: a ``table.on_request`` hook sees every attempt with each
action's origin (entity, key, role), the ``dynaorm`` logger writes one DEBUG record per
attempt, and ``commit()`` returns the requests it sent and the capacity they consumed.

Run: ``python examples/observe_requests.py [--endpoint-url URL]``
"""

from __future__ import annotations

import logging
import sys

from _support import run, show

from dynaorm import GSI, Entity, RequestEvent, Table, Unique

shop = Table("dynaorm-example-observe", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Customer(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "PROFILE"
        unique = (Unique("email", normalize=str.lower),)
        indexes = {"gsi1": ("COUNTRY#{country}", "CUSTOMER#{customer_id}")}

    customer_id: str
    email: str
    country: str = "FR"


def print_request(event: RequestEvent) -> None:
    """Print each attempt and, for a write, where each action comes from."""
    outcome = "ok" if event.error is None else f"failed: {event.error.code}"
    print(f"  [hook] {event.operation} attempt {event.attempt}: {outcome}")
    for entity, key, role in event.origins:
        print(f"  [hook]   {role:<6} of {entity.__name__} {key['pk']}")


def main() -> None:
    with run(shop, "what a commit sends: hooks, the dynaorm logger, CommitResult") as db:
        shop.on_request(print_request)  # also usable as a decorator: @shop.on_request
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("  [log] %(levelname)s %(name)s: %(message)s"))
        log = logging.getLogger("dynaorm")
        log.addHandler(handler)
        log.setLevel(logging.DEBUG)

        s = db.session()
        ana = Customer(customer_id="c1", email="Ana@Example.com")
        s.save(ana)
        print("# commit a customer with a unique e-mail")
        result = s.commit()
        show("result.requests", result.requests,
             lambda r: f"{r[0]}: {len(r[1]['TransactItems'])} actions")

        print("# move her to another country: one UpdateItem")
        ana.country = "ES"
        s.save(ana)
        result = s.commit()
        show("[operation for operation, _ in result.requests]",
             [operation for operation, _ in result.requests])
        show("result.consumed_capacity", sorted(result.consumed_capacity.items()),
             lambda c: f"{c[0]}: {c[1]:g} units")

        print("# delete it without loading it: the commit reads it first to find its guard")
        s.delete(Customer(customer_id="c1", email="?"))
        result = s.commit()
        show("[operation for operation, _ in result.requests]  # after the delete",
             [operation for operation, _ in result.requests])
        log.removeHandler(handler)


if __name__ == "__main__":
    main()
