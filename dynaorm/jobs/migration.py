"""``dynaorm migrate``: move every item still in an entity's previous layout
(``Meta.previous``) to its current one, page by page.

The table is scanned (consistently) one page at a time. Each item stored in the previous
layout of one of the table's entities is read into its current class, with its old version
rows, and saved: the save plans the one move the session uses (the previous layout's,
:mod:`dynaorm.schema.rules.previous`): old row deleted on the condition that it is exactly
as read, new row put on the condition that nothing is there, guards re-pointed, version rows
moved, all in one transaction. A move whose condition fails (a live writer got there
first) is judged again on a fresh read: the entity already moved (or deleted) by the
writer is skipped, one changed in its old layout is moved again from the fresh read.

After each page the checkpoint file records the scan position and the counts, so a run
that stops continues where it was (``resume=True``). A finished run ends with the audit
of ``dynaorm check`` (no repairs), whose findings the report lists.
"""

import contextlib
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from dynaorm._types import Item, PlainKey
from dynaorm.client.table import Table
from dynaorm.errors import ConflictError, DynaormError, ItemNotFoundError, RequestError
from dynaorm.jobs.audit import scan_pages
from dynaorm.jobs.checking import check_table
from dynaorm.jobs.checkpoint import CheckpointError, advance, existing, parse
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.policy import Budget, Rate
from dynaorm.protocol.steps import call
from dynaorm.read.batches import FETCHING
from dynaorm.schema.entity import Entity, spec_of
from dynaorm.schema.rules.previous import (
    MAX_MOVE_ACTIONS,
    history_batches,
    kept_row_move,
    move_actions,
)
from dynaorm.schema.rules.unique import OWNER_TYPE, guard_owner
from dynaorm.schema.spec import EntitySpec
from dynaorm.sync.session import Session
from dynaorm.values.keys import GUARD_TYPE, key_value, named
from dynaorm.values.records import Op
from dynaorm.values.state import MovedState
from dynaorm.values.ttl import expired
from dynaorm.write.conditions import WRITING
from dynaorm.write.render import WritePlan

__all__ = ["MigrationReport", "migrate", "old_row"]

#: how many times a move that lost its condition is judged again and retried
MOVE_ROUNDS = 5
#: sample keys kept per entity (old key -> new key)
SAMPLES = 3


@dataclass
class _State:
    table: str
    dry_run: bool
    last_key: Item | None = None
    scanned: int = 0
    pages: int = 0
    found: dict[str, int] = field(default_factory=dict)
    moved: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    failed: list[str] = field(default_factory=list)
    samples: dict[str, list[list[str]]] = field(default_factory=dict)
    done: bool = False



