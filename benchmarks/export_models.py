"""The entities of ``benchmarks/export.py`` (importable by reference: worker processes and
Spark executors load them by name): a mixed single table of orders (nested lines, a set,
an enum, decimals), customers (a map, a date, floats) and versioned events."""

from __future__ import annotations

import enum
from datetime import date, datetime
from decimal import Decimal

from pydantic import BaseModel, Field

from dynaorm import Entity, Table, Versioned

shop = Table("dynaorm-bench-export", revision_attribute=None)


class Status(enum.Enum):
    NEW = "new"
    PAID = "paid"
    SHIPPED = "shipped"


class Line(BaseModel):
    sku: str
    qty: int
    price: Decimal = Field(max_digits=10, decimal_places=2)


class Order(Entity):
    class Meta:
        table = shop
        pk = "ORDER#{id}"
        sk = "O"
        type_name = "order"

    id: str
    customer: str
    status: Status = Status.NEW
    total: Decimal = Field(Decimal("0"), max_digits=12, decimal_places=2)
    placed: datetime
    lines: list[Line] = []
    tags: set[str] = set()
    note: str | None = None


class Customer(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{id}"
        sk = "C"
        type_name = "customer"

    id: str
    email: str
    name: str
    born: date | None = None
    score: float = 0.0
    vip: bool = False
    prefs: dict[str, int] = {}


class Event(Versioned):
    class Meta:
        table = shop
        pk = "EVENT#{id}"
        sk = "E"
        type_name = "event"

    id: str
    kind: str
    payload: int = 0
    at: datetime
