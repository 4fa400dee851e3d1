"""Rules a user writes: value transforms of text fields, built only from dynaorm's public
surface (:class:`dynaorm.Rule`, :func:`dynaorm.register_rule`) and registered on import.

- ``reversed`` (marker :data:`REVERSED`): the text stored reversed; the interaction
  matrix runs it (tests/support/rule_matrix.py: the ``motto`` field).
- two pairs of transforms that do not commute (reverse, base64), registered in both
  orders, for ``tests/integration/test_compressed.py``'s two transforms on one field:
  :data:`FIRST_PAIR` (``rev1`` then ``b64_1``: stored ``base64(reverse(text))``) and
  :data:`SECOND_PAIR` (``b64_2`` then ``rev2``: stored ``reverse(base64(text))``). Decoded
  in the order they encode, neither reads back.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from dynaorm import DynaormError, Rule, register_rule

__all__ = ["B64_1", "B64_2", "FIRST_PAIR", "REV1", "REV2", "REVERSED", "REVERSING",
           "SECOND_PAIR", "b64", "text_rule", "unb64"]

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
