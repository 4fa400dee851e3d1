"""``dynaorm check`` at table scale: the audit page by page, with a checkpoint and progress.

:func:`audit_items` needs every item at once; this runner scans one page at a time and
reads, by key, only the items a page's checks need besides the page itself (the guards its
owners should have, the owners its guards name, the version rows behind its latest copies).
Each page is audited, repaired when asked (every fix conditioned on the values it read, so
a concurrent writer is never overwritten), and then recorded in the checkpoint file: the
scan position (``LastEvaluatedKey``) and the counts so far. A run that stops (a crash, a
Ctrl-C, an expired credential) continues from the last recorded page; a page is counted
only once it is recorded, so every item is covered exactly once.
"""

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from dynaorm._types import Item
from dynaorm.client.table import Table
from dynaorm.errors import DynaormError, RequestError
from dynaorm.jobs.audit import (
    Key,
    Problem,
    Repair,
    _Auditor,
    audit_items,
    keyed,
    repair,
    scan_pages,
)
from dynaorm.jobs.checkpoint import CheckpointError, advance, existing, parse
from dynaorm.jobs.offloads import ORPHAN_AGE, judged_objects, referenced
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.steps import call
from dynaorm.read.batches import batch_get_p
from dynaorm.schema.entity import prepare_rows, preparing
from dynaorm.schema.rules.versioned import version_sk
from dynaorm.values.keys import GUARD_TYPE


@dataclass
class _State:
    table: str
    repair: bool
    last_key: Item | None = None
    scanned: int = 0
    pages: int = 0
    problems: list[str] = field(default_factory=list)
    #: items per stored type name no class claims
    unclaimed: dict[str, int] = field(default_factory=dict)
    seen: list[list[str]] = field(default_factory=list)
    unrepairable: int = 0
    repaired: int = 0
    failed: int = 0
    resolved: int = 0
    done: bool = False


@dataclass(frozen=True)
class CheckResult:
    """What a (possibly resumed) check covered and found."""

    #: items scanned in all (earlier runs of the same checkpoint included)
    scanned: int
    #: every problem found, as text (earlier runs included), in the order found
    problems: list[str]
    #: problems no repair applies to (duplicates, stale table keys, no history)
    unrepairable: int
    #: the fixes applied and skipped by this run
    repairs: list[Repair]
    repaired: int
    failed: int
    #: True when this run continued from a checkpoint
    resumed: bool
    #: problems a live writer resolved between the audit and their repair
    resolved: int = 0
    #: items (earlier runs included) per stored type name no class claims (on a table
    #: without a type attribute, the items no entity's key templates fit, under
    #: ``"(no type attribute)"``)
    unclaimed: dict[str, int] = field(default_factory=dict)
    #: the objects of the table's offload prefix compared with its rows' references
    #: (``None``: not compared: no ``offload=``, one segment, or a resumed run, which
    #: did not see every reference)
    objects: int | None = None

    @property
    def left(self) -> int:
        """Problems still in the table after the repairs."""
        return len(self.problems) - self.repaired - self.resolved


# -- progress ------------------------------------------------------------------------------
def progress_line(done: int, total: int | None, counted: int, elapsed: float,
                  what: tuple[str, str] = ("scanned", "items")) -> str:
    """``scanned 1200 items of ~5000 (24%), 350 items/s, ETA 0:00:11``. ``counted`` items
    were scanned in ``elapsed`` seconds by this run (the rate); ``total`` is DescribeTable's
    approximate item count (None: unknown). ``what``: the verb and the noun (a load's:
    ``("loaded", "rows")``)."""
    verb, noun = what
    rate = counted / elapsed if elapsed > 0 else 0.0
    text = f"{verb} {done} {noun}"
    if total:
        total = max(total, done)
        text += f" of ~{total} ({100 * done // total}%)"
    text += f", {rate:.0f} {noun}/s, ETA "
    if total and rate > 0:
        eta = max(0, round((total - done) / rate))
        text += f"{eta // 3600}:{eta // 60 % 60:02d}:{eta % 60:02d}"
    else:
        text += "?"
    return text


class ProgressBar:
    """Writes :func:`progress_line` to ``stream`` (a terminal: one line, rewritten)."""

    def __init__(self, stream: Any, total: int | None,
                 clock: Callable[[], float] = time.monotonic,
                 what: tuple[str, str] = ("scanned", "items")):
        self.stream = stream
        self.total = total
        self.clock = clock
        self.what = what
        self.start: tuple[float, int] | None = None
        self.shown = False

    def __call__(self, done: int) -> None:
        now = self.clock()
        if self.start is None:
            self.start = (now, done)  # a resumed run's rate counts only its own items
        counted, elapsed = done - self.start[1], now - self.start[0]
        self.stream.write("\r" + progress_line(done, self.total, counted, elapsed, self.what))
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """End the line, if anything was shown."""
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def item_count(table: Table) -> int | None:
    """DescribeTable's approximate item count (refreshed by DynamoDB every few hours)."""
    try:
        out = table.db.driver.run(call("DescribeTable", {"TableName": table.name}),
                                  Operation("check.count", (table.name,)))
    except RequestError as exc:
        raise DynaormError(f"cannot scan table {table.name!r}: {exc}") from exc
    count = out["Table"].get("ItemCount")
    return int(count) if count is not None else None


