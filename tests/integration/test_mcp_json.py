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
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    TypeAdapter,
    ValidationError,
    field_serializer,
)

import dynaorm
import dynaorm.mcp
from dynaorm import DynaormError, Entity, Session, Table
from dynaorm.mcp.tools import json_of
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.integration.test_mcp_writes import failed
from tests.support.engines import on_engine
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


# --- hostile JSON through the MCP tools; json_of beside readers
# (moved from system/test_red_team_08d_mcp.py:
# Red team 08d, the MCP tools (:mod:`dynaorm.mcp.tools`: one generator driven by ``run``
# and ``arun``, ``json_of`` building each entity's JSON serializer and validator with its
# models' completeness flag flipped under a lock): what must never happen.
#
# - a save through MCP of hostile JSON (numbers as text, floats for ints, huge ints,
#   bytes in the URL-safe alphabet or unpadded, datetimes in other forms, lone surrogates,
#   extra fields, nulls, sets with duplicates) stores anything but exactly what a
#   ``Session`` save stores of the object the entity validates from that same JSON, or
#   accepts what the entity's JSON validation refuses (or refuses what it accepts);
# - ``json_of`` built in threads while other threads validate, dump and build schemas of
#   the same models: a wrong result in either (a model's prebuilt validator or serializer
#   captured while its flag was flipped, or a flag left flipped).
#
# moto only: the entity's JSON does not depend on the engine.)

crates = Table("red08d-mcp")


class Part(BaseModel):
    model_config = BASE64
    data: bytes
    n: int = 0


class Crate(Entity):
    model_config = BASE64

    class Meta:
        table = crates
        pk = "CRATE#{crate_id}"
        sk = "CRATE"

    crate_id: str
    n: int = 0
    x: float = 0.0
    when: datetime = datetime(2020, 1, 1, tzinfo=UTC)
    blob: bytes = b""
    words: set[str] = set()
    part: Part | None = None
    flag: bool = False


@pytest.fixture
def cdb(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, crates)


def _stored(crate_id: str) -> dict[str, Any] | None:
    found = crates.db.send("GetItem", {"TableName": crates.name, "ConsistentRead": True,
                                       "Key": {"pk": {"S": f"CRATE#{crate_id}"},
                                               "sk": {"S": "CRATE"}}}).get("Item")
    return None if found is None else {k: v for k, v in found.items()
                                       if k not in ("pk", "sk", "crate_id", "_rev")}


HOSTILE: dict[str, list[Any]] = {
    "n": [1, "5", 5.0, 5.5, True, 10**40, -(10**38), "1e3", " 7", None, "٣"],
    "x": [1, 1.5, "2.5", 1e308, "1e400", "NaN", "inf", 10**40, True, "0x10", None],
    "when": ["2030-01-02T03:04:05Z", "2030-01-02T03:04:05+02:00", "2030-01-02", 0,
             1700000000, "1700000000", "2030-01-02 03:04:05", "now", None],
    "blob": [base64.b64encode(b"\xfb\xff").decode(), base64.urlsafe_b64encode(b"\xfb\xff"
                                                                               ).decode(),
             "+/8", "-_8=", "YQ", "Y Q==", "YQ==\n", "", "é", None, 5],
    "words": [["a", "a"], [], ["b", "a"], ["\udc80"], "ab", [1], None],
    "part": [{"data": "/wA="}, {"data": "_wA="}, {"data": "/wA=", "n": "3"},
             {"data": "/wA=", "extra": 1}, {"n": 1}, None, "x"],
    "flag": [True, "true", 1, 0, "yes", "on", None, 2],
    "extra": [1, None],
    "crate_id": ["é\u200d", "\udc80", "", "#", 5],
}


@st.composite
def _hostile(draw: Any) -> dict[str, Any]:
    names = draw(st.sets(st.sampled_from(sorted(HOSTILE)), min_size=1, max_size=3))
    return {n: draw(st.sampled_from(HOSTILE[n])) for n in sorted(names)}


_SAVE_SCHEMA = dynaorm.mcp.tools_of(crates, ["Crate"])["save_crate"].input_schema


