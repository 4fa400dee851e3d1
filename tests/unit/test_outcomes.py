"""Honest outcomes (contract 4, 0.2), the pure decision (``dynaorm.write.outcomes``): whether
a write whose answer was lost or refused was in fact applied, from the revision the
stored item holds (0.5: equal values, absence and presence prove nothing). No I/O: the
faults injected on the engines are in tests/system/test_faults.py."""

from __future__ import annotations

from typing import Any

from dynaorm import OutcomeUnknownError, RequestError
from dynaorm.protocol.events import Reason
from dynaorm.values.records import Delete, Fail, Origin, Put, Role
from dynaorm.values.revision import revision_of
from dynaorm.write.outcomes import APPLIED, resolve, unapplied_by
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


REV = "r1"
MINE: dict[str, Any] = {**ITEM, "_rev": {"S": REV}}  # the row as this write stamps it


def test_equal_values_absence_and_presence_prove_nothing() -> None:
    """(0.5, contract 20) Only a revision proves: the loaded one still stored proves a
    write unapplied; nothing else does (an equal item, no item, an item of another
    revision: another writer may have made them)."""
    assert unapplied_by(app, {**ITEM, "_rev": {"S": "loaded"}}, "loaded")
    assert not unapplied_by(app, {**ITEM, "_rev": {"S": "other"}}, "loaded")
    assert not unapplied_by(app, None, "loaded") and not unapplied_by(app, ITEM, None)
    assert not unapplied_by(app, ITEM, "loaded")  # equal values, no revision: no proof
    assert revision_of(app, MINE) == REV and revision_of(app, None) is None
    assert revision_of(app, ITEM) is None


def test_resolve_decisions() -> None:
    plan = WritePlan((Put(KEY, ITEM, None, ORIGIN),))
    ccf = "ConditionalCheckFailedException"
    assert resolve(plan, _failed(ccf, item=MINE), REV) == APPLIED
    assert resolve(plan, _failed(ccf, item=ITEM), REV) is None  # equal values: no proof
    assert resolve(plan, _failed(ccf, item=MINE), "another") is None
    assert resolve(plan, _failed(ccf, item=MINE), None) is None
    assert resolve(plan, _failed(ccf, item=MINE, maybe_applied=False), REV) is None
    unknown = resolve(plan, _failed("ThrottlingException"), REV)
    assert isinstance(unknown, OutcomeUnknownError)
    assert unknown.operation == "PutItem" and unknown.keys == [KEY]
    assert resolve(plan, _failed("ResourceNotFoundException"), REV) is None

    two = WritePlan((Put(KEY, ITEM, None, ORIGIN), Delete({"pk": "g", "sk": "g"}, None,
                                                          ORIGIN)))
    cancelled = "TransactionCanceledException"
    own = [Reason("ConditionalCheckFailed", item=MINE), Reason("ConditionalCheckFailed")]
    assert resolve(two, _failed(cancelled, reasons=own), REV) == APPLIED
    assert resolve(two, _failed(cancelled, reasons=[None, Reason("ConditionalCheckFailed",
                                                                 item=MINE)]), REV) is None
    conflict = [None, Reason("TransactionConflict")]
    assert isinstance(resolve(two, _failed(cancelled, reasons=conflict), REV),
                      OutcomeUnknownError)
    guard = Put(KEY, ITEM, None, ORIGIN._replace(role=Role.GUARD))  # stamps no revision
    assert resolve(WritePlan((guard,)), _failed(ccf, item=MINE), REV) is None


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

    proto = failure(plan, exc, read, REV)
    try:
        next(proto)
    except StopIteration as stop:
        assert asked == [(app, KEY)]  # read from the entity's table
        return stop.value
    raise AssertionError("read_back yields only through its read")  # pragma: no cover


def test_a_single_item_write_that_may_have_been_applied_is_read_back() -> None:
    """(0.5) Never resent, never a definite error: success only when the row holds this
    write's revision, else OutcomeUnknownError (a delete: always, it leaves no row)."""
    put = WritePlan((Put(KEY, ITEM, None, ORIGIN),))
    lost = _failed("ConnectionError")
    assert _read_back(put, lost, dict(MINE)) is None  # applied: success
    same = _read_back(put, lost, dict(ITEM))  # the same values, written by another
    assert isinstance(same, OutcomeUnknownError) and "revision" in str(same)
    gone = _read_back(put, lost, None)
    assert isinstance(gone, OutcomeUnknownError) and "no item" in str(gone)
    failed = _read_back(put, lost, _failed("ThrottlingException"))
    assert isinstance(failed, OutcomeUnknownError) and "reading the item back" in str(failed)
    delete = WritePlan((Delete(KEY, None, ORIGIN),))
    assert isinstance(_read_back(delete, lost, None), OutcomeUnknownError)  # absence
    assert isinstance(_read_back(delete, lost, MINE), OutcomeUnknownError)
