"""The spans a test's client exports (OpenTelemetry's SDK, in memory): a provider of the
test's own given to ``app``'s client, never the process's global one (set once per
process, it would trace every later test)."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.models import app

__all__ = ["Spans"]


class Spans:
    """The spans a test's client exported, and the tracer of the test's own spans."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("tests")

    def attach(self) -> None:
        """Trace ``app``'s client now (again after a test rebinds the table)."""
        app.db.tracing.tracer_provider = self.provider

    @property
    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.all if s.name.startswith(prefix)]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        return [s for s in self.all
                if s.parent is not None and s.parent.span_id == parent.context.span_id]

    def clear(self) -> None:
        self.exporter.clear()
