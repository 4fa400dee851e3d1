"""Lagging indexes (contract section 21): under ``dynaorm.testing.index_lag(seconds)``
reads of global secondary indexes see the table as it was ``seconds`` ago, on every
engine (in process, on the moto server, and behind a fault proxy in front of DynamoDB
Local and dynoxide), while reads of the table and of a local index are exact. The pytest
option ``--dynaorm-index-lag`` and its marker: ``tests/system/test_plugin.py``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from dynaorm import DynaormError, TableNotFoundError
from dynaorm.testing import TestBackend, fault_proxy, index_lag, use_tables, worker_suffix
from dynaorm.testing.emulation.emulator import MIRROR_SUFFIX
from pytest_dynaorm import LAG_OPTION
from tests.conftest import engine_of, wire_of
from tests.support.models import TplSparse, User, app
from tests.support.recording import send

#: these tests lag by blocks of their own, and read exactly outside them
pytestmark = [pytest.mark.dynaorm_index_lag(0, reason="tests the lag itself"),
              pytest.mark.engines("moto", "local", "dynoxide")]


@pytest.fixture
def lagging(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The test table, its index reads able to lag: in process (moto, and its moto
    server), else behind a fault proxy in front of the engine (the run's own, under
    ``--dynaorm-index-lag``)."""
    with ExitStack() as stack:
        url = backend
        if url is not None and engine_of(request) != "moto" and request.config.getoption(
                LAG_OPTION) is None:
            url = stack.enter_context(fault_proxy(url))
        yield stack.enter_context(use_tables(app, endpoint_url=url, wire=wire_of(request),
                                             name_suffix=worker_suffix()))


def _names(db: TestBackend) -> list[str]:
    return [u.username for u in db.session().query(User, index="gsi1", org_id="acme").all()]


def test_an_index_read_sees_the_table_as_it_was(lagging: TestBackend) -> None:
    db = lagging
    with db.session() as s:
        ann = User(user_id="u1", username="ann", email="ann@x.com")
        s.save(ann)
    with index_lag(30) as lag:
        with db.session() as s:
            s.save(User(user_id="u2", username="bob", email="bob@x.com"))
            ann.username = "anne"
            s.save(ann)
        assert _names(db) == ["ann"]  # as 30 seconds ago: bob not yet, ann not renamed
        s = db.session()
        bob = s.get(User, user_id="u2", consistent=True)
        assert bob is not None and bob.username == "bob"  # the table itself is exact
        assert s.get(User, user_id="u1").username == "anne"  # type: ignore[union-attr]
        assert s.find(User, username="anne", consistent=True) == ann  # (its guard item)
        lag.advance(20)
        assert _names(db) == ["ann"]
        lag.advance(10)
        assert _names(db) == ["anne", "bob"]
    with db.session() as s:  # the lag is over: index reads are exact again
        s.save(User(user_id="u3", username="cy", email="cy@x.com"))
    assert _names(db) == ["anne", "bob", "cy"]


def test_deletes_lag_and_so_do_index_scans(lagging: TestBackend) -> None:
    db = lagging
    with db.session() as s:
        s.save(TplSparse(sid="s1", status="open"))
        s.save(TplSparse(sid="s2", status="open"))
    with index_lag(10) as lag:
        with db.session() as s:
            s.delete(TplSparse, sid="s1")
            s.save(TplSparse(sid="s2", status=None), overwrite=True)  # leaves gsi2
        assert sorted(t.sid for t in db.session().scan(TplSparse, index="gsi2").all()) == [
            "s1", "s2"]
        assert [t.sid for t in db.session().scan(TplSparse).all()] == ["s2"]  # (exact)
        lag.advance(10)
        assert db.session().scan(TplSparse, index="gsi2").all() == []


def _item(n: int) -> dict[str, Any]:
    return {"pk": {"S": f"RAW#{n}"}, "sk": {"S": "RAW"}, "lsi1sk": {"S": f"L{n}"},
            "gsi1pk": {"S": "RAW"}, "gsi1sk": {"S": f"G{n}"}}


def _query(db: TestBackend, index: str, pk: str, attr: str) -> list[str]:
    out = send(db.table, "Query", {
        "TableName": db.table.name, "IndexName": index, "KeyConditionExpression": "#p = :p",
        "ExpressionAttributeNames": {"#p": attr}, "ExpressionAttributeValues": {
            ":p": {"S": pk}}})
    return [i["pk"]["S"] for i in out["Items"]]


def test_a_local_index_and_the_table_do_not_lag(lagging: TestBackend) -> None:
    db = lagging
    with index_lag(10):
        send(db.table, "PutItem", {"TableName": db.table.name, "Item": _item(1)})
        assert _query(db, "lsi1", "RAW#1", "pk") == ["RAW#1"]  # a local index: exact
        assert _query(db, "gsi1", "RAW", "gsi1pk") == []  # a global one: as it was
        names = send(db.table, "ListTables", {})["TableNames"]
        assert db.table.name in names and not [n for n in names if MIRROR_SUFFIX in n]
    with pytest.raises(TableNotFoundError):  # the mirror went with the lag
        send(db.table, "DescribeTable", {"TableName": db.table.name + MIRROR_SUFFIX})


