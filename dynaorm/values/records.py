"""The write records a plan is made of (pure data): a :class:`Put`, an :class:`Update`, a
:class:`Delete` or a :class:`ConditionCheck`, each with the :class:`Origin` that says why it
is there (which entity, which object, which :class:`Role` of row, and what a failed
condition on it means, :class:`Fail`). Rules (:mod:`dynaorm.schema.rules`) add rows as these
records; the planner (:mod:`dynaorm.write`) collects and renders them.
"""

import enum
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dynaorm._types import AttributeValue, Item, PlainKey
from dynaorm.values.expressions import Condition

#: one action of an update expression: ``(clause, attribute, value)`` (``SET``,
#: ``DEFAULT``, ``APPEND``, ``PREPEND``, ``ADD``, ``DELETE``; ``REMOVE`` without a value)
Clause = tuple[str, str, AttributeValue | None]
#: a write of one member of a stored map: its document path (the attribute, then each map
#: key, never split on dots) and its value (``None``: the member is removed)
Member = tuple[tuple[str, ...], AttributeValue | None]


class Role(enum.Enum):
    """Which item of an entity an action writes."""

    ROW = "row"
    GUARD = "unique guard"
    VERSION = "version row"
    LATEST = "latest copy"
    RECEIPT = "receipt"


class Fail(enum.Enum):
    """What a failed condition on an action means."""

    EXISTS = "exists"          # the item is already there -> ItemExistsError
    UNIQUE = "unique"          # a guard is taken -> UniqueConstraintError
    CONCURRENT = "concurrent"  # stored values moved -> ConcurrentModificationError
    GONE = "gone"              # item gone (ItemGoneError) or changed (Concurrent...)
    MISSING = "missing"        # by key, never read: absent -> ItemNotFoundError (no conflict)
    CALLER = "caller"          # only the caller's condition -> ConditionFailedError


class Origin(NamedTuple):
    """Why an action is in the plan: which entity and object, which role."""

    entity: type[Any]
    owner_key: PlainKey
    role: Role
    fail: Fail
    field: str | None = None
    value: Any = None
    staged: int = 0  # index of the staged entry that produced it
    #: the caller's own condition (``condition=``, ``where``), ANDed into the action's:
    #: the stored item returned on failure tells whose condition failed
    caller: Condition | None = None

    @property
    def table(self) -> Any:
        """The table the action writes to: its entity's (guards and version rows live
        beside their owner; a receipt kept in its client's receipts table says otherwise:
        :func:`~dynaorm.schema.rules.receipts.origin_in`)."""
        return self.entity.__dynaorm_spec__.table


class Built(NamedTuple):
    """A row's action as its rule built it (a receipt: dynaorm's own row, its values known
    good and checked by the rule): its request body, as rendering its :class:`Put` makes
    it, and the bytes it adds to a request, as the gate counts them."""

    body: dict[str, Any]
    size: int


@dataclass(frozen=True, slots=True)
class Put:
    """Write a whole item (PutItem)."""

    key: PlainKey
    item: Item
    condition: Condition | None
    origin: Origin
    #: its body and size built by its rule (``None``: rendered and checked from the fields
    #: above); a built Put is never replaced (``dataclasses.replace`` would keep it)
    built: Built | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Update:
    """Change some attributes of an item (UpdateItem)."""

    key: PlainKey
    set: Item
    remove: tuple[str, ...]
    condition: Condition | None
    origin: Origin
    #: an update expression built by ``s.update()`` (see :mod:`dynaorm.write.updates`); when
    #: given it replaces ``set``/``remove``: ``(clause, attribute, value)`` in call order
    clauses: tuple[Clause, ...] = ()
    #: the stored item the update applies to, when known (a loaded object's snapshot):
    #: the item it makes must fit in 400 KB too
    known: Item | None = field(default=None, compare=False)
    #: members of stored maps a save writes by their paths (beside ``set``/``remove``: a
    #: change to one member of a map writes that member, see :mod:`dynaorm.values.merge`)
    members: tuple[Member, ...] = ()


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete an item (DeleteItem)."""

    key: PlainKey
    condition: Condition | None
    origin: Origin
    #: the item it deletes as its rule knows it without a read (a released guard's, as
    #: priced: without the TTL it may carry), for what the delete costs
    known: Item | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class ConditionCheck:
    """Require a condition on an item, writing nothing."""

    key: PlainKey
    condition: Condition
    origin: Origin


Op = Put | Update | Delete | ConditionCheck
