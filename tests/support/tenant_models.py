"""A multi-tenant table for scoped sessions and the MCP server: entities whose partition
keys carry ``tenant_id`` (one versioned, one with a vector), indexes that do and do not
carry it, a unique rule scoped by the tenant, and entities a tenant scope cannot cover."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from dynaorm import (
    GSI,
    Encrypted,
    Entity,
    Previous,
    Session,
    StaticKeyring,
    Table,
    Unique,
    Vector,
    VectorIndex,
)
from dynaorm.protocol.steps import call

tenants = Table("tenants", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk"),
                                    GSI("gsi2", pk="gsi2pk", sk="gsi2sk")],
                keyring=StaticKeyring(b"t" * 32))
#: vector indexes (a table of their own: DynamoDB Local refuses to create them)
shelf = Table("tenant_shelf", vector_indexes=[
    VectorIndex("by_tenant", attribute="embedding", dimensions=4, partition="tenant_id",
                filters=("kind",)),
    VectorIndex("by_kind", attribute="embedding", dimensions=4, partition="kind",
                filters=("tenant_id",)),
    VectorIndex("open", attribute="embedding", dimensions=4)])


class Customer(Entity):
    """Scoped: the partition, a tenant-scoped unique email, gsi1 by tenant; gsi2 (by
    region, across tenants) is the index a scoped query may not read."""

    class Meta:
        table = tenants
        pk = "TENANT#{tenant_id}#CUSTOMER#{customer_id}"
        sk = "CUSTOMER"
        unique = (Unique("email", normalize=str.lower, scope="TENANT#{tenant_id}"),)
        indexes = {"gsi1": ("TENANT#{tenant_id}", "CUSTOMER#{name}"),
                   "gsi2": ("REGION#{region}", "CUSTOMER#{customer_id}")}

    tenant_id: str
    customer_id: str
    name: str
    email: str
    region: str = "eu"
    notes: str = ""
    card: Encrypted[str] | None = None


class Memo(Entity):
    """Scoped and versioned."""

    class Meta:
        table = tenants
        pk = "TENANT#{tenant_id}"
        sk = "MEMO#{memo_id}"
        versioned = True

    tenant_id: str
    memo_id: str
    text: str = ""
    kind: str = "note"


class Clip(Entity):
    """Scoped, with a vector: the tenant partitions ``by_tenant`` and filters ``by_kind``;
    ``open`` holds every tenant."""

    class Meta:
        table = shelf
        pk = "TENANT#{tenant_id}"
        sk = "CLIP#{clip_id}"

    tenant_id: str
    clip_id: str
    kind: str = "note"
    embedding: Annotated[list[float], Vector(4)]


class Tag(Entity):
    """Scoped, with no rules (bulk calls take it)."""

    class Meta:
        table = tenants
        pk = "TENANT#{tenant_id}"
        sk = "TAG#{tag}"

    tenant_id: str
    tag: str
    note: str = ""


class Setting(Entity):
    """Not scoped: its partition key carries no tenant."""

    class Meta:
        table = tenants
        pk = "SETTING#{name}"
        sk = "SETTING"

    name: str
    value: str = ""


class Handle(Entity):
    """Scoped partition, but its unique handle is one value across every tenant."""

    class Meta:
        table = tenants
        pk = "TENANT#{tenant_id}#HANDLE#{handle_id}"
        sk = "HANDLE"
        unique = ("handle",)

    tenant_id: str
    handle_id: str
    handle: str
    extra: str = Field(default="")


# -- stale keys: keyed as 0.7 let a tenant hold a separator (contract 24) --------------------
stale = Table("scope_stale", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Paper(Entity):
    """Keyed as 0.7 let a tenant ``acme-corp`` be written: ``T-acme-corp-123`` parses
    under the grammar as tenant ``acme``'s paper ``corp-123``."""

    class Meta:
        table = stale
        pk = "T-{tenant_id}-{paper_id}"
        sk = "PAPER"
        indexes = {"gsi1": ("{tenant_id}-{category}", "{paper_id}")}

    tenant_id: str
    paper_id: str
    category: str = "misc"
    body: str = ""


class Moved(Entity):
    """In its migration window: its previous layout is keyed as 0.7 wrote it."""

    class Meta:
        table = stale
        pk = "M#{tenant_id}#{moved_id}"
        sk = "MOVED"
        previous = Previous(pk="M-{tenant_id}-{moved_id}")

    tenant_id: str
    moved_id: str
    body: str = ""


def plant(table: Table, item: dict[str, str]) -> None:
    """``item`` (attribute -> text) stored as it is, as 0.7 wrote it: no grammar refused
    its values."""
    table.db.driver.run(call("PutItem", {"TableName": table.name, "Item": {
        k: {"S": v} for k, v in item.items()}}))


def plant_stale_rows() -> None:
    """In :data:`stale`: acme's own paper ``p1`` and moved row ``m1``; and acme-corp's, as
    0.7 wrote them: paper ``123`` of category ``x`` (``T-acme-corp-123``, index key
    ``acme-corp-x``) and a moved row ``9`` under the previous layout
    (``M-acme-corp-9``). The grammar reads both keys as acme's."""
    with Session(stale) as s:
        s.save(Paper(tenant_id="acme", paper_id="p1", category="x", body="acme's"))
        s.save(Moved(tenant_id="acme", moved_id="m1", body="acme's"))
    plant(stale, {"pk": "T-acme-corp-123", "sk": "PAPER", "_type": "Paper",
                  "tenant_id": "acme-corp", "paper_id": "123", "category": "x",
                  "gsi1pk": "acme-corp-x", "gsi1sk": "123", "body": "acme-corp's"})
    plant(stale, {"pk": "M-acme-corp-9", "sk": "MOVED", "_type": "Moved",
                  "tenant_id": "acme-corp", "moved_id": "9", "body": "acme-corp's"})
