"""A read of several entity types, grouped by class: ``s.query(Customer, Order, ...)
.grouped()`` gives a :class:`Grouped`, whose ``g[Order]`` is a ``list[Order]`` (typed by
the class given), in read order; a requested type without results gives ``[]``."""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

E = TypeVar("E")


class Grouped(Mapping[type[Any], list[Any]]):
    """Results by entity class: ``g[Order]`` is the ``list[Order]`` of the results that are
    ``Order`` objects (``[]`` when none is; a class the read was not for is a
    ``KeyError``). Iterating gives the requested classes, in the order given."""

    __slots__ = ("_groups",)

    def __init__(self, groups: dict[type[Any], list[Any]]):
        self._groups = groups

    def __getitem__(self, cls: type[E]) -> list[E]:
        return self._groups[cls]

    def __iter__(self) -> Iterator[type[Any]]:
        return iter(self._groups)

    def __len__(self) -> int:
        return len(self._groups)

    def __repr__(self) -> str:
        inner = ", ".join(f"{c.__name__}: {len(v)}" for c, v in self._groups.items())
        return f"<Grouped {inner}>"


def group(results: Iterable[Any], classes: Sequence[type[Any]]) -> Grouped:
    """``results`` of a read of ``classes``, grouped by class (each result goes to its own
    class, else to the first requested class it is an instance of)."""
    groups: dict[type[Any], list[Any]] = {cls: [] for cls in classes}
    for obj in results:
        found = groups.get(type(obj))
        if found is None:
            found = next(v for c, v in groups.items() if isinstance(obj, c))
        found.append(obj)
    return Grouped(groups)
