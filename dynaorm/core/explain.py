"""``dynaorm.explain(x)``: what an operation will send and what it costs, sending nothing.

``x`` is a session with staged work (its commit), a query or a scan, a search, or an
entity class with key fields (a get). The explanation lists the requests (as they would be
sent), the index a read reads, the rows a commit writes by role (the row or latest copy,
unique guards, version rows, condition checks, and an entry per index each lands in,
leaves or moves within) and the capacity units each costs, priced as DynamoDB prices them:

- a write: 1 unit per KB (rounded up) of the larger of the item before and after it; an
  index entry the same, of its projected attributes; in a ``TransactWriteItems`` twice
  that, and a condition check 2 units per 4 KB of the item it reads;
- a read: 1 unit per 4 KB (0.5 eventually consistent); a get rounds its item up, a query
  or a scan rounds the items of each page together, a batch each item.

A commit is planned from the objects' known states, as :func:`~dynaorm.core.commit.plan_p`
plans it: where a real commit reads first (an overwrite or a delete by key of an entity
with unique or versioned rules, a new versioned entity's kept history), the explanation
says so and plans as if the read found nothing. Read units need the items a read returns:
``items=`` gives them (entity objects or stored items); without them a read is explained
for one item of at most 4 KB (``exact`` is then ``False``).

Pure: nothing here sends a request.
"""

from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dynaorm._types import Item, PlainKey
from dynaorm.core.commit import READS, _receipt, keyed_plan_p
from dynaorm.errors import DynaormError, ItemNotFoundError
from dynaorm.read.query import QuerySpec
from dynaorm.read.search import OPERATION as SEARCH_OPERATION
from dynaorm.read.search import SearchSpec, asked
from dynaorm.read.spec import ReadSpec
from dynaorm.schema.entity import Entity, encode_entity, spec_of
from dynaorm.schema.table import TableSchema
from dynaorm.values.keys import key_value, wire_key
from dynaorm.values.limits import item_size
from dynaorm.values.revision import stamp_of
from dynaorm.write.costs import READ_UNIT, REV, Row, entry, known_items, read_units, rows_of

__all__ = ["Explanation", "Request", "Row", "explain"]

#: the client request token of a transaction (a real commit draws 32 random characters)
_TOKEN: Final = "<client request token>"
_MB: Final = 1024 * 1024


@dataclass(frozen=True)
class Request:
    """One request the operation sends, as it would be sent, and its units."""

    operation: str
    """The DynamoDB API name."""
    table: str
    """The table it is for."""
    index: str | None
    """The index it reads, if any."""
    request: dict[str, Any]
    """Its parameters."""
    read_units: float = 0.0
    """Read units it costs."""
    write_units: float = 0.0
    """Write units it costs."""
    note: str = ""
    """How many times it is sent, or what its units assume."""


