"""Tests that behave like DynamoDB: an index read right after a write misses it (under
``index_lag``, as on DynamoDB), a transaction replayed with its token is applied once, a
throttle says why (``ThrottledError.reasons``), and a session dropped before its commit
says what it lost. On an endpoint, the lag goes through a fault proxy in front of it.

Run: ``python examples/like_dynamodb.py [--endpoint-url URL]``
"""

from __future__ import annotations

import gc
import uuid
import warnings
from contextlib import ExitStack

from _support import run, show

from dynaorm import GSI, Entity, RequestError, Table, ThrottledError, ThrottlingReason
from dynaorm.testing import TestBackend, fault_proxy, index_lag, inject_faults, use_tables

shop = Table("dynaorm-example-like", indexes=[GSI("by_status", pk="status_pk",
                                                  sk="status_sk")])


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "ORDER"
        indexes = {"by_status": ("STATUS#{status}", "ORDER#{order_id}")}

    order_id: str
    status: str = "open"


def lagging_index(db: TestBackend) -> None:
    open_ = "db.session().query(Order, index='by_status', status='open')"
    with index_lag(30) as lag:
        with db.session() as s:
            s.save(Order(order_id="o1"))
        show(f"{open_}  # right after the save", db.session().query(
            Order, index="by_status", status="open").all())
        show("db.session().get(Order, order_id='o1', consistent=True)",
             [db.session().get(Order, order_id="o1", consistent=True)])
        lag.advance(30)
        show(f"{open_}  # 30 s later", db.session().query(
            Order, index="by_status", status="open").all())


def replayed_token(db: TestBackend) -> None:
    def charge(token: str, amount: str = "1") -> None:
        db.table.db.send("TransactWriteItems", {"ClientRequestToken": token, "TransactItems": [
            {"Update": {"TableName": db.table.name, "UpdateExpression": "ADD charged :n",
                        "Key": {"pk": {"S": "ORDER#o1"}, "sk": {"S": "ORDER"}},
                        "ExpressionAttributeValues": {":n": {"N": amount}}}}]})

    key = str(uuid.uuid4())  # (an engine keeps a token for ten minutes, whatever the table)
    charge(key)
    charge(key)  # a client's retry: the same token, the same items
    show("charged after a retry with the same token", [db.scan()[0]["charged"]])
    try:
        charge(key, amount="5")
    except RequestError as error:
        show("the same token, other items", [error.code])


def throttled(db: TestBackend) -> None:
    db.table.max_wait = 0  # (retry without waiting)
    with inject_faults(db.table) as faults:
        index = f"arn:aws:dynamodb:us-east-1:123456789012:table/{db.table.name}/index/by_status"
        faults.throttle("PutItem", times=None, reasons=[
            ThrottlingReason("IndexWriteProvisionedThroughputExceeded", index)])
        try:
            with db.session() as s:
                s.save(Order(order_id="o2"))
        except ThrottledError as error:
            show("ThrottledError: code, attempts", [(error.code, error.attempts)])
            show("reasons: (reason, table, index, write)",
                 [(r.reason, r.table, r.index, r.write) for r in error.reasons])


def dropped(db: TestBackend) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = db.session()
        s.save(Order(order_id="o3"))
        del s  # never committed
        gc.collect()
    show("a session dropped before its commit warns",
         [str(w.message) for w in caught if "dropped" in str(w.message)])


def main() -> None:
    with run(shop, "tests that behave like DynamoDB: lagging indexes, tokens, throttling "
             "reasons, dropped sessions") as db, ExitStack() as stack:
        if db.endpoint_url:  # an engine: index lag through a fault proxy in front of it
            db = stack.enter_context(use_tables(shop, endpoint_url=stack.enter_context(
                fault_proxy(db.endpoint_url))))
        lagging_index(db)
        replayed_token(db)
        throttled(db)
        dropped(db)


if __name__ == "__main__":
    main()
