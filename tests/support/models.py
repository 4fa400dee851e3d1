"""Entities shared by the test suite, all on one table with two GSIs and an LSI."""

from __future__ import annotations

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
