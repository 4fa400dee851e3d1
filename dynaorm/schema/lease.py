"""Leases (contract 24): one row that says who holds something, and commits that check it.

A :class:`Lease` is an entity of the application's own table, declared like any other
(its key templates are the application's, so scopes, IAM and ``check`` see it). A session
stages on it with :meth:`~dynaorm.Session.lease`: an acquire, a hold (and renewal) or a
release rides in the commit beside the writes it guards, as one more action of the same
``TransactWriteItems``, so those writes are stored only while the lease is this holder's.
The check is the lease's **epoch**: a fresh one at every acquire, so a holder that lost
its lease (it lapsed, another acquired it) is refused on its next commit
(:class:`~dynaorm.LeaseError`), whatever it still believes.

This module is pure: what a lease's action stages on a session (:func:`stage`, through
its ``update`` and ``check``), the conditions it carries (:func:`acquiring`,
:func:`holding`) and the clock it reads (:attr:`Lease.clock`).
"""

import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, ClassVar, TypeVar

from dynaorm.errors import DynaormError
from dynaorm.ksuid import ksuid
from dynaorm.schema.entity import Entity, spec_of
from dynaorm.values.expressions import Condition, F

L = TypeVar("L", bound="Lease")


class Lease(Entity):
    """Base class of a lease: ``class JobLease(Lease)`` with its key fields and ``Meta``
    (``table``, ``pk``, ``sk``), like any entity. Its three fields are the lease's state;
    :meth:`Session.lease <dynaorm.Session.lease>` stages what changes them (an upsert by
    key: declare no other required field). ``clock`` (seconds since the epoch,
    ``time.time`` by default) is what "now" is for an acquire: holders' clocks must agree
    to well within a lease's duration."""

    holder: str | None = None
    """Who holds (or last held) the lease: the name its acquirer gave."""
    epoch: str | None = None
    """The current tenure: a fresh KSUID at every acquire. A hold, renewal or release
    commits only while the stored epoch is still the holder's."""
    until: int = 0
    """When the lease lapses unless renewed, in milliseconds since the Unix epoch (0:
    released). A lapsed or released lease may be acquired by anyone."""

    clock: ClassVar[Callable[[], float]] = time.time
    """What "now" is for an acquire and a renewal, in seconds since the Unix epoch
    (``time.time``; a test sets its own on the lease's class)."""


def acquiring(holder: str, now_ms: int) -> Condition:
    """The condition of an acquire by ``holder`` at ``now_ms``: no lease stored, the
    stored one lapsed or released, or held by ``holder`` already (its new epoch then
    supersedes its own older tenure)."""
    return F("epoch").not_exists() | (F("until") <= now_ms) | (F("holder") == holder)


def holding(epoch: str) -> Condition:
    """The condition of a hold, renewal or release: the lease is still at ``epoch``."""
    return F("epoch") == epoch


def _both(condition: Condition, more: Condition | None) -> Condition:
    return condition if more is None else condition & more


def _millis(duration: timedelta) -> int:
    if not isinstance(duration, timedelta) or duration < timedelta(0):
        raise DynaormError(f"a lease's duration is a timedelta of 0 or more, not {duration!r}")
    return int(duration.total_seconds() * 1000)


def stage(session: Any, lease: type[L] | L, *, holder: str | None,
          duration: timedelta | None, release: bool, epoch: str | None,
          values: Mapping[str, Any] | None, where: Condition | None,
          key: Mapping[str, Any]) -> L:
    """:meth:`Session.lease <dynaorm.Session.lease>`'s action staged on ``session`` (its
    ``update`` and ``check``): an acquire of the class ``lease`` (an upsert by ``key``),
    or a hold, renewal or release of the lease object (its key, its epoch); returns the
    lease as the commit stores it."""
    more = dict(values or {})
    if isinstance(lease, type):
        return _acquire(session, lease, holder=holder, duration=duration, release=release,
                        epoch=epoch, more=more, where=where, key=key)
    if not isinstance(lease, Lease) or lease.epoch is None:
        raise DynaormError("lease(obj) holds or releases a Lease an acquire returned")
    if key or holder is not None or epoch is not None:
        raise DynaormError("lease(obj) takes no key fields, holder= nor epoch=")
    cls = type(lease)
    found = {n: lease.__dict__[n] for n in spec_of(cls).lookup_fields}
    condition = _both(holding(lease.epoch), where)
    if duration is None and not release and not more:
        session.check(cls, condition=condition, **found)
        return lease
    if release or duration is not None:
        more["until"] = 0 if release else int(cls.clock() * 1000) + _millis(
            duration or timedelta(0))
    session.update(cls, upsert=True, **found).set(**more).where(condition)
    return lease.model_copy(update=more)


def _acquire(session: Any, lease: type[L], *, holder: str | None,
             duration: timedelta | None, release: bool, epoch: str | None,
             more: dict[str, Any], where: Condition | None, key: Mapping[str, Any]) -> L:
    """:func:`stage`'s acquire: an upsert of ``lease`` by ``key``, conditioned on the
    lease being free, expired or the holder's own."""
    if not issubclass(lease, Lease):
        raise DynaormError(f"lease() takes a Lease entity, not {lease.__name__}")
    if holder is None or duration is None or release:
        raise DynaormError("lease(Entity, ...) acquires: it takes holder= and "
                           "duration=, not release=")
    now = int(lease.clock() * 1000)
    until = now + _millis(duration)
    acquired = lease(**key, **more, holder=holder, epoch=epoch or ksuid(), until=until)
    session.update(lease, upsert=True, **key).set(
        **more, holder=holder, epoch=acquired.epoch, until=until).where(
        _both(acquiring(holder, now), where))
    return acquired