@dataclass(frozen=True)
class Explanation:
    """What an operation sends and what it costs (see :mod:`dynaorm.core.explain`);
    ``str()`` is a readable table."""

    what: str
    """What was explained."""
    requests: tuple[Request, ...] = ()
    """The requests, in order."""
    rows: tuple[Row, ...] = ()
    """The rows a commit writes, in request order, each index entry after its row."""
    reads_first: tuple[str, ...] = ()
    """The reads a real commit makes before it plans (none here)."""
    notes: tuple[str, ...] = ()
    """What the units assume."""
    exact: bool = True
    """Whether every unit is priced on known sizes, as DynamoDB charges and every engine
    dynaorm tests on reports it: ``False`` where a size is not known before reading (a
    filter, a scan, an unread stored item), and for a transaction two of whose actions
    cost the same units on the same table and indexes (DynamoDB Local reports those
    once); :attr:`notes` say why."""

    @property
    def read_units(self) -> float:
        """Read units of every request."""
        return sum(r.read_units for r in self.requests)

    @property
    def write_units(self) -> float:
        """Write units of every request."""
        return sum(r.write_units for r in self.requests)

    @property
    def index(self) -> str | None:
        """The index a read reads (``None``: the table)."""
        return next((r.index for r in self.requests if r.index), None)

    def by_role(self) -> dict[str, dict[str, float]]:
        """Write units by entity and role: ``{"User": {"row": 2.0, "unique guard": 4.0}}``."""
        out: dict[str, dict[str, float]] = {}
        for row in self.rows:
            roles = out.setdefault(row.entity, {})
            roles[row.role] = roles.get(row.role, 0.0) + row.units
        return out

    def by_table(self) -> dict[str, float]:
        """Units by table and ``table/index``, as DynamoDB reports consumed capacity."""
        out: dict[str, float] = {}
        for row in self.rows:
            name = row.table if row.index is None else f"{row.table}/{row.index}"
            out[name] = out.get(name, 0.0) + row.units
        for r in self.requests:
            if r.read_units:
                name = r.table if r.index is None or r.operation == "BatchGetItem" else (
                    f"{r.table}/{r.index}")
                out[name] = out.get(name, 0.0) + r.read_units
        return out

    def __str__(self) -> str:
        lines = [f"explain: {self.what}"]
        lines += [f"  reads first: {r}" for r in self.reads_first]
        lines.append(_table(["request", "table", "index", "read units", "write units", ""],
                            [[r.operation, r.table, r.index or "-", _n(r.read_units),
                              _n(r.write_units), r.note] for r in self.requests]))
        if self.rows:
            lines.append("rows written:")
            lines.append(_table(["entity", "role", "action", "index", "key", "bytes",
                                 "units"],
                                [[r.entity, r.role, r.action, r.index or "-",
                                  " ".join(f"{k}={v}" for k, v in r.key.items()),
                                  str(r.size) + ("" if r.exact else "?"), _n(r.units)]
                                 for r in self.rows]))
        lines.append(f"total: {_n(self.read_units)} read units, {_n(self.write_units)} write "
                     f"units" + ("" if self.exact else " (not exact: see the notes)"))
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _n(units: float) -> str:
    return f"{units:g}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(head, *rows, strict=True)]
    return "\n".join("  " + "  ".join(str(c).ljust(w) for c, w in zip(r, widths,
                                                                      strict=True)).rstrip()
                     for r in (head, *rows))


# -- commits -------------------------------------------------------------------------------
def _pure(proto: Generator[Any, Any, Any], what: str, noted: list[Any] | None = None
          ) -> Any:
    """The result of ``proto`` without sending: with ``noted``, each DynamoDB read it asks
    for (a staged write's ``_prepare`` with the commit's own reads, its rules' included:
    steps are data) is noted (the step) and answered as finding nothing (no item, no kept
    version);
    any other step (key material from KMS), or any step without ``noted``, is refused:
    explain sends nothing."""
    answer: Any = None
    while True:
        try:
            step = proto.send(answer)
        except StopIteration as stop:
            return stop.value
        if noted is None or getattr(step, "service", None) != "dynamodb":
            break
        noted.append(step)
        answer = {}
    proto.close()
    name = getattr(step, "operation", type(step).__name__)
    raise DynaormError(f"explain sends nothing, but {what} needs a request first ({name}: "
                       "key material the keyring has not cached); explain it after a "
                       "commit or read of the entity has fetched it")


def _reads_first(noted: Sequence[Any]) -> tuple[list[str], list[Request]]:
    """The reads a commit makes before it plans (``noted`` steps): as said, and as the
    requests they are, each priced for an item of at most 4 KB (a real commit sends them
    too: they count)."""
    said, sent = [], []
    for step in noted:
        request = step.request
        said.append(f"{step.operation} {request.get('TableName', '')} "
                     f"{request.get('Key', '')} (consistent): planned here "
                     "as absent")
        sent.append(Request(step.operation, str(request.get("TableName", "")),
                            request.get("IndexName"), dict(request),
                            read_units(READ_UNIT, bool(request.get("ConsistentRead"))),
                            note="read first, before planning: priced for an item of at "
                                 "most 4 KB"))
    return said, sent


def _prepared(staged: Sequence[Any], noted: list[Any]) -> tuple[list[Any], list[str]]:
    """The staged writes prepared (each read they ask for noted, none sent), and a note
    on each one that a delete by key cannot be without reading its item first."""
    prepared, unplanned = [], []
    for write in staged:
        try:
            prepared.append(_pure(write._prepare(READS, False), "planning the commit", noted))
        except ItemNotFoundError as exc:  # (by key, read first: absent here)
            unplanned.append(f"{exc.args[0]}: a delete by key (or an update its rules plan "
                             "on the stored item) reads the item first; absent, the commit "
                             "fails so; stored, it writes it and the rows its rules keep "
                             "beside it (unique guards; version rows): not priced here")
    return prepared, unplanned


