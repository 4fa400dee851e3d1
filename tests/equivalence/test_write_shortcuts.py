"""The write path's shortcuts plan exactly what the long way plans (pure, no I/O).

A commit leaves on each object a state whose item is what it wrote; the next write of
that object plans from it without validating the item back into an object. These tests
plan the same change from such a state and from the state of the same item freshly
loaded, and require the very same requests."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from dynaorm import F, InvalidValueError
from dynaorm.schema.entity import Entity
from dynaorm.write.render import compile_commit
from dynaorm.write.save import SaveEntry
from tests.support.models import Audit, Note, User

T = "dynaorm-tests"


def _commit(entry: SaveEntry) -> None:
    """Plan ``entry`` and apply its outcome as a successful commit does."""
    _, outcomes = compile_commit([(entry, entry.obj._dynaorm_state)])
    for outcome in outcomes:
        outcome.obj._dynaorm_state = outcome.state
        if outcome.version is not None:
            outcome.obj.version = outcome.version  # type: ignore[attr-defined]


def _requests(obj: Entity, **staged: Any) -> list[Any]:
    plan, _ = compile_commit([(SaveEntry(obj, **staged), obj._dynaorm_state)])
    return [plan.transaction_request("tok")] if len(plan.ops) > 1 else (
        [plan.single_request()] if plan.ops else [])


def _reloaded(obj: Entity) -> Entity:
    """A copy of ``obj`` loaded from the item its state holds."""
    state = obj._dynaorm_state
    assert state is not None
    return type(obj)._from_item(dict(state.item))


CASES: list[tuple[str, Callable[[], Entity], Callable[[Any], None], dict[str, Any]]] = [
    ("unique value moves", lambda: User(user_id="u1", username="ann", email="A@x.io"),
     lambda o: setattr(o, "username", "bob"), {}),
    ("unique normalized, unchanged", lambda: User(user_id="u1", username="ann",
                                                   email="A@x.io"),
     lambda o: setattr(o, "email", "a@X.io"), {}),
    ("plain field", lambda: User(user_id="u1", username="ann", email="a@x.io"),
     lambda o: setattr(o, "full_name", "Ann"), {"condition": F("org_id") == "acme"}),
    ("key moves", lambda: User(user_id="u1", username="ann", email="a@x.io"),
     lambda o: setattr(o, "user_id", "u2"), {}),
    ("versioned", lambda: Audit(equipment_id="e1", part="p1"),
     lambda o: setattr(o, "notes", "checked"), {}),
    ("list changed in place", lambda: Note(note_id="n1", tags=["a"]),
     lambda o: o.tags.append("b"), {}),
    ("overwrite", lambda: Note(note_id="n1", body="x"),
     lambda o: setattr(o, "body", "y"), {"overwrite": True}),
    ("nothing changed", lambda: Note(note_id="n1", body="x"), lambda o: None, {}),
]


@pytest.mark.parametrize(("make", "change", "staged"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_committed_state_plans_like_a_loaded_one(
        make: Callable[[], Entity], change: Callable[[Any], None],
        staged: dict[str, Any]) -> None:
    obj = make()
    _commit(SaveEntry(obj))
    _commit(SaveEntry(obj))  # a second write plans from the state the first left
    loaded = _reloaded(obj)
    change(obj)
    change(loaded)
    assert _requests(obj, **staged) == _requests(loaded, **staged)


def test_the_guard_released_is_the_value_last_written() -> None:
    obj = User(user_id="u1", username="ann", email="a@x.io")
    _commit(SaveEntry(obj))
    obj.username = "cat"
    _commit(SaveEntry(obj))
    loaded = _reloaded(obj)
    assert isinstance(loaded, User)
    obj.username = loaded.username = "bob"
    assert _requests(obj) == _requests(loaded)
    guards = [a for a in _requests(obj)[0]["TransactItems"] if "Delete" in a]
    assert [g["Delete"]["Key"]["pk"]["S"] for g in guards] == ["username#cat"]


def _number_size_by_decimal(text: str) -> int:
    """DynamoDB's number size the long way: normalized significant digits in pairs."""
    from decimal import Context, Decimal
    number = Decimal(text)
    if number.is_zero():
        return 1  # (a zero is one byte: measured on DynamoDB Local, issue 59's red team)
    sign, digits, exponent = number.normalize(Context(prec=400)).as_tuple()
    assert isinstance(exponent, int)
    top = exponent + len(digits) - 1
    return top // 2 - exponent // 2 + 2 + sign


