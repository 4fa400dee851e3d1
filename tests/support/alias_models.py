"""A table of its own whose entities store fields under other names (pydantic aliases) and
whose index keys are plain fields (tests/integration/test_aliases.py)."""

from __future__ import annotations

from pydantic import Field

from dynaorm import GSI, Entity, Table

games = Table("alias-games", indexes=[GSI("by_map", pk="map", sk="open_players")])


class Player(Entity):
    class Meta:
        table = games
        pk = "PLAYER#{player_id}"
        sk = "PROFILE"
        unique = ("email",)

    player_id: str
    full_name: str = Field(alias="fullName")
    email: str = Field(serialization_alias="emailAddress")
    level: int = Field(default=1, alias="lvl")
    tags: set[str] = Field(default_factory=set, alias="t")


class Game(Entity):
    class Meta:
        table = games
        pk = "GAME#{game_id}"
        sk = "META"
        indexes = {"by_map": ("{map}", "{open_players}")}  # the fields ARE the index keys

    game_id: str
    map: str
    open_players: str | None = None
    creator: str = Field(alias="createdBy")
