"""Entities with vectors for the vector search tests (``tests/unit/test_vectors.py``,
``tests/integration/test_vectors.py``): one table whose three vector indexes read one
attribute with each distance function (a partitioned, filtered ``ALL`` index, a plain one,
and a ``KEYS_ONLY`` one), shared by several entity types, a versioned one and one with a
unique attribute among them; and a table of three partitioned indexes for the model-based
search test."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated

from dynaorm import (
    Encrypted,
    Entity,
    Previous,
    StaticKeyring,
    Table,
    Unique,
    Vector,
    VectorIndex,
    Versioned,
)

__all__ = ["Account", "Doc", "Memo", "Note", "Page", "Point", "docs", "f32", "model_score",
           "space"]

DIMS = 4

docs = Table("vector_docs", ttl="expires", key_types={"year": "N"},
             keyring=StaticKeyring(b"v" * 32), vector_indexes=[
                 VectorIndex("by_meaning", attribute="embedding", dimensions=DIMS,
                             distance="COSINE", partition="tenant_id",
                             filters=("category", "year")),
                 VectorIndex("by_distance", attribute="embedding", dimensions=DIMS,
                             distance="EUCLIDEAN"),
                 VectorIndex("by_dot", attribute="embedding", dimensions=DIMS,
                             distance="DOT_PRODUCT", projection="KEYS_ONLY")])


class Doc(Entity):
    class Meta:
        table = docs
        pk = "DOC#{doc_id}"
        sk = "DOC"

    doc_id: str
    tenant_id: str
    category: str
    year: int
    title: str = ""
    secret: Encrypted[str] | None = None
    expires: datetime | None = None
    embedding: Annotated[list[float], Vector(DIMS)]


class Note(Entity):
    """Another type in the same indexes."""

    class Meta:
        table = docs
        pk = "NOTE#{note_id}"
        sk = "NOTE"

    note_id: str
    tenant_id: str
    category: str = "note"
    year: int = 2026
    embedding: Annotated[list[float], Vector(DIMS)]


class Page(Versioned):
    """Versioned: its version rows must never be hits."""

    class Meta:
        table = docs
        pk = "PAGE#{page_id}"
        sk = "PAGE"

    page_id: str
    body: str
    embedding: Annotated[list[float], Vector(DIMS)]


class Account(Entity):
    """A unique attribute: its guard items must never be hits."""

    class Meta:
        table = docs
        pk = "ACCOUNT#{account_id}"
        sk = "ACCOUNT"
        unique = [Unique("email")]

    account_id: str
    email: str
    embedding: Annotated[list[float], Vector(DIMS)]


class Memo(Entity):
    """Moved from ``OLDMEMO#{memo_id}`` (type ``oldmemo``): items still in that layout are
    hits too, read as current."""

    class Meta:
        table = docs
        pk = "MEMO#{memo_id}"
        sk = "MEMO"
        previous = Previous(pk="OLDMEMO#{memo_id}", type_name="oldmemo")

    memo_id: str
    text: str
    embedding: Annotated[list[float], Vector(DIMS)]


space = Table("vector_space", vector_indexes=[
    VectorIndex(f"by_{distance.lower()}", attribute="v", dimensions=3, distance=distance,
                partition="space") for distance in ("COSINE", "EUCLIDEAN", "DOT_PRODUCT")])


class Point(Entity):
    """A point of one space (each example of the model-based test has a space of its
    own: a partition of the indexes)."""

    class Meta:
        table = space
        pk = "POINT#{space}#{n}"
        sk = "POINT"

    space: str
    n: int
    v: Annotated[list[float], Vector(3)]


def f32(x: float) -> float:
    """``x`` as the nearest 32-bit float (``struct``: apart from dynaorm's own rounding)."""
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def model_score(distance: str, query: Sequence[float], stored: Sequence[float]) -> float:
    """A brute-force model of a vector index's score (DynamoDB's, as the docs and captures
    describe it): 32-bit elements, 64-bit arithmetic; COSINE ``1 - cos`` (0..2, exactly 1
    for a zero vector and 0 for the query itself), EUCLIDEAN the distance, DOT_PRODUCT
    the product; held to float32's range."""
    q, s = [f32(x) for x in query], [f32(x) for x in stored]
    if distance == "EUCLIDEAN":
        score = math.sqrt(sum((a - b) * (a - b) for a, b in zip(q, s, strict=True)))
    elif distance == "DOT_PRODUCT":
        score = sum(a * b for a, b in zip(q, s, strict=True))
    else:
        qq, ss = sum(a * a for a in q), sum(b * b for b in s)
        if qq == 0 or ss == 0:
            return 1.0
        if q == s:
            return 0.0
        dot = sum(a * b for a, b in zip(q, s, strict=True))
        score = min(2.0, max(0.0, 1 - dot / (math.sqrt(qq) * math.sqrt(ss))))
    limit = 3.4028234663852886e38
    return min(limit, max(-limit, score))
