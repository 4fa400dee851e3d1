"""The steps of a commit that need no I/O, shared by :class:`~dynaorm.Session`'s direct
commit and the commit protocol (:meth:`dynaorm.core.unit_of_work.UnitOfWork._commit_p`): is every
staged entry's stored state known, the objects' states after success, staged actions'
results. A step that needs a read raises :class:`_Need`; the protocol makes the read and
runs the step again (see :meth:`dynaorm.core.unit_of_work.UnitOfWork._replayed`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.model.entity import Entity, spec_of
from dynaorm.model.state import InstanceState
from dynaorm.model.timestamps import apply_stamps
from dynaorm.write.records import Update
from dynaorm.write.render import WritePlan
from dynaorm.write.staged import DeleteEntry, Entry, Outcome, SaveEntry
from dynaorm.write.updates import StagedCheck, StagedUpdate

__all__: list[str] = []


class _Need(BaseException):
    """Raised by a read callback whose answer is not known yet (see :meth:`_replayed`)."""

    def __init__(self, kind: str, arg: Any) -> None:
        super().__init__(kind)
        self.kind = kind
        self.arg = arg


def _all_ready(staged: list[Entry]) -> list[tuple[Entry, InstanceState | None]] | None:
    """Every entry's :func:`_ready` answer, or ``None`` when one needs a read first."""
    prepared: list[tuple[Entry, InstanceState | None]] = []
    for entry in staged:
        ready = _ready(entry)
        if ready is None:
            return None
        prepared.append(ready)
    return prepared


def _finished(plan: WritePlan, outcomes: list[Outcome], response: dict[str, Any]) -> bool:
    """Objects take the state a successful commit left; returns whether the commit was
    one request that answered (else a staged action's result is read back)."""
    for outcome in outcomes:
        _finalize(outcome)
    return len(plan.ops) == 1 and bool(response)  # an applied-but-lost answer: read


def _finish_actions(staged: list[Entry], response: dict[str, Any], single: bool,
                    start: int) -> int:
    """Finish the staged actions from ``start`` on, in order (most need no read: the
    result came back); returns the index of the first that needs a read, or -1."""
    for at in range(start, len(staged)):
        entry = staged[at]
        if not isinstance(entry, SaveEntry | DeleteEntry):
            action: StagedUpdate[Any] | StagedCheck = entry  # type: ignore[assignment]
            try:
                action._finish(response, single, _unread)
            except _Need:
                return at
    return -1


def _ready(entry: Entry) -> tuple[Entry, InstanceState | None] | None:
    """``(entry, stored state)`` when the state is known without reading anything (see
    :meth:`UnitOfWork._prepare_p`, which reads for the others): an update's or check's
    prepare that asks for no read, or an object whose rules need no read."""
    if not isinstance(entry, SaveEntry | DeleteEntry):
        action: StagedUpdate[Any] | StagedCheck = entry  # type: ignore[assignment]
        try:
            return entry, action._prepare(_unread, _unread_version)
        except _Need:
            return None
    state = entry.obj._dynaorm_state
    if state is not None:
        return entry, state
    spec = spec_of(type(entry.obj))
    if spec.has_rules and (isinstance(entry, DeleteEntry) or entry.overwrite):
        return None  # its stored state is read first
    if spec.versioned and isinstance(entry, SaveEntry):
        return None  # a deleted entity's kept history is looked up first
    return entry, None


def _unread(key: PlainKey) -> Item | None:
    """A read callback that knows nothing yet (see :meth:`UnitOfWork._replayed`)."""
    raise _Need("item", key)


def _unread_version(obj: Entity) -> int:
    """A version callback that knows nothing yet (see :meth:`UnitOfWork._replayed`)."""
    raise _Need("version", obj)


#: the setter of ``Entity._dynaorm_state``, called directly: assigning the attribute goes
#: through pydantic's ``__setattr__`` first, which every commit would pay for nothing
_SetState = Callable[[Entity, InstanceState | None], None]
_set_state: _SetState = Entity._dynaorm_state.fset  # type: ignore[attr-defined]


def _accumulates(op: Any) -> bool:
    """Whether applying ``op`` twice differs from applying it once (ADD, list appends)."""
    if not isinstance(op, Update) or not op.clauses:  # (a save's update: SET/REMOVE only)
        return False
    return any(kind in ("ADD", "APPEND", "PREPEND") for kind, _, _ in op.clauses)


def _finalize(outcome: Outcome) -> None:
    obj = outcome.obj
    if outcome.stamps:
        apply_stamps(obj, outcome.stamps)
    _set_state(obj, outcome.state)
    if outcome.version is not None:
        obj.version = outcome.version  # type: ignore[attr-defined]
