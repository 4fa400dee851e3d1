"""Honest outcomes (contract 4, 0.2), the pure decision (``dynaorm.write.outcomes``): whether
a write whose answer was lost or refused was in fact applied, from the stored item the
failure carries. No I/O: the faults injected on the engines are in
tests/system/test_faults.py."""

from __future__ import annotations

from typing import Any

from dynaorm import F, OutcomeUnknownError, RequestError
from dynaorm.protocol.events import Reason
from dynaorm.write.outcomes import APPLIED, resolve, same_item, same_value, written_by
from dynaorm.write.records import ConditionCheck, Delete, Fail, Origin, Put, Role, Update
from dynaorm.write.render import WritePlan
from tests.support.models import Note, app

KEY: dict[str, str] = {"pk": "NOTE#n1", "sk": "NOTE"}
ORIGIN = Origin(Note, KEY, Role.ROW, Fail.EXISTS)
ITEM: dict[str, Any] = {"pk": {"S": "NOTE#n1"}, "sk": {"S": "NOTE"}, "n": {"N": "1.50"},
        "tags": {"L": [{"S": "a"}]}, "m": {"M": {"x": {"NS": ["1", "2.0"]}}}}


def _failed(code: str, *, item: Any = None, reasons: Any = None,
            maybe_applied: bool = True) -> RequestError:
    exc = RequestError("PutItem", code, "failed", reasons, item=item)
    exc.maybe_applied = maybe_applied
    exc.attempts = 2
    return exc


def test_same_value_compares_as_dynamodb_stores() -> None:
    stored = {**ITEM, "n": {"N": "1.5"}, "m": {"M": {"x": {"NS": ["2", "1"]}}}}
    assert same_item(stored, ITEM)
    assert not same_item({**stored, "n": {"N": "1.51"}}, ITEM)
    assert not same_item({**stored, "extra": {"S": "x"}}, ITEM)
    assert not same_value({"S": "1"}, {"N": "1"})
    assert same_value({"B": b"ab"}, {"B": b"ab"}) and not same_value({"B": b"a"}, {"B": b"b"})


def test_written_by_each_kind_of_action() -> None:
    put = Put(KEY, ITEM, None, ORIGIN)
    assert written_by(put, dict(ITEM)) and not written_by(put, None)
    delete = Delete(KEY, None, ORIGIN)
    assert written_by(delete, None) and not written_by(delete, ITEM)
    update = Update(KEY, {"n": {"N": "1.5"}}, ("gone",), None, ORIGIN)
    assert written_by(update, ITEM)
    assert not written_by(update, {**ITEM, "gone": {"S": "still here"}})
    assert not written_by(update, {**ITEM, "n": {"N": "2"}}) and not written_by(update, None)
    check = ConditionCheck(KEY, F("n") == 1, ORIGIN)
    assert not written_by(check, ITEM)  # a check writes nothing


def test_resolve_decisions() -> None:
    plan = WritePlan((Put(KEY, ITEM, None, ORIGIN),))
    ccf = "ConditionalCheckFailedException"
    assert resolve(plan, _failed(ccf, item=ITEM)) == APPLIED
    assert resolve(plan, _failed(ccf, item={**ITEM, "n": {"N": "9"}})) is None
    assert resolve(plan, _failed(ccf, item=ITEM, maybe_applied=False)) is None
    unknown = resolve(plan, _failed("ThrottlingException"))
    assert isinstance(unknown, OutcomeUnknownError)
    assert unknown.operation == "PutItem" and unknown.keys == [KEY]
    assert resolve(plan, _failed("ResourceNotFoundException")) is None

    two = WritePlan((Put(KEY, ITEM, None, ORIGIN), Delete({"pk": "g", "sk": "g"}, None,
                                                          ORIGIN)))
    cancelled = "TransactionCanceledException"
    own = [Reason("ConditionalCheckFailed", item=ITEM), Reason("ConditionalCheckFailed")]
    assert resolve(two, _failed(cancelled, reasons=own)) == APPLIED
    assert resolve(two, _failed(cancelled, reasons=[None, Reason("ConditionalCheckFailed",
                                                                 item=ITEM)])) is None
    conflict = [None, Reason("TransactionConflict")]
    assert isinstance(resolve(two, _failed(cancelled, reasons=conflict)), OutcomeUnknownError)


def test_written_by_the_clauses_of_a_staged_update() -> None:
    """(0.3) s.update() clauses: SET and REMOVE are recognised, set_default needs the
    attribute there, and clauses whose result depends on the value before never are."""
    sets = Update(KEY, {}, (), None, ORIGIN, clauses=(
        ("SET", "n", {"N": "1.5"}), ("REMOVE", "gone", None), ("DEFAULT", "tags", {"L": []})))
    assert written_by(sets, ITEM)
    assert not written_by(sets, {**ITEM, "gone": {"S": "x"}})
    assert not written_by(sets, {k: v for k, v in ITEM.items() if k != "tags"})
    assert not written_by(sets, None)
    for kind in ("ADD", "DELETE", "APPEND", "PREPEND"):
        other = Update(KEY, {}, (), None, ORIGIN, clauses=((kind, "n", {"N": "1"}),))
        assert not written_by(other, ITEM)


def _read_back(plan: WritePlan, exc: RequestError, stored: Any) -> Any:
    """Drive read_back with ``stored`` as the read's answer (or raise it into it)."""
    from dynaorm.write.outcomes import failure

    asked: list[Any] = []

    def read(table: Any, key: Any) -> Any:
        asked.append((table, key))
        if isinstance(stored, Exception):
            raise stored
        return stored
        yield  # a protocol

    proto = failure(plan, exc, read)
    try:
        next(proto)
    except StopIteration as stop:
        assert asked == [(app, KEY)]  # read from the entity's table
        return stop.value
    raise AssertionError("read_back yields only through its read")  # pragma: no cover


def test_a_single_item_write_that_may_have_been_applied_is_read_back() -> None:
    """(0.3) Never resent, never a definite error: success or OutcomeUnknownError."""
    put = WritePlan((Put(KEY, ITEM, None, ORIGIN),))
    lost = _failed("ConnectionError")
    assert _read_back(put, lost, dict(ITEM)) is None  # applied: success
    other = _read_back(put, lost, {**ITEM, "n": {"N": "9"}})
    assert isinstance(other, OutcomeUnknownError) and "does not hold" in str(other)
    gone = _read_back(put, lost, None)
    assert isinstance(gone, OutcomeUnknownError) and "no item" in str(gone)
    failed = _read_back(put, lost, _failed("ThrottlingException"))
    assert isinstance(failed, OutcomeUnknownError) and "reading the item back" in str(failed)
    delete = WritePlan((Delete(KEY, None, ORIGIN),))
    assert _read_back(delete, lost, None) is None
    assert isinstance(_read_back(delete, lost, ITEM), OutcomeUnknownError)
