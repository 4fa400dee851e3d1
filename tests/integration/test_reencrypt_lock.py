"""A rotation (``jobs.reencrypt``) beside another writer's lock (``Meta.lock``) on a sealed
value kept in S3, and the stored entity a refusal names when its row keeps a value in S3
(the review of session 10's fixes of the seams red team; the embedded moto, with S3).

A rotation refused only because the other writer moved its lock (every sealed value as
read) never applies: what it uploaded is removed. A lock another tool stored that is no
integer fails that row (listed, the task goes on). Every refusal's ``item`` (a conflict,
an existing item, a failed condition) holds the stored entity with its value kept in S3."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from dynaorm import (
    ConcurrentModificationError,
    ConditionFailedError,
    Encrypted,
    Entity,
    F,
    ItemExistsError,
    Offloaded,
    StaticKeyring,
    Table,
)
from dynaorm.schema.rules.offloaded import references
from dynaorm.testing import moto_backend, use_tables

KEY, NEW, MAC = b"k" * 32, b"n" * 32, b"m" * 32
LIMIT = 1000
rt = Table("reencrypt_lock", offload="s3://placeholder/r/", offload_threshold=LIMIT,
           keyring=StaticKeyring(KEY, mac_key=MAC))


class Held(Entity):
    """Another writer's lock, a sealed value kept in S3."""

    class Meta:
        table = rt
        pk = "H#{hid}"
        sk = "H"
        lock = "version"

    hid: str
    status: str = "NEW"
    secret: Encrypted[Offloaded[str]] = ""
    version: int | None = None


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, str]]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    rt.keyring = StaticKeyring(KEY, mac_key=MAC)
    with moto_backend():
        s3 = boto3.client("s3", region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
        bucket = f"reencrypt-lock-{uuid.uuid4().hex[:12]}"
        s3.create_bucket(Bucket=bucket)
        rt.offload = f"s3://{bucket}/r/"
        with use_tables(rt) as t:
            yield t, s3, bucket


def uris(s3: Any, bucket: str) -> set[str]:
    out = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    return {f"s3://{bucket}/{o['Key']}" for o in out}


def referenced(t: Any) -> set[str]:
    return {r.uri for row in t.scan_raw() for r in references(row).values()}


def raw_get(hid: str) -> dict[str, Any]:
    from tests.support.recording import send

    return send(rt, "GetItem", {"TableName": rt.name, "ConsistentRead": True,
                                "Key": {"pk": {"S": f"H#{hid}"}, "sk": {"S": "H"}}})["Item"]


def their_save(item: dict[str, Any], **changes: Any) -> None:
    """PynamoDB-style save: the whole item read, version + 1, conditioned on the version."""
    from tests.support.recording import send

    old = item["version"]["N"]
    send(rt, "PutItem", {"TableName": rt.name,
                         "Item": {**item, **changes, "version": {"N": str(int(old) + 1)}},
                         "ConditionExpression": "#0 = :0",
                         "ExpressionAttributeNames": {"#0": "version"},
                         "ExpressionAttributeValues": {":0": {"N": old}}})


# -- a rotation refused only by their lock ------------------------------------------------
def test_a_rotation_refused_by_their_lock_alone_leaves_no_object_behind(env: Any) -> None:
    """Their save moves only their lock (every sealed value as the job read it): the job's
    write is refused, never applies, and the object it uploaded goes; its next round
    reseals the row."""
    from dynaorm.jobs.reencryption import _reseal
    from dynaorm.schema.entity import spec_of
    from dynaorm.schema.rules.encrypted import Encryption

    t, s3, bucket = env
    s = t.session()
    s.save(Held(hid="1", secret="y" * 5000))
    s.commit()
    stale = raw_get("1")  # (the row as the job's scan read it)
    their_save(stale, status={"S": "THEIRS"})  # (moves only their lock: values as read)
    rt.keyring = StaticKeyring(NEW, previous=[KEY], mac_key=MAC)
    rule = spec_of(Held).rules.get(Encryption)
    assert _reseal(rt, Held, rule, stale) == "resealed"
    assert uris(s3, bucket) == referenced(t), "an object no row references is left in S3"
    rt.keyring = StaticKeyring(NEW, mac_key=MAC)  # (the previous key dropped)
    back = t.session().get(Held, hid="1", consistent=True)
    assert back is not None and (back.secret, back.status) == ("y" * 5000, "THEIRS")


@pytest.mark.parametrize("lock", [{"N": "2.5"}, {"S": "v2"}])
def test_a_rotation_of_a_row_whose_lock_is_no_integer_fails_that_row(env: Any,
                                                                     lock: Any) -> None:
    """A lock value another tool stored that is no integer: the row is failed (its reason
    said), not the task."""
    from dynaorm.jobs.reencryption import _reseal
    from dynaorm.schema.entity import spec_of
    from dynaorm.schema.rules.encrypted import Encryption
    from tests.support.recording import send

    t, _, _ = env
    s = t.session()
    s.save(Held(hid="1", secret="short"))
    s.commit()
    item = raw_get("1")
    item["version"] = lock
    send(rt, "PutItem", {"TableName": rt.name, "Item": item})
    rt.keyring = StaticKeyring(NEW, previous=[KEY], mac_key=MAC)
    rule = spec_of(Held).rules.get(Encryption)
    outcome = _reseal(rt, Held, rule, raw_get("1"))
    assert outcome not in ("resealed", "current") and "invalid literal" in outcome


# -- the stored entity a refusal names, its value in S3 --------------------------------------
def test_a_conflicts_stored_entity_holds_its_value_kept_in_s3(env: Any) -> None:
    t, _, _ = env
    s = t.session()
    s.save(Held(hid="1", secret="z" * 5000))
    s.commit()
    ours = t.session().get(Held, hid="1", consistent=True)
    assert ours is not None
    their_save(raw_get("1"), status={"S": "THEIRS"})
    ours.status = "OURS"
    s = t.session()
    s.save(ours)
    with pytest.raises(ConcurrentModificationError) as refused:
        s.commit()
    now = refused.value.item
    assert now is not None and (now.secret, now.status) == ("z" * 5000, "THEIRS")


def test_an_existing_items_stored_entity_holds_its_value_kept_in_s3(env: Any) -> None:
    t, _, _ = env
    s = t.session()
    s.save(Held(hid="1", secret="z" * 5000))
    s.commit()
    s = t.session()
    s.save(Held(hid="1", secret="other"))
    with pytest.raises(ItemExistsError) as refused:
        s.commit()
    assert refused.value.item is not None


def test_a_failed_conditions_stored_entity_holds_its_value_kept_in_s3(env: Any) -> None:
    t, _, _ = env
    s = t.session()
    s.save(Held(hid="1", secret="z" * 5000))
    s.commit()
    s = t.session()
    got = s.get(Held, hid="1", consistent=True)
    assert got is not None
    got.status = "X"
    s.save(got, condition=F("status") == "NOPE")
    with pytest.raises(ConditionFailedError) as refused:
        s.commit()
    assert refused.value.item is not None


@pytest.mark.parametrize("object_is", ["missing", "other bytes", "bucket gone"])
def test_a_refusal_whose_rows_object_cannot_be_read_is_still_that_refusal(
        env: Any, object_is: str) -> None:
    """The stored row's object in S3 removed, holding other bytes, or its bucket gone:
    the refusal is still ItemExistsError, its ``item`` unsaid (never another error)."""
    t, s3, bucket = env
    s = t.session()
    s.save(Held(hid="1", secret="z" * 5000))
    s.commit()
    (uri,) = referenced(t)
    key = uri.removeprefix(f"s3://{bucket}/")
    if object_is == "missing":
        s3.delete_object(Bucket=bucket, Key=key)
    elif object_is == "other bytes":
        s3.put_object(Bucket=bucket, Key=key, Body=b"\xff" * 5000)
    else:
        s3.delete_object(Bucket=bucket, Key=key)
        s3.delete_bucket(Bucket=bucket)
    s = t.session()
    s.save(Held(hid="1", secret="other"))
    with pytest.raises(ItemExistsError) as exists:
        s.commit()
    assert exists.value.item is None


def test_an_overwrite_of_a_row_whose_object_is_missing_is_refused_by_its_condition(
        env: Any) -> None:
    """(was a strict xfail of session 11: the overwrite decoded the stored row first and
    raised OffloadError; it replaces the row whole, its object never read: see
    tests/integration/test_offload_dangling.py.) The row as it was."""
    t, s3, bucket = env
    s = t.session()
    s.save(Held(hid="1", secret="z" * 5000))
    s.commit()
    (uri,) = referenced(t)
    s3.delete_object(Bucket=bucket, Key=uri.removeprefix(f"s3://{bucket}/"))
    s = t.session()
    s.save(Held(hid="1", status="X"), overwrite=True, condition=F("status") == "NOPE")
    before = raw_get("1")
    with pytest.raises(ConditionFailedError) as failed:
        s.commit()
    assert failed.value.item is None and raw_get("1") == before
