#!/usr/bin/env python
"""Updates (issue 7): client cost of ``add`` and of a conditional save, and history reads.

Part 1, client-side cost per operation, measured exactly as ``overhead.py`` does (the same
canned transport: every contender's botocore client answers from a canned response, so
nothing leaves the process; ``--transport stub`` leaves out botocore's own work too):

``add``        ``s.update(Counter, name=...).add(n=1); s.commit()``: one ``UpdateItem``
               (``ADD``, conditioned on ``attribute_exists(pk)``, ``ReturnValues=ALL_NEW``:
               ``update().result`` is the stored entity afterwards)
``cond_save``  a loaded Order, one field changed, ``s.save(order, condition=F("status") ==
               "open"); s.commit()``: one ``UpdateItem`` (``SET``), conditioned on the
               row existing, on the changed attribute still holding what was read (no
               lost updates) and on the caller's condition

against the same ``UpdateItem`` sent through raw botocore's client (target: within 1.10x)
and PynamoDB's ``Model.update(actions=[...], condition=...)`` (target: no slower). A new
``Session`` per operation; each contender builds its objects inside the timed loop.

Part 2, on DynamoDB Local: the items read (``ScannedCount``, counted by a
``table.on_request`` hook) by ``s.history(...).limit(5)`` of one part with 10 neighbour
parts of 6 versions each in the partition, without and with ``Meta.history_index``.

    python benchmarks/updates.py [--iterations 2000] [--repeats 5] [--transport stub]
    python benchmarks/updates.py --skip-history      # part 1 only (no DynamoDB Local)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.overhead import (
    CLOCKS,
    ENDPOINT,
    REGION,
    TABLE,
    CannedTransport,
    Contender,
    Sent,
    _fresh_ids,
    _print_rows,
    client_config,
    fmt,
    ratio,
    time_all,
)

OPS = ("add", "cond_save")
TARGET_BOTOCORE = 1.10
COUNTER_KEY = {"pk": {"S": "CTR#c1"}, "sk": {"S": "C"}}
ORDER_KEY = {"pk": {"S": "ORDER#o1"}, "sk": {"S": "O"}}


def counter_item(n: int) -> dict[str, Any]:
    """The stored counter (both discriminators' worth: dynaorm's ``_type``)."""
    return {**COUNTER_KEY, "_type": {"S": "Counter"}, "name": {"S": "c1"},
            "n": {"N": str(n)}}


def order_item() -> dict[str, Any]:
    """The stored order the conditional save starts from."""
    return {**ORDER_KEY, "_type": {"S": "Order"}, "order_id": {"S": "o1"},
            "status": {"S": "open"}, "note": {"S": "first"}, "total": {"N": "12"}}


class UpdateTransport(CannedTransport):
    """The canned transport of ``overhead.py`` for UpdateItem: the stored item afterwards
    when the request asks for it (``ReturnValues``), else ``{}``, as DynamoDB answers."""

    def __init__(self) -> None:
        super().__init__({
            "UpdateItem": b"{}",
            "GetItem": json.dumps({"Item": order_item()}).encode(),
        })
        self._counter = json.dumps({"Attributes": counter_item(42)}).encode()
        self._order = json.dumps({"Attributes": order_item()}).encode()

    def _new(self, request: bytes) -> bytes:
        return self._counter if b"CTR#" in request else self._order

    def make_api_call(self, operation: str, params: dict[str, Any]) -> dict[str, Any]:
        if operation == "UpdateItem" and "ReturnValues" in params:
            self.calls += 1
            if self.recording:
                self.sent.append(Sent(operation, json.loads(json.dumps(params, default=str))))
            out: dict[str, Any] = json.loads(self._new(str(params.get("Key")).encode()))
            return out
        return super().make_api_call(operation, params)

    def __call__(self, request: Any, event_name: str, **kwargs: Any) -> Any:
        raw = request.body if isinstance(request.body, bytes) else str(request.body).encode()
        if event_name.endswith("UpdateItem") and b'"ReturnValues"' in raw:
            saved = self._bodies["UpdateItem"]
            self._bodies["UpdateItem"] = self._new(raw)
            try:
                return super().__call__(request, event_name, **kwargs)
            finally:
                self._bodies["UpdateItem"] = saved
        return super().__call__(request, event_name, **kwargs)


# ---- contenders --------------------------------------------------------------------------


def make_dynaorm() -> Contender:
    import dynaorm
    from dynaorm import Entity, F, Session, Table

    # wire="botocore": the canned transport is a hook on the botocore client
    app = Table(TABLE, pk="pk", sk="sk", endpoint_url=ENDPOINT, region=REGION, wire="botocore")

    class Counter(Entity):
        class Meta:
            table = app
            pk = "CTR#{name}"
            sk = "C"

        name: str
        n: int = 0

    class Order(Entity):
        class Meta:
            table = app
            pk = "ORDER#{order_id}"
            sk = "O"

        order_id: str
        status: str
        note: str
        total: int

    transport = UpdateTransport()
    transport.attach(app.client)
    new_id = _fresh_ids()
    order = Session(app).get(Order, order_id="o1")  # loaded once: a persisted object
    assert order is not None

    def add() -> object:
        s = Session(app)
        u = s.update(Counter, name="c1").add(n=1)
        s.commit()
        return u.result

    def cond_save() -> object:
        s = Session(app)
        order.note = new_id()
        s.save(order, condition=F("status") == "open")
        s.commit()
        return order

    return Contender("dynaorm", getattr(dynaorm, "__version__", "?"),
                     {"add": add, "cond_save": cond_save}, transport)


def make_botocore(native_config: bool) -> Contender:
    import boto3
    import botocore

    client = boto3.client("dynamodb", endpoint_url=ENDPOINT, region_name=REGION,
                          config=client_config(native_config))
    transport = UpdateTransport()
    transport.attach(client)
    new_id = _fresh_ids()
    last = {"note": "first"}

    def add() -> object:
        return client.update_item(
            TableName=TABLE, Key={"pk": {"S": "CTR#c1"}, "sk": {"S": "C"}},
            UpdateExpression="ADD #n0 :v0", ConditionExpression="attribute_exists(#n1)",
            ExpressionAttributeNames={"#n0": "n", "#n1": "pk"},
            ExpressionAttributeValues={":v0": {"N": "1"}},
            ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD")

    def cond_save() -> object:
        note = new_id()
        out = client.update_item(
            TableName=TABLE, Key={"pk": {"S": "ORDER#o1"}, "sk": {"S": "O"}},
            UpdateExpression="SET #n0 = :v0",
            ConditionExpression="(attribute_exists(#n1) AND #n0 = :v1) AND #n2 = :v2",
            ExpressionAttributeNames={"#n0": "note", "#n1": "pk", "#n2": "status"},
            ExpressionAttributeValues={":v0": {"S": note}, ":v1": {"S": last["note"]},
                                       ":v2": {"S": "open"}},
            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        last["note"] = note
        return out

    return Contender("botocore", botocore.__version__, {"add": add, "cond_save": cond_save},
                     transport)


def make_pynamodb() -> Contender:
    import pynamodb
    from pynamodb.attributes import NumberAttribute, UnicodeAttribute
    from pynamodb.models import Model

    class PCounter(Model):
        class Meta:
            table_name = TABLE
            host = ENDPOINT
            region = REGION

        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        type = UnicodeAttribute(attr_name="_type", default="Counter")
        name = UnicodeAttribute()
        n = NumberAttribute(default=0)

    class POrder(Model):
        class Meta:
            table_name = TABLE
            host = ENDPOINT
            region = REGION

        pk = UnicodeAttribute(hash_key=True)
        sk = UnicodeAttribute(range_key=True)
        type = UnicodeAttribute(attr_name="_type", default="Order")
        order_id = UnicodeAttribute()
        status = UnicodeAttribute()
        note = UnicodeAttribute()
        total = NumberAttribute()

    transport = UpdateTransport()
    for model in (PCounter, POrder):
        transport.attach(model._get_connection().connection.client)
    new_id = _fresh_ids()
    order = POrder.get("ORDER#o1", "O")  # loaded once, like dynaorm's

    def add() -> object:
        counter = PCounter("CTR#c1", "C", name="c1")
        counter.update(actions=[PCounter.n.add(1)], condition=PCounter.pk.exists())
        return counter

    def cond_save() -> object:
        old = order.note
        order.update(actions=[POrder.note.set(new_id())],
                     condition=POrder.pk.exists() & (POrder.note == old)
                     & (POrder.status == "open"))
        return order

    return Contender("pynamodb", pynamodb.__version__, {"add": add, "cond_save": cond_save},
                     transport)


def check(contenders: list[Contender], show: bool) -> None:
    """Each op sends exactly one conditioned UpdateItem (and a second call another)."""
    for c in contenders:
        for op, fn in c.ops.items():
            c.transport.recording, c.transport.sent = True, []
            fn()
            fn()
            c.transport.recording = False
            sent = c.transport.sent
            ok = (len(sent) == 2 and all(s.operation == "UpdateItem" for s in sent)
                  and all("ConditionExpression" in s.body for s in sent))
            if not ok:
                raise SystemExit(f"{c.name} {op}: sent {[(s.operation, s.body) for s in sent]}")
            if show:
                print(f"{c.name} {op}: {json.dumps(sent[1].body, sort_keys=True)}")


# ---- history: items read, on DynamoDB Local ----------------------------------------------


def history_items_read(parts: int = 11, versions: int = 6) -> dict[str, int]:
    """Items read by ``history(...).limit(5)``, without and with ``Meta.history_index``."""
    from dynaorm import LSI, Entity, Table
    from dynaorm.protocol.events import RequestEvent
    from dynaorm.testing import use_tables
    from tests.support.ddb_local import DynamoDBLocal

    history_table = Table("dynaorm-bench-history", indexes=[LSI("lsi1", sk="lsi1sk")])

    class Plain(Entity):
        class Meta:
            table = history_table
            pk = "PLAIN#{site}"
            sk = "{part}"
            versioned = True

        site: str
        part: str
        notes: str = ""
        version: int = 0

    class Indexed(Entity):
        class Meta:
            table = history_table
            pk = "INDEXED#{site}"
            sk = "{part}"
            versioned = True
            history_index = "lsi1"

        site: str
        part: str
        notes: str = ""
        version: int = 0

    scanned: list[int] = []

    def hook(event: RequestEvent) -> None:
        if event.operation == "Query" and event.response is not None:
            scanned.append(int(event.response.get("ScannedCount", 0)))

    out: dict[str, int] = {}
    with DynamoDBLocal() as ddb, use_tables(history_table, endpoint_url=ddb.endpoint_url) as db:
        history_table.on_request(hook)
        for cls in (Plain, Indexed):
            s = db.session()
            objs = [cls(site="E1", part=f"p{i:02d}") for i in range(parts)]
            for n in range(versions):
                for o in objs:
                    o.notes = f"n{n}"
                    s.save(o)
                s.commit()
            scanned.clear()
            got = s.history(cls, site="E1", part="p05").limit(5).all()
            assert [h.__dict__["version"] for h in got] == [1, 2, 3, 4, 5], got
            out["with" if cls is Indexed else "without"] = sum(scanned)
            out[f"requests_{'with' if cls is Indexed else 'without'}"] = len(scanned)
    return out


# ---- main ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=None)
    parser.add_argument("--transport", choices=("botocore", "stub"), default="botocore")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="process")
    parser.add_argument("--native-config", action="store_true")
    parser.add_argument("--show-requests", action="store_true")
    parser.add_argument("--skip-history", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    warmup = args.warmup if args.warmup is not None else max(50, args.iterations // 10)
    CannedTransport.stub = args.transport == "stub"
    makers: dict[str, Callable[[], Contender]] = {
        "dynaorm": make_dynaorm, "pynamodb": make_pynamodb,
        "botocore": lambda: make_botocore(args.native_config)}
    contenders = [make() for make in makers.values()]
    check(contenders, args.show_requests)
    raw = time_all(contenders, list(OPS), args.iterations, args.repeats, warmup, args.clock)
    med = {op: {name: statistics.median(v) for name, v in row.items()}
           for op, row in raw.items()}
    print(f"client cost per operation, µs (median of {args.repeats} x {args.iterations}, "
          f"transport {args.transport}, clock {args.clock})")
    rows = []
    for op in OPS:
        d, p, b = (med[op].get(n) for n in ("dynaorm", "pynamodb", "botocore"))
        rows.append([op, fmt(d, ".1f"), fmt(p, ".1f"), fmt(b, ".1f"), fmt(ratio(d, b), ".2f", "x"),
                     fmt(ratio(d, p), ".2f", "x")])
    _print_rows(["op", "dynaorm µs", "pynamodb µs", "botocore µs", "dynaorm/botocore",
                 "dynaorm/pynamodb"], rows)
    for op in OPS:
        d, p, b = (med[op]["dynaorm"], med[op]["pynamodb"], med[op]["botocore"])
        slower = f"no slower than PynamoDB: {'met' if d <= p else 'NOT met'} ({d / p:.2f}x)"
        if args.transport == "stub":  # botocore does no work: only the libraries' own cost
            print(f"  {op}: library cost above raw botocore: dynaorm +{d - b:.1f} µs, "
                  f"PynamoDB +{p - b:.1f} µs; {slower}")
        else:
            near = "met" if d / b <= TARGET_BOTOCORE else "NOT met"
            print(f"  {op}: <= {TARGET_BOTOCORE}x botocore: {near} ({d / b:.2f}x); {slower}")
    history: dict[str, int] = {}
    if not args.skip_history:
        history = history_items_read()
        print("\nhistory(...).limit(5), 10 neighbour parts x 6 versions (DynamoDB Local)")
        _print_rows(["", "items read", "requests"], [
            ["without history_index", str(history["without"]), str(history["requests_without"])],
            ["with history_index", str(history["with"]), str(history["requests_with"])],
            ["ratio", fmt(ratio(history["without"], history["with"]), ".1f", "x"), ""]])
    if args.json:
        args.json.write_text(json.dumps({"batches": raw, "medians": med, "history": history},
                                        indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
