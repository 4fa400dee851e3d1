"""Rules a user writes: value transforms of text fields, built only from dynaorm's public
surface (:class:`dynaorm.Rule`, :func:`dynaorm.register_rule`) and registered on import.

- ``reversed`` (marker :data:`REVERSED`): the text stored reversed; the interaction
  matrix runs it (tests/support/rule_matrix.py: the ``motto`` field).
- two pairs of transforms that do not commute (reverse, base64), registered in both
  orders, for ``tests/integration/test_compressed.py``'s two transforms on one field:
  :data:`FIRST_PAIR` (``rev1`` then ``b64_1``: stored ``base64(reverse(text))``) and
  :data:`SECOND_PAIR` (``b64_2`` then ``rev2``: stored ``reverse(base64(text))``). Decoded
  in the order they encode, neither reads back.
- ``tests-audit`` (:class:`AuditRows`): a rule that adds rows, an audit row beside every
  write, registered only while :func:`audited_entities` defines its two entities.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Mapping
from typing import Any

from dynaorm import DynaormError, Rule, register_rule

__all__ = ["AUDIT_TYPE", "B64_1", "B64_2", "FIRST_PAIR", "REV1", "REV2", "REVERSED",
           "REVERSING", "SECOND_PAIR", "AuditRows", "audited_entities", "b64", "text_rule",
           "unb64"]

REVERSED = "tests:reversed"
REV1, B64_1, REV2, B64_2 = "tests:rev1", "tests:b64_1", "tests:rev2", "tests:b64_2"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def unb64(text: str) -> str:
    return base64.b64decode(text.encode(), validate=True).decode()


def _reverse(text: str) -> str:
    return text[::-1]


def text_rule(rule_name: str, marker: str, forward: Callable[[str], str],
              backward: Callable[[str], str]) -> type[Rule]:
    """A registered rule storing each text field marked ``marker`` as ``forward(text)``
    and reading it back with ``backward``."""

    class TextRule(Rule):
        __slots__ = ("fields", "owner")
        name = rule_name
        answers: Mapping[str, str] = {
            "save": f"a {marker} field is stored transformed",
            "update": "set() is transformed as a save is; other actions and conditions "
                      "are refused",
            "delete": "nothing of its own", "get": "read back as written",
            "query": "filters naming it are refused; results read back",
            "values": "the plain text", "scan": "as query", "stream": "images read back",
            "history": "version rows read back", "migrate": "moved as stored",
            "backfill": "fn sees the plain text", "check": "nothing of its own",
            "export": "the plain text", "search": "nothing of its own",
            "messages": "the plain text", "logs": "as messages", "spans": "as messages",
        }

        def __init__(self, fields: Mapping[str, str], owner: str) -> None:
            self.fields = fields  # stored attribute -> field name
            self.owner = owner

        @classmethod
        def build(cls, decl: Any) -> Rule | None:
            fields = {decl.attr(n): n for n, info in decl.cls.model_fields.items()
                      if marker in info.metadata}
            return cls(fields, decl.owner) if fields else None

        def encode(self, item: dict[str, Any], key: Mapping[str, Any],
                   stored: Mapping[str, Any] | None) -> None:
            for attr in self.fields.keys() & item.keys():
                if "S" in item[attr]:
                    item[attr] = {"S": forward(item[attr]["S"])}

        def decode(self, item: dict[str, Any]) -> dict[str, Any]:
            return {a: {"S": backward(v["S"])} if a in self.fields and "S" in v else v
                    for a, v in item.items()}

        def refuse(self, use: str, name: str) -> None:
            if name in self.fields.values() and use not in ("set", "remove", "projection"):
                raise DynaormError(f"{self.owner}.{name}: {rule_name} cannot be in {use}")

    TextRule.__name__ = TextRule.__qualname__ = f"TextRule_{rule_name}"
    return register_rule(TextRule)


REVERSING = text_rule("reversed", REVERSED, _reverse, _reverse)
#: registered in this order: reverse, then base64 (same ``order``: registration decides)
FIRST_PAIR = (text_rule("rev1", REV1, _reverse, _reverse), text_rule("b64_1", B64_1, b64, unb64))
#: registered in the other order: base64, then reverse
SECOND_PAIR = (text_rule("b64_2", B64_2, b64, unb64), text_rule("rev2", REV2, _reverse, _reverse))


# -- a rule that adds rows: an audit row beside every write (docs/guide/rules.md) ----------
#: the type name of an audit row of a ``Meta.audited = "typed"`` entity
AUDIT_TYPE = "tests:audit"


class AuditRows(Rule):
    """``Meta.audited``: one audit row per write of the entity (``AUDIT#<its pk>`` /
    ``<insert|update|delete>#<place in the commit>``), carrying :data:`AUDIT_TYPE` in the
    table's type attribute with ``"typed"`` (as ``examples/audit_rule.py`` writes them),
    none with ``"untyped"`` (as the rules guide's shortened rule does). Registered only
    while :func:`audited_entities` defines its entities."""

    __slots__ = ("pk", "sk", "type_attr")
    name = "tests-audit"
    options = ("audited",)
    order = 90
    transforms = False
    answers: Mapping[str, str] = {s: "an audit row beside each write" for s in (
        "save", "update", "delete", "get", "query", "values", "scan", "stream", "history",
        "migrate", "backfill", "check", "export", "search", "messages", "logs", "spans")}

    def __init__(self, pk: str, sk: str | None, type_attr: str | None) -> None:
        self.pk, self.sk, self.type_attr = pk, sk, type_attr

    @classmethod
    def build(cls, decl: Any) -> AuditRows | None:
        audited = decl.meta.get("audited")
        if not audited:
            return None
        typed = decl.table.type_attribute if audited == "typed" else None
        return cls(decl.table.pk, decl.table.sk, typed)

    def rows(self, change: Any) -> Any:
        from dynaorm.rules import Fail, Put, Role, Rows

        key = change.new_key or change.old_key
        what = ("delete" if change.new is None else "insert" if change.old is None
                else "update")
        at = {self.pk: f"AUDIT#{key[self.pk]}"}
        if self.sk is not None:
            at[self.sk] = f"{what}#{change.staged}"
        item: dict[str, Any] = {a: {"S": v} for a, v in at.items()}
        if self.type_attr is not None:
            item[self.type_attr] = {"S": AUDIT_TYPE}
        return Rows(after=(Put(at, item, None, change.origin(Role.ROW, Fail.CALLER,
                                                             owner=at)),))


@functools.cache
def audited_entities() -> tuple[type[Any], type[Any]]:
    """Two entities of ``tests.support.models.app`` whose writes carry an audit row
    (:class:`AuditRows`): ``AuditedOrder`` (typed audit rows) and ``AuditedTicket``
    (untyped ones), defined once while the rule is registered."""
    from dynaorm import Entity
    from dynaorm.schema.rules import RULES
    from tests.support.models import app

    register_rule(AuditRows)
    try:
        class AuditedOrder(Entity):
            class Meta:
                table = app
                pk = "AORDER#{order_id}"
                sk = "AORDER"
                audited = "typed"

            order_id: str
            total: int = 0

        class AuditedTicket(Entity):
            class Meta:
                table = app
                pk = "ATICKET#{ticket_id}"
                sk = "ATICKET"
                audited = "untyped"

            ticket_id: str
            status: str = "open"
    finally:
        RULES.pop(AuditRows.name, None)
    return AuditedOrder, AuditedTicket
