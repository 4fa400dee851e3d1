"""Mapping a table another tool writes: camelCase attribute names, a number partition key,
no type attribute, a TTL attribute, and timestamps.

Run: ``python examples/existing_table.py [--endpoint-url URL]``
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

from _support import run, show
from pydantic import Field

from dynaorm import Entity, Session, Table

# The legacy app's table: accountId (N) + SK (S), no discriminator, TTL on expiresAt.
legacy = Table("dynaorm-example-existing", pk="accountId", sk="SK",
               key_types={"accountId": "N"}, type_attribute=None, ttl="expiresAt")


class Account(Entity):
    class Meta:
        table = legacy
        pk = "{account_id}"  # stored as accountId: the field is the key itself
        sk = "PROFILE"
        timestamps = ("created_at", "updated_at")

    # serialization_alias names the stored attribute; code keeps snake_case field names
    account_id: int = Field(serialization_alias="accountId")
    display_name: str = Field(serialization_alias="displayName")
    plan: str = "free"
    # declared here so that type checkers see them (dynaorm would declare them otherwise)
    created_at: datetime | None = Field(default=None, serialization_alias="createdAt")
    updated_at: datetime | None = Field(default=None, serialization_alias="updatedAt")


class LoginSession(Entity):
    class Meta:
        table = legacy
        pk = "{account_id}"
        sk = "SESSION#{token}"

    account_id: int = Field(serialization_alias="accountId")
    token: str
    device: str = ""
    expires_at: datetime = Field(serialization_alias="expiresAt")  # the TTL attribute


def write_like_the_other_tool(client: Any, table: str) -> None:
    """What the other tool stored, as raw boto3 puts (no _type, fields only in keys)."""
    now = int(time.time())
    items = [
        {"accountId": {"N": "42"}, "SK": {"S": "PROFILE"}, "displayName": {"S": "Ann"},
         "plan": {"S": "pro"}},
        {"accountId": {"N": "42"}, "SK": {"S": "SESSION#a1"}, "device": {"S": "laptop"},
         "expiresAt": {"N": str(now + 3600)}},
        {"accountId": {"N": "42"}, "SK": {"S": "SESSION#a0"}, "device": {"S": "phone"},
         "expiresAt": {"N": str(now - 60)}},  # expired, not yet deleted by DynamoDB
        {"accountId": {"N": "42"}, "SK": {"S": "AUDIT#2024-06-01"}, "what": {"S": "login"}},
        {"accountId": {"N": "7"}, "SK": {"S": "PROFILE"}, "displayName": {"S": "Bob"}},
    ]
    for item in items:
        client.put_item(TableName=table, Item=item)


def main() -> None:
    with run(legacy, "mapping a table written by another tool") as db:
        write_like_the_other_tool(legacy.client, legacy.name)
        ttl = legacy.client.describe_time_to_live(TableName=legacy.name)
        print(f"TTL on: {ttl['TimeToLiveDescription']['AttributeName']}")
        s = db.session()
        ann = s.get(Account, account_id=42)
        assert ann is not None
        print(f"account 42: {ann.display_name} ({ann.plan})")

        show('s.query(LoginSession, account_id=42)',
             s.query(LoginSession, account_id=42), lambda x: f"{x.token} on {x.device}")
        page = s.query(Account, LoginSession, account_id=42).page()
        print(f"page: {len(page.items)} items, {page.skipped} skipped (no entity owns them)")
        show("s.scan(Account)", sorted(s.scan(Account), key=lambda a: a.account_id),
             lambda a: f"{a.account_id}: {a.display_name}")

        # dynaorm's writes keep the other tool's shape: camelCase, number key, epoch TTL
        s.save(LoginSession(account_id=7, token="b1", device="tablet",
                            expires_at=datetime.now(UTC) + timedelta(days=1)))
        s.update(Account, account_id=7).set(plan="team")
        s.commit()
        raw = legacy.client.get_item(TableName=legacy.name,
                                     Key={"accountId": {"N": "7"}, "SK": {"S": "SESSION#b1"}})
        stored = sorted(raw["Item"])
        print(f"stored session attributes: {stored}")
        print(f"expiresAt stored as: {next(iter(raw['Item']['expiresAt']))}")
        bob = Session(legacy).get(Account, account_id=7, consistent=True)
        assert bob is not None and bob.updated_at is not None
        print(f"bob's plan: {bob.plan}; updated_at set: {bob.updated_at.tzinfo is not None}")


if __name__ == "__main__":
    main()
