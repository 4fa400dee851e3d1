"""Keys per tenant as a :class:`~dynaorm.Table` offers them (contract 24): forgetting a
tenant, and sealing and opening bytes under the table's keyring or a tenant's key, each
the protocol of :mod:`dynaorm.schema.tenancy` run through the table's client (sync, or
awaited on the running loop)."""

from collections.abc import Mapping
from typing import Any

from dynaorm.protocol.hooks import Operation
from dynaorm.schema.tenancy import Forgotten, forget_p, open_p, seal_p


class KeysPerTenant:
    """What a :class:`~dynaorm.Table` adds for keys per tenant (``key_scope``)."""

    db: Any

    def _admin(self, name: str) -> Operation:
        raise NotImplementedError  # pragma: no cover  (the Table's)

    def _me(self) -> Any:
        """This table (a :class:`~dynaorm.schema.table.TableSchema`)."""
        return self

    def forget(self, scope: Mapping[str, Any]) -> Forgotten:
        """Destroy the key of the tenant ``scope`` names (``{key_scope field: value}``;
        the table declares ``key_scope``): every ``Encrypted`` value of that tenant,
        wherever a copy of it lives (rows, version rows, offloaded objects, exports and
        backups holding ciphertext), reads as :class:`~dynaorm.ForgottenError` from now
        on (in another process, once its cached key is older than five minutes), a write
        sealing one for it is refused, and its other fields and every other tenant read
        as before. Idempotent: its key table item becomes a tombstone saying when (the
        audit row), kept by a second call. See docs/guide/tenants.md for what it cannot
        reach."""
        found: Forgotten = self.db.driver.run(forget_p(self._me(), scope), self._admin("forget"))
        return found

    async def aforget(self, scope: Mapping[str, Any]) -> Forgotten:
        """:meth:`forget`, awaited (on the running event loop)."""
        found: Forgotten = await self.db.async_driver.run(forget_p(self._me(), scope),
                                                          self._admin("forget"))
        return found

    def seal(self, data: bytes, *, scope: Mapping[str, Any] | None = None,
             context: str = "") -> bytes:
        """``data`` sealed as an ``Encrypted`` value is (AES-GCM under a data key the
        table's keyring wraps; with ``key_scope``, under the key of the tenant ``scope``
        names, made on first use), bound to this table and ``context``: what a surface
        that stores values of its own seals them with (``dynaorm.langgraph``'s
        ``sealed=True``). :meth:`open` with the same ``context`` gives ``data`` back;
        after :meth:`forget` of its tenant it is :class:`~dynaorm.ForgottenError`. Key
        material is asked for through the table's client."""
        sealed: bytes = self.db.driver.run(seal_p(self._me(), data, scope, context),
                                           self._admin("seal"))
        return sealed

    def open(self, blob: bytes, *, scope: Mapping[str, Any] | None = None,
             context: str = "") -> bytes:
        """The bytes :meth:`seal` sealed into ``blob`` for this table and ``context``
        (``scope``, where given: the tenant it must have been sealed for); anything else
        is :class:`~dynaorm.DecryptionError`, a forgotten tenant's
        :class:`~dynaorm.ForgottenError`."""
        opened: bytes = self.db.driver.run(open_p(self._me(), blob, scope, context),
                                           self._admin("open"))
        return opened

    async def aseal(self, data: bytes, *, scope: Mapping[str, Any] | None = None,
                    context: str = "") -> bytes:
        """:meth:`seal`, awaited (its key material asked for on the running loop)."""
        sealed: bytes = await self.db.async_driver.run(seal_p(self._me(), data, scope, context),
                                                       self._admin("seal"))
        return sealed

    async def aopen(self, blob: bytes, *, scope: Mapping[str, Any] | None = None,
                    context: str = "") -> bytes:
        """:meth:`open`, awaited."""
        opened: bytes = await self.db.async_driver.run(open_p(self._me(), blob, scope, context),
                                                       self._admin("open"))
        return opened
