"""The ground LangGraph's saver and store stand on (contract 23): the rows a saver keeps
in the application's table (:func:`rows`: the entities of checkpoints, writes and
leases, declared once a table; :func:`declared`, the check of a saver's or store's entity
declared already), the TTLs either keeps (:func:`ttl_of`), and :class:`Runner`, which
runs one implementation of a call (an op) on a :class:`dynaorm.Session` or an
:class:`dynaorm.AsyncSession`: :func:`twins` makes a public method and its ``a...`` twin
of one op; :class:`Rows`, a saver's keys and values."""

import time
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import nullcontext
from datetime import timedelta
from functools import lru_cache, partial, wraps
from inspect import signature
from typing import TYPE_CHECKING, Any

from dynaorm import (
    AsyncSession,
    Compressed,
    DynaormError,
    Encrypted,
    Entity,
    KeyringError,
    Lease,
    Offloaded,
    Session,
    Table,
)
from dynaorm.keys import parse

if TYPE_CHECKING:  # (no LangGraph import: dynaorm check loads SURFACE_ROWS)
    from langgraph.checkpoint.serde.base import SerializerProtocol

Op = Generator[Callable[[], Any], Any, Any]

_ROWS = 100  # (rows a transaction holds: a write is one row)


def rows(table: Table, scope: Sequence[str] = (), sealed: bool = False
         ) -> tuple[Any, Any, Any]:
    """The entities of ``table``'s checkpoints, pending writes and threads' leases
    (``LangGraphCheckpoint``, ``LangGraphWrite``, ``LangGraphLease``: a
    :class:`dynaorm.Lease`), declared on first use with ``scope``'s fields in their
    partition key, and with their values ``Encrypted`` when ``sealed``; every saver of
    the table shares them."""
    keyed = layouts(scope)
    pk = keyed["LangGraphLease"][0]
    if (found := declared(table, "LangGraphCheckpoint", pk, sealed)) is not None:
        return found, table.entities["LangGraphWrite"], table.entities["LangGraphLease"]
    blob = Encrypted[Compressed[bytes]] if sealed else Compressed[bytes]
    meta = Encrypted[bytes] if sealed else bytes
    if table.offload:  # (a large value goes to the table's S3, through the model's rule)
        large = Offloaded  # (a generic alias, applied to a type made here)
        blob, meta = large[blob], large[meta]
    ttl = {table.ttl: int | None} if table.ttl else {}

    def entity(name: str, fields: dict[str, Any], base: type[Entity] = Entity,
               **defaults: Any) -> type[Entity]:
        meta = type("Meta", (), {"table": table, "pk": pk, "sk": keyed[name][1],
                                 "type_name": name, "__qualname__": f"{name}.Meta"})
        return type(name, (base,), {
            "__module__": __name__, "__qualname__": name, "Meta": meta,
            "__dynaorm_internal__": True,  # (the saver's rows: no MCP tools)
            "__dynaorm_sealed__": sealed,
            **dict.fromkeys(ttl), **defaults,
            "__annotations__": {
                **dict.fromkeys(parse(pk).fields + parse(keyed[name][1]).fields, str),
                **fields, **ttl}})
    # (the writes and the lease first: a checkpoint entity is only ever declared beside
    # them)
    lease = entity("LangGraphLease", {"head": str | None}, base=Lease, head=None)
    write = entity("LangGraphWrite", {
        "idx": int, "channel": str, "path": str, "value": blob,
        "total": int | None}, total=None)
    return entity("LangGraphCheckpoint", {
        "parent": str | None, "run_id": str | None,
        "meta": meta, "data": blob},
        parent=None, run_id=None), write, lease


def layouts(scope: Sequence[str]) -> dict[str, tuple[str, str]]:
    """The key templates (partition, sort) of each entity a saver (:func:`rows`) and a
    store (:func:`~dynaorm_langgraph.store.memory_entity`) declare, in a scope of
    ``scope``'s fields."""
    fields = "".join(f"{{{f}}}#" for f in scope)
    saver, store = "LG#" + fields + "{thread_id}", "LANGGRAPH#STORE" + "#" * bool(scope) + fields
    return {"LangGraphCheckpoint": (saver, "C#{ns}#{checkpoint_id}#"),
            "LangGraphWrite": (saver, "C#{ns}#{checkpoint_id}#W#{task_id}#{idx}"),
            "LangGraphLease": (saver, "L#"), "LangGraphMemory": (store, "{path}")}


def declared(table: Table, name: str, pk: str, sealed: bool) -> Any:
    """The entity ``name`` a saver or store of ``table`` declared already (``None``: none
    yet), refused unless its rows are keyed by ``pk`` and sealed as ``sealed`` asks."""
    found = table.entities.get(name)
    if found is not None and (found.Meta.pk, found.__dynaorm_sealed__) != (pk, sealed):
        raise DynaormError(f"table {table.name!r} keeps its {name} rows under "
                           f"{found.Meta.pk!r}, sealed={found.__dynaorm_sealed__} (a table keeps "
                           "one scope's fields): give every saver (store) of the table the "
                           "same scope fields and the same sealed=")
    return found


