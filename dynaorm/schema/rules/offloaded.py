"""Values of any size (contract 24): ``Offloaded[T]`` fields of a table declaring
``offload="s3://BUCKET/PREFIX"`` keep a value above ``offload_threshold`` bytes in S3,
the row holding a reference to it.

**What is stored.** A value at most the threshold is stored in its row as any value is (a
save pays the size check, nothing else). A larger one is written to S3, as the rules
before left it (compressed, then sealed, where the field is ``Compressed`` or
``Encrypted``: the object holds what the row would have held), under a key of its own
(``PREFIX<table>/<128 random bits>``), and the row holds a *reference*, a map::

    {"dynaorm:offloaded": {"uri": "s3://BUCKET/KEY", "sha256": "...", "size": n, "tag": "S"}}

(``tag``: the DynamoDB type of the value the object holds: ``S`` its UTF-8 text, ``B``
its bytes, anything else its DynamoDB JSON). A stored value is told apart by its shape: a
map whose one member is ``dynaorm:offloaded`` is a reference; so an inline value of that
shape (a ``dict`` field holding it) is always offloaded, whatever its size, and never read
as something it is not.

**Where it runs.** Offloading is the outermost layer of a stored row, so this rule is a
*placing* rule (:meth:`~dynaorm.schema.rules.Rule.place`): the values are placed once the
commit's rows are all built (a version row from its latest copy, a move's new row), and
a reference is decoded back before any other rule decodes, whatever the rules' order; the
other rules prepare, encode and decode rows with the values put back. Its requests are
protocol steps (``Call("s3:PutObject", ..., service="s3")``) that the client sends as it
sends KMS's: retried by its policy, seen by hooks and spans, held to ``rate=``, awaited by
an ``AsyncSession``; this module does no I/O.

- **Write**: :meth:`Offloading.place` puts each large value's bytes beside its reference
  (a :class:`Held` reference, pending); :meth:`Offloading.publish` uploads them before
  the commit is sent (in parallel; a failure removes what it uploaded and raises
  :class:`~dynaorm.OffloadError`: nothing is sent). A retried request writes nothing
  twice: the upload belongs to the plan, not to the request's attempts; a commit planned
  again (a conflict read and planned anew) uploads under new keys and removes the old
  round's.
- **Release**: :meth:`Offloading.release`, once the outcome is known: applied, the objects
  of the rows it replaced or deleted that no row of the commit references any more are
  removed (never before: a failed commit keeps the old values); not applied, what it
  uploaded is removed. An unknown outcome removes nothing, not even what a fresh read of
  its rows does not reference (another writer may have moved a row, its objects with it,
  to a key the commit never names): ``dynaorm check`` reports an object no row
  references; ``--repair`` removes it.
- **Read**: :meth:`Offloading.prepare` fetches the referenced objects of the rows a read
  is about to decode (a page's in parallel, one GET each), checks each against its
  ``sha256`` and puts its bytes beside its reference (in the row: a loaded object keeps
  them, so its next save reads nothing again); :meth:`Offloading.decode` puts the values
  back. A missing object or other bytes raise :class:`~dynaorm.OffloadError`.

**Who references what.** Each row holds its own objects: a value unchanged by a save keeps
its reference (the row's own), a key move carries its references to the new row, a
version row gets an object of its own (one more upload), so replacing or deleting a row
never takes a value another row holds. A write that replaces or deletes a row conditions
on its references as read (:meth:`Offloading.holds`), so the objects it releases are
exactly those the row held; an update by key of an offloaded field, a delete by key and
an overwrite read the row first. Version rows deleted with their entity
(``delete(history=True)``) are read before the commit (they never change). Limits: an
item DynamoDB's TTL deletes, or an insert over an expired item, leaves its objects (``dynaorm
check`` reports them); ``save_many`` / ``delete_many`` refuse the entity (they condition
nothing).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple, TypeVar

from dynaorm._types import AttributeValue, Item, PlainKey
from dynaorm.errors import DynaormError, OffloadError, RequestError
from dynaorm.protocol.hooks import logger
from dynaorm.protocol.policy import MAX_CONCURRENCY
from dynaorm.protocol.steps import Call, gather
from dynaorm.schema.places import offload_location, rows_at
from dynaorm.schema.rules import (
    Declaration,
    Rule,
    Unplaced,
    refuse_stored,
    register,
)
from dynaorm.values.codec import binary_from_json
from dynaorm.values.keys import wire_key
from dynaorm.values.limits import value_size
from dynaorm.values.records import ConditionCheck, Delete, Op, Put, Role, Update
from dynaorm.values.tree import holding

T = TypeVar("T")
#: the metadata that marks a field offloaded (``Offloaded[T]`` is ``Annotated[T, OFFLOADED]``)
OFFLOADED = "dynaorm:offloaded"
Offloaded = Annotated[T, OFFLOADED]
"""A field annotated ``Offloaded[T]`` (any type the codec stores) keeps a value larger than
its table's ``offload_threshold`` in S3 (``Table(offload="s3://BUCKET/PREFIX")``), its row
holding a reference; read back as the value by every read."""
#: the one member of a stored reference's map
MARK = "dynaorm:offloaded"
#: the AWS service of the requests
S3 = "s3"
#: the keys one DeleteObjects request removes, at most
_DELETE_BATCH = 1000
#: the largest object one PutObject writes (5 GiB): no reference dynaorm wrote names more
_LARGEST = 5 << 30
#: the error codes S3 answers for an object (or bucket) that is not there
_GONE = frozenset({"NoSuchKey", "404", "NoSuchBucket", "NotFound"})
#: the roles of the rows that hold an entity's values
_ROWS = (Role.ROW, Role.LATEST, Role.VERSION)


class Held(dict[str, Any]):
    """A stored reference (its attribute value, a map) carrying the bytes of its object
    where they are at hand: ``pending``, about to be uploaded by the commit that placed
    it; else fetched by a read (or uploaded). It is the attribute value it stands for
    (a dict): requests, comparisons and sizes see only that; it pickles as a plain one."""

    __slots__ = ("body", "error", "pending")

    def __init__(self, av: Mapping[str, Any], body: bytes, pending: bool = False,
                 error: OffloadError | None = None):
        super().__init__(av)
        self.body = body
        self.pending = pending
        #: what reading its object found instead of its bytes (a missing object, other
        #: bytes): raised where the value is decoded
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)


class Reference(NamedTuple):
    """What a stored reference says: the object (``bucket``, ``key``), its bytes'
    SHA-256 (hex) and size, and the DynamoDB type of the value it holds."""

    bucket: str
    key: str
    sha256: str
    size: int
    tag: str

    @property
    def uri(self) -> str:
        """``s3://bucket/key``."""
        return f"s3://{self.bucket}/{self.key}"

    @property
    def location(self) -> str:
        """The ``offload=`` of the table that wrote the object (its key is
        ``PREFIX<table>/<random>``): ``s3://BUCKET/PREFIX``."""
        head = self.key.rsplit("/", 2)
        return f"s3://{self.bucket}/{head[0] + '/' if len(head) == 3 else ''}"

    @property
    def request(self) -> dict[str, str]:
        """The GetObject request of its object: one byte more than the reference names
        at most (an object replaced by a far larger body is never read whole, its digest
        differs)."""
        return {"Bucket": self.bucket, "Key": self.key,
                **({"Range": f"bytes=0-{self.size}"} if self.size > 0 else {})}

    def holds(self, body: Any) -> bool:
        """Whether ``body`` (an object's) is the bytes it names."""
        return isinstance(body, bytes | bytearray) and hashlib.sha256(
            body).hexdigest() == self.sha256


