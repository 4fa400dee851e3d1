"""A LangGraph long-term memory store in the application's own table (contract 23).

:class:`Store` is a ``langgraph.store.base.BaseStore`` written on dynaorm's public API
only: its rows are one entity (``LangGraphMemory``) declared on the table, read and
written through a (scoped) :class:`~dynaorm.Session` or :class:`~dynaorm.AsyncSession`.

The layout: every item of a store lives in one partition, ``LANGGRAPH#STORE`` (with a
scope: ``LANGGRAPH#STORE#<value>#...#``, the scope's values in the order of their
fields' names, as the saver's), under the
sort key ``<namespace labels joined by '.'>..<key>`` (``users.u1..prefs``). A namespace
label never holds ``.`` (LangGraph refuses it) nor is empty, so the first ``..`` ends the
namespace; a search of a namespace prefix is one ``begins_with`` query. The value is kept
as JSON text, ``Compressed`` from 256 bytes on; ``created_at``/``updated_at`` are the
entity's timestamps; a TTL is the table's TTL attribute (``ttl_minutes`` keeps the
length, for the refresh on read).

A batch runs as LangGraph's ``InMemoryStore`` runs one: every read sees the store as it
was before the batch (reads are consistent), then its puts and deletes (the last op of a
key wins) are written in bulk (``save_many``, ``delete_many``: ``BatchWriteItem``, not
one transaction; a delete of a missing item is no error; on a table with ``offload=`` the
value is ``Offloaded``, and the writes a commit an item: ``save_many`` refuses offloaded
rows). The steps are written once, as a generator of calls on a session that
:meth:`Store.batch` runs on a ``Session`` and :meth:`Store.abatch` on an ``AsyncSession``.
"""

import json
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from functools import partial
from itertools import takewhile
from typing import Annotated, Any, cast

import orjson
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    validate_op_namespace,
)
from pydantic import Field

from dynaorm import (
    BulkWriteError,
    Compressed,
    ConditionFailedError,
    DynaormError,
    Encrypted,
    Entity,
    F,
    ItemNotFoundError,
    Offloaded,
    Session,
    Table,
    TableNotFoundError,
    Vector,
    VectorIndex,
)
from dynaorm_langgraph.rows import Op as Steps
from dynaorm_langgraph.rows import Runner, declared, layouts, ttl_of, twins

_COMPARE = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def memory_entity(table: Table, scope: Iterable[str], sealed: bool
                  ) -> type[Entity]:
    """The entity a :class:`Store` of ``table`` keeps its items as (``scope``: the names
    of its scope's fields), with a vector for the table's first COSINE vector index whose
    partition is none or a scope field. One layout a table: ``Store(...)`` declares it, so
    declare your stores where the table is declared, for ``table.model()``, ``dynaorm
    iam``, exports and ``check`` to see it. ``sealed``: its values ``Encrypted``."""
    fields = tuple(scope)
    pk, sk = layouts(fields)["LangGraphMemory"]
    if (found := declared(table, "LangGraphMemory", pk, sealed)) is not None:
        return found  # type: ignore[no-any-return]
    meta = {"table": table, "pk": pk, "sk": sk, "__qualname__": "LangGraphMemory.Meta",
            "timestamps": ("created_at", "updated_at")}
    value = Encrypted[Compressed[str]] if sealed else Compressed[str]
    hints = {**dict.fromkeys(fields, str), "path": str,
             "value": cast(Any, Offloaded)[value] if table.offload else value,
             "ttl_minutes": float | None,
             "expires": datetime | None}
    body = {"__module__": __name__, "__qualname__": "LangGraphMemory",
            "__annotations__": hints, "Meta": type("Meta", (), meta),
            "ttl_minutes": None, "__dynaorm_internal__": True,
            "__dynaorm_sealed__": sealed,
            "expires": Field(None, serialization_alias=table.ttl)}
    if vector := _vector(table, fields):
        hints["embedding"] = Annotated[list[float] | None, Vector(vector.dimensions)]
        body["embedding"] = Field(None, serialization_alias=vector.attribute)
    return type("LangGraphMemory", (Entity,), body)


