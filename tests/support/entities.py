"""Entity classes made from data: a test that needs a class per case (fields of one kind
or another, a table of the case's own) declares its fields and ``Meta`` once, here."""

from __future__ import annotations

from typing import Any

from dynaorm import Entity


def entity_class(name: str, meta: dict[str, Any], module: str = __name__, /,
                 **fields: tuple[Any, Any]) -> type[Entity]:
    """A subclass of :class:`~dynaorm.Entity` named ``name`` with ``Meta`` ``meta`` and
    ``fields`` (name -> (annotation, default); default ``...``: required), in that order,
    as if ``module`` declared it."""
    namespace: dict[str, Any] = {n: d for n, (_, d) in fields.items() if d is not ...}
    namespace.update(__annotations__={n: a for n, (a, _) in fields.items()},
                     __module__=module, __qualname__=name,
                     Meta=type("Meta", (), {**meta, "__qualname__": f"{name}.Meta",
                                             "__module__": module}))
    return type(name, (Entity,), namespace)
