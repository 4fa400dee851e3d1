"""``Table.create()`` against other creators at once (two cold starts, two deploy jobs, two
test workers): four threads create the same table, add the same missing global indexes
(while a writer keeps writing), enable the same stream and TTL. Every call returns, and
afterwards the table is as declared. Then the same races made deterministic: another
creator acting between create()'s read and its change (a phase hook sends its request
first), refusals for a change still under way retried until ``wait`` and typed past it,
and the real refusals (another stream view type, another TTL attribute) kept typed; a
vector index added by two creators, or with its answer lost while another adds it.
The single-creator behaviour is in tests/integration/test_table.py (vector indexes:
tests/integration/test_vectors.py).

What the engines answer the loser (what create() reads as progress): DynamoDB Local
``ResourceInUseException`` "Index is being created", ``LimitExceededException`` "Only 1
online index can be created or deleted simultaneously per table", ``ValidationException``
"Attempting to create an index which already exists", "Table already has an enabled
stream", "TimeToLive is already enabled"; dynoxide ``ValidationException`` "Index already
exists". moto builds an index at once and answers a second stream with
``ResourceInUseException``; where it differs (a second UpdateTable adding an existing index
raises a Python ``ValueError`` inside moto, not an answer; TTL moves to another attribute
unrefused) the test skips it, as on dynoxide where a stream of another view type replaces
one enabled."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from dynaorm import GSI, Attempt, DynaormError, Hook, Table, VectorIndex
from dynaorm.errors import RequestError
from dynaorm.testing import inject_faults, worker_suffix
from tests.conftest import engine_of
from tests.support.concurrency import race
from tests.support.recording import Recorder, send

pytestmark = [pytest.mark.sync_only,  # threads sharing one client; the sync driver's sleep
              pytest.mark.engines("moto", "local", "dynoxide")]

CREATORS = 4
ITEMS = 60


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")


def _table(backend: str | None, name: str, **declared: Any) -> Table:
    table = Table(f"dynaorm-race-{name}{worker_suffix()}", **declared)
    table.connect(backend, region="us-east-1")
    return table


def _fresh(backend: str | None, name: str, **declared: Any) -> Table:
    """The table ``name`` created anew with ``declared`` (and nothing more)."""
    table = _table(backend, name, **declared)
    table.delete()
    table.create()
    return table


def _not_on(request: pytest.FixtureRequest, engine: str, why: str) -> None:
    """Skip on ``engine``, which answers otherwise than DynamoDB: ``why`` (the engine as
    probed behind the endpoint, not the name of the parameter: under
    ``--dynaorm-endpoint`` every engine is called ``endpoint``)."""
    if engine_of(request) == engine:
        pytest.skip(f"{engine}: {why}")


def _put(table: Table, key: str) -> None:
    send(table, "PutItem", {"TableName": table.name, "Item": {
        "pk": {"S": key}, "sk": {"S": "s"}, "g2pk": {"S": "X"}, "g3pk": {"S": "Y"}}})


def _put_until_done(table: Table, key: str) -> None:
    """``_put``, sent again while DynamoDB Local answers InternalFailure: it does to some
    writes while it builds an index (not applied: the index then lacks them, as does the
    table), dynaorm's retries included; a write that never lands fails the test."""
    for _ in range(20):
        try:
            _put(table, key)
            return
        except RequestError as exc:
            if exc.code != "InternalFailure":
                raise
    raise AssertionError(f"{key}: every write refused")