# -- context: the items a page's checks need -----------------------------------------------
def _wanted(table: Table, items: list[Item]) -> set[Key]:
    """The keys the audit of ``items`` reads besides them: the guards their owners should
    have (as the audit expects them), the owners their guards name, the version rows
    behind their latest copies."""
    auditor = _Auditor(table, items)
    keys = set(auditor.expected_guards())
    for key, item in auditor.items.items():
        kind = auditor.type_of(item)
        if kind == GUARD_TYPE:
            keys.add(auditor.holder(item)[0])
        spec = auditor.specs.get(kind or "")
        parsed = None if spec is None else spec.rules.sort_keys.parse(key[1])
        if parsed is not None and parsed[0] == 0:
            keys.update(_version_rows(item, key[0], parsed[1]))
    return keys


def _version_rows(latest: Item, pk: str, base: str) -> set[Key]:
    """The keys of the version rows a latest copy's check reads: the row of the version
    the copy holds, and the next one (a repair checks it is still absent); none when the
    copy holds no version number."""
    number = latest.get("version", {}).get("N")
    if number is None or not number.isdigit():
        return set()
    n = int(number)
    return {(pk, version_sk(base, v)) for v in (n, n + 1) if v}


def _get_many(table: Table, auditor: _Auditor, keys: set[Key]) -> list[Item]:
    """The items stored under ``keys`` (consistent reads): BatchGetItem as every read by
    key sends it (100 keys a request, unprocessed keys retried with backoff within the
    table's ``max_wait``, a bounded number of rounds)."""
    wanted = [auditor.key_av(k) for k in sorted(keys)]

    def read() -> Generator[Any, Any, list[Item]]:
        found = yield from batch_get_p(table.name, wanted, consistent=True)
        items = list(found.values())
        yield from prepare_rows(preparing(table), items)  # (key material: Encrypted fields)
        return items

    return table.db.driver.run(read(), Operation("check.confirm", (table.name,)))


def _context(table: Table, page: list[Item]) -> list[Item]:
    """Items the page's checks read by key: guards, their owners, version rows."""
    auditor = _Auditor(table, page)
    known = set(auditor.items)
    found = []
    batch = page
    for _ in range(2):  # owner -> its guard -> the guard's holder: two hops at most
        keyed(table, batch)
        keys = _wanted(table, batch) - known
        if not keys:
            break
        batch = _get_many(table, auditor, keys)
        known |= keys
        found += batch
    return found


# -- confirmation: a finding is re-read and re-judged before it is reported ----------------
def _keys_of(auditor: _Auditor, problem: Problem) -> set[Key]:
    """The items a problem was judged on: its own and every item its fix names."""
    keys = {problem.key}
    for action in problem.fix:
        body = next(iter(action.values()))
        where = body.get("Key") or body.get("Item") or {}
        if table_key := {a: where[a] for a in auditor.key_av(problem.key) if a in where}:
            keys.add(auditor.key_of(table_key))
    return keys


def _rejudge(table: Table, problems: list[Problem]) -> list[Problem]:
    """``problems`` judged again on a fresh consistent read of every item they involve (and
    of the context those items need), read through the shared batch get. Only a problem
    found again, of the same kind on the same item, is kept, in its fresh form (its fix
    conditioned on the state just read); one that a live writer resolved is dropped."""
    if not problems:
        return []
    auditor = _Auditor(table, [])
    keys = set()
    for problem in problems:
        keys |= _keys_of(auditor, problem)
    fresh = _get_many(table, auditor, keys)
    judged = {p.key for p in problems}
    subjects = [i for i in fresh if auditor.key_of(i) in judged]
    context = [*(i for i in fresh if auditor.key_of(i) not in judged), *_context(table, fresh)]
    keyed(table, [*subjects, *context])
    found = audit_items(table, subjects, context)
    wanted = {(p.kind, p.key) for p in problems}
    return [p for p in found if (p.kind, p.key) in wanted]


def _confirm(table: Table, problems: list[Problem]) -> list[Problem]:
    """The problems that two consecutive consistent re-reads judge the same (up to
    three re-reads): a finding a live writer was in the middle of is never reported."""
    last = _rejudge(table, problems)
    for _ in range(2):
        if not last:
            return []
        again = _rejudge(table, last)
        if list(map(_judged, again)) == list(map(_judged, last)):
            return again
        last = again
    return []  # still moving after every re-read: a live writer's business, not a finding


