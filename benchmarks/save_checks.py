#!/usr/bin/env python
"""What ``save`` checking what changed costs (issue 42, contract 20): the planning of a
save (pure: :func:`dynaorm.write.save.plan_save`, the code that runs on every save) with
the field check (:func:`dynaorm.schema.checks.check_fields`) and with it replaced by a no-op,
for a new object (every field is checked) and a loaded one with one field changed (that
field is checked). Microseconds per plan, best of ``--repeats`` runs.

    python benchmarks/save_checks.py [--iterations 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import Field

import dynaorm.write.save as save_module
from dynaorm import Entity, Table
from dynaorm.schema.entity import encode_entity, spec_of
from dynaorm.write.records import stored_values
from dynaorm.write.save import SaveEntry, plan_save

table = Table("bench-save-checks")


class Order(Entity):
    class Meta:
        table = table
        pk = "ORDER#{order_id}"
        sk = "ORDER"

    order_id: str
    customer: str = "c1"
    status: str = "open"
    qty: int = Field(1, ge=0, le=1000)
    price: float = Field(9.5, gt=0)
    tags: list[str] = Field(default_factory=lambda: ["a", "b"], max_length=10)
    note: str = ""


def _loaded() -> Order:
    """An Order as a read leaves it (its state holds the stored item)."""
    spec = spec_of(Order)
    return Order._from_item(encode_entity(Order(order_id="o1"), spec), spec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    new = Order(order_id="o2")
    loaded = _loaded()
    loaded.qty = 7
    state = loaded._dynaorm_state
    cases = {"new object (7 fields checked)": (new, None),
             "loaded, one field changed (1 checked)": (loaded, state)}
    real = save_module.check_fields
    for label, (obj, st) in cases.items():
        entry = SaveEntry(obj)
        before = None if st is None else stored_values(spec_of(Order), st)[0]
        check = min(timeit.repeat(lambda o=obj, b=before: real(o, b),
                                  number=args.iterations, repeat=args.repeats))
        figures: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.repeats):  # interleaved: a shared machine's noise hits both
            for on in (True, False):
                save_module.check_fields = real if on else (lambda *_: None)
                figures[on].append(timeit.timeit(lambda e=entry, s=st: plan_save(e, s, 0),
                                                 number=args.iterations))
        save_module.check_fields = real
        with_, without = (min(figures[on]) / args.iterations * 1e6 for on in (True, False))
        print(f"{label}: check_fields {check / args.iterations * 1e6:.2f} us; plan_save "
              f"{with_:.2f} us with it, {without:.2f} us without")

if __name__ == "__main__":
    main()
