"""Entities of the bulk load's adversary tests (``tests/integration/test_load_adversary.py``,
beside ``load_models.py``'s): a table **without a revision attribute** (a mapped table:
nothing on a row tells the load's write from another's but the row itself), and a table
of tenants whose partition keys prove a tenant two ways (a whole partition, ``T#{tenant_id}``,
and a prefix, ``T#{tenant_id}#ACCT#...``) for a filtered export of one tenant beside a
tenant whose name extends it (``acme`` and ``acme-corp``). Importable by reference."""

from __future__ import annotations

from dynaorm import Entity, Table, Unique

#: a table whose rows carry no revision (``revision_attribute=None``)
bare = Table("dynaorm-loads-bare", revision_attribute=None)

#: a table of tenants: an organisation per partition, accounts under its prefix
tenants = Table("dynaorm-loads-tenants")


class Person(Entity):
    """A unique and versioned entity on the table without revisions."""

    class Meta:
        table = bare
        pk = "P#{pid}"
        sk = "P"
        unique = ("handle", Unique("email", normalize=str.lower))
        versioned = True

    pid: str
    handle: str
    email: str
    note: str = ""


class Org(Entity):
    """A tenant's organisation: its partition key is the tenant's whole key."""

    class Meta:
        table = tenants
        pk = "T#{tenant_id}"
        sk = "ORG"

    tenant_id: str
    name: str = ""


class Member(Entity):
    """A tenant's member, under the tenant's key prefix, unique by login."""

    class Meta:
        table = tenants
        pk = "T#{tenant_id}#M#{member_id}"
        sk = "M"
        unique = ("login",)
        versioned = True

    tenant_id: str
    member_id: str
    login: str