def _commit_requests(plan: Any, rows: Sequence[Row]) -> tuple[Request, ...]:
    """The request ``plan`` sends (one per table it writes to, for their units)."""
    if plan.single_item:
        operation, request = plan.single_request(REV)
    else:
        operation, request = "TransactWriteItems", plan.transaction_request(_TOKEN, REV)
    request["ReturnConsumedCapacity"] = "INDEXES"
    tables = dict.fromkeys(r.table for r in rows) or {"-": None}
    return tuple(Request(operation, name, None, request if i == 0 else {},
                         write_units=sum(r.units for r in rows if r.table == name))
                 for i, name in enumerate(tables))


def _commit(session: Any) -> Explanation:
    staged = session._stage.coalesced()
    if not staged:
        return Explanation("a session with nothing staged", notes=("nothing to send",))
    noted: list[Any] = []
    prepared, unplanned = _prepared(staged, noted)
    first, reads = _reads_first(noted)
    if not prepared:
        return Explanation(f"a commit of {len(staged)} staged write(s)", tuple(reads),
                           reads_first=tuple(first), notes=tuple(unplanned), exact=False)
    receipt = _receipt(staged, session._stage.idempotency_key, session._stage)
    plan, _ = _pure(keyed_plan_p(prepared, receipt), "planning the commit")
    known = known_items(prepared)
    single = plan.single_item
    factor = 1 if single else 2
    rows = [row for at, (op, stamped) in enumerate(zip(plan.ops, plan.stamped, strict=True))
            for row in rows_of(op, stamped, factor, known, at)]
    requests = (*reads, *_commit_requests(plan, rows), *_read_back(staged, plan))
    notes = ["transactional: each write costs twice its units; a condition check 2 per "
             "4 KB of the item it reads (as DynamoDB charges)"] if not single else []
    notes += unplanned
    if not all(r.exact for r in rows):
        notes.append("a row marked ? is priced on its new item only: the item stored before "
                     "it is not known (a larger one costs more)")
    repeated = not single and _repeated(rows)
    if repeated:
        notes.append("two or more of its actions cost the same units on the same table and "
                     "indexes: DynamoDB charges each (as priced here); DynamoDB Local counts "
                     "them once and reports less")
    exact = all(r.exact for r in rows) and not unplanned and not repeated and not reads
    what = f"a commit of {len(staged)} staged write(s): {len(plan.ops)} action(s)"
    return Explanation(what, requests, tuple(rows), tuple(first), tuple(notes), exact)


def _read_back(staged: Sequence[Any], plan: Any) -> list[Request]:
    """The reads after a transaction of the staged updates that asked for their result
    (``returning()``) and were not planned on a read of the item."""
    return [Request("GetItem", w._spec.table.name, None, _get_request(
        w._spec.table, w.key, True), read_units(READ_UNIT, True),
        note="read back after the commit (returning()): priced for an item of at most "
             "4 KB") for w in staged if not plan.single_item and getattr(
        w, "_returning", False) and getattr(w, "_planned", None) is None]


def _repeated(rows: Sequence[Row]) -> bool:
    """Whether two actions of a transaction cost equal units on equal tables and indexes:
    the engines then differ (DynamoDB Local keeps each action's capacity in a set)."""
    actions: dict[int, dict[str, float]] = {}
    for row in rows:
        units = actions.setdefault(row.at, {})
        name = row.table if row.index is None else f"{row.table}/{row.index}"
        units[name] = units.get(name, 0.0) + row.units
    return len({frozenset(u.items()) for u in actions.values()}) < len(actions)


# -- reads ---------------------------------------------------------------------------------
def _stored(items: Iterable[Any] | None) -> list[Item] | None:
    """``items`` as stored items (entity objects encoded as a save would store them;
    ``None``: none given)."""
    if items is None:
        return None
    out = []
    for item in items:
        if isinstance(item, Entity):  # (with the revision a save stamps: its bytes count)
            spec = spec_of(type(item))
            out.append({**encode_entity(item, spec), **stamp_of(spec.table, REV)})
        elif isinstance(item, Mapping):
            out.append(dict(item))
        else:
            raise TypeError(f"explain(items=...) takes entity objects or stored items, got "
                            f"{item!r}")
    return out


def _pages(sizes: Sequence[int], per_page: int | None) -> list[int]:
    """The bytes of each page DynamoDB reads ``sizes`` in: 1 MB, or ``per_page`` items."""
    pages = []
    count = total = 0
    for size in sizes:
        if count and (total + size > _MB or (per_page and count == per_page)):
            pages.append(total)
            count = total = 0
        count, total = count + 1, total + size
    return [*pages, total] if count else pages