def _visible(db: TestBackend, seed: int, round_: int) -> tuple[list[str], list[str]]:
    """What gsi1 shows of 8 new items at once, then 60 s later, under a seeded lag."""
    def shown() -> list[str]:
        out = send(db.table, "Query", {
            "TableName": db.table.name, "IndexName": "gsi1",
            "KeyConditionExpression": "gsi1pk = :p", "FilterExpression": "#r = :r",
            "ExpressionAttributeNames": {"#r": "round"},
            "ExpressionAttributeValues": {":p": {"S": "RAW"}, ":r": {"N": str(round_)}}})
        return [i["pk"]["S"] for i in out["Items"]]

    with index_lag(60, seed=seed) as lag:
        for n in range(8):
            send(db.table, "PutItem", {"TableName": db.table.name,
                                       "Item": {**_item(n), "round": {"N": str(round_)}}})
        at_once = shown()
        lag.advance(60)
        return at_once, shown()


def test_a_seed_picks_the_changes_that_lag_and_repeats(lagging: TestBackend) -> None:
    at_once, later = _visible(lagging, seed=7, round_=1)
    assert 0 < len(at_once) < 8 and len(later) == 8  # part of the batch, then all of it
    assert _visible(lagging, seed=7, round_=2) == (at_once, later)  # the same seed: the same
    assert _visible(lagging, seed=8, round_=3)[0] != at_once  # another seed: others


def test_an_item_changes_stay_in_order_under_a_seed(lagging: TestBackend) -> None:
    db = lagging
    shown = []
    with index_lag(60, seed=3) as lag:
        for version in range(6):
            send(db.table, "PutItem", {"TableName": db.table.name,
                                       "Item": {**_item(0), "v": {"N": str(version)}}})
            shown.extend(int(i["v"]["N"]) for i in _query_items(db))
        lag.advance(60)
        shown.extend(int(i["v"]["N"]) for i in _query_items(db))
    assert shown == sorted(shown) and shown[-1] == 5  # never back to an older one
    assert shown[:6] != list(range(6))  # (a change that lagged held back those after it)


def _query_items(db: TestBackend) -> list[dict[str, Any]]:
    out = send(db.table, "Query", {
        "TableName": db.table.name, "IndexName": "gsi1",
        "KeyConditionExpression": "gsi1pk = :p", "ExpressionAttributeValues": {
            ":p": {"S": "RAW"}}})
    items: list[dict[str, Any]] = out["Items"]
    return items


def _foreign(db: TestBackend, backend: str | None) -> Any:
    """A botocore client of its own (as a boto3 client or the handler under test holds):
    to moto in process, else to the engine itself (not through the proxy in front)."""
    from dynaorm import Client

    return Client(backend, db.table.region or "us-east-1").botocore


def test_another_clients_writes_lag_and_then_show(lagging: TestBackend,
                                                  backend: str | None) -> None:
    """0.6 replayed only the writes that came through the emulator: an item another client
    deleted stayed in the index's reads for as long as the lag was on."""
    db, other = lagging, _foreign(lagging, backend)
    name = db.table.name
    for n in (1, 2):
        send(db.table, "PutItem", {"TableName": name, "Item": _item(n)})
    with index_lag(10) as lag:
        send(db.table, "PutItem", {"TableName": name, "Item": _item(3)})
        other.delete_item(TableName=name, Key={"pk": {"S": "RAW#1"}, "sk": {"S": "RAW"}})
        other.put_item(TableName=name, Item={**_item(2), "gsi1sk": {"S": "G9"}})
        assert _query(db, "gsi1", "RAW", "gsi1pk") == ["RAW#1", "RAW#2"]  # (as it was)
        lag.advance(5)
        other.put_item(TableName=name, Item=_item(4))  # (seen by the advance below)
        assert _query(db, "gsi1", "RAW", "gsi1pk") == ["RAW#1", "RAW#2"]
        lag.advance(5)
        assert _query(db, "gsi1", "RAW", "gsi1pk") == ["RAW#3", "RAW#2"]  # (G3, G9)
        lag.advance(5)
        assert _query(db, "gsi1", "RAW", "gsi1pk") == ["RAW#3", "RAW#4", "RAW#2"]
        other.delete_item(TableName=name, Key={"pk": {"S": "RAW#3"}, "sk": {"S": "RAW"}})
        lag.advance(10)  # (no read in between: the advance looks first)
        assert _query(db, "gsi1", "RAW", "gsi1pk") == ["RAW#4", "RAW#2"]


def test_the_lag_is_checked() -> None:
    for seconds in (-1, float("nan"), "5", True):
        with pytest.raises(DynaormError, match="seconds must be a number >= 0"), \
                index_lag(seconds):  # type: ignore[arg-type]
            pass
    with pytest.raises(DynaormError, match="seed must be an int"), index_lag(1, seed=1.5):  # type: ignore[arg-type]
        pass


def test_a_proxy_in_front_of_a_proxy_lags_once(backend: str | None,
                                               request: pytest.FixtureRequest) -> None:
    """``fault_proxy(url)`` where ``url`` is already a fault proxy of this process (the
    plugin's ``--dynaorm-endpoint`` has been one since 0.7, as the moto server's is): each
    emulator mirrored the other's mirror, and an index read under lag answered nothing
    instead of the table as it was."""
    if backend is None:
        pytest.skip("moto in process: no URL to put a proxy in front of")
    with fault_proxy(backend) as inner, fault_proxy(inner) as outer, use_tables(
            app, endpoint_url=outer, wire=wire_of(request), name_suffix=worker_suffix()) as db:
        with db.session() as s:
            s.save(User(user_id="u1", username="ann", email="ann@x.com"))
        with index_lag(30) as lag:
            with db.session() as s:
                s.save(User(user_id="u2", username="bob", email="bob@x.com"))
            assert _names(db) == ["ann"]
            lag.advance(30)
            assert _names(db) == ["ann", "bob"]
