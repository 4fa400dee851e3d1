"""Streams (contract 15) on the engines: ``Table(stream=...)`` enables a stream at create,
a session writes, the stream is read back with GetRecords (moto and DynamoDB Local) and
``table.changes(records)`` classifies it. The classification of hand-written records is in
tests/unit/test_streams.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import botocore.session
import pytest

from dynaorm import DynaormError, Session, Table
from dynaorm.client.settings import local_credentials
from dynaorm.testing import TestBackend, use_tables
from tests.support.recording import send
from tests.support.stream_models import Blob, Doc, Person, stream_app

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


def read_stream(table: Table) -> list[dict[str, Any]]:
    """Every record of the table's stream so far, through boto's GetRecords."""
    desc = send(table, "DescribeTable", {"TableName": table.name})["Table"]
    arn = desc["LatestStreamArn"]
    region = table.client.meta.region_name
    # In-process moto routes any URL containing "dynamodb.<region>.amazonaws.com" to its
    # DynamoDB backend (a search, not a full match), streams.dynamodb.* included; its
    # streams pattern ends in an unescaped ".com", so this endpoint reaches the streams one.
    endpoint = table.endpoint_url or f"https://streams.dynamodb.{region}.amazonaws-com"
    client: Any = botocore.session.get_session().create_client(
        "dynamodbstreams", endpoint_url=endpoint, region_name=region,
        **local_credentials(table.endpoint_url))
    records: list[dict[str, Any]] = []
    for shard in client.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
        iterator = client.get_shard_iterator(StreamArn=arn, ShardId=shard["ShardId"],
                                             ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while iterator:
            out = client.get_records(ShardIterator=iterator)
            records += out["Records"]
            if not out["Records"]:
                break
            iterator = out.get("NextShardIterator")
    return records


@pytest.fixture
def sdb(backend: str | None) -> Iterator[TestBackend]:
    # A table name of its own each time: dynoxide (1.2) hands a re-created table's stream
    # the records of the deleted table of that name, so a second run against one server
    # (--dynaorm-endpoint, the async variant) would read the first run's changes too.
    with use_tables(stream_app, endpoint_url=backend,
                    name_suffix=f"-{uuid.uuid4().hex[:8]}") as tb:
        yield tb


def test_create_enables_the_stream_and_changes_classify_it(sdb: TestBackend) -> None:
    desc = send(stream_app, "DescribeTable", {"TableName": stream_app.name})["Table"]
    assert desc["StreamSpecification"] == {"StreamEnabled": True,
                                           "StreamViewType": "NEW_AND_OLD_IMAGES"}
    with Session(stream_app) as s:
        s.save(Person(person_id="p1", email="Ann@x.com"))
    s = Session(stream_app)
    ann = s.get(Person, person_id="p1", consistent=True)
    assert ann is not None
    ann.status = "active"
    s.save(ann)
    s.commit()
    doc = Doc(doc_id="d1", part="intro", body="one")
    s.save(doc)
    s.commit()
    s.save(Blob(blob_id="b1", data=b"\x00\x01", chunks={b"x"}, meta={"k": b"v"}))
    s.commit()
    s.delete(ann)
    s.commit()

    records = read_stream(stream_app)
    assert isinstance(records[0]["dynamodb"]["ApproximateCreationDateTime"], datetime)
    seen = [(c.kind, c.entity.__name__ if c.entity else None, c.role, c.field, c.version)
            for c in stream_app.changes(records)]
    assert sorted(seen, key=str) == sorted([
        ("insert", "Person", "row", None, None), ("insert", "Person", "guard", "email", None),
        ("modify", "Person", "row", None, None),
        ("insert", "Doc", "version", None, 1), ("insert", "Doc", "latest", None, 0),
        ("insert", "Blob", "row", None, None),
        ("remove", "Person", "row", None, None), ("remove", "Person", "guard", "email", None),
    ], key=str)
    changes = list(stream_app.changes({"Records": records}))
    modify = next(c for c in changes if c.kind == "modify")
    assert (modify.old, modify.new) == (Person(person_id="p1", email="Ann@x.com"),
                                        Person(person_id="p1", email="Ann@x.com",
                                               status="active"))
    blob = next(c for c in changes if c.entity is Blob)
    assert blob.new == Blob(blob_id="b1", data=b"\x00\x01", chunks={b"x"}, meta={"k": b"v"})
    removed = next(c for c in changes if c.kind == "remove" and c.role == "row")
    assert removed.new is None and removed.old is not None
    assert all(c.time is not None and c.time.tzinfo is UTC for c in changes)


def test_create_enables_a_stream_on_an_existing_table(backend: str | None) -> None:
    plain = Table("dynaorm-streams-late")
    with use_tables(plain, endpoint_url=backend):
        late = Table("dynaorm-streams-late", stream="NEW_IMAGE").connect(backend)
        late.create()
        desc = send(late, "DescribeTable", {"TableName": late.name})["Table"]
        assert desc["StreamSpecification"]["StreamViewType"] == "NEW_IMAGE"
        late.create()  # again: nothing to do
        other = Table("dynaorm-streams-late", stream="KEYS_ONLY").connect(backend)
        with pytest.raises(DynaormError, match="has a NEW_IMAGE stream, not KEYS_ONLY"):
            other.create()