def _read_pages(table: TableSchema, index: str | None, stored: list[Item] | None,
                per_page: int | None) -> list[int]:
    """The bytes of each page a read of ``stored`` (``None``: one page of at most 4 KB)
    reads, from ``index`` (an index holds its projection of each item)."""
    index_of = table.index(index) if index is not None else None
    sizes = [item_size(entry(table, index_of, i) or i) if index_of is not None else item_size(i)
             for i in stored] if stored is not None else [READ_UNIT]
    return _pages(sizes, per_page)


def _fetch(table: TableSchema, index: str | None, stored: list[Item] | None,
           consistent: bool) -> Request:
    """The ``BatchGetItem`` that reads each hit of an index holding some attributes only."""
    fetched = [read_units(item_size(i), consistent) for i in stored or [{}]]
    return Request("BatchGetItem", table.name, index, {"RequestItems": {
        table.name: {"Keys": ["<each hit's key>"]}}}, sum(fetched) if stored else 0.5,
        note="the index holds some attributes only: each hit is read by key, 100 a "
             "request")


def _stream_items(spec: ReadSpec[Any], stored: list[Item] | None, i: int,
                  streams: int) -> list[Item] | None:
    """The items of ``stored`` that stream ``i`` of a query reads (a sharded query sends
    one request a shard: each reads the items under its partition value)."""
    if stored is None or streams == 1 or not isinstance(spec, QuerySpec):
        return stored
    plan = spec._plan()
    value = plan.pk_values[i]
    return [s for s in stored if plan.pk_attr in s and key_value(s[plan.pk_attr]) == value]


def _read(spec: ReadSpec[Any], items: Sequence[Any] | None) -> Explanation:
    sel = spec._selection()
    table = spec_of(spec._entities[0]).table
    index = spec._plan().index if isinstance(spec, QuerySpec) else spec._index
    operation = spec._operation
    stored = _stored(items)
    per_page = spec._page_size or spec._limit
    streams = spec._streams()
    requests, filtered = [], False
    for i in range(streams):
        request = spec._request(i, sel)
        filtered = filtered or "FilterExpression" in request
        if per_page:
            request["Limit"] = per_page
        pages = _read_pages(table, index, _stream_items(spec, stored, i, streams), per_page)
        units = sum(read_units(p, spec._consistent) for p in pages)
        requests.append(Request(operation, table.name, index, request, units,  # (a shard's
                                # pages rounded on their own, as DynamoDB Local reports)
                                note=f"{len(pages)} page(s)" + ("" if streams == 1 else
                                                                f", shard {i + 1}/{streams}")))
    notes = []
    if stored is None:
        notes.append(f"read units for one {operation.lower()} page of at most 4 KB of items: "
                     "pass items= (the objects it returns) for the units of those")
    if operation == "Scan":
        notes.append("a scan reads every item of the table (other entities' items and "
                     "guards too) and is charged for all of them: units for the items "
                     "given only (at least)")
    elif filtered:
        notes.append("a filter is applied after reading: DynamoDB charges for every item "
                     "the key condition reads, kept or not, which cannot be known before "
                     "reading: units for the items given only (at least)")
    if sel.fetch and stored != []:  # (no hit: no hit to read by key, no request)
        requests.append(_fetch(table, index, stored, spec._consistent))
    what = f"{spec._describe()}" + (f" on index {index}" if index else "")
    exact = stored is not None and operation != "Scan" and not filtered
    return Explanation(what, tuple(requests), notes=tuple(notes), exact=exact)


def _search(search: SearchSpec[Any], items: Sequence[Any] | None) -> Explanation:
    """A vector search: its ``SearchVectors`` request (metered in vector search bytes,
    which AWS gives no way to price before sending: noted, not priced), then, unless the
    index projects every attribute of the entity, a ``BatchGetItem`` of its hits by key
    (the units of the items given, else of one item of at most 4 KB)."""
    spec, index = spec_of(search._entities[0]), search._index
    stored = _stored(items)
    units = sum(read_units(item_size(i)) for i in stored) if stored is not None else 0.5
    notes = [f"{SEARCH_OPERATION} is metered in vector search bytes (VectorSearchRequestBytes"
             "), apart from read units: AWS documents that they grow with the vector data a "
             "search examines and returns (the index's dimensions, top, the projection; "
             "slowly with the index's items) and gives their price per byte on its pricing "
             "page, but no way to count them before sending: not priced here (with "
             "return_consumed_capacity set, client.capacity() counts what a search reports)"]
    sent = [Request(SEARCH_OPERATION, spec.table.name, index.name, search._request(),
                    note="vector search bytes: not priced")]
    if asked(spec, index):
        notes.append(f"one request: index {index.name} projects every attribute of "
                     f"{spec.name}, so each hit is the stored item")
    else:
        if stored is None:
            notes.append("read units of one hit of at most 4 KB: pass items= (the objects it "
                         "returns) for the units of those")
        sent.append(Request("BatchGetItem", spec.table.name, None, {"RequestItems": {
            spec.table.name: {"Keys": ["<each hit's key>"]}}}, units,
            note="each hit is read by key, 100 a request"))
    return Explanation(
        f"search {spec.name} on vector index {index.name} (top {search._top})", tuple(sent),
        notes=tuple(notes), exact=False)