def _fits_schema(item: dict[str, Any]) -> bool:
    """Whether ``item`` fits the save tool's published input schema (JSON Schema)."""
    import jsonschema

    try:
        jsonschema.validate({"item": item}, _SAVE_SCHEMA)
    except jsonschema.ValidationError:
        return False
    return True


def _entity_reads(data: dict[str, Any]) -> Crate | None:
    """The object the entity validates from this JSON (``None``: it refuses it)."""
    try:
        return Crate.model_validate_json(json.dumps(data))
    except (ValidationError, ValueError):
        return None


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(args=_hostile())
def test_an_mcp_save_of_hostile_json_stores_what_a_session_save_stores(
        cdb: TestBackend, args: dict[str, Any]) -> None:
    n = uuid.uuid4().hex[:10]
    mine = args if "crate_id" in args else {**args, "crate_id": f"mcp-{n}"}
    srv = dynaorm.mcp.server(crates, writes=["Crate"])
    [saved] = call(srv, ("save_crate", {"item": mine}))
    fits = _fits_schema(mine)
    expected = _entity_reads(mine) if fits else None
    if expected is None:
        # (what the tool's published schema refuses -- JSON types, unknown names: refused
        # before the entity sees it, docs/guide/agents.md -- or the entity's JSON refuses)
        assert saved.is_error, f"MCP accepted what the entity or its schema refuses: {mine}"
        return
    if saved.is_error:  # (the entity reads it, a save may still refuse it: its key, limits)
        with pytest.raises(dynaorm.DynaormError), Session(crates) as s:
            s.save(expected)
        return
    by_mcp = _stored(expected.crate_id)
    with Session(crates) as s:  # (the same key: overwritten by the caller's save)
        s.save(expected, overwrite=True)
    assert by_mcp == _stored(expected.crate_id), (mine, saved.structured_content)
    with Session(crates) as s:
        s.delete(Crate, crate_id=expected.crate_id)


# == json_of under threads =================================================================
class Leaf(BaseModel):
    model_config = BASE64
    data: bytes
    note: str = ""


def _fresh(i: int) -> type[Entity]:
    """A new entity class holding ``Leaf`` (each built by ``json_of`` once)."""
    t = Table(f"red08d-mcp-{i}")

    class Fresh(Entity):
        model_config = BASE64

        class Meta:
            table = t
            pk = "F#{fid}"
            sk = "F"

        fid: str
        leaf: Leaf
        leaves: list[Leaf] = []

    return Fresh


def test_json_of_built_in_threads_beside_readers_of_the_same_models() -> None:
    """Four threads build ``json_of`` for new entity classes holding ``Leaf`` while four
    others validate, dump and build adapters of ``Leaf``. Never: a wrong result in either,
    a flag left flipped, a built serializer giving pydantic's URL-safe bytes or UTF-8 text
    instead of standard base64."""
    data = b"\xfb\xff\xfe"
    standard = base64.b64encode(data).decode()
    errors: list[BaseException] = []
    stop = threading.Event()
    classes = [_fresh(i) for i in range(40)]

    def build(chunk: list[type[Entity]]) -> None:
        try:
            for cls in chunk:
                js = json_of(cls)
                obj = cls(fid="f", leaf=Leaf(data=data), leaves=[Leaf(data=data)])
                out = json.loads(js.serializer.to_json(obj))
                assert out["leaf"]["data"] == standard, out
                assert out["leaves"][0]["data"] == standard, out
                back = js.validator.validate_json(json.dumps(out))
                assert back.leaf.data == data
        except BaseException as exc:
            errors.append(exc)

    def read() -> None:
        try:
            while not stop.is_set():
                leaf = Leaf.model_validate_json(json.dumps({"data": standard}))
                assert leaf.data == data
                assert json.loads(leaf.model_dump_json())["data"] == base64.urlsafe_b64encode(
                    data).decode()
                adapter = TypeAdapter(list[Leaf])
                assert adapter.validate_python([{"data": data}])[0].data == data
                assert Leaf(data=data).model_dump()["data"] == data
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(4)]
    builders = [threading.Thread(target=build, args=(classes[i::4],)) for i in range(4)]
    for t in (*readers, *builders):
        t.start()
    for t in builders:
        t.join(120)
    stop.set()
    for t in readers:
        t.join(30)
    assert not errors, errors[:3]
    assert Leaf.__pydantic_complete__
    assert all(c.__pydantic_complete__ for c in classes)