@pytest.mark.parametrize("text", [
    "0", "00", "1", "7", "10", "99", "100", "101", "1000", "1200", "12345", "007", "0700",
    "9" * 38, "1" + "0" * 37, "12" + "0" * 30 + "34", "5" * 45])
def test_an_integer_is_sized_like_any_number(text: str) -> None:
    from dynaorm.values.limits import number_size
    assert number_size(text) == _number_size_by_decimal(text)


def test_a_key_problem_is_reported_first_even_when_the_item_carries_the_key() -> None:
    from dynaorm import InvalidValueError, KeyTemplateError
    from dynaorm.values.records import Fail, Origin, Put, Role
    from dynaorm.write.render import check_write

    def put(item: dict[str, Any], key: dict[str, str]) -> Put:
        return Put(key, item, None, Origin(Note, key, Role.ROW, Fail.EXISTS))

    bad = "x\ud800"
    key = {"pk": bad, "sk": "NOTE"}
    item = {"body": {"S": bad}, "pk": {"S": bad}, "sk": {"S": "NOTE"}}
    with pytest.raises(KeyTemplateError):
        check_write(put(item, key))
    fine = {"pk": "NOTE#1", "sk": "NOTE"}
    item = {"body": {"S": bad}, "count": {"N": "1" * 39}, "pk": {"S": "NOTE#1"},
            "sk": {"S": "NOTE"}}
    with pytest.raises(InvalidValueError, match="body"):
        check_write(put(item, fine))
    long_key = {"pk": "p" * 1500, "sk": "NOTE"}  # within the partition key limit
    item = {"pk": {"S": "p" * 1500}, "sk": {"S": "NOTE"}, "n": {"N": "007"}}
    # + the row revision every write of a row stamps (_rev: 4 + 16)
    assert check_write(put(item, long_key)) == 2 + 1500 + 2 + 4 + 1 + 2 + 20


ITEMS: list[dict[str, Any]] = [
    {"pk": {"S": "USER#1"}, "sk": {"S": "PROFILE"}, "name": {"S": "ann"}},
    {"pk": {"S": "USER#1"}, "sk": {"S": "PROFILE"}, "empty": {"S": ""}},
    {"pk": {"S": "USER#1"}, "sk": {"S": "P"}, "n": {"N": "120"}, "m": {"N": "-1.50"}},
    {"pk": {"S": "USER#1"}, "sk": {"S": "é"}, "flag": {"BOOL": True}},
    {"pk": {"S": "p" * 1500}, "sk": {"S": "s"}},
    {"pk": {"S": "p"}, "sk": {"S": "s" * 1000}, "x": {"S": "y" * 100}},
    {"pk": {"S": "p"}, "sk": {"S": "s"}, "l": {"L": [{"S": "a"}, {"N": "1"}]},
     "m": {"M": {"k": {"SS": ["a", "b"]}}}},
    # lists of ASCII strings (tags): answered in the gate's one pass
    {"pk": {"S": "p"}, "sk": {"S": "s"}, "tags": {"L": [{"S": "a"}, {"S": ""}, {"S": "bc"}]},
     "none": {"L": []}},
    {"pk": {"S": "p"}, "sk": {"S": "s"}, "l": {"L": [{"S": "é"}]},
     "m": {"L": [{"S": "a"}, {"N": "1"}]}, "n": {"L": [{"L": [{"S": "a"}]}]}},
]


@pytest.mark.parametrize("item", ITEMS)
def test_the_one_pass_gate_sizes_items_as_item_size_does(item: dict[str, Any]) -> None:
    from dynaorm.values.limits import check_item, item_size
    roles = {"pk": "partition", "sk": "sort"}
    key = {"pk": item["pk"]["S"], "sk": item["sk"]["S"]}
    assert check_item(item, entity="E", key=key, key_roles=roles) == item_size(item)


LONE_SURROGATE = json.loads('"\\ud800"')  # as JSON from a client can carry


@pytest.mark.parametrize("members", [
    [{"S": LONE_SURROGATE}], [{"S": "a"}, {"S": LONE_SURROGATE}], [{"S": "a", "N": "1"}],
    ["a"], [{"S": "a"}, {"L": [{"S": "a"}, {"NS": []}, 7]}],
])
def test_a_list_the_one_pass_cannot_answer_is_walked_and_refused(
        members: list[Any]) -> None:
    from dynaorm.values.limits import check_item
    item: dict[str, Any] = {"pk": {"S": "p"}, "sk": {"S": "s"}, "tags": {"L": members}}
    with pytest.raises(InvalidValueError, match="tags"):
        check_item(item, entity="E", key={"pk": "p", "sk": "s"},
                   key_roles={"pk": "partition", "sk": "sort"})