def _get(entity: type[Entity], fields: Mapping[str, Any], items: Sequence[Any] | None,
         consistent: bool) -> Explanation:
    """A get by key; by a unique rule's fields, a find (its guard, then its owner)."""
    spec = spec_of(entity)
    stored = _stored(items)
    size = item_size(stored[0]) if stored else 1
    notes = () if stored is not None else (
        "read units for an item of at most 4 KB: pass items=[obj] for the units of that",)
    rule = next((r for r in spec.uniques if set(fields) == set(r.fields)), None)
    shown = {n: spec.rules.redact(n, v) for n, v in fields.items()}  # (never plaintext)
    requests = []
    if rule is not None and set(fields) != set(spec.lookup_fields):
        key = rule.row_key(spec.table, _pure(rule.guard_key_p(fields, spec.name, (entity,)),
                                             "the find") or "")
        guard = rule.item(spec, key[spec.table.pk], {a: "-" for a in spec.table_key_attrs})
        requests.append(Request("GetItem", spec.table.name, None, _get_request(
            spec.table, key, consistent), read_units(item_size(guard), consistent),
            note="the unique guard, which names its owner"))
        what = f"find {entity.__name__} {shown}"
        key = {}
    else:
        key = spec.primary_key(fields)
        what = f"get {entity.__name__} {shown}"
    requests.append(Request("GetItem", spec.table.name, None, _get_request(
        spec.table, key, consistent) if key else {"TableName": spec.table.name,
                                                  "Key": "<the key the guard names>"},
        read_units(max(size, 1), consistent)))
    return Explanation(what, tuple(requests), notes=notes, exact=stored is not None)


def _get_request(table: TableSchema, key: PlainKey, consistent: bool) -> dict[str, Any]:
    request: dict[str, Any] = {"TableName": table.name, "Key": wire_key(key)}
    if consistent:
        request["ConsistentRead"] = True
    return request


def explain(x: Any, entity: type[Entity] | None = None, /, *,
            items: Sequence[Any] | None = None, consistent: bool = False,
            **key: Any) -> Explanation:
    """What ``x`` will send and cost, sending nothing (see the module): a session with
    staged work (its next commit), a query, a scan or a vector search (``items``: the
    objects it would return, for their units), or an entity class with its key fields (a get;
    ``consistent``: a strongly consistent one) or with a unique rule's fields (a find).
    ``explain(session, Entity, **key)``: that get or find in ``session``, refused as the
    session would refuse it (an entity of another client, a key outside its scope:
    :class:`~dynaorm.ScopeError`). An adapter (``__wrapped__``: the blocking one over an
    ``AsyncSession`` that ``TestBackend(session_kind="async")`` gives) is explained as
    what it wraps."""
    x = getattr(x, "__wrapped__", x)
    if entity is not None:
        stage = getattr(x, "_stage", None)
        if stage is None:
            raise TypeError(f"explain(session, Entity, **key) takes a session; got {x!r}")
        spec = stage.spec(entity)
        if stage.scope is not None:
            stage.scope.fields(spec, key, "explain")
        return _get(entity, key, items, consistent)
    if isinstance(x, type) and issubclass(x, Entity):
        return _get(x, key, items, consistent)
    if key:
        raise TypeError(f"explain(): key fields {sorted(key)} are only for a get "
                        "(explain(Entity, **key))")
    if isinstance(x, ReadSpec):
        return _read(x, items)
    if isinstance(x, SearchSpec):
        return _search(x, items)
    if getattr(x, "_stage", None) is not None:
        return _commit(x)
    raise TypeError(f"explain() takes a session, a query, a scan, a search or an entity "
                    f"class with key fields; got {x!r}")
