#!/usr/bin/env python
"""Client CPU of the key-shape claims on a table without a type attribute, two checkouts
side by side in one run: rendering a write's key (``EntitySpec.primary_key``, which
refuses a key another entity's literal or a rule's row kind claims) and classifying a
read item (``EntitySpec.owns``, which asks ``unclaimed.ruled_over``). Pure: no engine.

Usage::

    .venv/bin/python benchmarks/key_claims.py BEFORE_ROOT AFTER_ROOT [--repeats 7]

Each root is a checkout whose ``dynaorm`` is imported (in a child process per repeat,
the two interleaved); the median microseconds per call are printed side by side.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

CHILD = r'''
import json, timeit
from typing import Any
import dynaorm
from dynaorm import Rule, register_rule
from dynaorm.schema.rules import Rows
from dynaorm.values.records import Fail, Put, Role

class Audit(Rule):
    __slots__ = ()
    name = "bench-audit"
    order = 90
    transforms = False

    @classmethod
    def build(cls, decl: Any) -> "Audit | None":
        return cls() if decl.type_name.startswith("Audited") else None

    def rows(self, change: Any) -> Rows:
        key = change.new_key or change.old_key
        what = "delete" if change.new is None else "insert" if change.old is None else "update"
        at = {"pk": f"AUDIT#{key['pk']}", "sk": f"{what}#{key['sk']}#{change.staged:06d}"}
        item = {"pk": {"S": at["pk"]}, "sk": {"S": at["sk"]}}
        return Rows((), (Put(at, item, None, change.origin(Role.ROW, Fail.CALLER, owner=at)),))

register_rule(Audit)
shop = dynaorm.Table("bench-shop", type_attribute=None)
home = dynaorm.Table("bench-audit", type_attribute=None)

def keyed(table: Any, name: str, pk: str, sk: str, **fields: Any) -> Any:
    meta = type("Meta", (), {"table": table, "pk": pk, "sk": sk, "__module__": __name__,
                             "__qualname__": f"{name}.Meta"})
    return type(name, (dynaorm.Entity,), {"__annotations__": dict.fromkeys(fields, str),
                                          "__module__": __name__, "__qualname__": name,
                                          "Meta": meta})

Order = keyed(shop, "Order", "STORE#{store_id}", "{ts}", store_id=1, ts=1)
Store = keyed(shop, "Store", "STORE#{store_id}", "METADATA", store_id=1)
Customer = keyed(shop, "Customer", "CUSTOMER#{cid}", "PROFILE", cid=1)
Audited = keyed(home, "AuditedOrder", "ORDER#{oid}", "ORDER", oid=1)
Ledger = keyed(home, "Ledger", "AUDIT#{kind}#{ref}", "{what}#{a}#{b}", kind=1, ref=1,
               what=1, a=1, b=1)

def item(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": sk}, "n": {"N": "1"}}

cases = [
    ("put key: template beside a literal (Order)", Order.__dynaorm_spec__.primary_key,
     {"store_id": "s1", "ts": "2024-01-01"}),
    ("put key: nothing claims it (Customer)", Customer.__dynaorm_spec__.primary_key,
     {"cid": "c1"}),
    ("put key: beside rule rows (Ledger)", Ledger.__dynaorm_spec__.primary_key,
     {"kind": "K", "ref": "1", "what": "w", "a": "a", "b": "b"}),
    ("read: classify an Order item", Order.__dynaorm_spec__.owns,
     item("STORE#s1", "2024-01-01")),
    ("read: classify a Customer item", Customer.__dynaorm_spec__.owns,
     item("CUSTOMER#c1", "PROFILE")),
    ("read: classify a Ledger item", Ledger.__dynaorm_spec__.owns, item("AUDIT#K#1", "w#a#b")),
    ("read: classify an audit row (Ledger asks)", Ledger.__dynaorm_spec__.owns,
     item("AUDIT#ORDER#1", "insert#ORDER#000001")),
]
out = {}
for label, fn, arg in cases:
    fn(arg)
    n = 3000
    out[label] = min(timeit.repeat(lambda: fn(arg), number=n, repeat=3)) / n * 1e6
print(json.dumps(out))
'''


def main() -> None:
    args = sys.argv[1:]
    repeats = 7
    if "--repeats" in args:
        at = args.index("--repeats")
        repeats = int(args[at + 1])
        del args[at:at + 2]
    roots = args[:2]
    runs: dict[str, list[dict[str, float]]] = {r: [] for r in roots}
    for _ in range(repeats):
        for root in roots:
            env = {**os.environ, "PYTHONPATH": root}
            done = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=root,
                                  capture_output=True, text=True, check=True)
            runs[root].append(json.loads(done.stdout))
    labels = list(runs[roots[0]][0])
    head = f"us/call (median of {repeats})"
    print(f"{head:48} {'before':>8} {'after':>8} {'ratio':>6}")
    for label in labels:
        a, b = (statistics.median(r[label] for r in runs[root]) for root in roots)
        print(f"{label:48} {a:8.2f} {b:8.2f} {b / a:6.2f}")


if __name__ == "__main__":
    main()
