"""The state a commit leaves on an object (:class:`Written`), and the stored values an
update of a persisted object plans from (:func:`stored_values`).

Pure: no I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.model.entity import encode_entity
from dynaorm.model.spec import EntitySpec
from dynaorm.model.state import InstanceState

__all__ = ["Written", "planned_fields", "stored_values"]


class Written(InstanceState):
    """The state a commit leaves on an object: its item is exactly ``encode_entity`` of
    the values written, so the next write of the object plans from it without validating
    the stored item back into an object and encoding that again (:func:`stored_values`). It keeps
    the written values planning reads (unique fields and index-key fields), copied: the
    object's own may change in place before that next write."""

    __slots__ = ("values",)

    def __init__(self, spec: EntitySpec, key: PlainKey, item: Item,
                 values: Mapping[str, Any], version: int | None = None) -> None:
        super().__init__(key, item, version)
        planned = planned_fields(spec)
        self.values: Mapping[str, Any] = {
            f: v if type(v) in _IMMUTABLE else copy.deepcopy(v)
            for f in planned if f in values for v in (values[f],)} if planned else _NO_VALUES


_IMMUTABLE = frozenset({str, int, bool, float, Decimal, type(None)})
_NO_VALUES: Mapping[str, Any] = MappingProxyType({})  # shared by states that keep none


def planned_fields(spec: EntitySpec) -> frozenset[str]:
    """The fields whose stored values planning an update of a persisted object reads:
    those guard keys and secondary-index keys are built from."""
    return spec.unique_fields | frozenset(f for idx in spec.indexes for f in idx.fields)


def stored_values(spec: EntitySpec, state: InstanceState) -> tuple[Mapping[str, Any], Item]:
    """The stored field values and the item as dynaorm writes them (the diff's base) of
    the state an update plans from: a loaded item is validated back into an object and
    encoded again (the stored item may hold what the entity does not, or lack defaults);
    a state a commit left has both already."""
    if isinstance(state, Written):
        return state.values, state.item
    old_obj = spec.cls.model_validate(spec.decode_fields(state.item))
    return old_obj.__dict__, encode_entity(old_obj, spec, state.version)
