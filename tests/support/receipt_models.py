"""Entities whose values a receipt's digest must tell apart (a ``str`` subclass, a
``str`` enum, an ``int`` subclass, nested models with ``Any`` fields): the digest's
property (``unit/test_receipt_digest.py``) and a key reused with another value
(``integration/test_idempotency.py``) use them."""

from __future__ import annotations

import enum
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel

from dynaorm import Entity, Table

receipts_table = Table("red08b_receipts")


class Sku(str):
    """A str subclass (as a NewType-like wrapper or a library's string type is)."""


class Size(str, enum.Enum):  # noqa: UP042 (the older spelling: also a str)
    S = "s"
    L = "l"


class Count(int):
    pass


class Part(BaseModel):
    sku: Any = None
    size: Literal["s", "l"] = "s"
    qty: Any = 0


class Order(Entity):
    class Meta:
        table = receipts_table
        pk = "ORDER#{order_id}"
        sk = "ORDER"

    order_id: str
    note: Any = None
    size: Size = Size.S
    price: Decimal = Decimal(0)
    blob: bytes = b""
    tags: set[str] = set()
    parts: list[Part] = []

