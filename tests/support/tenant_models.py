"""A multi-tenant table for scoped sessions and the MCP server: entities whose partition
keys carry ``tenant_id`` (one versioned, one with a vector), indexes that do and do not
carry it, a unique rule scoped by the tenant, and entities a tenant scope cannot cover."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from dynaorm import GSI, Encrypted, Entity, StaticKeyring, Table, Unique, Vector, VectorIndex

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