def _vector(table: Table, scope: tuple[str, ...]) -> VectorIndex | None:
    """The table's first COSINE index a store of ``scope`` can search: partitioned by
    none or a scope field, every scope field its partition or one of its filters."""
    return next((v for v in table.vector_indexes.values() if v.distance == "COSINE" and v.
                 partition in (None, *scope) and set(scope) <= {v.partition, *v.filters}), None)


class Store(Runner, BaseStore):
    """LangGraph's long-term memory in ``table`` (see the module). ``index=`` (``dims``,
    ``embed``, ``fields``) searches by meaning through the table's COSINE vector index of
    ``dims`` dimensions; ``scope=`` (``{"tenant_id": "t1"}``) keeps the store inside one
    tenant; ``ttl=`` a LangGraph ``TTLConfig`` (``default_ttl`` minutes,
    ``refresh_on_read``), or a ``timedelta`` or seconds (the default TTL, refreshed on
    read), kept in the table's TTL attribute; ``sealed=True``: every value stored sealed
    with the table's keyring (``Encrypted``; a vector stays in the clear, for its index to
    read), a value it did not seal refused on read (:class:`~dynaorm.DecryptionError`)."""

    def __init__(self, table: Table, *, index: IndexConfig | None = None,
                 scope: Mapping[str, str] | None = None,
                 ttl: TTLConfig | timedelta | float | None = None,
                 sealed: bool = False):
        config = ttl_of(ttl, store=True)
        self._bind(table, scope, config, sealed)
        self.ttl_config, self.supports_ttl = config, bool(table.ttl)
        self.index_config, self.embeddings = index, None
        self.vector = _vector(table, tuple(self.scope))
        if index:
            self.embeddings = ensure_embeddings(index.get("embed"))
            if self.vector is None or self.vector.dimensions != index["dims"]:
                raise DynaormError(
                    f"table {table.name!r} has no COSINE vector index of {index['dims']} "
                    "dimensions partitioned by none or a scope field, every scope field "
                    "its partition or one of its filters")
        self.entity: Any = memory_entity(table, sorted(self.scope), sealed)  # (as the saver's)

    # -- the steps, for either kind of session ---------------------------------------
    def _batch(self, s: Any, ops: Iterable[Op]) -> Steps:
        ops = list(ops)
        for op in ops:
            validate_op_namespace(op)
        E, keys = self.entity, self.scope
        results: list[Result] = []
        writes: dict[str, PutOp] = {}
        read: dict[str, Any] = {}  # path -> entity read by an op that refreshes TTLs
        for op in ops:
            found: list[Any] = []
            if isinstance(op, GetOp):
                path = _path(op.namespace, "..") + op.key
                obj = yield lambda: s.get(E, consistent=True, path=path, **keys)  # noqa: B023 (run at once)
                found = [] if obj is None else [(obj, json.loads(obj.value), None)]
                results.append(_item(*found[0]) if found else None)
            elif isinstance(op, SearchOp):
                found = yield from self._search(s, op)
                results.append([_item(*hit, kind=SearchItem) for hit in found])
            elif isinstance(op, ListNamespacesOp):
                results.append((yield from self._namespaces(s, op)))
            elif isinstance(op, PutOp):
                writes[_path(op.namespace, "..") + op.key] = op
                results.append(None)
            else:
                raise ValueError(f"Unknown operation type: {type(op)}")
            if getattr(op, "refresh_ttl", False):
                read.update((obj.path, obj) for obj, _, _ in found if obj.ttl_minutes)
        yield from self._write(s, writes)
        for obj in (obj for path, obj in read.items() if path not in writes):
            s.update(E, path=obj.path, **keys).set(
                expires=_expiry(obj.ttl_minutes), updated_at=obj.updated_at).where(
                F("updated_at") == obj.updated_at)  # (the item as read, else no refresh)
            with suppress(ItemNotFoundError, ConditionFailedError):  # (one commit an item:
                yield s.commit  # deleted or put again since the read, it is left alone)
        return results

    batch, abatch = twins(_batch)  # (reads first, then the writes)

    def _texts(self, writes: dict[str, PutOp]) -> dict[str, str]:
        """The text to embed of each write that has some (none without embeddings)."""
        texts = {}
        if self.embeddings:
            for path, op in writes.items():
                fields = op.index or cast(IndexConfig, self.index_config).get("fields") or ["$"]
                got = [] if op.value is None or op.index is False else [
                    t for f in fields for t in get_text_at_path(op.value, f)]
                if got:
                    texts[path] = "\n".join(got)
        return texts

    def _write(self, s: Any, writes: dict[str, PutOp]) -> Steps:
        E, texts = self.entity, self._texts(writes)
        vectors = dict(zip(texts, (yield self._embed(s, "embed_documents", list(texts.values())))
                           if texts else (), strict=True))
        objs = [E(path=path, value=_json(op.value), ttl_minutes=op.ttl, **self.scope,
                  expires=_expiry(op.ttl), **({"embedding": vectors[path]} if path in vectors
                                              else {}))
                for path, op in writes.items() if op.value is not None]
        gone = [{"path": path, **self.scope} for path, op in writes.items() if op.value is None]
        for key in gone:  # (a key no delete may take: refused before anything is written)
            Session(self.table).delete(E, **key)  # type: ignore[arg-type]
        if self.table.offload:  # (save_many/delete_many refuse offloaded rows: a commit
            for obj in objs:       # an item, each knowing the objects it replaces)
                s.save(obj, overwrite=True)
                yield s.commit
            for key in gone:
                s.delete(E, **key)
                with suppress(ItemNotFoundError):
                    yield s.commit
            return
        try:
            yield lambda: s.save_many(objs)
            yield lambda: s.delete_many(E, gone)
        except BulkWriteError as exc:  # (a missing table: what a get says, not "may have
            missing = [e for _, e in exc.errors if isinstance(e, TableNotFoundError)]
            if missing and not exc.written and not exc.unknown:  # been applied")
                raise missing[0] from exc
            raise

    def _search(self, s: Any, op: SearchOp) -> Steps:
        want, prefix = op.offset + op.limit, _path(op.namespace_prefix, ".")
        if want <= 0:
            return []
        if op.query and self.embeddings:
            index, vector = cast(VectorIndex, self.vector), (
                yield self._embed(s, "embed_query", op.query))
            part = {k: v for k, v in self.scope.items() if k == index.partition}
            top = 100 if prefix or op.filter else min(want, 100)
            hits = yield lambda: s.search(self.entity, index.name, vector=vector, top=top,
                                            **part).all()
            return [(h.item, value, 1 - h.score) for h in hits if h.item.path.startswith(
                prefix) and _kept(value := json.loads(h.item.value), op.filter)][op.offset:want]
        found: list[Any] = []
        cursor = None
        while len(found) < want:
            page = yield lambda: self._query(s, prefix).page_size(
                min(want if not op.filter else max(want, 100), 1000)).page(cursor)
            found += [(obj, value, None) for obj in page.items
                      if _kept(value := json.loads(obj.value), op.filter)]
            if (cursor := page.cursor) is None:
                break
        return found[op.offset:want]

    def _namespaces(self, s: Any, op: ListNamespacesOp) -> Steps:
        conditions = op.match_conditions or ()
        head = next((c.path for c in conditions if c.match_type == "prefix"), ())
        lead = _path(tuple(takewhile(lambda label: label != "*", head)), ".")
        rows = yield lambda: self._query(s, lead).values("path")
        spaces = {tuple(r["path"].split("..", 1)[0].split(".")) for r in rows}
        spaces = {ns[:op.max_depth] if op.max_depth is not None else ns for ns in spaces
                  if all(_fits(ns, c) for c in conditions)}
        return sorted(spaces)[op.offset:op.offset + op.limit]

    def _query(self, session: Any, prefix: str) -> Any:
        query = session.query(self.entity, **self.scope).consistent()
        return query.begins_with(path=prefix) if prefix else query

    def _embed(self, s: Any, method: str, texts: Any) -> Callable[[], Any]:
        return partial(getattr(self.embeddings, method if isinstance(s, Session)
                               else "a" + method), texts)