def reference(av: Any) -> Reference | None:
    """What the stored attribute value ``av`` references, when it is a reference (else
    ``None``; a map that only looks like one, malformed, is none either: a read of it
    raises, and ``dynaorm check`` names it)."""
    if type(av) is not dict and type(av) is not Held:
        return None
    inner = av.get("M")
    if type(inner) is not dict or len(inner) != 1 or MARK not in inner:
        return None
    try:
        m = inner[MARK]["M"]
        uri = m["uri"]["S"]
        bucket, _, key = uri[5:].partition("/") if uri.startswith("s3://") else ("", "", "")
        found = Reference(bucket, key, m["sha256"]["S"], int(m["size"]["N"]), m["tag"]["S"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return found if found.bucket and found.key else None


def fetched(av: Any, ref: Reference, body: bytes | Exception) -> Held:
    """``av`` (a reference to ``ref``) with its object's ``body`` beside it, as a read
    puts it in its row, or what was found instead (the error reading it gave, other
    bytes: raised where the value is decoded)."""
    if isinstance(body, OffloadError):
        return Held(av, b"", error=body)
    if not isinstance(body, Exception) and ref.holds(body):
        return Held(av, bytes(body))
    why = (f"cannot be read: {body}" if isinstance(body, Exception) else
           "does not hold the bytes its reference names (SHA-256 differs)")
    return Held(av, b"", error=OffloadError(f"the offloaded value {ref.uri} {why}",
                                            uri=ref.uri))


def held_value(av: Any) -> Any:
    """The value the stored attribute value ``av`` stands for where it is a reference
    (else ``av``): the one its object holds, where its bytes are at hand (a
    :class:`Held` read without error), else ``NULL`` (not known)."""
    ref = reference(av)
    if ref is None:
        return av
    if type(av) is Held and av.error is None:
        try:
            return _value(ref, av.body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            pass
    return {"NULL": True}


def _looks_like(av: Any) -> bool:
    """Whether ``av`` has the shape of a reference (a map whose one member is
    :data:`MARK`), whatever it holds."""
    inner = av.get("M") if type(av) is dict else None
    return type(inner) is dict and len(inner) == 1 and MARK in inner


def references(item: Mapping[str, Any], attrs: Iterable[str] | None = None
               ) -> dict[str, Reference]:
    """The references ``item`` holds, by attribute (of ``attrs`` only, when given)."""
    names = item.keys() if attrs is None else (a for a in attrs if a in item)
    return {a: ref for a in names if (ref := reference(item[a])) is not None}




def _body(av: AttributeValue) -> tuple[str, bytes]:
    """The tag and the bytes an object holds of ``av``: a string's UTF-8 text, a binary
    value's bytes, any other value's DynamoDB JSON (binary values as base64)."""
    if "S" in av:
        return "S", str(av["S"]).encode()
    if "B" in av:
        return "B", bytes(av["B"])
    text = json.dumps(av, separators=(",", ":"),
                      default=lambda b: base64.b64encode(bytes(b)).decode())
    return next(iter(av)), text.encode()


class Fetched(dict[str, Any]):
    """An attribute value read from the object at :attr:`uri`: a later rule that cannot
    read it (a decompression bomb) raises :class:`~dynaorm.OffloadError` naming that
    object (:func:`~dynaorm.errors.unreadable`)."""

    uri: str


def _value(ref: Reference, body: bytes) -> AttributeValue:
    """The attribute value an object's ``body`` holds (its reference's ``tag``)."""
    found = {"S": body.decode()} if ref.tag == "S" else {"B": body} if ref.tag == "B" else (
        binary_from_json(json.loads(body)))
    if not isinstance(found, dict) or list(found) != [ref.tag]:
        raise ValueError(f"not a value of type {ref.tag}")
    fetched = Fetched(found)
    fetched.uri = ref.uri
    return fetched


class Published(NamedTuple):
    """What a commit's :meth:`Offloading.publish` did: the objects it uploaded, those of
    the rows the commit replaces or deletes that none of its rows references after it
    (removed once it applied)."""

    uploaded: tuple[Reference, ...]
    dropped: tuple[Reference, ...]


def delete_objects(refs: Iterable[Reference], origins: tuple[Any, ...] = ()
                   ) -> Generator[Any, Any, list[str]]:
    """Remove the objects ``refs`` (DeleteObjects, a thousand a request, per bucket; a
    missing one is no failure), as protocol steps; returns the URIs S3 refused to
    remove."""
    by_bucket: dict[str, list[str]] = {}
    for ref in refs:
        by_bucket.setdefault(ref.bucket, []).append(ref.key)
    refused: list[str] = []
    for bucket, keys in by_bucket.items():
        keys = list(dict.fromkeys(keys))
        for at in range(0, len(keys), _DELETE_BATCH):
            out = yield Call("s3:DeleteObjects", {"Bucket": bucket, "Delete": {
                "Objects": [{"Key": k} for k in keys[at:at + _DELETE_BATCH]],
                "Quiet": True}}, origins, service=S3)
            refused += [f"s3://{bucket}/{e.get('Key')}" for e in out.get("Errors") or ()]
    return refused


@register
@dataclass(frozen=True, slots=True, eq=False)
class Offloading(Rule):
    """``Offloaded[T]`` fields: a value above the table's ``offload_threshold`` kept in
    S3 (see the module), read back on every read path, refused where a stored value must
    be compared."""

    #: stored attribute name -> field name, of every ``Offloaded`` field
    fields: Mapping[str, str]
    table: Any
    owner: str
    type_name: str
    entity: type[Any] | None = None
    name = "offloaded"
    order = 55  # (prepares before the unique rule, 60: its values are read with it)
    answers = {
        "save": "a value above offload_threshold is uploaded to S3 before the commit and "
                "the row holds a reference; an unchanged value keeps its reference; once "
                "the commit applied the objects it replaced are removed",
        "update": "set() of an offloaded field reads the row and is planned as a save; "
                  "add, append and conditions on it are refused before sending",
        "delete": "the row's objects (a versioned entity's version rows' with history=True) "
                  "are removed once the delete applied",
        "get": "a reference is fetched (one GET, checked against its SHA-256) and read as "
               "the value",
        "query": "filters naming it are refused; a page's references are fetched in "
                 "parallel",
        "values": "values() of an offloaded field are the value, fetched",
        "scan": "as query",
        "stream": "images are read with their references fetched (Change.new, Change.old)",
        "history": "each version row holds an object of its own: read back as the value",
        "migrate": "a moved row carries its references to its new key",
        "backfill": "fn sees the value; a changed value is uploaded anew, the old removed",
        "check": "reports objects no row references and references to no object "
                 "(--repair removes the former)",
        "export": "written as the value, fetched",
        "search": "a vector field cannot be Offloaded (refused at class definition)",
        "messages": "the value as any field's (a reference is never shown as the value)",
        "logs": "as messages",
        "spans": "as messages: no span attribute holds a value or a body",
    }

    @classmethod
    def build(cls, decl: Declaration) -> Offloading | None:
        marked = holding(decl.trees, OFFLOADED)
        if not marked:
            return None
        if decl.table.offload is None:
            raise DynaormError(f"{decl.owner}: Offloaded {sorted(marked)} need a table that "
                               "declares where values go: Table(..., offload='s3://BUCKET/"
                               "PREFIX')")
        decl.uncompared("Offloaded", marked, *(getattr(u, "field", u) for u in decl.meta.get(
            "unique", ()) or ()))
        return cls({decl.attr(n): n for n in marked}, decl.table, decl.owner, decl.type_name,
                   decl.cls)

    @property
    def names(self) -> frozenset[str]:
        """The ``Offloaded`` fields' names."""
        return frozenset(self.fields.values())

    def renamed(self, attributes: Mapping[str, str]) -> Offloading:
        """This rule for rows whose fields are stored under other attribute names
        (``attributes``: stored name -> field name; a previous layout's)."""
        return Offloading({a: n for a, n in attributes.items() if n in self.names},
                          self.table, self.owner, self.type_name, self.entity)

    # -- what a write may do ---------------------------------------------------------
    def refuse(self, use: str, name: str) -> None:
        if (field := self.fields.get(name, name)) in self.names:
            refuse_stored(self.owner, "Offloaded", field, use,
                          "its stored value may be a reference")

    def reads(self, touched: frozenset[str]) -> bool:
        """An update by key is read first (planned as a save) when it sets an offloaded
        field: the reference it replaces is the stored row's."""
        return not touched.isdisjoint(self.names)

    def holds(self) -> frozenset[str]:
        return frozenset(self.fields)

    # -- reading ---------------------------------------------------------------------
    def prepare(self, items: tuple[Item, ...], writing: bool,
                values: Any = None) -> Generator[Any, Any, None]:
        """The objects the references of ``items``' offloaded attributes name (those not
        at hand; a previous layout's rows are read by its rule, :meth:`renamed`), fetched
        in parallel and checked, their bytes put beside their references in the rows. A
        map of a reference's shape in another attribute is a value: nothing is fetched."""
        wanted = []
        for item in items:
            for a in self.fields:  # (a Held one is at hand)
                av = item.get(a)
                if type(av) is dict and "M" in av and (ref := reference(av)) is not None:
                    wanted.append((item, a, ref))
        if not wanted:
            return
        origins = () if self.entity is None else (self.entity,)
        bodies = yield from gather([self._get(ref, origins) for _, _, ref in wanted],
                                   MAX_CONCURRENCY)
        for (item, attr, ref), body in zip(wanted, bodies, strict=True):
            item[attr] = fetched(item[attr], ref, body)

    def _get(self, ref: Reference, origins: tuple[Any, ...]
             ) -> Generator[Any, Any, Any]:
        """The bytes of ``ref``'s object (:func:`fetched` checks them); what was found
        instead (a missing object, one too large: raised where the value is decoded, named
        there by the field's entity, so that a read of other fields, or ``dynaorm
        check``, goes on); a request that failed after its retries raises."""
        if ref.size > _LARGEST:
            return OffloadError(f"the offloaded value {ref.uri} is named {ref.size} bytes "
                                "long, larger than any object one PutObject writes: not read",
                                uri=ref.uri)
        try:
            out = yield Call("s3:GetObject", ref.request, origins, service=S3)
        except RequestError as exc:
            if exc.code not in _GONE:
                raise OffloadError(f"{self.owner}: the offloaded value {ref.uri} cannot be "
                                   f"read: {exc}", uri=ref.uri) from exc
            return OffloadError(f"the offloaded value {ref.uri} is missing (a dangling "
                                f"reference): {exc}; its row is still replaced by a save "
                                "with overwrite=True, or deleted (neither reads the value)",
                                uri=ref.uri)
        return out.get("Body")

    def decode(self, item: Item) -> Item:
        attrs = self.fields.keys() & item.keys()
        for attr in attrs:  # (a reference, or a map of its shape: a Held one is too)
            if "M" in item[attr]:
                break
        else:
            return item
        out = dict(item)
        for attr in attrs:
            av = item[attr]
            ref = reference(av)
            if ref is None:
                if _looks_like(av):
                    raise OffloadError(f"{self.owner}.{self.fields[attr]}: a malformed "
                                       f"reference to an offloaded value: {av!r:.200}")
                continue
            if type(av) is not Held:
                raise Unplaced(f"{self.owner}.{self.fields[attr]}: the offloaded value "
                               f"{ref.uri} was not fetched (a read prepares its rows first)")
            if av.error is not None:
                raise OffloadError(f"{self.owner}.{self.fields[attr]}: {av.error}",
                                   uri=ref.uri)
            try:
                out[attr] = _value(ref, av.body)
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                raise OffloadError(f"{self.owner}.{self.fields[attr]}: the object {ref.uri} "
                                   f"does not hold a value of type {ref.tag}: {exc}",
                                   uri=ref.uri) from exc
        return out

    # -- writing ---------------------------------------------------------------------
    def encode(self, item: Item, key: PlainKey, stored: Item | None) -> None:
        """A value the row ``stored`` (as loaded, its references as stored) holds
        offloaded with the same bytes keeps that reference: a save that leaves it alone
        writes nothing of it, and uploads nothing."""
        if stored is None:
            return
        for attr in self.fields.keys() & item.keys():
            old = stored.get(attr)
            if type(old) is not Held or "NULL" in (av := item[attr]) or type(av) is Held:
                continue  # (a reference without its bytes at hand: the value is uploaded)
            ref = reference(old)
            if ref is None:
                continue
            tag, body = _body(av)
            if ref.tag == tag and ref.size == len(body) and hashlib.sha256(
                    body).hexdigest() == ref.sha256:
                item[attr] = old

    def place(self, ops: Sequence[Op], known: Callable[[PlainKey], Item | None]
              ) -> list[Op]:
        """``ops`` (the plan's records of the entity) with every value above the
        threshold replaced by a reference: the one the row held, where it holds the same
        bytes, else a new one (pending: :meth:`publish` uploads it). Each row holds its
        own objects: a reference a row keeps must be one that a row the write read (and
        conditions on) held, its own or one its write deletes (a key move carries its
        objects to the new row); any other (a version row's copy of its latest copy's, a
        reference loaded before another writer replaced it) gets an object of its own."""
        read: dict[int, set[str]] = {}
        for op in ops:
            row = known(op.key) if op.origin.role in _ROWS else None
            if row is not None:
                read.setdefault(op.origin.staged, set()).update(
                    r.uri for r in references(row, self.fields).values())
        held: set[str] = set()  # (references a row of the plan keeps: held once)
        out: list[Op] = []
        for op in ops:
            if op.origin.role not in _ROWS or isinstance(op, Delete | ConditionCheck):
                out.append(op)
                continue
            own = read.get(op.origin.staged, set())
            if isinstance(op, Put):
                item = self._placed(op.item, own, held)
                out.append(op if item is op.item else Put(op.key, item, op.condition,
                                                          op.origin, op.built))
            elif op.set:
                item = self._placed(op.set, own, held)
                out.append(op if item is op.set else Update(
                    op.key, item, op.remove, op.condition, op.origin, op.clauses, op.known,
                    op.members))
            else:
                out.append(op)
        return out

    def _placed(self, item: Item, own: set[str], held: set[str]) -> Item:
        """``item`` with its large values placed (see :meth:`place`): ``own``, the
        references its write read; ``held``, those rows placed before keep."""
        threshold = self.table.offload_threshold
        changed = {}
        for attr in self.fields.keys() & item.keys():
            av = item[attr]
            ref = reference(av)
            if ref is not None and (type(av) is Held or ref.uri in own):
                if type(av) is Held and av.pending:
                    continue  # (placed for this plan)
                if ref.uri in own and ref.uri not in held:
                    held.add(ref.uri)  # (the row's own, or its move's)
                    continue
                if type(av) is Held:  # (another row's: a copy of its own)
                    if av.error is not None:
                        raise OffloadError(f"{self.owner}.{self.fields[attr]}: {av.error}",
                                           uri=ref.uri)
                    changed[attr] = self._new(ref.tag, av.body, ref.sha256)
                    continue
            # (a value: a plain reference no row of the write read is a value of that
            # shape, which is offloaded whatever its size)
            if "NULL" in av or (value_size(av) <= threshold and not _looks_like(av)):
                continue
            tag, body = _body(av)
            changed[attr] = self._new(tag, body, hashlib.sha256(body).hexdigest())
        return {**item, **changed} if changed else item

    def _new(self, tag: str, body: bytes, sha: str) -> Held:
        """A new reference to an object about to hold ``body`` (pending)."""
        assert self.table.offload is not None
        bucket, prefix = offload_location(self.table.offload)
        ref = Reference(bucket, f"{prefix}{self.table.name}/{os.urandom(16).hex()}", sha,
                        len(body), tag)
        return Held({"M": {MARK: {"M": {"uri": {"S": ref.uri}, "sha256": {"S": ref.sha256},
                                        "size": {"N": str(ref.size)}, "tag": {"S": ref.tag}}}}},
                    body, pending=True)

    def publish(self, ops: Sequence[Op], known: Callable[[PlainKey], Item | None]
                ) -> Generator[Any, Any, Published]:
        """Upload the objects ``ops`` placed (in parallel), and say which objects the
        rows it replaces or deletes hold that none of its rows references after it (the
        version rows a delete takes with it are read first: they never change)."""
        origins = () if self.entity is None else (self.entity,)
        before, after, unread = self._rows_of(ops, known)
        if unread:
            for row in (yield from rows_at(self.table.name, list(map(wire_key, unread)),
                                           origins)):
                before.update((r.uri, r) for r in references(row, self.fields).values())
        pending = {ref.uri: (ref, held) for ref, held in after.values() if held is not None}
        uploaded: list[Reference] = []
        try:
            yield from gather([self._put(ref, held, origins, uploaded)
                               for ref, held in pending.values()], MAX_CONCURRENCY)
        except BaseException as exc:
            if isinstance(exc, Exception):  # (closed or cancelled: nothing more is sent)
                yield from self._removed(uploaded, origins, "a failed upload's")
            raise
        return Published(tuple(uploaded), tuple(r for u, r in before.items() if u not in after))

    def _rows_of(self, ops: Sequence[Op], known: Callable[[PlainKey], Item | None]
                 ) -> tuple[dict[str, Reference], dict[str, tuple[Reference, Held | None]],
                            list[PlainKey]]:
        """The references the rows ``ops`` write held before (as the plan read them) and
        hold after (each with its pending object, if any), and the keys of the rows they
        delete that the plan did not read."""
        before: dict[str, Reference] = {}
        after: dict[str, tuple[Reference, Held | None]] = {}
        unread: list[PlainKey] = []
        for op in ops:
            if op.origin.role not in _ROWS:
                continue
            stored = known(op.key)
            if stored is None and isinstance(op, Delete | Update):
                stored = op.known
            if stored is None and isinstance(op, Delete):
                unread.append(op.key)
            before.update((r.uri, r) for r in references(stored or {}, self.fields).values())
            for attr, ref in references(_after(op, stored), self.fields).items():
                av = op.item[attr] if isinstance(op, Put) else None
                av = op.set.get(attr, av) if isinstance(op, Update) else av
                after[ref.uri] = (ref, av if type(av) is Held and av.pending else None)
        return before, after, unread

    def _put(self, ref: Reference, held: Held, origins: tuple[Any, ...],
             uploaded: list[Reference]) -> Generator[Any, Any, None]:
        try:
            yield Call("s3:PutObject", {"Bucket": ref.bucket, "Key": ref.key,
                                        "Body": held.body,
                                        "ContentType": "application/octet-stream"},
                       origins, service=S3)
        except RequestError as exc:
            raise OffloadError(f"{self.owner}: uploading an offloaded value to {ref.uri} "
                               f"failed: {exc}; nothing of the commit was sent",
                               uri=ref.uri) from exc
        held.pending = False
        uploaded.append(ref)

    def release(self, published: Any, applied: bool | None) -> Generator[Any, Any, None]:
        """Applied: the objects the commit's rows no longer reference go; not applied:
        what it uploaded goes; unknown: nothing goes. A fresh read of the commit's own
        rows cannot prove an object unreferenced: another writer inside the window may
        have moved a row (its objects with it) to a key the commit never names; what is
        left is an orphan ``dynaorm check`` reports and ``--repair`` removes."""
        assert isinstance(published, Published)
        if applied is None:
            return
        origins = () if self.entity is None else (self.entity,)
        refs = published.dropped if applied else published.uploaded
        if refs:
            yield from self._removed(refs, origins, "a replaced value's" if applied
                                     else "an unapplied commit's")

    def _removed(self, refs: Iterable[Reference], origins: tuple[Any, ...], what: str
                 ) -> Generator[Any, Any, None]:
        """Remove ``refs``' objects; a failure is logged (``dynaorm check`` finds what is
        left), never raised. Only this table's own objects (right under its ``offload``
        prefix and its name: deeper is another table's, its prefix under this one's) are
        ever removed: a reference to any other (a row of a table restored
        from a backup under another name names the original's; a row another tool wrote)
        may be another table's row's too."""
        assert self.table.offload is not None
        bucket, prefix = offload_location(self.table.offload)
        mine = f"s3://{bucket}/{prefix}{self.table.name}/"
        refs = [r for r in refs if r.uri.startswith(mine) and "/" not in r.uri[len(mine):]]
        if not refs:
            return
        try:
            refused = yield from delete_objects(refs, origins)
        except RequestError as exc:
            refused = [f"{exc}"]
        if refused:
            logger().warning("%s: %s objects were not removed (dynaorm check --repair "
                             "removes them): %s", self.owner, what, refused[:5])


def _after(op: Op, stored: Item | None) -> Item:
    """The row ``op`` leaves (``stored``: the row before it, where known)."""
    if isinstance(op, Put):
        return op.item
    if not isinstance(op, Update):
        return {}
    now = {**(stored or {}), **op.set}
    for attr in op.remove:
        now.pop(attr, None)
    return now
