"""A table with a stream (``Table(stream=...)``) and its entities: a row with unique
guards, a versioned entity, binary and nested values (the streams tests)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import Field

from dynaorm import Entity, Table, Unique

stream_app = Table("dynaorm-streams", stream="NEW_AND_OLD_IMAGES")


class Person(Entity):
    class Meta:
        table = stream_app
        pk = "PERSON#{person_id}"
        sk = "PROFILE"
        unique = (Unique("email", normalize=str.lower),
                  Unique("nick", scope="ORG#{org_id}"))

    person_id: str
    org_id: str = "acme"
    email: str
    nick: str | None = None
    status: str = "new"


class Doc(Entity):
    class Meta:
        table = stream_app
        pk = "DOC#{doc_id}"
        sk = "{part}"
        versioned = True

    doc_id: str
    part: str
    body: str = ""


class Blob(Entity):
    class Meta:
        table = stream_app
        pk = "BLOB#{blob_id}"
        sk = "BLOB"

    blob_id: str
    data: bytes = b""
    chunks: set[bytes] = Field(default_factory=set)
    tags: set[str] = Field(default_factory=set)
    sizes: set[int] = Field(default_factory=set)
    ratio: Decimal = Decimal("0")
    meta: dict[str, Any] = Field(default_factory=dict)
    history: list[Any] = Field(default_factory=list)
