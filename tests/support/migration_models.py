"""Entities of the migration tests: each in two versions of its design, on two ``Table``
objects naming one DynamoDB table. ``old`` holds the layout before the change (written
with it to set the scene), ``mig`` the current classes declaring ``Meta.previous``."""

from __future__ import annotations

from dynaorm import GSI, Entity, Previous, Table, Unique, Versioned

#: the table as the current classes see it
mig = Table("dynaorm-migrations", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])
#: the same table as the old classes saw it (point it at ``mig``'s name and endpoint)
old = Table("dynaorm-migrations", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class OldAccount(Entity):
    """``Account`` before the change: ``USER#{id}``, type ``user``, email stored as ``mail``."""

    class Meta:
        table = old
        pk = "USER#{id}"
        sk = "PROFILE"
        type_name = "user"
        unique = (Unique("mail", prefix="email", normalize=str.lower),)
        indexes = {"gsi1": ("ORG#{org}", "USER#{id}")}

    id: str
    org: str = "acme"
    mail: str
    name: str = ""


class Account(Entity):
    """A plain entity whose key template, type name and a stored name changed."""

    class Meta:
        table = mig
        pk = "ACCOUNT#{id}"
        sk = "PROFILE"
        type_name = "account"
        unique = (Unique("email", normalize=str.lower),)
        indexes = {"gsi1": ("ORG#{org}", "ACCOUNT#{id}")}
        previous = Previous(pk="USER#{id}", type_name="user", stored_names={"email": "mail"})

    id: str
    org: str = "acme"
    email: str
    name: str = ""


class OldLedger(Versioned):
    """``Ledger`` before the change: ``BOOK#{id}``."""

    class Meta:
        table = old
        pk = "BOOK#{id}"
        sk = "LEDGER"
        type_name = "Ledger"
        unique = ("code",)
        indexes = {"gsi1": ("ORG#{org}", "LEDGER#{id}")}

    id: str
    org: str = "acme"
    code: str
    balance: int = 0


class Ledger(Versioned):
    """A versioned entity with a unique field on a GSI whose partition template changed."""

    class Meta:
        table = mig
        pk = "LEDGER#{id}"
        sk = "LEDGER"
        unique = ("code",)
        indexes = {"gsi1": ("ORG#{org}", "LEDGER#{id}")}
        previous = Previous(pk="BOOK#{id}")

    id: str
    org: str = "acme"
    code: str
    balance: int = 0


class OldBadge(Entity):
    """``Badge`` before the change: only its type name differs (a move in place)."""

    class Meta:
        table = old
        pk = "BADGE#{id}"
        sk = "BADGE"
        type_name = "badge_v1"
        unique = ("code",)

    id: str
    code: str


class Badge(Entity):
    """A plain entity whose type name alone changed: it moves in place."""

    class Meta:
        table = mig
        pk = "BADGE#{id}"
        sk = "BADGE"
        type_name = "badge"
        unique = ("code",)
        previous = Previous(type_name="badge_v1")

    id: str
    code: str


#: a table with a TTL attribute, in both designs (expired old-layout items)
mig_ttl = Table("dynaorm-migrations-ttl", ttl="expires")
old_ttl = Table("dynaorm-migrations-ttl", ttl="expires")


class OldPass(Entity):
    """``Pass`` before the change: ``TICKET#{id}``, type ``ticket``."""

    class Meta:
        table = old_ttl
        pk = "TICKET#{id}"
        sk = "PASS"
        type_name = "ticket"
        unique = ("seat",)

    id: str
    seat: str
    expires: int | None = None


class Pass(Entity):
    """An entity with a unique value and a TTL whose key template changed."""

    class Meta:
        table = mig_ttl
        pk = "PASS#{id}"
        sk = "PASS"
        unique = ("seat",)
        previous = Previous(pk="TICKET#{id}", type_name="ticket")

    id: str
    seat: str
    expires: int | None = None
