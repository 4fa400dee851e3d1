"""Leases (contract 24): one row that says who holds something, and commits that check it.

A :class:`Lease` is an entity of the application's own table, declared like any other
(its key templates are the application's, so scopes, IAM and ``check`` see it). A session
stages on it with :meth:`~dynaorm.Session.lease`: an acquire, a hold (and renewal) or a
release rides in the commit beside the writes it guards, as one more action of the same
``TransactWriteItems``, so those writes are stored only while the lease is this holder's.
The check is the lease's **epoch**: a fresh one at every acquire, so a holder that lost
its lease (it lapsed, another acquired it) is refused on its next commit
(:class:`~dynaorm.LeaseError`), whatever it still believes.

This module is pure: the conditions a lease's actions carry (:func:`acquiring`,
:func:`holding`) and the clock they read (:attr:`Lease.clock`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from dynaorm.schema.entity import Entity
from dynaorm.values.expressions import Condition, F

__all__ = ["Lease", "acquiring", "holding"]


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
