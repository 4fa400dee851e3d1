"""The aggregation pattern of single-table design: a stream consumer keeps the number of
orders in each status in the table itself, so "how many orders are open?" is one GetItem
instead of a scan.

The table's stream (``Table(stream="NEW_AND_OLD_IMAGES")``) carries every write;
``table.changes(records)`` classifies each record (which entity, inserted, modified or
removed, with the old and new objects); the consumer turns the order changes into +1/-1
per status and applies them with ``s.update(StatusCount, ...).add(count=n)``: an atomic
increment, no read. The consumer ignores its own ``StatusCount`` writes, which the stream
carries too.

Run: ``python examples/stream_aggregate.py [--endpoint-url URL]``
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import botocore.session
from _support import run, show

from dynaorm import Change, Entity, Session, Table
from dynaorm.client.settings import local_credentials

shop = Table("dynaorm-example-aggregate", stream="NEW_AND_OLD_IMAGES")


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{order_id}"
        sk = "ORDER"

    order_id: str
    status: str
    total: int = 0


class StatusCount(Entity):
    """The aggregate: one item per status, all in one partition."""

    class Meta:
        table = shop
        pk = "STATS"
        sk = "STATUS#{status}"

    status: str
    count: int = 0


# -- the consumer --------------------------------------------------------------------------
def deltas(changes: Iterable[Change]) -> Counter[str]:
    """+1/-1 per status from order changes; everything else (the counters' own updates,
    guards, items no entity owns) is ignored. Pure: the heart of the consumer."""
    out: Counter[str] = Counter()
    for change in changes:
        if change.entity is not Order or change.role != "row":
            continue
        old = change.old.status if isinstance(change.old, Order) else None
        new = change.new.status if isinstance(change.new, Order) else None
        if old == new:
            continue  # a modify that left the status alone
        if old is not None:
            out[old] -= 1
        if new is not None:
            out[new] += 1
    return out


def apply(session: Session, counts: Counter[str]) -> None:
    """Add each status's delta to its counter item, all in one transaction."""
    for status, n in sorted(counts.items()):
        if n:
            session.update(StatusCount, status=status, upsert=True).add(count=n)
    session.commit()


class StreamReader:
    """Reads the table's stream with GetRecords, shard by shard, from where it stopped."""

    def __init__(self, table: Table) -> None:
        desc = table.client.describe_table(TableName=table.name)["Table"]
        self.arn: str = desc["LatestStreamArn"]
        region = table.client.meta.region_name
        # In-process moto routes "streams.dynamodb.<region>.amazonaws.com" to its DynamoDB
        # backend; this spelling reaches its streams backend. Real endpoints are unaffected.
        endpoint = (table.endpoint_url
                    or f"https://streams.dynamodb.{region}.amazonaws-com")
        self.client: Any = botocore.session.get_session().create_client(
            "dynamodbstreams", endpoint_url=endpoint, region_name=region,
            **local_credentials(table.endpoint_url))
        self.iterators: dict[str, str | None] = {}

    def poll(self) -> list[dict[str, Any]]:
        """Every record written since the last poll."""
        shards = self.client.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]
        records: list[dict[str, Any]] = []
        for shard in shards:
            sid = shard["ShardId"]
            if sid not in self.iterators:
                self.iterators[sid] = self.client.get_shard_iterator(
                    StreamArn=self.arn, ShardId=sid,
                    ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
            while self.iterators[sid]:
                out = self.client.get_records(ShardIterator=self.iterators[sid])
                self.iterators[sid] = out.get("NextShardIterator")
                records += out["Records"]
                if not out["Records"]:
                    break
        return records


def consume(reader: StreamReader, session: Session) -> Counter[str]:
    """One poll: read the new records, classify them, apply the deltas."""
    records = reader.poll()
    counts = deltas(shop.changes(records))
    kinds = Counter(f"{c.kind} {c.entity.__name__ if c.entity else '-'}"
                    for c in shop.changes(records))
    print(f"\n# consumed {len(records)} records: {dict(sorted(kinds.items()))}")
    print(f"# deltas: {dict(sorted(counts.items()))}")
    apply(session, counts)
    return counts


def counters(session: Session) -> dict[str, int]:
    return {c.status: c.count for c in session.query(StatusCount).consistent()}


def main() -> None:
    with run(shop, "stream-fed aggregate: orders per status, kept by a stream consumer") as db:
        s = db.session()
        reader = StreamReader(shop)
        s.save_many([Order(order_id=f"o{i}", status="open", total=10 * i) for i in range(6)])
        consume(reader, s)
        show("counts after 6 new orders", sorted(counters(s).items()))

        for order_id, status in (("o0", "shipped"), ("o1", "shipped"), ("o2", "cancelled")):
            order = s.get(Order, order_id=order_id, consistent=True)
            assert order is not None
            order.status = status
            s.save(order)
        o3 = s.get(Order, order_id="o3", consistent=True)
        assert o3 is not None
        o3.total = 999  # a change that leaves the status alone
        s.save(o3)
        o5 = s.get(Order, order_id="o5", consistent=True)
        assert o5 is not None
        s.delete(o5)
        s.commit()
        consume(reader, s)
        got = show("counts after 3 status changes, 1 other edit and 1 delete",
                   sorted(counters(s).items()))

        orders = [Order.model_validate(i) for i in db.scan() if i.get("_type") == "Order"]
        expected = Counter(o.status for o in orders)
        print(f"\nrecounted from the orders: {dict(sorted(expected.items()))}")
        live = {k: v for k, v in got if v}
        print("counters match the orders" if live == dict(expected) else
              f"MISMATCH: {live} != {dict(expected)}")


if __name__ == "__main__":
    main()
