"""Entities for the update, condition and lost-update tests (on the shared test table)."""

from __future__ import annotations

from pydantic import Field, computed_field, field_validator, model_validator

from dynaorm import Entity, Unique
from tests.support.models import app


class Counter(Entity):
    """A plain entity: numbers, a set, a list, an optional field."""

    class Meta:
        table = app
        pk = "CTR#{name}"
        sk = "CTR"

    name: str
    count: int = 0
    score: float = 0.0
    tags: set[str] = Field(default_factory=set)
    log: list[str] = Field(default_factory=list)
    label: str | None = None
    status: str = "new"


class Needy(Entity):
    """A required field besides the key."""

    class Meta:
        table = app
        pk = "NEEDY#{nid}"
        sk = "NEEDY"

    nid: str
    owner: str
    hits: int = 0


class Player(Entity):
    """A leaderboard row: the score is in a GSI sort key, the handle is unique."""

    class Meta:
        table = app
        pk = "PLAYER#{player_id}"
        sk = "PLAYER"
        unique = ("handle",)
        indexes = {"gsi2": ("BOARD#{board}", "{score:010d}#{player_id}")}

    player_id: str
    handle: str
    board: str = "main"
    score: int = 0


class Doc(Entity):
    """A versioned entity."""

    class Meta:
        table = app
        pk = "DOC#{doc_id}"
        sk = "DOC"
        versioned = True

    doc_id: str
    title: str = ""
    views: int = 0


__all__ = ["Counter", "Doc", "Needy", "Player", "Unique"]


class Product(Entity):
    """Field validation on updates: a validator that upper-cases, a constraint, a frozen
    field and a stored computed field."""

    class Meta:
        table = app
        pk = "PRODUCT#{pid}"
        sk = "PRODUCT"

    pid: str
    sku: str = "NONE"
    qty: int = Field(default=1, ge=0)
    price: float = 1.0
    owner: str = Field(default="nobody", frozen=True)
    tags: list[str] = Field(default_factory=list)

    @field_validator("sku")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()

    @field_validator("tags")
    @classmethod
    def _lower_tags(cls, value: list[str]) -> list[str]:
        return [t.lower() for t in value]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> float:
        return self.price * self.qty


class FieldRules(Entity):
    """Field validation without rules across fields: updates stay one UpdateItem."""

    class Meta:
        table = app
        pk = "FIELDRULES#{pid}"
        sk = "FIELDRULES"

    pid: str
    sku: str = "NONE"
    owner: str = Field(default="nobody", frozen=True)

    @field_validator("sku")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()


class Window(Entity):
    """A model validator: ``start <= end``, which an update by key cannot judge alone."""

    class Meta:
        table = app
        pk = "WINDOW#{wid}"
        sk = "WINDOW"

    wid: str
    start: int = 0
    end: int = 10

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.start > self.end:
            raise ValueError("start after end")
        return self
