"""A rule of your own, in one module: fields marked ``Compressed`` are stored
zlib-compressed (DynamoDB binary) and read back as text. The rule answers at the hook
points every built-in feature uses (``encode`` on every row written, ``decode`` on every
row read, ``refuse`` where a compressed value cannot be compared, ``redact`` in messages)
and says what it means on every surface; nothing else in dynaorm changes.

Run: ``python examples/compressed_rule.py [--endpoint-url URL]``
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from _support import run

from dynaorm import DynaormError, Entity, F, Table
from dynaorm._types import Item, PlainKey
from dynaorm.schema.rules import SURFACES, Declaration, Rule, register

T = TypeVar("T")
#: the marker of a compressed field: ``body: Compressed[str]``
COMPRESSED = "example:compressed"
Compressed = Annotated[T, COMPRESSED]


@register
class Compression(Rule):
    """``Compressed[str]`` fields, stored as zlib-compressed bytes."""

    __slots__ = ("fields",)
    name = "compressed"
    order = 90  # (after the built-in rules: encryption, if any, sees the compressed bytes)
    answers = {
        **{surface: "read and written as text; stored compressed" for surface in SURFACES},
        "update": "refused: an update cannot compress (save the object)",
        "query": "filters naming it are refused; results are decompressed",
        "scan": "filters naming it are refused; results are decompressed",
        "export": "written as text",
        "messages": "shown as <compressed>",
    }

    def __init__(self, fields: Mapping[str, str]) -> None:
        self.fields = fields  # stored attribute -> field name

    @classmethod
    def build(cls, decl: Declaration) -> Compression | None:
        fields = {decl.attr(n): n for n, info in decl.cls.model_fields.items()
                  if COMPRESSED in info.metadata}
        return cls(fields) if fields else None

    def encode(self, item: Item, key: PlainKey, stored: Item | None) -> None:
        for attr in self.fields.keys() & item.keys():
            if "S" in item[attr]:
                item[attr] = {"B": zlib.compress(item[attr]["S"].encode())}

    def decode(self, item: Item) -> Item:
        return {a: {"S": zlib.decompress(bytes(v["B"])).decode()}
                if a in self.fields and "B" in v else v for a, v in item.items()}

    def refuse(self, use: str, name: str) -> None:
        if name in self.fields.values() and use != "projection":
            raise DynaormError(f"Compressed {name!r} cannot be in {use!r}")

    def redact(self, name: str, value: Any) -> Any:
        return "<compressed>" if name in self.fields.values() else value


wiki = Table("dynaorm-example-compressed")


class Article(Entity):
    class Meta:
        table = wiki
        pk = "ARTICLE#{slug}"
        sk = "ARTICLE"

    slug: str
    title: str
    body: Compressed[str]


def main() -> None:
    with run(wiki, "a rule of your own: compressed fields") as db:
        s = db.session()
        text = "DynamoDB " * 500
        s.save(Article(slug="intro", title="Intro", body=text))
        s.commit()
        raw = next(i for i in db.scan_raw() if i["pk"]["S"] == "ARTICLE#intro")
        print(f"stored body: {sorted(raw['body'])[0]}, {len(raw['body']['B'])} bytes "
              f"for {len(text)} characters")
        got = s.get(Article, slug="intro")
        assert got is not None
        print("read back equal:", got.body == text)
        print("values():", s.query(Article, slug="intro").values("body")[0]["body"] == text)
        try:
            s.scan(Article).filter(F("body") == text).all()
        except DynaormError as exc:
            print("filter refused:", exc)


if __name__ == "__main__":
    main()
