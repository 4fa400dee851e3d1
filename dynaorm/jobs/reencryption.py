"""Rotation to the end (contract 21): :func:`reencrypt`, a :class:`~dynaorm.jobs.Job` that
seals every ``Encrypted`` value of an entity anew under its keyring's current key.

A task scans its segment of the table (consistently) and, for each row of the entity
(its row or latest copy, every version row, a row still in a previous layout), re-seals
the ciphertexts that are not of the current format under the keyring's current key, bound
to that row, in one ``UpdateItem`` conditioned on each of them being as read. Every sealed
value of the row is reached, wherever it is kept: the row's values are read as every read
reads them (:meth:`~dynaorm.schema.rules.Rules.prepare` fetches what a placing rule keeps
outside the table, ``Offloaded`` values in S3; :meth:`~dynaorm.schema.rules.Rules.unplace`
puts them back), and the write goes through the entity's placing rules as a commit's
does (a new object uploaded before it, the old one removed once it applied, the new one
once it proved not to: :func:`~dynaorm.write.placing.release_p`); after a lost answer or
a failed condition, a fresh read of the row says which (:func:`_settled`: a sealed
value's object is bound to its row, so what that row no longer holds no row ever will),
and a row still holding every value replaced removes nothing (its new object is left for
``dynaorm check --repair``). Nothing else changes: no plaintext, no revision, no
version, but another writer's lock (``Meta.lock``), moved as every write of a loaded row
moves it and conditioned on as read, so that writer's copy read before the rotation fails
its own condition instead of writing the old key's ciphertext back. So:

- it never overwrites another writer: a value changed since it was read fails the
  condition, and the row is judged again from a fresh read (a value written by a current
  writer is sealed under the current key already);
- it is resumable and idempotent without a marker: what is left to do is in the data (a
  ciphertext names its key), a task run again re-seals only what is still stale, and one
  of two runs at once finds the other's work done;
- after a lost answer it proves its own outcome from a fresh read: a new ciphertext has a
  fresh nonce, so the row holding it holds this run's write.

Once every task's report has no ``failed`` row, no stored value needs a key of the
keyring's ``previous``: they may be dropped (the MAC key of unique encrypted fields is
not a data key, so guards and ``find`` do not change). A write of an object loaded before
its row was re-sealed conflicts where it conditions on the ciphertexts it read (a unique
encrypted field of a versioned entity): reload and save again.
"""

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.client.table import Table
from dynaorm.errors import DynaormError, ForgottenError, RequestError
from dynaorm.jobs.audit import scan_pages
from dynaorm.jobs.job import ROUNDS, Job, Task, job_of
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.policy import Rate
from dynaorm.protocol.steps import call
from dynaorm.schema.entity import Entity, spec_of
from dynaorm.schema.lock import moved
from dynaorm.schema.rules.encrypted import Encryption
from dynaorm.schema.rules.keyrings import keyring_of
from dynaorm.schema.rules.versioned import parse_version_sk
from dynaorm.schema.tenancy import rewrap_p, tenant_of
from dynaorm.values.expressions import all_of, raw_eq, stored_as
from dynaorm.values.records import Fail, Origin, Role, Update
from dynaorm.write.placing import publish_p, release_p
from dynaorm.write.render import WritePlan, render_op


@dataclass(frozen=True)
class ReencryptReport:
    """What a re-encryption did (merged: over all segments). The rotation is done when
    ``failed`` is empty."""

    #: rows whose ciphertexts this run sealed anew under the current key
    resealed: int = 0
    #: rows under the current key already (by an earlier run, or by another writer)
    current: int = 0
    #: rows not re-sealed: their keys and why (a value that does not decrypt, an object
    #: in S3 missing, a KMS or S3 failure, a row changing all along)
    failed: list[str] = field(default_factory=list)
    #: rows of the entity scanned
    scanned: int = 0
    #: rows of a forgotten tenant (``key_scope``): nothing to re-seal, nothing read
    forgotten: int = 0
    #: tenants' keys (``key_scope``) wrapped anew under the keyring's current key
    rewrapped: int = 0


def reencrypt(entity: type[Entity], *, segments: int = 1, rate: Rate | None = None,
              scope: Mapping[str, Any] | None = None) -> Job:
    """Every ``Encrypted`` value of ``entity`` (rows, latest copies, version rows, rows in
    a previous layout) sealed anew under its table's keyring's current key, where it is
    not already: a :class:`~dynaorm.jobs.Job` (one task per scan segment) whose merged
    report is a :class:`ReencryptReport`. On a table with ``key_scope``, each value under
    its tenant's key (a value sealed before the table declared it moves under it), and
    each tenant's key wrapped under a key of the keyring's ``previous`` wrapped anew under
    its current one; ``scope`` (``{key_scope field: value}``): that tenant's rows only.
    A forgotten tenant's rows are counted apart (``forgotten``), not failed. A value kept
    in S3 (``Offloaded``) is reached too: fetched, sealed anew into a new object, the old
    one removed once the row holds the new one."""
    spec = spec_of(entity)
    if spec.rules.get(Encryption) is None:
        raise DynaormError(f"reencrypt job: {entity.__name__} has no Encrypted fields")
    keyring_of(spec.table)  # (refuses a table without one)
    tenant = None if scope is None else tenant_of(spec.table, scope)
    return job_of("reencrypt", entity, segments, rate, fn=run_task,
                  options=(("tenant", tenant),))


