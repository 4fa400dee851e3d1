"""Entities shared by the test suite, all on one table with two GSIs and an LSI."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import Field

from dynaorm import GSI, LSI, Entity, Table, Unique, ksuid

app = Table(
    "dynaorm-tests",
    indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk"), GSI("gsi2", pk="gsi2pk", sk="gsi2sk"),
             LSI("lsi1", sk="lsi1sk")],
)


class User(Entity):
    class Meta:
        table = app
        pk = "USER#{user_id}"
        sk = "PROFILE"
        unique = ("username", Unique("email", normalize=str.lower))
        indexes = {"gsi1": ("ORG#{org_id}", "USER#{username}")}

    user_id: str = Field(default_factory=ksuid)
    org_id: str = "acme"
    username: str
    email: str
    full_name: str = ""


class RowsAccount(Entity):
    """Versioned, with a unique value and a scoped, prefixed one: the rows the rules own
    (tests/unit/test_rule_rows.py, tests/integration/test_rule_rows.py, the MCP export's
    key templates in tests/integration/test_mcp_schema.py)."""

    class Meta:
        table = app
        pk = "RACCOUNT#{account_id}"
        sk = "PROFILE"
        unique = ("username", Unique("email", scope="ORG#{org}", prefix="mail"))
        versioned = True

    account_id: str
    username: str
    email: str
    org: str


def account_renamed(db: Any) -> tuple[RowsAccount, list[dict[str, Any]]]:
    """:class:`RowsAccount` ``a1`` saved (username ``ann``), then renamed ``bob``: the
    object, and the items (``db.scan()``: plain values) its rules wrote for it."""
    s = db.session()
    a = RowsAccount(account_id="a1", username="ann", email="ann@x.com", org="o1")
    s.save(a)
    s.commit()
    a.username = "bob"
    s.save(a)
    s.commit()
    return a, [i for i in db.scan()
               if i["pk"].startswith(("RACCOUNT#", "username#", "ORG#o1#mail#"))]


class Audit(Entity):
    class Meta:
        table = app
        pk = "EQUIPMENT#{equipment_id}"
        sk = "{part}"
        versioned = True

    equipment_id: str
    part: str
    auditor: str = ""
    notes: str = ""


class Note(Entity):
    """A plain entity: no unique or versioned rules."""

    class Meta:
        table = app
        pk = "NOTE#{note_id}"
        sk = "NOTE"

    note_id: str
    body: str = ""
    tags: list[str] = Field(default_factory=list)


class TplSparse(Entity):
    """gsi2 takes part only while ``status`` is set (sparse index)."""

    class Meta:
        table = app
        pk = "SPARSE#{sid}"
        sk = "SPARSE"
        indexes = {"gsi2": ("STATUS#{status}", "SPARSE#{sid}")}

    sid: str
    status: str | None = None
    body: str = ""


SHARDS = 4


class SOrder(Entity):
    """Orders by status on gsi1, the hot status key spread over four partitions."""

    class Meta:
        table = app
        pk = "SORDER#{order_id}"
        sk = "ORDER"
        indexes = {"gsi1": ("SSTATUS#{status}#{shard}", "{created}#{order_id}")}
        shards = {"gsi1": SHARDS}

    order_id: str
    status: str
    created: str
    total: int = 0


class SEvent(Entity):
    """Events of one day, the table key itself sharded three ways."""

    class Meta:
        table = app
        pk = "SDAY#{day}#{shard}"
        sk = "{at}#{event_id}"
        shards = {"primary": 3}

    day: str
    at: str
    event_id: str
    kind: str = "click"


class EReading(Entity):
    class Meta:
        table = app
        pk = "EDEV#{device}"
        sk = "R#{ts}"

    device: str
    ts: int
    v: int = 0


class EMsg(Entity):
    class Meta:
        table = app
        pk = "EROOM#{room}"
        sk = "DATE#{date}#TIME#{time}"

    room: str
    date: str
    time: str


def unsaved(*groups: Iterable[Entity]) -> list[Entity]:
    """The objects of ``groups`` as never saved (their persisted state dropped): module-level
    sample objects are saved afresh on each engine's table. Once saved, an object is
    persisted, and saving it again unchanged writes nothing (``save_many`` as ``save``)."""
    out = [obj for group in groups for obj in group]
    for obj in out:
        object.__setattr__(obj, "_dynaorm_slot", None)
    return out