@pytest.mark.parametrize(("source", "key"), [("PROFILE", "PROFILE"), ("{{x}}", "{x}"),
                                             ("a}}b", "a}b")])
def test_a_constant_key_renders_as_its_segments(source: str, key: str) -> None:
    from dynaorm.schema.templates import KeyTemplate
    template = KeyTemplate.parse(source)
    assert template.render({}) == template.render({"x": "1"}) == key


@pytest.mark.parametrize("path", ["pk", "a.b"])
def test_an_action_with_a_cached_condition_renders_the_long_way_s_body(path: str) -> None:
    """render_op's shortcut (text and names whole from the cache) gives the same body,
    key order included, as rendering through Placeholders."""
    from dynaorm.values.expressions import Placeholders, exists, not_exists
    from dynaorm.values.records import ConditionCheck, Delete, Fail, Origin, Put, Role
    from dynaorm.write.render import render_op
    key = {"pk": "A#1", "sk": "B"}
    origin = Origin(Note, key, Role.ROW, Fail.EXISTS)
    for cond in (exists(path), not_exists(path)):
        for op, name in ((Put(key, {"pk": {"S": "A#1"}, "sk": {"S": "B"}}, cond, origin),
                          "PutItem"),
                         (Delete(key, cond, origin), "DeleteItem"),
                         (ConditionCheck(key, cond, origin), "ConditionCheck")):
            ph = Placeholders()
            body: dict[str, Any] = {"TableName": T}
            if isinstance(op, Put):
                body["Item"] = op.item
            else:
                body["Key"] = {"pk": {"S": "A#1"}, "sk": {"S": "B"}}
            body["ConditionExpression"] = cond.render(ph)
            body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
            ph.apply(body)
            for _ in range(2):  # a second time from the cache, its names not shared
                got_name, got = render_op(op)
                assert (got_name, list(got.items())) == (name, list(body.items()))
                got["ExpressionAttributeNames"]["#x"] = "changed"


class _Policy:
    """A policy with a fixed backoff (dynaorm's draws it at random), no hooks."""

    max_attempts = 3
    max_wait = 10.0
    capacity = None
    budget = None
    hooks: tuple[Any, ...] = ()

    def backoff(self, attempt: int) -> float:
        return 0.5


def _throttled() -> Any:
    from dynaorm.errors import RequestError
    return RequestError("PutItem", "ThrottlingException", "slow down")


def test_the_retry_protocol_backs_off_resends_and_counts_every_attempt() -> None:
    """attempts(): a throttled Send is followed by a Wait of the policy's backoff (within
    what is left of max_wait) and the same Send again, up to max_attempts; the request is
    recorded once; the pump turns a protocol's own Backoff into a Wait as well."""
    from dynaorm.errors import RequestError
    from dynaorm.protocol.events import recording
    from dynaorm.protocol.steps import Backoff, Call, Send, Wait, attempts, expand
    request: dict[str, Any] = {"TableName": T}
    policy: Any = _Policy()
    with recording() as result:
        loop = attempts(policy, Call("PutItem", request))
        assert next(loop) == Send("PutItem", request)
        assert loop.throw(_throttled()) == Wait(0.5)
        assert loop.send(None) == Send("PutItem", request)
        assert loop.throw(_throttled()) == Wait(0.5)
        assert loop.send(None) == Send("PutItem", request)
        with pytest.raises(RequestError) as raised:
            loop.throw(_throttled())
    assert raised.value.attempts == 3
    assert "after 3 attempts" in str(raised.value)
    assert result.requests == [("PutItem", request)]  # recorded once

    short: Any = _Policy()
    short.max_wait = 0.75  # the second wait gets only what is left of max_wait
    loop = attempts(short, Call("PutItem", request))
    next(loop)
    assert loop.throw(_throttled()) == Wait(0.5)
    loop.send(None)
    assert loop.throw(_throttled()) == Wait(0.25)

    def backing_off() -> Any:  # a protocol's own backoff (a batch's unprocessed keys)
        waited = yield Backoff(1, 0.0)
        return waited

    pumped = expand(backing_off(), policy)
    assert next(pumped) == Wait(0.5)  # the policy's backoff, as a Wait
    with pytest.raises(StopIteration) as done:
        pumped.send(None)
    assert done.value.value == 0.5  # the seconds waited


