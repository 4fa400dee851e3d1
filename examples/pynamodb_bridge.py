# mypy: disable-error-code="no-untyped-call"
"""Coming from PynamoDB: one table, two services. The old one keeps its PynamoDB model;
the new one reads and writes the very same items through a dynaorm entity made from it.

Run: ``python examples/pynamodb_bridge.py [--endpoint-url URL]``
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from _support import run, show
from pynamodb.attributes import (
    JSONAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.exceptions import PutError
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex
from pynamodb.models import Model

from dynaorm import ConditionFailedError, F
from dynaorm.client.settings import local_credentials
from dynaorm.pynamodb import (
    entity_from_pynamodb,
    table_from_pynamodb,
    utc_datetime_string,
    versioned_save,
)


# -- the old service's PynamoDB model, unchanged -------------------------------------------
# (PynamoDB's typing is partial: its Index.__init_subclass__ is untyped for mypy (see the
# first line), and its `class Meta:` idiom is not its own MetaProtocol for pyright)
class ViewsIndex(GlobalSecondaryIndex["ThreadModel"]):
    class Meta:
        index_name = "by_views"
        projection = AllProjection()

    forum_name = UnicodeAttribute(hash_key=True)
    views = NumberAttribute(range_key=True)


class ThreadModel(Model):
    class Meta:  # pyright: ignore[reportIncompatibleVariableOverride]
        table_name = "dynaorm-example-pynamodb"
        host: str | None = None  # main() points both sides at the example's endpoint
        region = "us-east-1"

    forum_name = UnicodeAttribute(hash_key=True)
    subject = UnicodeAttribute(range_key=True)
    views = NumberAttribute(default=0)
    replies = NumberAttribute(attr_name="reply_count", default=0)  # stored as reply_count
    last_post = UTCDateTimeAttribute(null=True)
    tags = UnicodeSetAttribute()
    extra = JSONAttribute(null=True)
    expires = TTLAttribute(null=True)
    version = VersionAttribute()
    by_views = ViewsIndex()


# -- the new service: the same table, the same items --------------------------------------
app = table_from_pynamodb(ThreadModel)  # keys, the GSI, the TTL attribute
Thread = entity_from_pynamodb(ThreadModel, table=app, name="Thread")

MONDAY = datetime(2024, 6, 3, 9, 30, tzinfo=UTC)


def main() -> None:
    with run(app, "the same table through PynamoDB and dynaorm") as db:
        ThreadModel.Meta.host = db.endpoint_url  # PynamoDB talks to the same endpoint,
        ThreadModel.Meta.region = app.client.meta.region_name  # in the same region,
        for name, value in local_credentials(db.endpoint_url).items():  # as the same
            setattr(ThreadModel.Meta, name, value)  # identity (a local engine's dummy one)
        print(f"table keys: {app.pk}, {app.sk}; indexes: {sorted(app.indexes)}; "
              f"ttl: {app.ttl}")

        # 1. the old service writes, the new one reads
        ThreadModel(forum_name="dynamo", subject="bridges", views=10, replies=2,
                    last_post=MONDAY, tags={"howto"}, extra={"pinned": True},
                    expires=timedelta(days=30)).save()
        s = db.session()
        t = s.get(Thread, forum_name="dynamo", subject="bridges")
        assert t is not None
        print(f"dynaorm reads: views={t.views} replies={t.replies} version={t.version} "
              f"last_post={t.last_post.isoformat()} extra={t.extra}")

        # 2. the new service writes with PynamoDB's optimistic locking
        stale = ThreadModel.get("dynamo", "bridges", consistent_read=True)
        t.views += 1
        t.tags = t.tags | {"pynamodb"}
        versioned_save(s, t)
        s.commit()
        fresh = ThreadModel.get("dynamo", "bridges", consistent_read=True)
        print(f"PynamoDB reads: views={fresh.views} version={fresh.version} "
              f"tags={sorted(fresh.tags)}")
        stale.views = 0
        try:
            stale.save()  # conditioned on version 1: dynaorm stored version 2
        except PutError:
            print("stale PynamoDB save refused: PutError")

        # 3. and the other way round
        fresh.replies = 3
        fresh.save()
        t.views += 1
        versioned_save(s, t)
        try:
            s.commit()
        except ConditionFailedError:
            print("stale dynaorm save refused: ConditionFailedError")

        # 4. items written by either side, queried by either side on the GSI
        versioned_save(s, Thread(forum_name="dynamo", subject="queries", views=40,
                                 last_post=MONDAY + timedelta(days=1), tags={"howto"}))
        s.commit()
        show('s.query(Thread, index="by_views", forum_name="dynamo").gt(views=5)',
             s.query(Thread, index="by_views", forum_name="dynamo").gt(views=5),
             lambda x: f"{x.subject}: {x.views} views, version {x.version}")
        show('ThreadModel.by_views.query("dynamo", ThreadModel.views > 5)',
             ThreadModel.by_views.query("dynamo", ThreadModel.views > 5),
             lambda x: f"{x.subject}: {x.views} views, version {x.version}")
        since = utc_datetime_string(MONDAY + timedelta(hours=12))
        show(f'.filter(F("last_post") > "{since}")',
             s.query(Thread, forum_name="dynamo").filter(F("last_post") > since),
             lambda x: x.subject)

        raw = app.client.get_item(TableName=app.name, Key={
            "forum_name": {"S": "dynamo"}, "subject": {"S": "queries"}})["Item"]
        print(f"stored by dynaorm: last_post={raw['last_post']['S']} "
              f"reply_count={raw['reply_count']['N']} version={raw['version']['N']}")


if __name__ == "__main__":
    main()