def run_task(task: Task, table: Table) -> ReencryptReport:
    """One segment of a :func:`reencrypt` job, on ``table``."""
    spec = spec_of(task.entity_class)
    rule = spec.rules.get(Encryption)
    assert rule is not None
    outcomes: Counter[str] = Counter()
    failed: list[str] = []
    only = dict(task.options).get("tenant")
    tenants: set[str] = set()
    rewrapped = 0
    for page, _ in scan_pages(table, None, None, "reencrypt", (task.segment, task.segments)):
        for item in page:
            old = spec.rules.before.stores(spec, item)
            if not (old or spec.owns(item)):
                continue
            rows = rule.renamed(spec.previous.fields_by_attr) if old and spec.previous else rule
            tenant = rows.tenant(item)
            if only is not None and tenant != only:
                continue
            if tenant is not None and tenant not in tenants:
                tenants.add(tenant)
                rewrapped += int(table.db.driver.run(  # (1: its key wrapped anew)
                    rewrap_p(table, tenant, (task.entity_class,)),
                    Operation("reencrypt", (table.name,), (task.entity_class,))))
            outcome = _reseal(table, task.entity_class, rows, item)
            outcomes[outcome] += 1
            if outcome not in ("resealed", "current", "gone", "forgotten"):
                key = spec.stored_key(item)
                failed.append(f"{task.entity_class.__name__} {key}: {outcome}")
    return ReencryptReport(outcomes["resealed"], outcomes["current"], failed,
                           sum(outcomes.values()), outcomes["forgotten"], rewrapped)




def _reseal(table: Table, entity: type[Entity], rule: Encryption, item: Item | None) -> str:
    """Re-seal one row: ``"resealed"`` (by this run), ``"current"`` (nothing to do),
    ``"gone"`` (deleted meanwhile), or why not."""
    assert item is not None
    driver, during = table.db.driver, Operation("reencrypt", (table.name,), (entity,))
    spec = spec_of(entity)
    key = spec.stored_key(item)
    for _ in range(ROUNDS):
        if item is None:
            return "gone"
        published = []
        refused = False  # (a condition refused it: it never applies)
        try:
            driver.run(rule.prepare((item,), True), during)  # (a forgotten tenant: here)
            driver.run(spec.rules.prepare((item,)), during)  # (its values kept in S3
            row = spec.rules.unplace(item)  # fetched: every sealed value, wherever kept)
            if not (new := rule.resealed(row)):
                return "current"
            op, new = _write(spec, key, item, new)
            published = driver.run(publish_p(WritePlan((op,), outside=(spec,))), during)
            driver.run(call(*render_op(op), (entity,), idempotent=False), during)
            got = {"Item": {**item, **new}}
        except RequestError as exc:
            if not (exc.maybe_applied or exc.code == "ConditionalCheckFailedException"):
                driver.run(release_p(published, False), during)
                return str(exc)
            refused = not exc.maybe_applied
            got = driver.run(call("GetItem", {
                "TableName": table.name, "Key": {a: item[a] for a in key},
                "ConsistentRead": True}, (entity,)), during)
        except ForgottenError:
            return "forgotten"
        except (DynaormError, ValueError) as exc:  # (ValueError: their lock not a number)
            return str(exc)
        was, item = item, got.get("Item")
        for applied in _settled(was, new, item, refused):
            driver.run(release_p(published, applied), during)
        if item is not None and all(item.get(a) == v for a, v in new.items()):
            return "resealed"  # (this run's own write: a fresh nonce is never written twice)
    return f"still changing after {ROUNDS} attempts"


def _write(spec: Any, key: PlainKey, item: Item, new: Item) -> tuple[Update, Item]:
    """The write of the re-sealed values ``new`` to the row ``item`` (at ``key``),
    conditioned on each value it replaces as read and through the entity's placing rules
    (a value kept in S3: a new object, the old one removed once the row holds it), and the
    values it writes (a reference in place of a value kept in S3). Another writer's lock
    (``Meta.lock``) moves as every write of a loaded row moves it, conditioned on as read:
    their copy read before the rotation then fails their own condition instead of writing
    the old key's ciphertext back (not on a version row: history no other writer keeps)."""
    sk = spec.table.sk
    history = spec.versioned and sk is not None and (
        parse_version_sk(item.get(sk, {}).get("S", "")) or (0,))[0]
    lock = {} if history else {a: {"N": str(n)} for a, n in moved(spec.lock, item)}
    op = Update(key, {**new, **lock}, (), all_of(
        [raw_eq(a, item[a]) for a in new] + stored_as(item, set(lock))),
        Origin(spec.cls, key, Role.ROW, Fail.CONCURRENT), known=item)
    for place in spec.rules.placers:
        (op,) = place([op], lambda _: None)
    assert isinstance(op, Update)
    return op, {a: v for a, v in op.set.items() if a not in lock}


def _settled(was: Item, new: Item, now: Item | None, refused: bool) -> tuple[bool, ...]:
    """What ``now``, the row read afresh after a write of ``new`` over the values of
    ``was`` failed or lost its answer, proves of it, as the releases of what it placed:
    ``(True,)`` applied (the row holds a value it wrote: a fresh nonce, a new object, is
    written once); ``()`` nothing (the row holds every value it replaced: a lost answer's
    write may still apply), but ``(False,)`` when a condition ``refused`` it (another
    writer's lock moved alone: it never applies); else it never will (it conditions on
    them, and none comes back: a write conditions on the objects it read, a sealed value
    is bound to its row, no move carries it), so what it uploaded goes, ``(False,)``, and
    where the row holds none of them, what it replaced goes too, ``(True, False)`` (its
    own, or another writer's that removed it already)."""
    now = now or {}
    if any(now.get(a) == v for a, v in new.items()):
        return (True,)
    kept = sum(now.get(a) == was[a] for a in new)
    if kept == len(new):  # (refused by a condition, by another writer's lock alone: never)
        return (False,) if refused else ()
    return (False,) if kept else (True, False)
