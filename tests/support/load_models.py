"""Entities of the bulk load tests (``dynaorm.jobs.load``, ``test_load.py``): every row a
save writes (unique guards, a versioned entity's latest copy and version row, an index's
key attributes, timestamps), every tenant's rows under a key prefix the key grammar proves
(``T#{tenant_id}#...``: a filtered export of one tenant), and values of several kinds (a
Parquet round trip). Importable by reference."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import Field

from dynaorm import GSI, Entity, Table, Unique

loads = Table("dynaorm-loads", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Account(Entity):
    """A unique and versioned entity, in an index."""

    class Meta:
        table = loads
        pk = "T#{tenant_id}#ACCT#{acct_id}"
        sk = "A"
        unique = ("handle", Unique("email", normalize=str.lower))
        versioned = True
        indexes = {"gsi1": ("T#{tenant_id}#PLAN#{plan}", "ACCT#{acct_id}")}
        timestamps = ("created", "updated")

    tenant_id: str
    acct_id: str
    handle: str
    email: str
    plan: str = "free"
    balance: Decimal = Decimal("0")
    tags: list[str] = Field(default_factory=list)
    prefs: dict[str, int] = Field(default_factory=dict)
    extra: Any = None
    created: datetime | None = None
    updated: datetime | None = None


class Memo(Entity):
    """A plain entity (no rules)."""

    class Meta:
        table = loads
        pk = "T#{tenant_id}#MEMO#{memo_id}"
        sk = "MEMO"

    tenant_id: str
    memo_id: str
    body: str = ""
