"""Entities whose fields carry bounds: an update's *result* is held to them."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from dynaorm import Entity
from tests.support.models import app


class Account(Entity):
    """Bounded numbers, lists and sets."""

    class Meta:
        table = app
        pk = "ACCOUNT#{aid}"
        sk = "ACCOUNT"

    aid: str
    balance: int = Field(0, ge=0)
    n: int = Field(0, le=6)
    even: int = Field(0, multiple_of=2)
    ratio: float = Field(0.0, gt=-1.0, lt=1.0)
    recent: list[str] = Field(default_factory=list, max_length=2)
    pair: list[int] = Field(default_factory=lambda: [0, 0], min_length=2)
    badges: set[str] = Field(default_factory=set, max_length=2)
    flags: set[str] = Field(default_factory=lambda: {"a"}, min_length=1)


class Stamp(Entity):
    """Strict datetime and UUID fields."""

    class Meta:
        table = app
        pk = "STAMP#{sid}"
        sk = "STAMP"

    sid: str
    at: datetime = Field(strict=True)
    ref: UUID = Field(strict=True)


class Address(BaseModel):
    city: str
    zip: str | None = None


class Stats(BaseModel):
    logins: int = Field(0, ge=0, le=3)


class Event(BaseModel):
    kind: str = Field(min_length=1)
    at: int = 0


class ProfileFields(Entity):
    """Nested models, a list of models, a list and a map (no Meta: abstract)."""

    pid: str
    address: Address
    stats: Stats | None = None
    history: list[Event] = Field(default_factory=list, max_length=2)
    tags: list[str] = Field(default_factory=list)
    prefs: dict[str, str] = Field(default_factory=dict)


class Profile(ProfileFields):
    """Updated by key without a read."""

    class Meta:
        table = app
        pk = "PROFILE#{pid}"
        sk = "PROFILE"


class VProfile(ProfileFields):
    """Versioned: its updates are read first and planned as saves."""

    class Meta:
        table = app
        pk = "VPROFILE#{pid}"
        sk = "VPROFILE"
        versioned = True

    version: int = 0


class StrictWhen(BaseModel):
    at: datetime = Field(strict=True)


class StrictAll(Entity):
    """Strict by its config, and a nested model with a strict field."""

    model_config = ConfigDict(strict=True, populate_by_name=True)

    class Meta:
        table = app
        pk = "STRICTALL#{sid}"
        sk = "STRICTALL"

    sid: str
    at: datetime
    ref: UUID
    inner: StrictWhen