def _json(value: Any) -> str:
    """``value`` as JSON text. A dict key that is no string is refused (``TypeError``,
    before anything is written): JSON keeps it as a string (``1`` and ``"1"``: one lost),
    so the get would answer another value. ``orjson`` refuses such keys at a few percent
    of ``json.dumps``'s cost; only a value it refuses is walked (it also refuses what JSON
    keeps: an int past 64 bits, a lone surrogate)."""
    text = json.dumps(value)
    try:
        orjson.dumps(value)
    except TypeError:
        for stray in _stray_keys(value):
            raise TypeError(f"the store keeps values as JSON: the dict key {stray!r} "
                            f"({type(stray).__name__}) is not a string, or another key's text "
                            "(JSON would make it one: a get would answer another value)") from None
    return text


def _stray_keys(value: Any) -> Iterator[Any]:
    """The dict keys in ``value`` that are not strings, or that JSON writes as another
    key of the same dict does (a str subclass beside the plain string: one is lost)."""
    if isinstance(value, dict):
        texts = set()
        for k in value:
            text = str.__str__(k) if isinstance(k, str) else None
            if text is None or text in texts:
                yield k
            else:
                texts.add(text)
        for v in value.values():
            yield from _stray_keys(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _stray_keys(v)


def _path(namespace: tuple[str, ...], end: str = "") -> str:
    """A namespace's part of a sort key (with ``end`` after it when it is not empty)."""
    return ".".join(namespace) + end if namespace else ""


def _item(obj: Any, value: Any, score: float | None, *, kind: type[Item] = Item) -> Any:
    namespace, key = obj.path.split("..", 1)
    return kind(namespace=tuple(namespace.split(".")), key=key, value=value,
                created_at=obj.created_at, updated_at=obj.updated_at,
                **({} if kind is Item else {"score": score}))


def _expiry(minutes: float | None) -> datetime | None:
    return None if minutes is None else datetime.now(UTC) + timedelta(minutes=minutes)


def _kept(value: Any, wanted: dict[str, Any] | None) -> bool:
    """Whether a value passes a search's ``filter`` (as ``InMemoryStore`` compares)."""
    return all(_matches(value.get(k), v) for k, v in (wanted or {}).items())


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, k, v) for k, v in wanted.items())
        return isinstance(value, dict) and all(_matches(value.get(k), v)
                                               for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (isinstance(value, list | tuple) and len(value) == len(wanted)
                and all(map(_matches, value, wanted)))
    return bool(value == wanted)


def _operator(value: Any, name: str, operand: Any) -> bool:
    if name in ("$eq", "$ne"):
        return bool(value == operand) == (name == "$eq")
    if name not in _COMPARE:
        raise ValueError(f"Unsupported operator: {name}")
    return bool(_COMPARE[name](float(value), float(operand)))


def _fits(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    """Whether a namespace matches a prefix or suffix condition (``*``: any label)."""
    path = condition.path
    part = (namespace[:len(path)] if condition.match_type == "prefix"
            else namespace[len(namespace) - len(path):])
    return len(part) == len(path) and all(p in ("*", n) for n, p in zip(part, path, strict=True))