def test_the_retry_protocol_never_resends_what_may_have_been_applied_and_accumulates(
        ) -> None:
    from dynaorm.errors import RequestError
    from dynaorm.protocol.steps import Call, attempts
    error = RequestError("UpdateItem", "ConnectionError", "lost")
    error.maybe_applied = True  # an ADD that may have been applied is never resent
    policy: Any = _Policy()
    loop = attempts(policy, Call("UpdateItem", {}, idempotent=False))
    next(loop)
    with pytest.raises(RequestError) as raised:
        loop.throw(error)
    assert raised.value is error and error.attempts == 1 and error.maybe_applied


def test_a_committed_state_bounds_the_stored_size_and_the_gate_still_sizes_exactly() -> None:
    from dynaorm import ItemTooLargeError
    from dynaorm.values.records import Update

    obj = Note(note_id="n1", body="a" * 150_000)
    _commit(SaveEntry(obj))
    loaded = _reloaded(obj)  # a loaded item: sized once by the planner
    assert isinstance(loaded, Note)
    obj = loaded
    for body in ("b" * 150_000, "c" * 150_000, "d" * 150_000, "e"):
        obj.body = body  # the bound grows past 400 KB: the gate then sizes exactly
        plan, _ = compile_commit([(SaveEntry(obj, condition=F("body") != "z"),
                                   obj._dynaorm_state)])
        (op,) = plan.ops
        assert isinstance(op, Update) and op.known is not None
        _commit(SaveEntry(obj))
    obj.tags = ["t" * 200_000]  # 200 KB more than the stored item: 1 + 200 KB fits
    _commit(SaveEntry(obj))
    obj.body = "f" * 250_000  # with the stored tags, the item after is too large
    with pytest.raises(ItemTooLargeError, match="item after the update"):
        compile_commit([(SaveEntry(obj), obj._dynaorm_state)])


@pytest.mark.parametrize("value", ["u1", "a#b", "", 7, None, "ü", "x" * 2000])
@pytest.mark.parametrize("source", ["USER#{id}", "U{id}", "#{id}", "USER#{id:>4}"])
def test_a_prefixed_key_renders_as_the_loop_does(source: str, value: Any) -> None:
    from dynaorm.schema.templates import KeyTemplate

    def render(template: KeyTemplate) -> Any:
        try:
            return template.render({"id": value}, "E")
        except Exception as exc:  # the refusal itself: type and message
            return type(exc), str(exc)

    fast = KeyTemplate.parse(source)
    loop = KeyTemplate.parse(source)
    loop.__dict__["_prefixed"] = None  # (the cached property, answered: the loop renders)
    assert (fast._prefixed is not None) == (":" not in source)
    assert render(fast) == render(loop)


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("renamed", [False, True])
def test_a_conditional_update_is_planned_as_with_condition_would(overwrite: bool,
                                                                 renamed: bool) -> None:
    """The update of a persisted row ANDs the caller's condition in as it plans the action
    (not rebuilt by with_condition afterwards): the same request, the same origin."""
    from dynaorm.schema.entity import spec_of
    from dynaorm.write.conditions import with_condition
    from dynaorm.write.render import WritePlan
    from dynaorm.write.save import _plan_save, plan_save
    from tests.support.alias_models import Player

    obj: Entity = Player(player_id="p1", full_name="A", email="a@x") if renamed else (
        Note(note_id="n1", body="a"))
    _commit(SaveEntry(obj))
    if renamed:
        obj.full_name = "B"  # type: ignore[attr-defined]
    else:
        obj.body = "b"  # type: ignore[attr-defined]
    cond = (F("full_name" if renamed else "body") == "x") & F("note_id").exists()
    entry = SaveEntry(obj, overwrite=overwrite, condition=cond)
    state = obj._dynaorm_state
    direct, _ = plan_save(entry, state, 0)
    plain, _ = _plan_save(SaveEntry(obj, overwrite=overwrite), state, 0, spec_of(type(obj)))
    long_way = with_condition(plain, entry, spec_of(type(obj)), 0)
    assert [WritePlan((op,)).single_request() for op in direct] == [
        WritePlan((op,)).single_request() for op in long_way]
    assert len(direct) == len(long_way) == 1
    ((a,), (b,)) = ([op.origin for op in direct], [op.origin for op in long_way])
    assert a._replace(caller=None) == b._replace(caller=None) and a.caller is not None
    assert a.caller is b.caller or renamed  # (renaming builds a new, equal, tree)