def _query(table: Table, index: str, attribute: str, value: str) -> set[str]:
    found: set[str] = set()
    request: dict[str, Any] = {
        "TableName": table.name, "IndexName": index,
        "KeyConditionExpression": f"{attribute} = :v",
        "ExpressionAttributeValues": {":v": {"S": value}}}
    while True:
        page = send(table, "Query", request)
        found.update(i["pk"]["S"] for i in page["Items"])
        if "LastEvaluatedKey" not in page:
            return found
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _stream_and_ttl(table: Table) -> tuple[Any, Any]:
    stream = send(table, "DescribeTable", {"TableName": table.name})["Table"].get(
        "StreamSpecification") or {}
    ttl = send(table, "DescribeTimeToLive", {"TableName": table.name})[
        "TimeToLiveDescription"]
    return ((stream.get("StreamEnabled"), stream.get("StreamViewType")),
            (ttl.get("AttributeName"), ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")))


DECLARED: dict[str, Any] = {"indexes": [GSI("gx1", pk="g1pk"), GSI("gx2", pk="g2pk"),
                                        GSI("gx3", pk="g3pk")],
                            "stream": "NEW_AND_OLD_IMAGES", "ttl": "expires"}


def test_racing_creators_of_a_new_table(backend: str | None) -> None:
    _table(backend, "new").delete()
    results = race(CREATORS, lambda i: _table(backend, "new", **DECLARED).create())
    table = _table(backend, "new", **DECLARED)
    try:
        assert results == [None] * CREATORS
        assert table.index_status() == {"gx1": "ACTIVE", "gx2": "ACTIVE", "gx3": "ACTIVE"}
        assert _stream_and_ttl(table) == ((True, "NEW_AND_OLD_IMAGES"), ("expires", True))
    finally:
        table.delete()


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_racing_creators_add_the_missing_indexes(backend: str | None,
                                                 request: pytest.FixtureRequest) -> None:
    """Creators race to add two indexes to a table holding items while a writer keeps
    writing: all return, both indexes end ACTIVE and serve every item written, before or
    during the race."""
    _not_on(request, "moto", "an index added twice raises ValueError inside moto")
    before = _fresh(backend, "idx", indexes=[GSI("gx1", pk="g1pk")])
    try:
        for i in range(ITEMS):
            _put(before, f"old{i}")
        written: list[str] = []

        def work(i: int) -> None:
            if i == CREATORS:  # the writer
                for k in range(ITEMS):
                    _put_until_done(before, f"new{k}")
                    written.append(f"new{k}")
                return
            _table(backend, "idx", **DECLARED).create()

        results = race(CREATORS + 1, work)
        assert results == [None] * (CREATORS + 1)
        after = _table(backend, "idx", **DECLARED)
        assert after.index_status() == {"gx1": "ACTIVE", "gx2": "ACTIVE", "gx3": "ACTIVE"}
        every = {f"old{i}" for i in range(ITEMS)} | set(written)
        assert len(every) == 2 * ITEMS
        assert _query(after, "gx2", "g2pk", "X") == every
        assert _query(after, "gx3", "g3pk", "Y") == every
        assert _stream_and_ttl(after) == ((True, "NEW_AND_OLD_IMAGES"), ("expires", True))
    finally:
        before.delete()


def test_racing_creators_of_two_versions(backend: str | None,
                                        request: pytest.FixtureRequest) -> None:
    """Old and new code at once (a deploy rolling out): creators declaring one index race
    creators declaring three on a table not made yet, so CreateTable races the addition of
    the indexes it lacks. Every call returns; the table ends with all three ACTIVE."""
    _not_on(request, "moto", "an index added twice raises ValueError inside moto")
    _table(backend, "ver").delete()
    old: dict[str, Any] = {"indexes": [GSI("gx1", pk="g1pk")]}
    results = race(CREATORS, lambda i: _table(backend, "ver", **(
        old if i % 2 else DECLARED)).create())
    table = _table(backend, "ver", **DECLARED)
    try:
        assert results == [None] * CREATORS
        assert table.index_status() == {"gx1": "ACTIVE", "gx2": "ACTIVE", "gx3": "ACTIVE"}
    finally:
        table.delete()


def test_racing_creators_enable_the_stream_and_ttl(backend: str | None) -> None:
    table = _fresh(backend, "st")
    try:
        results = race(CREATORS, lambda i: _table(
            backend, "st", stream="NEW_IMAGE", ttl="expires").create())
        assert results == [None] * CREATORS
        assert _stream_and_ttl(table) == ((True, "NEW_IMAGE"), ("expires", True))
    finally:
        table.delete()


def test_racers_declaring_other_streams_and_ttls_are_refused(
        backend: str | None, request: pytest.FixtureRequest) -> None:
    """Creators that disagree (another stream view type, another TTL attribute): the
    first change made stands, every other creator gets a typed error saying why."""
    _not_on(request, "moto", "TTL moves to another attribute unrefused")
    _not_on(request, "dynoxide", "a stream of another view type replaces one enabled")
    table = _fresh(backend, "dis")
    try:
        views = ("NEW_IMAGE", "KEYS_ONLY")
        results = race(2, lambda i: _table(backend, "dis", stream=views[i]).create())
        won = [views[i] for i, r in enumerate(results) if r is None]
        assert len(won) == 1
        lost = next(r for r in results if r is not None)
        assert isinstance(lost, DynaormError)
        assert f"has a {won[0]} stream" in str(lost) and "disable it first" in str(lost)
        # TTL one after the other: two UpdateTimeToLive at once on DynamoDB Local may both
        # be accepted (the last one stands), where DynamoDB refuses the second
        _table(backend, "dis", stream=won[0], ttl="expires").create()
        with pytest.raises(DynaormError, match="cannot enable TTL on attribute 'ends'"):
            _table(backend, "dis", stream=won[0], ttl="ends").create()
        assert _stream_and_ttl(table) == ((True, won[0]), ("expires", True))
    finally:
        table.delete()


class _OtherCreator(Hook):
    """Another creator acting between create()'s read and its change: before the first
    request ``operation`` of create(), the same ``request`` is sent (once) through
    ``other``'s client; the answers create() then got are kept."""

    def __init__(self, table: Table, other: Table, operation: str,
                 request: dict[str, Any]) -> None:
        self.table, self.other = table, other
        self.operation, self.request = operation, request
        self.answers: list[str] = []
        self._sent = threading.Event()

    def on_start(self, phase: Any) -> object:
        if not isinstance(phase, Attempt) or phase.operation != self.operation:
            return None
        if self._sent.is_set() or self.table.name not in phase.tables:
            return None
        self._sent.set()
        send(self.other, self.operation, self.request)
        return True

    def on_end(self, phase: Any, token: Any) -> object:
        if token:
            self.answers.append(getattr(phase.error, "code", "OK"))
        return None


def _other_client(backend: str | None, table: Table) -> Table:
    """The same table through another client (another process would have its own)."""
    other = Table(table.name, max_attempts=1)
    other.connect(backend, region="us-east-1")
    return other


def test_an_index_added_by_another_creator_meanwhile_is_progress(
        backend: str | None, request: pytest.FixtureRequest) -> None:
    """Another creator adds the index create() is about to add: create()'s UpdateTable is
    refused ("being created" / "already exists"), and create() waits for that index."""
    _not_on(request, "moto", "an index added twice raises ValueError inside moto")
    before = _fresh(backend, "meanwhile")
    try:
        for i in range(ITEMS):
            _put(before, f"old{i}")
        table = _table(backend, "meanwhile", indexes=[GSI("gx2", pk="g2pk")])
        definition = table.definition()
        other = _OtherCreator(table, _other_client(backend, table), "UpdateTable", {
            "TableName": table.name,
            "AttributeDefinitions": definition["AttributeDefinitions"],
            "GlobalSecondaryIndexUpdates": [
                {"Create": definition["GlobalSecondaryIndexes"][0]}]})
        table.db.add_hook(other)
        table.create()
        assert other.answers and other.answers[0] != "OK"  # refused: the other was first
        assert table.index_status() == {"gx2": "ACTIVE"}
        assert _query(table, "gx2", "g2pk", "X") == {f"old{i}" for i in range(ITEMS)}
    finally:
        before.delete()


def test_a_change_refused_while_another_is_under_way_is_retried(
        backend: str | None) -> None:
    """An UpdateTable refused because another change of the table is under way
    (LimitExceededException, ResourceInUseException) is sent again (with a growing
    delay: the driver's sleep is recorded) until it is made."""
    table = _fresh(backend, "busy")
    try:
        declared = _table(backend, "busy", indexes=[GSI("gx2", pk="g2pk")],
                          stream="NEW_IMAGE", max_attempts=1)
        faults = Recorder(declared)
        faults.faults["UpdateTable"] = [
            RequestError("UpdateTable", "LimitExceededException", "Only 1 online index can "
                         "be created or deleted simultaneously per table"),
            RequestError("UpdateTable", "ResourceInUseException", "table being updated"),
            RequestError("UpdateTable", "ResourceInUseException", "table being updated")]
        declared.db.add_hook(faults)
        slept: list[float] = []

        def sleep(seconds: float) -> None:  # recorded, then slept: DynamoDB Local answers
            slept.append(seconds)           # InternalFailure to reads hammering it while
            time.sleep(seconds)             # it builds an index

        declared.db.driver.sleep = sleep
        declared.create()
        assert [op for op, _ in faults.sent].count("UpdateTable") == 5  # 3 refused
        assert slept[:2] == [0.05, 0.1]
        assert declared.index_status() == {"gx2": "ACTIVE"}
        assert _stream_and_ttl(declared)[0] == (True, "NEW_IMAGE")
    finally:
        table.delete()


def test_a_change_still_refused_past_the_wait_is_a_typed_error(
        backend: str | None) -> None:
    """Past ``wait``, a change still refused for another under way raises a DynaormError
    naming the index and DynamoDB's answer (the caller calls create() again later); a
    refusal of another kind is not retried at all."""
    table = _fresh(backend, "late")
    try:
        declared = _table(backend, "late", indexes=[GSI("gx2", pk="g2pk")], max_attempts=1)
        faults = Recorder(declared)
        faults.always["UpdateTable"] = RequestError(
            "UpdateTable", "LimitExceededException", "Only 1 online index at a time")
        declared.db.add_hook(faults)
        with pytest.raises(DynaormError, match=r"cannot add index 'gx2'.*LimitExceeded"):
            declared.create(wait=0)
        assert declared.index_status() == {"gx2": "MISSING"}
        faults.sent.clear()
        faults.always["UpdateTable"] = RequestError(
            "UpdateTable", "ValidationException", "a real refusal")
        with pytest.raises(DynaormError, match=r"cannot add index 'gx2'.*a real refusal"):
            declared.create()
        assert [op for op, _ in faults.sent].count("UpdateTable") == 1
    finally:
        table.delete()


def test_an_index_still_being_built_past_the_wait_is_a_typed_error(
        backend: str | None) -> None:
    """An index of the table still being built (by another creator) when ``wait`` has
    passed: create() does not add the next one (DynamoDB builds one at a time) and says
    to call it again once index_status() shows it ACTIVE."""
    table = _fresh(backend, "building")
    try:
        declared = _table(backend, "building", indexes=[GSI("gx2", pk="g2pk"),
                                                        GSI("gx3", pk="g3pk")])
        declared.db.add_hook(_Building(declared, "gx2"))
        with pytest.raises(DynaormError, match=r"cannot add index 'gx3'.*\['gx2'\] still "
                           r"being built.*call create\(\) again"):
            declared.create(wait=0)
        assert declared.index_status() == {"gx2": "CREATING", "gx3": "MISSING"}
    finally:
        table.delete()


class _Building(Hook):
    """DescribeTable answers showing index ``name`` (with its key attribute) still being
    created, as DynamoDB shows another creator's index while it is built."""

    def __init__(self, table: Table, name: str) -> None:
        self.table, self.name = table, name

    def on_end(self, phase: Any, token: Any) -> object:
        if not isinstance(phase, Attempt) or phase.operation != "DescribeTable":
            return None
        if phase.response and self.table.name in phase.tables:
            phase.response["Table"].setdefault("GlobalSecondaryIndexes", []).append(
                {"IndexName": self.name, "IndexStatus": "CREATING"})
        return None


#: why the races of a vector index run on the embedded default alone
_VECTOR_ENGINES = {"local": "DynamoDB Local has no vector index",
                   "dynoxide": "dynoxide builds an added vector index for 15 s: the races "
                               "are proven on the embedded default"}


def _vector_index_added(request: pytest.FixtureRequest, backend: str | None) -> Table:
    """A fresh table without a vector index, and the same table declaring one."""
    if engine_of(request) in _VECTOR_ENGINES:
        pytest.skip(_VECTOR_ENGINES[engine_of(request)])
    _fresh(backend, "vector")
    return _table(backend, "vector", vector_indexes=[
        VectorIndex("late", attribute="embedding", dimensions=2, partition="tenant")])


def test_a_vector_index_added_by_another_creator_meanwhile_is_progress(
        backend: str | None, request: pytest.FixtureRequest) -> None:
    """As for a global index: another creator adds the vector index create() is about to
    add; create()'s UpdateTable is refused, and the index is there."""
    table = _vector_index_added(request, backend)
    try:
        definition = table.definition()
        other = _OtherCreator(table, _other_client(backend, table), "UpdateTable", {
            "TableName": table.name,
            "AttributeDefinitions": definition["AttributeDefinitions"],
            "VectorIndexUpdates": [{"Create": definition["VectorIndexes"][0]}]})
        table.db.add_hook(other)
        table.create()
        assert other.answers and other.answers[0] != "OK"  # refused: the other was first
        assert table.index_status() == {"late": "ACTIVE"}
    finally:
        table.delete()


def test_a_lost_answer_of_adding_a_vector_index_with_another_creator_in_its_window(
        backend: str | None, request: pytest.FixtureRequest) -> None:
    """create()'s UpdateTable is applied and its answer lost while another creator adds
    the same index: the resent UpdateTable is refused (it exists), which create() reads as
    progress; the index is there once, as declared."""
    table = _vector_index_added(request, backend)
    other = _other_client(backend, table)
    try:
        with inject_faults(table) as faults:
            faults.lose_answer("UpdateTable", after=other.create)
            table.create()
        assert faults.sent["UpdateTable"] >= 2  # (the lost one, then the refused resend)
        assert table.index_status() == {"late": "ACTIVE"}
        described = send(table, "DescribeTable", {"TableName": table.name})["Table"]
        assert [v["IndexName"] for v in described["VectorIndexes"]] == ["late"]
    finally:
        table.delete()
