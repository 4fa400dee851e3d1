"""Entities of the bulk load tests (``dynaorm.jobs.load``, ``test_load.py``): every row a
save writes (unique guards, a versioned entity's latest copy and version row, an index's
key attributes, timestamps), every tenant's rows under a key prefix the key grammar proves
(``T#{tenant_id}#...``: a filtered export of one tenant), and values of several kinds (a
Parquet round trip); a wallet whose values are kept in S3 and sealed (``Offloaded`` and
``Encrypted`` over nested models and lists). Importable by reference."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, Field

from dynaorm import GSI, Encrypted, Entity, Offloaded, StaticKeyring, StoredAs, Table, Unique

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


wallets = Table("dynaorm-load-wallets", keyring=StaticKeyring(b"w" * 32, mac_key=b"m" * 32),
                offload="s3://loads/kept/")


class Card(BaseModel):
    pan: str
    at: Annotated[datetime, StoredAs.EPOCH_SECONDS]


class Wallet(Entity):
    """Values of kinds over nested models and lists: kept in S3 above the threshold (a
    model, stored inline as a map below it), sealed."""

    class Meta:
        table = wallets
        pk = "W#{wallet_id}"
        sk = "W"

    wallet_id: str
    card: Offloaded[Card] | None = None
    cards: Offloaded[list[Card]] = Field(default_factory=list)
    labels: Offloaded[dict[str, str]] = Field(default_factory=dict)
    pans: list[Encrypted[str]] = Field(default_factory=list)
    sealed: Encrypted[Card] | None = None
