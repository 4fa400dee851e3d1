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

from __future__ import annotations

import sys
from typing import Any, Final

from dynaorm._version import __version__

__all__ = ["CAPACITY", "DURATION", "SYSTEM", "Metrics"]

#: the stable database conventions' name of the system
SYSTEM: Final = "aws.dynamodb"
#: the histogram of each attempt's duration (OpenTelemetry's database client metric)
DURATION: Final = "db.client.operation.duration"
#: the counter of consumed capacity by table, entity and row role
CAPACITY: Final = "dynaorm.consumed_capacity"
#: the explicit bucket boundaries the conventions advise for the duration (seconds)
BUCKETS: Final = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)
_METRICS: Final = "opentelemetry.metrics"
#: how many attribute sets (operation, table, error, server) are kept made
_SHAPES: Final = 256


class Metrics:
    """The instruments of one client (made on first use from the meter provider)."""

    def __init__(self) -> None:
        self.meter_provider: Any = None
        """The provider to record with (``None``: OpenTelemetry's global one, once set)."""
        self._seen: Any = None
        self._instruments: tuple[Any, Any] | None = None
        self._shapes: dict[tuple[Any, ...], dict[str, Any]] = {}  # duration attributes

    def instruments(self) -> tuple[Any, Any] | None:
        """(duration histogram, capacity counter), ``None`` while no provider is set."""
        provider = self.meter_provider
        if provider is None:
            api = sys.modules.get(_METRICS)
            if api is None:
                return None
            internal = getattr(api, "_internal", None)
            provider = getattr(internal, "_METER_PROVIDER", None)  # (set_meter_provider's)
            if provider is None:
                return None
        if provider is not self._seen:
            meter = provider.get_meter("dynaorm", __version__)
            self._instruments = (
                meter.create_histogram(DURATION, unit="s", description="Duration of "
                                       "database client operations.",
                                       explicit_bucket_boundaries_advisory=list(BUCKETS)),
                meter.create_counter(CAPACITY, unit="{capacity_unit}", description=(
                    "DynamoDB capacity units consumed, by table, entity and row role.")))
            self._seen = provider
        return self._instruments

    def record(self, instruments: tuple[Any, Any], seconds: float, operation: str,
               tables: Any, server: dict[str, Any], error: str | None,
               by_role: dict[tuple[str, str], float]) -> None:
        """Record one attempt with ``instruments`` (what :meth:`instruments` gave): its
        duration and the capacity it consumed by role."""
        duration, capacity = instruments
        table = tables[0] if tables and len(tables) == 1 else None
        key = (operation, table, error, server.get("server.address"), server.get("server.port"))
        attributes = self._shapes.get(key)
        if attributes is None:
            if len(self._shapes) >= _SHAPES:
                self._shapes = {}
            attributes = {"db.system.name": SYSTEM, "db.operation.name": operation,
                          **{k: v for k, v in server.items()
                             if k in ("server.address", "server.port")}}
            if table is not None:
                attributes["db.collection.name"] = table
            if error is not None:
                attributes["error.type"] = error
            self._shapes[key] = attributes
        duration.record(seconds, attributes)
        for (entity, role), units in by_role.items():
            capacity.add(units, {"db.collection.name": table, "dynaorm.entity": entity,
                                 "dynaorm.row_role": role} if table else {
                "dynaorm.entity": entity, "dynaorm.row_role": role})
