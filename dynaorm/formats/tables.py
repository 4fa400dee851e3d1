"""What the infrastructure formats (CloudFormation, Terraform) and the IAM policy share: a
table's key attributes with their types, each index's key schema and projection, and the
notes for what a format cannot hold, all read from the model's plain data
(``table.model()["table"]``)."""

import re
from collections.abc import Mapping
from typing import Any


def attribute_types(table: Mapping[str, Any], *, search: bool = False
                    ) -> dict[str, str]:
    """Every key attribute of the table and of its secondary indexes, sorted, with its type
    (``S`` unless ``key_types`` says); ``search``: the attributes of the vector indexes'
    search schemas too (CreateTable's and CloudFormation's definitions hold them)."""
    names = {table["pk"], *([table["sk"]] if table.get("sk") else [])}
    for index in table.get("indexes", ()):
        if index["kind"] == "gsi":
            names.update(index["pk"], index["sk"])
        elif index["kind"] == "lsi":
            names.update(index["sk"])
        elif index["kind"] == "vector" and search:
            names.update(search_schema(index))
    types = table.get("key_types") or {}
    return {name: types.get(name, "S") for name in sorted(names)}


def key_schema(index: Mapping[str, Any], table: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(attribute, ``HASH`` / ``RANGE``) of the table (``index`` ``{}``) or of one of its
    GSIs and LSIs, in order (a native index's attributes each)."""
    if not index:
        pk, sk = [table["pk"]], [table["sk"]] if table.get("sk") else []
    elif index["kind"] == "lsi":
        pk, sk = [table["pk"]], list(index["sk"])
    else:
        pk, sk = list(index["pk"]), list(index["sk"])
    return [(a, "HASH") for a in pk] + [(a, "RANGE") for a in sk]


def projection(index: Mapping[str, Any], table: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(``ALL`` / ``KEYS_ONLY`` / ``INCLUDE``, the included attributes): an ``INCLUDE``
    projection carries the type attribute and the TTL too, as ``create()`` makes it."""
    found = index["projection"]
    if isinstance(found, str):
        return found, []
    carried = [a for a in (table.get("type_attribute"), table.get("ttl")) if a]
    return "INCLUDE", [*found, *(a for a in carried if a not in found)]


def logical_name(name: str) -> str:
    """A table name as an identifier of the template (``my-app.v2`` -> ``MyAppV2``), short
    enough that the outputs named after it (``...StreamArn``) keep CloudFormation's 255."""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    found = "".join(w[:1].upper() + w[1:] for w in words)
    return (found if found[:1].isalpha() else f"T{found}")[:255 - len("StreamArn")]


def search_schema(index: Mapping[str, Any]) -> dict[str, str]:
    """A vector index's search schema: each attribute and its role (``HASH``: the
    partition, then each ``INLINE_FILTER``), in order."""
    found = {index["partition"]: "HASH"} if index.get("partition") else {}
    return found | {name: "INLINE_FILTER" for name in index.get("filters") or ()}


def vector_notes(table: Mapping[str, Any]) -> list[str]:
    """One note per vector index Terraform has no place for (it is left out)."""
    return [f"Terraform has no vector index: {i['name']!r} (on {i['attribute']!r}, "
            f"{i['dimensions']} dimensions) left out; create() adds it"
            for i in table.get("indexes", ()) if i["kind"] == "vector"]
