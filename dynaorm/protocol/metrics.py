"""OpenTelemetry metrics on the tracing hook (pure: OpenTelemetry's metrics API is looked
up, never imported by ``import dynaorm``): per attempt, the stable database convention's
``db.client.operation.duration`` (a histogram, in seconds, with ``db.system.name``,
``db.operation.name``, ``db.collection.name``, ``server.address``, ``server.port`` and
``error.type`` on a failure), and ``dynaorm.consumed_capacity`` (a counter of capacity
units, by ``db.collection.name``, ``dynaorm.entity`` and ``dynaorm.row_role``: what a
dashboard alarms on per entity and per kind of row: a unique guard, a version row).

Recorded while a meter provider is configured (``client.tracing.metrics.meter_provider``,
else OpenTelemetry's global one once set), with or without a tracer provider: the client's
:class:`~dynaorm.Tracing` hook is attached while either is."""

import functools
import time
from typing import Any, Final

from dynaorm._version import __version__
from dynaorm.protocol.hooks import Attempt

#: the stable database conventions' name of the system
SYSTEM: Final = "aws.dynamodb"
#: the histogram of each attempt's duration (OpenTelemetry's database client metric)
DURATION: Final = "db.client.operation.duration"
#: the counter of consumed capacity by table, entity and row role
CAPACITY: Final = "dynaorm.consumed_capacity"
#: the explicit bucket boundaries the conventions advise for the duration (seconds)
BUCKETS: Final = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)
_METRICS: Final = "opentelemetry.metrics"


def roles(attempt: Attempt) -> dict[tuple[str, str], float]:
    """An attempt's consumed capacity by entity and role (slugged: ``unique_guard``), empty
    for an answer whose ``ConsumedCapacity`` is not DynamoDB's shape."""
    try:
        response = attempt.response
        if not response or not response.get("ConsumedCapacity"):
            return {}  # (none reported: nothing to split)
        return {(entity, role.replace(" ", "_")): units
                for (entity, role), units in attempt.capacity_by_role.items()}
    except (AttributeError, TypeError, ValueError):
        return {}


class Metrics:
    """The instruments of one client (made on first use from the meter provider)."""

    def __init__(self) -> None:
        self.meter_provider: Any = None
        """The provider to record with (``None``: OpenTelemetry's global one, once set)."""
        #: (provider, its instruments): one attribute, so a thread switching provider
        #: never pairs one provider with another's instruments (red team 08d)
        self._made: tuple[Any, Any] = (None, None)

    def instruments(self, provider: Any) -> Any:
        """(duration histogram, capacity counter) of ``provider``, made once each."""
        made = self._made
        if provider is not made[0]:
            meter = provider.get_meter("dynaorm", __version__)
            made = self._made = (provider, (
                meter.create_histogram(DURATION, unit="s", description="Duration of "
                                       "database client operations.",
                                       explicit_bucket_boundaries_advisory=list(BUCKETS)),
                meter.create_counter(CAPACITY, unit="{capacity_unit}", description=(
                    "DynamoDB capacity units consumed, by table, entity and row role."))))
        return made[1]

    @staticmethod
    def record(instruments: tuple[Any, Any], attempt: Attempt, clock: float,
               server: dict[str, Any], by_role: dict[tuple[str, str], float],
               tables: tuple[str, ...]) -> None:
        """Record one attempt to DynamoDB (started at ``clock``, ``time.perf_counter()``;
        ``tables``: the tables it names) with ``instruments``: its duration and the
        capacity it consumed by role."""
        if attempt.service != "dynamodb":  # (another service's: KMS)
            return
        elapsed = time.perf_counter() - clock
        duration, capacity = instruments
        error = attempt.error
        duration.record(elapsed, _duration_attributes(
            attempt.operation, tables, None if error is None else error.code,
            server.get("server.address"), server.get("server.port")))
        table = tables[0] if len(tables) == 1 else None
        for (entity, role), units in by_role.items():
            capacity.add(units, _capacity_attributes(table, entity, role))


@functools.lru_cache(maxsize=512)
def _duration_attributes(operation: str, tables: tuple[str, ...], error: str | None,
                         address: str | None, port: int | None) -> dict[str, Any]:
    """The attributes of an attempt's duration: the system, the API, the endpoint (when
    known), the table (of a request naming one) and the error's code (of a failure); made
    once each (never written to: the SDK copies what it keeps)."""
    attributes = {"db.system.name": SYSTEM, "db.operation.name": operation,
                  **({} if address is None else {"server.address": address}),
                  **({} if port is None else {"server.port": port})}
    if len(tables) == 1:
        attributes["db.collection.name"] = tables[0]
    if error is not None:
        attributes["error.type"] = error
    return attributes


@functools.lru_cache(maxsize=512)
def _capacity_attributes(table: str | None, entity: str, role: str) -> dict[str, Any]:
    """The attributes of an attempt's capacity for one entity and role (made once each)."""
    return {"db.collection.name": table, "dynaorm.entity": entity,
            "dynaorm.row_role": role} if table else {
        "dynaorm.entity": entity, "dynaorm.row_role": role}
