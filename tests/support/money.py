"""A type of the tests' own, registered once as a kind of stored value
(:mod:`dynaorm.codec`): :class:`Money`, a value object of whole cents stored as a
number, and the entities and PynamoDB attribute that hold it. Importing this module
registers it (before the entities are defined)."""

from __future__ import annotations

from pydantic import model_validator

from dynaorm import Entity
from dynaorm.codec import register, stored_as
from tests.support.models import app

__all__ = ["MONEY", "Money", "Priced", "PricedChecked"]


class Money:
    """An amount of whole cents (an immutable value; ``+`` adds)."""

    __slots__ = ("cents",)

    def __init__(self, cents: int) -> None:
        object.__setattr__(self, "cents", int(cents))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Money is immutable")

    def __eq__(self, other: object) -> bool:
        return type(other) is Money and other.cents == self.cents

    def __hash__(self) -> int:
        return hash(self.cents)

    def __repr__(self) -> str:
        return f"Money({self.cents})"


#: the one registration: Money is stored as its cents, a number
MONEY = register(stored_as(Money, int, to=lambda m: m.cents, back=Money,
                           pynamodb=("MoneyAttribute",)))


class Priced(Entity):
    """Prices: a required one, an optional one."""

    class Meta:
        table = app
        pk = "PRICED#{sku}"
        sk = "P"

    sku: str
    price: Money
    was: Money | None = None


class PricedChecked(Entity):
    """The same with a rule across fields: its updates read the item first."""

    class Meta:
        table = app
        pk = "PRICEDC#{sku}"
        sk = "P"

    sku: str
    price: Money
    was: Money | None = None

    @model_validator(mode="after")
    def _positive(self) -> PricedChecked:
        if self.price.cents < 0:
            raise ValueError("a negative price")
        return self
