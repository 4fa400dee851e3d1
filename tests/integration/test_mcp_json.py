"""The MCP tools speak the entity's own JSON (issue 70's MCP step): a result is what
``model_dump(mode="json")`` of the object gives (a serializer declared ``when_used="json"``
applies), an argument is validated as the entity validates JSON (base64 text decoded
where an untagged union of models holds bytes), ``bytes`` as base64 text. A property on
moto (the engine does not matter: the entity's JSON is): what an MCP save accepts is
stored exactly as a caller's save of the object the entity reads from that JSON, and an
MCP get answers ``model_dump(mode="json")`` of the session's get."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, PlainSerializer, field_serializer

import dynaorm.mcp
from dynaorm import Entity, Session, Table
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.examples import examples
from tests.support.mcp_client import call, text

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

stamps = Table("mcp-json")
#: bytes as base64 in the models' own JSON too (pydantic's: URL-safe), so a dump of
#: non-UTF-8 bytes is the reference the tools' results are compared with
BASE64 = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")


class Blob(BaseModel):
    model_config = BASE64
    data: bytes


class Note(BaseModel):
    model_config = BASE64
    text: str
    n: int


class Stamp(Entity):
    """Serializers for JSON only, a field of text or bytes, an untagged union of models
    one of which holds bytes, a list of bytes."""

    model_config = ConfigDict(populate_by_name=True, **BASE64)

    class Meta:
        table = stamps
        pk = "STAMP#{stamp_id}"
        sk = "STAMP"

    stamp_id: str
    when: datetime = datetime(2020, 1, 1, tzinfo=UTC)
    label: Annotated[str, PlainSerializer(str.upper, when_used="json")] = ""
    either: str | bytes = ""
    inner: Blob | Note | None = None
    chunks: list[bytes] = []

    @field_serializer("when", when_used="json")
    def _offset(self, value: datetime) -> str:  # (pydantic's own says Z)
        return value.strftime("%Y-%m-%dT%H:%M:%S+00:00")


@pytest.fixture
def sdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(stamps, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        yield tb


def stored(stamp_id: str) -> dict[str, Any] | None:
    """The raw item (but its key), its attributes in any order."""
    found = stamps.db.send("GetItem", {"TableName": stamps.name, "ConsistentRead": True, "Key": {
        "pk": {"S": f"STAMP#{stamp_id}"}, "sk": {"S": "STAMP"}}}).get("Item")
    return None if found is None else {k: v for k, v in found.items()
                                       if k not in ("pk", "sk", "stamp_id", "_rev")}


def ok(result: Any) -> Any:
    assert not result.is_error, text(result)
    return result.structured_content


def test_results_are_the_entitys_json_and_arguments_read_as_its_json(sdb: TestBackend) -> None:
    """The defect: results were a Python dump with bytes encoded by hand (a ``when_used=
    "json"`` serializer skipped) and base64 inside an untagged union of models stayed
    text (stored as its ASCII bytes)."""
    obj = Stamp(stamp_id="s1", when=datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC), label="abc",
                inner=Blob(data=b"\xff\x00"), chunks=[b"\x80"])
    with Session(stamps) as s:
        s.save(obj)
    srv = dynaorm.mcp.server(stamps, writes=["Stamp"])
    got, saved = call(srv, ("get_stamp", {"stamp_id": "s1"}), (
        "save_stamp", {"item": {"stamp_id": "s2", "inner": {"data": "/wA="}}}))
    item = ok(got)["item"]
    assert item["label"] == "ABC" and item["when"] == "2030-05-06T07:08:09+00:00"
    assert item["inner"] == {"data": "/wA="} and item["chunks"] == ["gA=="]
    ok(saved)
    with Session(stamps) as s:
        found = s.get(Stamp, stamp_id="s2")
    assert found is not None and found.inner == Blob(data=b"\xff\x00")


def _same_alphabets(data: bytes) -> bool:
    """Whether ``data``'s base64 is the same text in both alphabets (pydantic's dump, the
    reference, is URL-safe; the tools give the standard one)."""
    return base64.b64encode(data) == base64.urlsafe_b64encode(data)


BYTES = st.binary(max_size=6).filter(_same_alphabets)
STAMPS = st.builds(
    Stamp, stamp_id=st.just("x"),
    when=st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1),
                      timezones=st.just(UTC)).map(lambda d: d.replace(microsecond=0)),
    label=st.text("abcXYZ é", max_size=5), either=st.one_of(st.text(max_size=5), BYTES),
    inner=st.one_of(st.none(), st.builds(Blob, data=BYTES),
                    st.builds(Note, text=st.text(max_size=4), n=st.integers(-99, 99))),
    chunks=st.lists(BYTES, max_size=3))


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(STAMPS)
def test_a_save_stores_what_a_session_save_stores_and_a_get_answers_its_json(
        sdb: TestBackend, obj: Stamp) -> None:
    n = uuid.uuid4().hex[:10]
    data = obj.model_dump(mode="json")  # (the entity's own JSON of a random object)
    srv = dynaorm.mcp.server(stamps, writes=["Stamp"])
    [saved] = call(srv, ("save_stamp", {"item": {**data, "stamp_id": f"mcp-{n}"}}))
    with Session(stamps) as s:  # the object the entity reads from the same JSON
        s.save(Stamp.model_validate_json(json.dumps({**data, "stamp_id": f"ref-{n}"})))
    if saved.is_error:  # (a value the entity's JSON does not read back: refused by both)
        pytest.fail(text(saved))
    assert stored(f"mcp-{n}") == stored(f"ref-{n}")
    with Session(stamps) as s:
        read = s.get(Stamp, stamp_id=f"mcp-{n}")
    assert read is not None
    [got] = call(srv, ("get_stamp", {"stamp_id": f"mcp-{n}"}))
    assert ok(got)["item"] == read.model_dump(mode="json")
    assert ok(saved)["item"] == read.model_dump(mode="json")
