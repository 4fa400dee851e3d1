"""Entities of the export tests (``dynaorm.jobs.export``): one table holding every field
kind, versioned history, unique guards, encrypted fields, a previous layout and items no
entity claims. Importable by reference, so a job's tasks reach them in another process or
on a Spark executor. ``old_exports`` is the same table as the release before saw it (the
old layout of :class:`Member`: point it at ``exports``' name and endpoint). ``kept`` keeps
values in S3 (``Offloaded``) beside sealed ones."""

from __future__ import annotations

import enum
import uuid
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, Field

from dynaorm import (
    GSI,
    Encrypted,
    Entity,
    Offloaded,
    Previous,
    StaticKeyring,
    Table,
    Versioned,
)

KEYRING = StaticKeyring(b"e" * 32, mac_key=b"m" * 32)
exports = Table("dynaorm-exports", keyring=KEYRING, ttl="expires",
                indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])
#: the same table as the old classes saw it
old_exports = Table("dynaorm-exports", keyring=KEYRING, ttl="expires",
                    indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Tier(enum.Enum):
    FREE = "free"
    PRO = "pro"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Point(BaseModel):
    x: int
    y: int | None = None


class Address(BaseModel):
    city: str
    lines: list[str] = []
    where: Point | None = None


class Profile(Entity):
    """Every kind of field an export types, a unique field, an encrypted one, a stored
    name, a template index and a TTL."""

    class Meta:
        table = exports
        pk = "PROFILE#{id}"
        sk = "P"
        type_name = "profile"
        unique = ("email",)
        indexes = {"gsi1": ("TIER#{tier}", "PROFILE#{id}")}

    id: str
    email: str
    name: str = Field("", alias="nm")
    age: int = 0
    score: float = 0.0
    balance: Decimal = Field(Decimal("0"), max_digits=12, decimal_places=2)
    ratio: Decimal = Decimal("0")
    active: bool = True
    born: date | None = None
    seen: datetime = datetime(2026, 1, 1)
    wake: time | None = None
    nap: timedelta = timedelta(0)
    uid: uuid.UUID = uuid.UUID(int=0)
    tier: Tier = Tier.FREE
    level: Level = Level.LOW
    mood: Literal["calm", "busy"] = "calm"
    tags: set[str] = set()
    nums: list[int] = []
    weights: frozenset[float] = frozenset()
    prefs: dict[str, int] = {}
    address: Address | None = None
    blob: bytes | None = None
    anything: Any = None
    either: int | str = 0
    ssn: Encrypted[str] = ""
    expires: datetime | None = None


class Ledger(Versioned):
    """A versioned entity: its version rows are its history."""

    class Meta:
        table = exports
        pk = "LEDGER#{id}"
        sk = "L"
        type_name = "ledger"

    id: str
    balance: int = 0
    memo: Encrypted[str] = ""


class OldMember(Entity):
    """``Member`` as the release before stored it: ``USER#{id}``, type ``user``, ``email``
    stored as ``mail``."""

    class Meta:
        table = old_exports
        pk = "USER#{id}"
        sk = "M"
        type_name = "user"

    id: str
    mail: str
    note: Encrypted[str] = ""


class Member(Entity):
    """An entity whose key, type name and a stored name changed (``Meta.previous``)."""

    class Meta:
        table = exports
        pk = "MEMBER#{id}"
        sk = "M"
        type_name = "member"
        previous = Previous(pk="USER#{id}", type_name="user", stored_names={"email": "mail"})

    id: str
    email: str
    note: Encrypted[str] = ""


kept = Table("dynaorm-exports-kept", keyring=KEYRING, offload="s3://exports/kept/",
             offload_threshold=64)


class Card(BaseModel):
    pan: str
    tags: list[str] = []


class Wallet(Entity):
    """Values kept in S3 (a nested model, a list of them) beside sealed ones."""

    class Meta:
        table = kept
        pk = "W#{id}"
        sk = "W"

    id: str
    card: Offloaded[Card] | None = None
    cards: Offloaded[list[Card]] = Field(default_factory=list)
    sealed: Offloaded[Encrypted[Card]] | None = None
