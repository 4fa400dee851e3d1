"""Trace dynaorm with OpenTelemetry: configure a tracer provider (here the SDK's in-memory
exporter; in production an OTLP exporter and a ``BatchSpanProcessor``) and every session
operation is a span under your own, with a child span per HTTP attempt (a throttled,
retried attempt included); a hook counts consumed capacity as an OpenTelemetry metric.

Run: ``python examples/otel_tracing.py [--endpoint-url URL]``
"""

from __future__ import annotations

from typing import Any

from _support import run
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dynaorm import Attempt, Entity, Hook, Table
from dynaorm.testing import inject_faults

# -- the five lines of setup (with an exporter that keeps the spans, to print them) --------
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

shop = Table("dynaorm-example-tracing", max_wait=0.2, return_consumed_capacity="TOTAL")


class Customer(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "CUSTOMER"

    customer_id: str
    name: str


class Order(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "ORDER#{order_id}"

    customer_id: str
    order_id: str
    total: int = 0


class CapacityMetrics(Hook):
    """Capacity units every answer reports, as an OpenTelemetry counter."""

    wants_origins = False

    def __init__(self) -> None:
        self.units = metrics.get_meter("example").create_counter(
            "dynamodb.consumed_capacity", unit="{capacity_unit}")

    def on_end(self, phase: object, token: Any) -> object:
        if isinstance(phase, Attempt):
            for name, units in phase.consumed_capacity.items():
                table, _, index = name.partition("/")
                self.units.add(units, {"table": table, "index": index,
                                       "rpc.method": phase.operation})
        return None


def print_tree(spans: tuple[ReadableSpan, ...]) -> None:
    """Each span under its parent, with the attributes that say what happened."""
    ids = {s.context.span_id for s in spans if s.context is not None}
    below: dict[int | None, list[ReadableSpan]] = {}
    for s in sorted(spans, key=lambda s: s.start_time or 0):
        parent = s.parent.span_id if s.parent is not None else None
        below.setdefault(parent if parent in ids else None, []).append(s)

    def show(span: ReadableSpan, depth: int) -> None:
        a = span.attributes or {}
        facts = [f"{k.rpartition('.')[2]}={a[k]!s}" for k in (
            "dynaorm.attempt", "dynaorm.outcome", "error.type", "dynaorm.entity_types")
            if k in a]
        print(f"  {'  ' * depth}{span.name} [{span.kind.name}] {' '.join(facts)}".rstrip())
        assert span.context is not None
        for child in below.get(span.context.span_id, []):
            show(child, depth + 1)

    for root in below.get(None, []):
        show(root, 0)


def main() -> None:
    with run(shop, "OpenTelemetry spans of a request handler, and capacity as a metric") as db:
        db.table.db.add_hook(CapacityMetrics())
        exporter.clear()  # creating the table is not the handler's
        tracer = trace.get_tracer("example")
        with tracer.start_as_current_span("POST /customers"):
            s = db.session()
            s.save(Customer(customer_id="c1", name="Ana"))
            s.save(Order(customer_id="c1", order_id="o1", total=30))
            s.commit()
            with inject_faults(shop) as faults:
                faults.throttle("GetItem")  # the first attempt is throttled, then retried
                db.session().get(Customer, customer_id="c1")
            orders = list(db.session().query(Order, customer_id="c1"))
        print(f"# {len(orders)} order(s) read; the spans:")
        print_tree(exporter.get_finished_spans())
        data = reader.get_metrics_data()
        points = [p for rm in (data.resource_metrics if data else ())
                  for sm in rm.scope_metrics for m in sm.metrics
                  if m.name == "dynamodb.consumed_capacity" for p in m.data.data_points]
        methods = sorted({str(p.attributes.get("rpc.method")) for p in points
                          if p.attributes is not None})
        print(f"# consumed capacity counted for: {methods}")


if __name__ == "__main__":
    main()
