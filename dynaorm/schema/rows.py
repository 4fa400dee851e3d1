"""The kinds of row a table keeps beside its entities' (:class:`RowKind`, public as
``dynaorm.RowKind``): the receipts of idempotent commits, and those a surface registers
(``table.keeps``), described where the table is so that what reads the model reads them
there. Loaded when a row kind is first asked for (``import dynaorm`` builds none)."""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from dynaorm.errors import DynaormError
from dynaorm.values.keys import GUARD_TYPE, OWN_PREFIX, RECEIPT_TYPE

#: the row types dynaorm writes itself, which no registered kind takes
DYNAORM_TYPES = {RECEIPT_TYPE: "the receipts of idempotent commits",
                 GUARD_TYPE: "the unique guards"}


@dataclass(frozen=True)
class RowKind:
    """A kind of row a table keeps beside its entities' for dynaorm or for a surface
    written on it (a receipt of an idempotent commit; Powertools' idempotency records):
    described once, where the table is (:meth:`dynaorm.Table.keeps`), so that what reads
    the model (``dynaorm iam``, exports, ``check``) reads it there
    (``table.model()["table"]["rows"]``). Its rows' partition key is ``<type>#<key>`` (on
    both keys of a table with a sort key), in dynaorm's reserved namespace: never an
    entity's, never returned by a read, a scan, ``check``, a stream or an export
    (:meth:`dynaorm.Table.own_row`). An entity's own row kinds (its guards, version rows)
    are in its part of the model."""

    role: str
    """What one row is, for people (``"Powertools idempotency record"``)."""
    type: str
    """The type name its rows are stored with (their partition key's start): it begins
    with ``dynaorm:``."""
    key: str = "{key}"
    """What follows ``<type>#`` in its keys, for people (``"{hashed key}"``)."""
    scoped: bool = False
    """Whether a scoped session's scope values follow ``<type>#`` in its keys (a role held
    to a tenant can be granted its rows: ``dynaorm iam --scope``)."""
    ttl: timedelta | None = None
    """How long a row is kept (``None``: as its writer says)."""
    writer: str = ""
    """What writes its rows (``"dynaorm.powertools.DynaormPersistenceLayer"``)."""

    def __post_init__(self) -> None:
        if not self.type.startswith(OWN_PREFIX) or "#" in self.type or (
                self.type == OWN_PREFIX):
            raise DynaormError(f"a row kind's type is a name after {OWN_PREFIX!r} holding no "
                               f"'#', got {self.type!r}")

    def data(self, table: Any) -> dict[str, Any]:
        """The kind as ``table.model()`` lists it: role, type, key shape (by key
        attribute), TTL in seconds, whether it renders a scope, and its writer."""
        key = f"{self.type}#{self.key}"
        return {"role": self.role, "type": self.type,
                "key": {table.pk: key} if table.sk is None else {table.pk: key, table.sk: key},
                "ttl_seconds": None if self.ttl is None else int(self.ttl.total_seconds()),
                "scoped": self.scoped, "writer": self.writer}


def receipts(ttl: timedelta) -> RowKind:
    """The receipts' kind, kept ``ttl`` (a table's ``receipts_ttl``)."""
    return RowKind("receipt", RECEIPT_TYPE, "{hash of the key}", scoped=True, ttl=ttl,
                   writer="Session.commit(idempotency_key=)")