@dataclass(frozen=True)
class MigrationReport:
    """What a (possibly resumed) ``migrate`` run covered and did."""

    #: items scanned in all (earlier runs of the same checkpoint included)
    scanned: int
    #: items found in a previous layout, per entity name
    found: dict[str, int]
    #: items moved to the current layout by this tool, per entity name (0 on a dry run)
    moved: dict[str, int]
    #: old-layout items a live writer moved or deleted first (nothing left to move)
    skipped: int
    #: items that could not be moved (their keys and why)
    failed: list[str]
    #: a few ``(old key, new key)`` pairs per entity name
    samples: dict[str, list[list[str]]]
    #: True when the whole table was scanned (False: stopped early, resume later)
    done: bool
    #: True when this run continued from a checkpoint
    resumed: bool
    dry_run: bool
    #: the findings of ``dynaorm check`` after a finished run (``None``: not run)
    problems: list[str] | None = None
    #: what a finished run found still in a previous layout when it looked again (rows,
    #: version rows, guards naming a previous type or owner): each one's key and kind
    left: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Finished, nothing failed, ``check`` clean, and nothing of any entity (row,
        guard, version row, kept history) left in a previous layout (a dry run:
        finished)."""
        return self.done and not self.failed and not self.problems and not self.left


def _migrating(table: Table) -> list[EntitySpec]:
    return [s for s in map(spec_of, table.entities.values()) if s.previous is not None]


def old_row(specs: list[EntitySpec], item: Item) -> tuple[EntitySpec, int] | None:
    """The entity whose previous layout stores ``item`` and the version its row is (0:
    the row itself, a versioned entity's latest copy; ``n``: version row ``n``), or
    ``None``: a row of a current layout, a guard, a foreign item."""
    spec = next((s for s in specs if s.rules.before.stores(s, item)), None)
    if spec is None:
        return None
    sk = spec.table.sk
    found = None if sk is None else spec.rules.sort_keys.parse(key_value(item[sk]))
    return spec, 0 if found is None else found[0]


def _old_guard(specs: list[EntitySpec], item: Item) -> bool:
    """Whether the guard ``item`` names a previous type or an owner key stored in a
    previous layout (a move re-points it: one left means a move left it)."""
    table = specs[0].table if specs else None
    if table is None or named(item, table.type_attribute) != GUARD_TYPE:
        return False
    owner_type = named(item, OWNER_TYPE)
    owner = {a: {"S": v} for a, v in (guard_owner(table, item) or {}).items()}
    if table.type_attribute is not None and owner_type is not None:
        owner[table.type_attribute] = {"S": owner_type}
    return any(s.previous is not None and s.previous.type_name != s.type_name
               and owner_type == s.previous.type_name for s in specs) or (
        old_row(specs, owner) is not None)


def _leftovers(table: Table, specs: list[EntitySpec], page_size: int | None,
               segment: tuple[int, int] | None) -> list[str]:
    """Everything still in a previous layout, found by one more scan: old rows (not
    expired), old version rows, guards naming an old type or owner."""
    left = []
    ttl = table.ttl
    for page, _ in scan_pages(table, None, page_size, "migrate", segment):
        for item in page:
            if ttl is not None and expired(item, ttl):
                continue
            key = _key_text(specs[0].stored_key(item)) if specs else ""
            old = old_row(specs, item)
            if old is not None:
                what = "a version row" if old[1] else "its row is"
                left.append(f"{old[0].name} {key}: {what} in the previous layout")
            elif segment is None and _old_guard(specs, item):  # (a segment's moves may
                # re-point guards of any segment: the check job covers them)
                left.append(f"guard {key}: names an owner in a previous layout")
    return left


def _key_text(key: PlainKey) -> str:
    return "/".join(str(v) for v in key.values())


def _move(session: Session, spec: EntitySpec, obj: Entity) -> str:
    """Move ``obj`` (read from its old layout); ``"moved"``, ``"skipped"`` (a writer moved
    or deleted it first) or the reason it could not be moved."""
    fields = {f: obj.__dict__[f] for f in spec.lookup_fields}
    current: Entity | None = obj
    for _ in range(MOVE_ROUNDS):
        state = None if current is None else current._dynaorm_state
        if current is None or not isinstance(state, MovedState):
            return "skipped"
        if move_actions(spec, len(state.history)) > MAX_MOVE_ACTIONS:  # (past one transaction)
            # its long history moved ahead of it, one conditioned transaction per batch (a
            # writer moved or changed it: the fresh read below judges)
            with contextlib.suppress(RequestError):
                for ops in history_batches(spec, state, WRITING):
                    _send(spec.table.name, session.client.driver, ops)
            current = session.get(spec.cls, consistent=True, **fields)
            continue
        session.save(current)
        try:
            session.commit()
            return "moved"
        except (ConflictError, ItemNotFoundError):
            session.rollback()
        current = session.get(spec.cls, consistent=True, **fields)  # judged again
    return f"still changing after {MOVE_ROUNDS} attempts"


def _move_kept(table: Table, spec: EntitySpec, row: Item) -> str:
    """Move one kept version row (its entity deleted without its history) to the current
    layout; ``"skipped"`` when its entity is stored again in the old layout (its move
    takes the row) or a writer moved or deleted the row first."""
    try:
        _send(table.name, table.db.driver, kept_row_move(spec, row, WRITING))
    except RequestError as exc:
        return "skipped" if exc.code == "TransactionCanceledException" else str(exc)
    except DynaormError as exc:
        return str(exc)
    return "moved"


def _send(table: str, driver: Any, ops: list[Op]) -> None:
    """One transaction of a history's move (a batch, or a kept row)."""
    request = WritePlan(tuple(ops)).transaction_request(os.urandom(16).hex())
    driver.run(call("TransactWriteItems", request), Operation("migrate.history", (table,)))


def _load(path: Path | None, table: Table, dry_run: bool, resume: bool) -> tuple[_State, bool]:
    fresh = _State(table.name, dry_run)
    if path is None:
        if resume:
            raise CheckpointError("resume needs a checkpoint file")
        return fresh, False
    text = existing(path, fresh, create=not resume)
    if text is None:
        if resume:
            raise CheckpointError(f"checkpoint {path} does not exist: nothing to resume")
        return fresh, False
    state = parse(_State, text, str(path), "migrate", table.name)
    if not resume:
        if state.done:
            return fresh, False
        raise CheckpointError(f"checkpoint {path} holds an unfinished run: pass --resume "
                              "(resume=True) to continue it, or delete the file")
    if state.done:
        raise CheckpointError(f"checkpoint {path} holds a finished run: nothing to resume")
    if state.dry_run != dry_run:
        raise CheckpointError(f"checkpoint {path} was written by a run "
                              f"{'with' if state.dry_run else 'without'} --dry-run")
    return state, True


def migrate(table: Table, *, dry_run: bool = False, checkpoint: str | Path | None = None,
            resume: bool = False, rate: float | None = None, page_size: int | None = None,
            max_pages: int | None = None, check: bool = True, concurrency: int = 1,
            progress: Callable[[int], None] | None = None,
            clock: Callable[[], float] = time.monotonic,
            sleep: Callable[[float], None] = time.sleep,
            segment: tuple[int, int] | None = None) -> MigrationReport:
    """Move every item of ``table`` stored in a previous layout to its current one.

    ``dry_run``: count and sample only, write nothing. ``checkpoint``: record the scan
    position and counts after every page; ``resume=True`` continues the unfinished run it
    holds. ``rate``: at most that many moves a second. ``max_pages``: stop after that
    many pages of this run (resume later). ``concurrency``: moves of one page in flight
    at once (each its own transaction). ``check``: audit the table once the run is
    finished (``dynaorm check``, no repairs). ``progress`` gets the running count of
    scanned items. ``segment``: ``(i, n)``, only scan segment ``i`` of ``n`` (a task of
    :func:`dynaorm.jobs.migrate`).
    """
    _check_options(concurrency, rate)
    specs = _migrating(table)
    path = None if checkpoint is None else Path(checkpoint)
    state, resumed = _load(path, table, dry_run, resume)
    pace = Budget(Rate(write=rate), clock) if rate else None  # (a move: one unit)
    if progress is not None:
        progress(state.scanned)
    pages = 0
    local = threading.local()

    def move_one(found: _Found) -> str:
        spec, item = found.spec, found.item
        if found.kept:  # a version row moved alone (its entity is gone)
            return _move_kept(table, spec, item)
        session = getattr(local, "session", None)
        if session is None:
            session = local.session = Session(table)
        layout = spec.previous
        assert layout is not None  # (an old-layout item: its entity declares one)
        try:
            obj = table.db.driver.run(layout.moved(spec, item, FETCHING),
                                      Operation("migrate.read", (table.name,)))
        except DynaormError as exc:
            return str(exc)
        if pace is not None:
            sleep(pace.wait("PutItem"))
            pace.spent("PutItem", 1.0)
        return _move(session, spec, obj)

    pool = ThreadPoolExecutor(concurrency) if concurrency > 1 and not dry_run else None
    try:
        for page, last in scan_pages(table, state.last_key, page_size, "migrate", segment):
            found = _found_on_page(specs, page, state)
            todo = [] if dry_run else found
            outcomes = list(pool.map(move_one, todo)) if pool else [move_one(f) for f in todo]
            _count_outcomes(state, todo, outcomes)
            advance(path, state, len(page), last, progress)
            pages += 1
            if max_pages is not None and pages >= max_pages and not state.done:
                break
    finally:
        if pool is not None:
            pool.shutdown()
    problems = None
    left = []
    if state.done and not dry_run:
        left = _leftovers(table, specs, page_size, segment)
        if check:
            problems = check_table(table).problems
    return MigrationReport(state.scanned, dict(state.found), dict(state.moved),
                           state.skipped, list(state.failed), dict(state.samples),
                           state.done, resumed, dry_run, problems, left)


def _check_options(concurrency: int, rate: float | None) -> None:
    """Refuse a ``concurrency`` below 1 and a ``rate`` that is not positive."""
    if concurrency < 1:
        raise DynaormError(f"migrate: concurrency must be at least 1, got {concurrency!r}")
    if rate is not None and rate <= 0:
        raise DynaormError(f"migrate: rate must be positive, got {rate!r}")


class _Found(NamedTuple):
    """An item found in a previous layout (its old key: ``spec.stored_key(item)``), with
    what the migration does with it."""

    spec: EntitySpec
    item: Item
    kept: bool
    """A version row (version 1 or later), moved alone if its entity is gone, counted
    apart; else the entity's own row (its latest copy), loaded and saved anew."""


def _found_on_page(specs: list[EntitySpec], page: list[Item], state: _State
                   ) -> list[_Found]:
    """The items of ``page`` stored in a previous layout, each with its entity and old
    key, counted in ``state`` with a few sample keys (old -> new); an item that does not
    load into its current class is recorded as failed instead."""
    found = []
    for item in page:
        old = old_row(specs, item)
        if old is None:
            continue
        spec = old[0]
        if old[1]:  # a version row (moved alone if its entity is gone)
            found.append(_Found(spec, item, kept=True))
            continue
        old_key = spec.stored_key(item)
        try:
            assert spec.previous is not None  # (old_row: one declaring it)
            # (the current key: refused where another's reads take it)
            new_key = spec.primary_key(spec.previous.validate(spec, item).__dict__)
        except DynaormError as exc:
            state.failed.append(f"{spec.name} {_key_text(old_key)}: {exc}")
            continue
        state.found[spec.name] = state.found.get(spec.name, 0) + 1
        samples = state.samples.setdefault(spec.name, [])
        if len(samples) < SAMPLES:
            samples.append([_key_text(old_key), _key_text(new_key)])
        found.append(_Found(spec, item, kept=False))
    return found


def _count_outcomes(state: _State, moves: list[_Found], outcomes: list[str]) -> None:
    """Record in ``state`` what each move came to: moved, skipped (a live writer moved
    or deleted the item first), or failed (with its reason)."""
    for (spec, item, kept), outcome in zip(moves, outcomes, strict=True):
        if outcome == "moved":  # (a kept version row: counted apart, skipped silently)
            name = f"{spec.name} (kept history)" if kept else spec.name
            state.moved[name] = state.moved.get(name, 0) + 1
        elif outcome == "skipped":
            state.skipped += not kept
        else:
            state.failed.append(f"{spec.name} {_key_text(spec.stored_key(item))}: {outcome}")
