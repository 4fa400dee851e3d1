"""Entities and functions of the jobs tests (``dynaorm.jobs``): importable by reference, so a
job's tasks reach them in another process or on a Spark executor."""

from __future__ import annotations

from dynaorm import Entity, Table, Versioned

jobs_table = Table("dynaorm-jobs")


class Counter(Entity):
    """A plain entity a backfill adds to; a second writer bumps ``n`` or ``note``."""

    class Meta:
        table = jobs_table
        pk = "COUNTER#{id}"
        sk = "C"
        type_name = "counter"

    id: str
    n: int = 0
    note: str = ""


class Doc(Versioned):
    """A versioned entity: a backfill writes its next version."""

    class Meta:
        table = jobs_table
        pk = "DOC#{id}"
        sk = "D"
        type_name = "doc"

    id: str
    n: int = 0


STEP = 1000


def add_step(obj: Counter | Doc) -> Counter | Doc:
    """The backfill of the tests: ``n += 1000`` (not idempotent: a second run would show)."""
    obj.n += STEP
    return obj


def add_step_to_even(obj: Counter | Doc) -> Counter | Doc | None:
    """``n += 1000`` on even ``n``, others left alone (``None``)."""
    return add_step(obj) if obj.n % 2 == 0 else None


def add_step_or_fail(obj: Counter) -> Counter:
    """``n += 1000``, except on ``c003``: a bug in the backfill's function."""
    if obj.id == "c003":
        raise ValueError("bad data")
    return add_step(obj)  # type: ignore[return-value]


def add_step_as_new_object(obj: Counter) -> Counter:
    """``n += 1000`` returned as a new object (not the one read): a backfill saves it in
    place of the item read, as a change of it."""
    return Counter(id=obj.id, n=obj.n + STEP, note=obj.note)


def add_step_if_rate_untouched(obj: Counter) -> Counter:
    """``n += 1000``, failing if the task's budget was put on the table's shared client
    (a job holds its own requests to it, leaving the client's rate alone)."""
    if jobs_table.db.rate is not None:
        raise AssertionError(f"the client's rate was swapped: {jobs_table.db.rate}")
    return add_step(obj)  # type: ignore[return-value]
