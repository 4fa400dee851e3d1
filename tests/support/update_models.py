"""Entities for the update, condition and lost-update tests (on the shared test table)."""

from __future__ import annotations

from pydantic import Field

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
