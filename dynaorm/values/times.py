"""The times a write sets on an object (``Meta.timestamps``, set by the stamps rule's
``stamp`` hook, :mod:`~dynaorm.schema.rules.stamps`): a write encodes a copy carrying them
(:func:`stamped`) and puts them on the object only once it succeeded
(:func:`apply_stamps`). Plain values: a phase moves them without knowing which rule set
them."""

from datetime import UTC, datetime
from typing import Any

#: The timestamps one write sets: ``(field, value)`` pairs.
Stamps = tuple[tuple[str, datetime], ...]


def now() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(UTC)


def stamped(obj: Any, pairs: Stamps) -> Any:
    """``obj`` itself when ``pairs`` is empty, else a copy carrying those timestamps."""
    return obj.model_copy(update=dict(pairs)) if pairs else obj


def apply_stamps(obj: Any, pairs: Stamps) -> None:
    """Set written timestamps on ``obj`` (after the write succeeded)."""
    for name, value in pairs:
        object.__setattr__(obj, name, value)  # no validation: the value is known-good
