"""The fault kinds the model-based tests draw (``"none"``, ``"throttle"``, ``"500"``,
``"lose"``, ``"lose500"``) armed on the public injector, ``dynaorm.testing.inject_faults``
(used by tests/system/test_adversary.py and test_tracing_model.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from dynaorm.testing import FaultInjector

#: every kind a model may draw
KINDS = ("none", "throttle", "500", "lose", "lose500")


def arm(faults: FaultInjector, operations: Iterable[str], kind: str,
        after: Callable[[], object] | None = None) -> None:
    """Make the next attempt of each of ``operations`` fail as ``kind`` says: a throttle,
    a 500 the server never saw, a lost answer (applied), or a lost answer seen as a 500
    (applied); ``"none"`` arms nothing. ``after``: a second writer acting inside the
    window of a 500 or a lost answer (before the attempt's answer arrives)."""
    for operation in operations:
        if kind == "throttle":
            faults.throttle(operation)
        elif kind == "500":
            faults.server_error(operation, after=after)
        elif kind == "lose":
            faults.lose_answer(operation, after=after)
        elif kind == "lose500":
            faults.lose_answer(operation, how="500", after=after)
