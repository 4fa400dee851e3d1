"""What a rule of your own imports, in one place (``from dynaorm.rules import ...``).

A rule (:class:`Rule`, registered with :func:`register_rule`) that adds rows to a write
answers :meth:`Rule.rows` with the :class:`Rows` it adds to a :class:`Change` (the rule's
change: one write of the entity, not ``dynaorm.Change``, a stream's change), as write
records (:class:`Put`, :class:`Delete`, :class:`ConditionCheck`), each with the origin
:meth:`Change.origin` gives it: the :class:`Role` of the row and the :class:`Fail` its
failed condition means. :meth:`Rule.build` reads a :class:`Declaration`; a described
write's values are :class:`Shape` s; :meth:`Rule.explain` answers an :class:`Explained`.

A rule that reads before a write of its entity is planned answers
:meth:`Rule.prepare_write` (the versioned rule: the last version kept at a new object's
key): a generator that yields each read as data, a step made by :func:`call` (``out =
yield from call("Query", request, (change.entity,))``), which the sync or async client
sends and answers, and returns what it found; the commit plans the write on it.

A rule that keeps values outside the table (a placing rule, as ``Offloaded`` is) answers
:meth:`Rule.place`, :meth:`Rule.holds`, :meth:`Rule.publish` and :meth:`Rule.release`
with the same records (and :class:`Update`); its ``decode`` raises :class:`Unplaced` for
a value not at hand. See docs/guide/rules.md.
"""

from dynaorm.protocol.steps import call
from dynaorm.schema.rules import (
    NO_ROWS,
    Change,
    Declaration,
    Explained,
    Rows,
    Rule,
    Shape,
    Unplaced,
    register_rule,
)
from dynaorm.values.records import ConditionCheck, Delete, Fail, Origin, Put, Role, Update

__all__ = ["NO_ROWS", "Change", "ConditionCheck", "Declaration", "Delete", "Explained",
           "Fail", "Origin", "Put", "Role", "Rows", "Rule", "Shape", "Unplaced", "Update",
           "call", "register_rule"]
