"""The sans-I/O protocols both session kinds drive, stepped by hand: the exact requests
they yield, and what they make of the answers (no backend)."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import DynaormError, Session
from dynaorm.core.lookups import find_p
from dynaorm.protocol.steps import Backoff, Call, Emit, Gather, Proto, consume, gather, pull
from dynaorm.read.batches import MAX_BATCH_ROUNDS, batch_rounds
from dynaorm.schema.entity import encode_entity, spec_of
from tests.support.models import User, app


def guard_item(owner: str) -> dict[str, Any]:
    return {"owner_pk": {"S": f"USER#{owner}"}, "owner_sk": {"S": "PROFILE"},
            "owner_type": {"S": "User"}}


def user_item(user_id: str, email: str) -> dict[str, Any]:
    user = User(user_id=user_id, username=user_id, email=email)
    return dict(encode_entity(user, spec_of(User)))


def step(proto: Proto[Any], answer: Any) -> Any:
    return proto.send(answer)


def test_find_reads_the_guard_then_the_owner() -> None:
    proto = find_p(Session(app)._stage, User, False, {"email": "Ada@Example.com"})
    first = step(proto, None)
    assert first == Call("GetItem", {"TableName": app.name, "Key": first.request["Key"]},
                         (User,))
    guard_key = first.request["Key"]
    assert guard_key["pk"]["S"].endswith("ada@example.com")  # normalized
    owner_call = step(proto, {"Item": {**guard_key, **guard_item("u1")}})
    assert owner_call.request["Key"] == {"pk": {"S": "USER#u1"}, "sk": {"S": "PROFILE"}}
    with pytest.raises(StopIteration) as done:
        step(proto, {"Item": user_item("u1", "ADA@example.com")})
    assert done.value.value.user_id == "u1"


def test_find_rereads_a_guard_that_moved_and_gives_up_after_three_rounds() -> None:
    proto = find_p(Session(app)._stage, User, False, {"email": "ada@example.com"})
    calls = [step(proto, None)]
    guard_key = calls[0].request["Key"]
    guard = {**guard_key, **guard_item("u1")}
    result = None
    try:
        for _ in range(3):
            calls.append(step(proto, {"Item": guard}))  # -> the owner
            calls.append(step(proto, {"Item": user_item("u1", "other@example.com")}))
    except StopIteration as stop:
        result = stop.value
    assert result is None  # the owner never held the value: nobody is returned
    assert [c.request["Key"] == guard_key for c in calls] == [True, False] * 3
    assert "ConsistentRead" not in calls[0].request
    assert all(c.request.get("ConsistentRead") for c in calls[2:])  # re-reads: consistent


def test_batch_rounds_back_off_between_rounds_and_stop_after_the_last() -> None:
    sent: list[dict[str, Any]] = []
    proto = batch_rounds("BatchWriteItem", "t", {"t": [1, 2]}, "UnprocessedItems",
                         lambda out: sent.append(out))
    assert step(proto, None) == Call("BatchWriteItem", {"RequestItems": {"t": [1, 2]}})
    assert step(proto, {"UnprocessedItems": {"t": [2]}}) == Backoff(1, 0.0)
    assert step(proto, 0.25) == Call("BatchWriteItem", {"RequestItems": {"t": [2]}})
    assert step(proto, {"UnprocessedItems": {"t": [2]}}) == Backoff(2, 0.25)
    step(proto, 0.5)
    with pytest.raises(StopIteration):
        step(proto, {})
    assert len(sent) == 3
    stuck = batch_rounds("BatchGetItem", "t", {"t": {}}, "UnprocessedKeys")
    answer: Any = None
    with pytest.raises(DynaormError, match=f"after {MAX_BATCH_ROUNDS} rounds"):
        while True:
            s = stuck.send(answer)
            answer = 0.0 if isinstance(s, Backoff) else {"UnprocessedKeys": {"t": {}}}


def test_gather_is_one_step_and_pull_forwards_steps() -> None:
    def one(n: int) -> Proto[int]:
        out = yield Call("GetItem", {"n": n})
        return int(out["n"])

    proto = gather([one(1), one(2)], 4)
    g = step(proto, None)
    assert isinstance(g, Gather) and g.concurrency == 4 and len(g.protos) == 2
    with pytest.raises(StopIteration) as done:
        proto.send([1, 2])
    assert done.value.value == [1, 2]

    def stream() -> Any:
        out = yield Call("Query", {})
        for item in out["Items"]:
            yield Emit([item])

    puller = pull(stream(), 2)
    assert step(puller, None) == Call("Query", {})
    with pytest.raises(StopIteration) as got:
        puller.send({"Items": [{"a": 1}, {"a": 2}, {"a": 3}]})
    assert got.value.value == [{"a": 1}, {"a": 2}]
    seen: list[Any] = []

    def keep(batch: Any) -> bool:
        seen.extend(batch)
        return False

    consumer = consume(stream(), keep)
    step(consumer, None)
    with pytest.raises(StopIteration) as ended:
        consumer.send({"Items": [{"a": 1}]})
    assert ended.value.value is False and seen == [{"a": 1}]