def _judged(problem: Problem) -> tuple[Any, ...]:
    """What a problem says of the items it was judged on: its kind, item, detail and its
    fix's conditions (an item a fix puts is left out: a latest copy rebuilt from its
    version row holds a fresh revision and fresh ciphertexts each time it is judged)."""
    fix = tuple({kind: {k: v for k, v in body.items() if k != "Item"}}
                for action in problem.fix for kind, body in action.items())
    return problem.kind, problem.key, problem.detail, fix


def _repair(table: Table, problems: list[Problem]) -> tuple[list[Repair], int]:
    """Each fix sent once; a fix whose conditions failed (a writer changed the items since
    they were judged) is never forced: the problem is re-judged on a fresh read and its
    fresh fix sent once more only if it is still confirmed; otherwise it is dropped, as
    resolved by that writer. The repairs, and how many problems writers resolved."""
    done = repair(table, problems)
    failed = [r.problem for r in done if not r.ok]
    if not failed:
        return done, 0
    again = {(p.kind, p.key): p for p in _confirm(table, failed)}
    retried = {(r.problem.kind, r.problem.key): r
               for r in repair(table, list(again.values()))}
    out = []
    resolved = 0
    for r in done:
        mark = (r.problem.kind, r.problem.key)
        if r.ok:
            out.append(r)
        elif mark in retried:
            out.append(retried[mark])
        else:  # resolved by the writer that won: nothing to repair, nothing left
            resolved += 1
    return out, resolved


# -- the run -------------------------------------------------------------------------------
def _load(path: Path | None, table: Table, fix: bool) -> tuple[_State, bool]:
    fresh = _State(table.name, fix)
    text = None if path is None else existing(path, fresh, create=True)
    if text is None:
        return fresh, False
    state = parse(_State, text, str(path), "check", table.name)
    if state.done:
        return fresh, False
    if state.repair != fix:
        raise CheckpointError(f"checkpoint {path} was written by a run "
                              f"{'with' if state.repair else 'without'} --repair: run with "
                              "the same options, or delete the file to start over")
    return state, True


def check_table(table: Table, *, fix: bool = False, checkpoint: str | Path | None = None,
                page_size: int | None = None, progress: Callable[[int], None] | None = None,
                segment: tuple[int, int] | None = None,
                orphan_age: timedelta = ORPHAN_AGE) -> CheckResult:
    """Audit ``table`` page by page (and repair each page when ``fix``).

    With ``checkpoint``, progress is recorded after every page and an unfinished run
    recorded there is continued; ``progress`` gets the running count of scanned items.
    ``segment``: ``(i, n)``, only scan segment ``i`` of ``n`` (a task of
    :func:`dynaorm.jobs.check`). A table with ``offload=``: once the scan is done, the
    objects of its prefix are compared with its rows' references
    (:mod:`dynaorm.jobs.offloads`: dangling references, and objects no row references
    older than ``orphan_age`` before the check began, which ``fix`` removes).
    """
    path = None if checkpoint is None else Path(checkpoint)
    state, resumed = _load(path, table, fix)
    seen = {tuple(k) for k in state.seen}
    repairs = []
    if progress is not None:
        progress(state.scanned)
    began = datetime.now(UTC)
    objects = table.offload is not None and segment is None and not resumed
    refs = {}
    key_of = _Auditor(table, []).key_of
    for page, last in scan_pages(table, state.last_key, page_size, segment=segment):
        if objects:
            refs.update(referenced(page, key_of))
        problems = []
        context = _context(table, page) if page else []
        keyed(table, [*page, *context])
        judged = audit_items(table, page, context)
        for problem in _confirm(table, judged) if judged else []:
            mark = (problem.kind, *problem.key, problem.detail)
            if mark not in seen:
                seen.add(mark)
                problems.append(problem)
                state.seen.append(list(mark))
                state.problems.append(str(problem))
                if problem.type_name:
                    state.unclaimed[problem.type_name] = (
                        state.unclaimed.get(problem.type_name, 0) + 1)
        state.unrepairable += sum(not p.repairable for p in problems)
        if fix:
            done, resolved = _repair(table, problems)
            repairs += done
            state.repaired += sum(r.ok for r in done)
            state.failed += sum(not r.ok for r in done)
            state.resolved += resolved
        advance(path, state, len(page), last, progress)
    counted = None
    if objects:
        found = judged_objects(table, refs, began, orphan_age, fix, page_size)
        state.problems += map(str, found.problems)
        state.unrepairable += found.unrepairable
        repairs += found.repairs
        state.repaired += found.repaired
        state.resolved += found.resolved
        counted = found.objects
    return CheckResult(state.scanned, list(state.problems), state.unrepairable, repairs,
                       state.repaired, state.failed, resumed, state.resolved,
                       dict(state.unclaimed), counted)