_SAVER_TTL = {"default_ttl", "strategy", "sweep_interval_minutes"}

_STORE_TTL = {"default_ttl", "refresh_on_read", "omit_expired", "sweep_interval_minutes"}


def _positive(value: object, what: str) -> float:
    """``value`` as a positive number of units, else ``TypeError``/``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number, not {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{what} must be positive, not {value!r}")
    return float(value)


def ttl_of(ttl: object, *, store: bool = False) -> Any:
    """The TTL a :class:`Saver` (a ``timedelta``) or a :class:`~dynaorm_langgraph.Store`
    (LangGraph's ``TTLConfig``) keeps, from what either accepts: a ``timedelta``, a number
    of seconds, or LangGraph's TTL config (a checkpointer's ``default_ttl`` minutes,
    ``strategy="delete"``, ``sweep_interval_minutes`` (DynamoDB sweeps by itself); a
    store's ``TTLConfig``). Anything else is refused now (``TypeError``, ``ValueError``),
    not at the first write."""
    if ttl is None:
        return None
    if isinstance(ttl, timedelta):
        length = timedelta(seconds=_positive(ttl.total_seconds(), "ttl"))
    elif isinstance(ttl, int | float) and not isinstance(ttl, bool):
        length = timedelta(seconds=_positive(ttl, "ttl (seconds)"))
    elif isinstance(ttl, Mapping):
        allowed = _STORE_TTL if store else _SAVER_TTL
        if unknown := sorted(map(str, set(ttl) - allowed)):
            raise ValueError(f"ttl: unknown keys {unknown} (LangGraph's TTL config of a "
                             f"{'store' if store else 'checkpointer'} has {sorted(allowed)})")
        if ttl.get("sweep_interval_minutes") is not None:
            _positive(ttl["sweep_interval_minutes"], "ttl's sweep_interval_minutes")
        if store:
            return _store_ttl(ttl)
        if ttl.get("strategy", "delete") != "delete":
            raise ValueError(f"ttl: strategy {ttl['strategy']!r}: a saver's rows expire "
                             "(DynamoDB's TTL deletes them); prune() keeps the latest")
        if "default_ttl" not in ttl:
            raise ValueError("ttl: LangGraph's TTL config needs default_ttl (minutes)")
        length = timedelta(minutes=_positive(ttl["default_ttl"], "ttl's default_ttl (minutes)"))
    else:
        raise TypeError(f"ttl must be a timedelta, seconds or LangGraph's TTL config (a "
                        f"dict), not {type(ttl).__name__}")
    if store:
        return {"default_ttl": length.total_seconds() / 60, "refresh_on_read": True}
    return length


def _store_ttl(ttl: Mapping[Any, Any]) -> dict[Any, Any]:
    """A store's ``TTLConfig``, its keys known (see :func:`ttl_of`), checked."""
    if ttl.get("default_ttl") is not None:
        _positive(ttl["default_ttl"], "ttl's default_ttl (minutes)")
    for flag in ("refresh_on_read", "omit_expired"):
        if not isinstance(ttl.get(flag, True), bool):
            raise TypeError(f"ttl's {flag} must be a bool")
    return dict(ttl)


class Runner:
    """Runs an op (a generator of calls, given a session of ``self.table`` in
    ``self.scope``) by :meth:`dynaorm.Session.run` (``_run``) or
    :meth:`dynaorm.AsyncSession.run` (``_arun``): one implementation for both, on the
    session's own runner. An exception a call raises is thrown into the op, for it to
    handle or let through."""

    def _bind(self, table: Table, scope: Mapping[str, str] | None, ttl: object,
              sealed: bool = False) -> None:
        """Keep ``table`` and ``scope``, refusing a table or a scope they cannot be used
        with (a scope no key can hold: refused now, not at every call; ``sealed`` without
        a keyring)."""
        if sealed and (table.keyring or getattr(table.db, "keyring", None)) is None:
            raise KeyringError(f"table {table.name!r}: sealed=True seals with the table's "
                               "keyring, and it has none (Table(keyring=...) or "
                               "Client(keyring=...))", key_id="?")
        if table.sk is None or not table.string_keys:
            raise DynaormError(f"table {table.name!r}: LangGraph's rows need string keys, "
                               "a sort key among them")
        if ttl is not None and not table.ttl:
            raise DynaormError(f"table {table.name!r} has no TTL attribute (Table(ttl=...)):"
                               " ttl= cannot expire its rows")
        self.table, self.scope = table, dict(scope or {})
        if self.scope:
            Session(table, scope=self.scope)

    def __deepcopy__(self, memo: Any) -> Any:
        """The saver or store itself: its state is its table's, so a deep copy of a
        compiled graph (or of a config holding it) keeps to the same rows (copying the
        table's client raised ``TypeError``). Pickling stays refused."""
        return self

    def _run(self, op: Callable[..., Op], *args: Any, **kwargs: Any) -> Any:
        # (a run's writes hold its lock)
        with t.sync if (t := (f := kwargs.get("fence")) and f.tenure) else nullcontext():
            session = Session(self.table, scope=self.scope or None)
            return session.run(op(session, *args, **kwargs))

    async def _arun(self, op: Callable[..., Op], *args: Any, **kwargs: Any) -> Any:
        async with t.alock if (t := (f := kwargs.get("fence")) and f.tenure) else nullcontext():
            session = AsyncSession(self.table, scope=self.scope or None)
            return await session.run(op(session, *args, **kwargs))


def twins(op: Callable[..., Op]) -> tuple[Any, Any]:
    """A method running ``op`` (given a session, then the method's arguments) on a
    :class:`dynaorm.Session`, and its ``a...`` twin on an :class:`dynaorm.AsyncSession`
    (see :class:`Runner`): each written once. An op that takes a ``fence`` is a saver's
    write: given the fence of its config's run
    (:meth:`~dynaorm_langgraph.fence.Fenced._fence`), whose lock it holds. Both bear
    ``op``'s signature (LangGraph reads ``put_writes``' to pass ``task_path``), less the
    session and the fence."""
    shown = signature(op)

    def fence(self: Any, args: Any, kwargs: Any) -> dict[str, Any]:
        return {"fence": self._fence(args[0] if args else kwargs["config"])
                } if "fence" in shown.parameters else {}

    @wraps(op)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        return self._run(partial(op, self), *args, **kwargs, **fence(self, args, kwargs))

    @wraps(op)
    async def arun(self: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._arun(partial(op, self), *args, **kwargs, **fence(self, args, kwargs))
    run.__signature__ = arun.__signature__ = shown.replace(  # type: ignore[attr-defined]
        return_annotation=shown.empty, parameters=[
            p for p in shown.parameters.values() if p.name not in ("s", "fence")])
    return run, arun


class Rows(Runner):
    """A saver's rows (see :func:`rows`): their keys, expiry and values."""

    cp: Any
    w: Any
    lease_row: Any
    ttl: timedelta | None
    lease: timedelta
    serde: "SerializerProtocol"

    def _pk(self, thread_id: str, **more: str) -> dict[str, Any]:
        return {**self.scope, "thread_id": str(thread_id), **more}

    def _at(self, conf: Mapping[str, Any]) -> dict[str, Any]:
        return self._pk(conf["thread_id"], ns="_" + conf.get("checkpoint_ns", ""))

    def _stamp(self) -> dict[Any, Any]:
        return {self.table.ttl: int(time.time() + self.ttl.total_seconds())
                } if self.ttl else {}  # (a table without a TTL attribute refuses ttl=)

    def _dump(self, value: Any) -> bytes:
        kind, data = self.serde.dumps_typed(value)
        return kind.encode() + b"\n" + data

    def _load(self, blob: bytes) -> Any:
        kind, _, data = blob.partition(b"\n")
        return self.serde.loads_typed((kind.decode(), data))


class SurfaceRows:
    """A saver's and a store's rows on a table where none is declared in the process, as
    ``dynaorm check`` and ``dynaorm model --infer`` find them (the entry point
    ``dynaorm.surface_rows``, :mod:`dynaorm.plugins`): by their type name where they carry
    one, else by their keys, read by the templates their entities are declared with
    (:func:`layouts`, in a scope of as many fields as the key holds), and the fields those
    keys hold, stored as the keys say."""

    hint = ("a row of dynaorm.langgraph (Saver, Store): declare Saver(table) or Store(table), "
            "with the scope it was written with, where the table is declared, so that check "
            "and every surface see it")

    def claims(self, item: Mapping[str, Any], pk: str, sk: str | None,
               type_name: str | None) -> bool:
        """Whether ``item`` (of a table keyed on ``pk``/``sk``) is one of these rows."""
        if type_name is not None:
            return type_name in layouts(())
        key, at = (item.get(name, {}).get("S", "") for name in (pk, sk or ""))
        # (in a scope of as many fields as the key holds "#" (a value holds none), named
        # _0, _1...: a saver's key holds one "#" more than its scope's fields, a store's two)
        return any(_holds(item, _parse(p).parse_key(key), _parse(s).parse_key(at))
                   for n in (1, 2) for p, s in layouts(
                       [f"_{i}" for i in range(key.count("#") - n)]).values())


def _holds(item: Mapping[str, Any], *keys: Any) -> bool:
    """Whether each key parsed (``None``: not of its template) and ``item`` stores every
    field they name (but a scope's, ``_0``...) as they hold it."""
    return None not in keys and all(item.get(n) == {"N" if n == "idx" else "S": v}
                                    for k in keys for n, v in k.items() if n[0] != "_")


#: (a template parsed once: the rows' keys are read by a few)
_parse: Any = lru_cache(64)(parse)


#: what the entry point names
SURFACE_ROWS = SurfaceRows()