# --- nested values through the write tools
# (moved from system/test_red_team_073.py:
# Red team of issue 73's fixes (written by someone who did not write them): the MCP
# write tools under hostile arguments, lost answers with a second writer in the window,
# idempotency keys reused across calls and tenants, forged and misplaced cursors; the
# Iceberg lake across model changes between runs; the stream and ``check`` readers of a
# user rule's rows. Driven by the official ``mcp`` SDK's client on moto and DynamoDB
# Local. What does not hold is a strict xfail naming the defect.)

# (sync only: the server makes its own sessions)
# (moto and DynamoDB Local: what these attack does not depend on the engine beyond
# them, and CI has 30 minutes)


# -- MCP: nested values and misplaced cursors --------------------------------------------
nests = dynaorm.Table("dynaorm-red73-nests")


class Where(BaseModel):
    city: str
    zone: int = 0


class Parcel(dynaorm.Entity):
    """Nested models, in a list and a map, and a unique field."""

    class Meta:
        table = nests
        pk = "PARCEL#{parcel_id}"
        sk = "PARCEL"
        unique = ("code",)

    parcel_id: str
    code: str
    to: Where
    stops: list[Where] = Field(default_factory=list)
    by: dict[str, Where] = Field(default_factory=dict)


@pytest.mark.engines('moto', 'local')
@pytest.mark.parametrize("item", [
    {"to": {"city": "Oslo", "evil": 1}},
    {"to": {"city": "Oslo", "zone": "7"}},
    {"to": {"city": "Oslo", "zone": 1.5}},
    {"to": {"city": 5}},
    {"stops": [{"city": "a"}, {"zone": 1}]},
    {"by": {"k": {"city": "a", "deep": {"x": [1, {"y": 2}]}}}},
    {"by": {"#": {"city": "a"}}},
    {"to": {"city": "Oslo", "zone": 10**40}},
])
def test_nested_values_are_stored_as_a_save_stores_them_or_refused_by_both(
        db: TestBackend, request: pytest.FixtureRequest, item: dict[str, Any]) -> None:
    with use_tables(nests, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        values = {"code": "c-ref", "to": {"city": "x"}, **item}
        try:
            with Session(nests) as s:
                s.save(Parcel(parcel_id="ref", **values))
            refused = False
        except (ValidationError, DynaormError):
            refused = True

        def stored(pid: str) -> Any:
            found = nests.db.send("GetItem", {"TableName": nests.name, "ConsistentRead": True,
                                              "Key": {"pk": {"S": f"PARCEL#{pid}"},
                                                      "sk": {"S": "PARCEL"}}}).get("Item")
            return None if found is None else {k: v for k, v in found.items()
                                               if k not in ("pk", "sk", "parcel_id", "code",
                                                            "_rev")}
        with Session(nests) as s:
            s.save(Parcel(parcel_id="upd", code="c-upd", to=Where(city="x")))
        base = stored("upd")
        srv = dynaorm.mcp.server(nests, writes=["Parcel"])
        saved, updated = call(srv, ("save_parcel", {"item": {"parcel_id": "new", **values,
                                                            "code": "c-new"}}),
                              ("update_parcel", {"parcel_id": "upd", "set": item}))
        if refused:
            for r in (saved, updated):
                said = failed(r)
                assert any(k in said for k in item) and "Traceback" not in said, said
            assert stored("new") is None and stored("upd") == base
            return
        # (a tool may refuse more than a save, by its schema: "7" for an integer)
        assert stored("new") == (None if saved.is_error else stored("ref")), text(saved)
        new = stored("upd")
        assert new is not None
        assert {k: new[k] for k in item} == (
            {k: base[k] for k in item} if updated.is_error
            else {k: stored("ref")[k] for k in item}), text(updated)
