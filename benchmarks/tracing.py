#!/usr/bin/env python
"""What OpenTelemetry costs a dynaorm operation: client CPU of get, put, a 3-item
transaction and a 25-item query page over dynaorm's own wire, per telemetry state, side by
side (issue 63's budget: a get with spans and metrics at most 1.1x the same get with no
provider installed).

The canned endpoint of ``wire.py`` (``benchmarks/canned_http.py``, a child process on
loopback) answers; only the client process's CPU is timed (``time.process_time``: every
thread of the process, a span processor's export thread included).

``off`` (OpenTelemetry not imported at all) is measured first, alone: nothing can be
measured before it once the SDK is imported. Then the states below are measured in turns,
one batch of each in every round (a change in the machine's load falls on all of them
alike), on the same client, switching its providers:

``none``          OpenTelemetry's API and SDK imported, no provider installed: the
                  baseline of the budget
``hook``          no provider, a hook doing nothing attached (``dynaorm.Hook``, reading
                  neither origins nor items, as tracing does): what any attached hook
                  costs an operation in dynaorm's pump (its records, their start and end)
``sampled-out``   a tracer provider whose sampler drops everything
                  (``ParentBased(TraceIdRatioBased(0))``: ratio sampling at 0)
``spans``         an SDK tracer provider exporting through a ``BatchSpanProcessor`` to an
                  exporter that drops what it is given (production's processor: the
                  request thread only queues the ended span; the export thread's CPU is
                  in the figure)
``metrics``       an SDK meter provider alone (an ``InMemoryMetricReader``: the SDK
                  aggregates when a value is recorded, whatever the reader, which only
                  collects); no tracer provider
``spans+metrics`` both: the budget's state

And the SDK's own floor, in the same rounds: ``sdk floor`` makes the spans a traced get
makes (the operation's and its attempt's, each with every attribute dynaorm puts on it,
all given at creation) and records its metric points (the canned answer reports no
consumed capacity: the duration alone), with the same providers, and
nothing else; ``sampled-out floor`` what the SDK does for a sampled-out get (its sampler
asked once, for the operation's span, which is dropped); ``bare span`` is one
``tracer.start_span("x").end()``. ``none`` plus the floor is the least a get with these
spans and metrics can cost.

Each floor is measured twice: alone in a tight loop (its code and data hot in the CPU's
caches: the least it can ever cost), and *in context*, right after an untraced get in the
same loop (``get + sdk floor``, ``get + sampled-out floor``: the SDK's code competing for
the caches with a request's, as it does inside a traced get). On a shared machine the SDK
costs several times more in context than alone; dynaorm's own work is the traced get less
the untraced get and the floor, by either measure.

With the medians, the best batch of each (the least disturbed when the machine is busy).
Also the check alone (``client.policy``, what each operation pays when nothing is
configured), in nanoseconds, in the states ``off`` and ``none``.

Usage::

    .venv/bin/python benchmarks/tracing.py [--repeats 5] [--scale 1.0] [--json PATH]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.canned_http import ITERATIONS, arguments, canned_endpoint
from benchmarks.wire import make_dynaorm

OPS = ("get", "put", "tx3", "query25")
STATES = ("none", "hook", "sampled-out", "spans", "metrics", "spans+metrics")
FLOORS = ("sdk floor", "sampled-out floor", "bare span", "get + sdk floor",
          "get + sampled-out floor")
#: issue 70's budgets: dynaorm's own CPU beyond the SDK's floor in a traced get, as a share
#: of an untraced get; a sampled-out get, as a ratio to an untraced get
OWN_BUDGET = 0.25
SAMPLED_OUT_BUDGET = 1.1
Op = Callable[[], object]


def timed(fn: Op, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n


def check_cost(client: Any, n: int = 300_000) -> float:
    """Nanoseconds of one ``client.policy`` (what a session reads per operation, the
    check included)."""
    return timeit.timeit("client.policy", globals={"client": client}, number=n) / n * 1e9


class Providers:
    """The SDK providers of the states, made once (switched on the client per batch)."""

    def __init__(self) -> None:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

        from dynaorm import Hook

        class Drop(SpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        self.sampled_out = TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.0)))
        self.tracer = TracerProvider()
        self.tracer.add_span_processor(BatchSpanProcessor(Drop()))
        self.meter = MeterProvider(metric_readers=[InMemoryMetricReader()])

        class Noop(Hook):
            wants_origins = wants_items = False

        self.noop = Noop()

    def use(self, client: Any, state: str) -> None:
        if state == "hook" and self.noop not in client.policy.hooks:
            client.add_hook(self.noop)
        elif state != "hook" and self.noop in client.policy.hooks:
            client.remove_hook(self.noop)
        client.tracing.tracer_provider = {
            "sampled-out": self.sampled_out, "spans": self.tracer,
            "spans+metrics": self.tracer}.get(state)
        client.tracing.metrics.meter_provider = (
            self.meter if state in ("metrics", "spans+metrics") else None)

    def shutdown(self) -> None:
        self.tracer.shutdown()
        self.meter.shutdown()


def floors(client: Any, get: Op, providers: Providers) -> dict[str, Op]:
    """The SDK's own work for a traced get (see the module), from the spans and metric
    points one real traced get makes (read with an in-memory exporter and reader)."""
    from opentelemetry import trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    seen = TracerProvider()
    seen.add_span_processor(SimpleSpanProcessor(exporter))
    client.tracing.tracer_provider = seen
    client.tracing.metrics.meter_provider = MeterProvider(metric_readers=[reader])
    get()
    providers.use(client, "none")
    spans = sorted(exporter.get_finished_spans(), key=lambda s: s.start_time or 0)
    assert [s.name for s in spans] == ["dynaorm.get", "DynamoDB.GetItem"], spans
    (op_attributes, op_kind), (attempt_attributes, attempt_kind) = (
        (dict(s.attributes or {}), s.kind) for s in spans)
    data = reader.get_metrics_data()
    assert data is not None
    points = [(m.name, dict(p.attributes or {})) for rm in data.resource_metrics
              for sm in rm.scope_metrics for m in sm.metrics for p in m.data.data_points]
    assert "db.client.operation.duration" in [n for n, _ in points], points
    tracer = providers.tracer.get_tracer("floor")
    dropped = providers.sampled_out.get_tracer("floor")
    op_start = {k: v for k, v in op_attributes.items()  # (what the sampler is asked with)
                if k not in ("dynaorm.attempts", "dynaorm.outcome", "rpc.method")}
    meter = providers.meter.get_meter("floor")
    instruments = {"db.client.operation.duration": meter.create_histogram(
        "db.client.operation.duration", unit="s").record,
        "dynaorm.consumed_capacity": meter.create_counter("dynaorm.consumed_capacity").add}

    def sdk_floor() -> None:
        op = tracer.start_span("dynaorm.get", kind=op_kind, attributes=op_attributes)
        tracer.start_span("DynamoDB.GetItem", context=trace.set_span_in_context(op),
                          kind=attempt_kind, attributes=attempt_attributes).end()
        for name, attributes in points:
            instruments[name](0.5, attributes)
        op.end()

    def sampled_out_floor() -> None:
        dropped.start_span("dynaorm.get", kind=op_kind, attributes=op_start).end()

    def bare_span() -> None:
        tracer.start_span("x").end()

    def get_sdk_floor() -> None:
        get()
        sdk_floor()

    def get_sampled_out_floor() -> None:
        get()
        sampled_out_floor()

    return {"sdk floor": sdk_floor, "sampled-out floor": sampled_out_floor,
            "bare span": bare_span, "get + sdk floor": get_sdk_floor,
            "get + sampled-out floor": get_sampled_out_floor}


def measure(ops: dict[str, Op], repeats: int, scale: float, client: Any = None,
            providers: Providers | None = None, states: tuple[str, ...] = ("off",),
            extra: dict[str, Op] | None = None) -> dict[str, dict[str, float]]:
    """Median CPU per call, by state and operation; the states in turns, a batch each per
    round (``extra``: functions of their own, measured in the same rounds)."""
    samples: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeats):
        for state in states:
            if providers is not None:
                providers.use(client, state)
            for op in OPS:
                ops[op]()  # (a batch starts warm in its state)
                samples.setdefault((state, op), []).append(
                    timed(ops[op], max(1, int(ITERATIONS[op] * scale))))
        if providers is not None:
            providers.use(client, "none")  # (a floor in context follows an untraced get)
        for name, fn in (extra or {}).items():
            fn()
            samples.setdefault((name, "get"), []).append(
                timed(fn, max(1, int(ITERATIONS["get"] * scale * (1 if "+" in name else 4)))))
    results: dict[str, dict[str, float]] = {}
    for (state, op), values in samples.items():
        results.setdefault(state, {})[op] = statistics.median(values)
        results.setdefault(f"{state} (best)", {})[op] = min(values)
    return results


def budgets(get: dict[str, float], label: str) -> str:
    """The get's figures beside issue 70's budgets (``get``: CPU per call by state and
    floor, seconds)."""
    none = get["none"]
    lines = [f"get ({label}): untraced {none * 1e6:.1f} us"]
    for name, traced, floor, in_context in (
            ("traced (spans+metrics)", "spans+metrics", "sdk floor", "get + sdk floor"),
            ("sampled-out", "sampled-out", "sampled-out floor", "get + sampled-out floor")):
        cost = get[traced]
        alone = cost - none - get[floor]
        beside = cost - get[in_context]
        lines.append(
            f"  {name}: {cost * 1e6:.1f} us ({cost / none:.2f}x); SDK floor alone "
            f"{get[floor] * 1e6:.1f} us, in context {(get[in_context] - none) * 1e6:.1f} us "
            f"(a get can cost no less than {get[in_context] / none:.2f}x); dynaorm's own "
            f"beyond it: {alone * 1e6:.1f} us ({alone / none:.0%}) beyond the floor alone, "
            f"{beside * 1e6:.1f} us ({beside / none:.0%}) beyond the floor in context")
    hook = get["hook"] - none
    lines.append(f"  of which any hook's cost in dynaorm's pump (a no-op hook attached): "
                 f"{hook * 1e6:.1f} us ({hook / none:.0%})")
    own = (get["spans+metrics"] - get["get + sdk floor"]) / none
    own_alone = (get["spans+metrics"] - none - get["sdk floor"]) / none
    out = get["sampled-out"] / none
    lines.append("  | budget (issue 70) | measured | budget | |")
    lines.append("  | --- | ---: | ---: | --- |")
    lines.append(f"  | traced get: dynaorm's own CPU beyond the SDK's floor, share of an "
                 f"untraced get (floor in context; alone) | {own:.0%} ({own_alone:.0%}) | "
                 f"<= {OWN_BUDGET:.0%} | {_verdict(own, OWN_BUDGET)} |")
    lines.append(f"  | sampled-out get / untraced get (its SDK floor in context "
                 f"{get['get + sampled-out floor'] / none:.2f}x, alone "
                 f"{1 + get['sampled-out floor'] / none:.2f}x) | {out:.2f}x | "
                 f"<= {SAMPLED_OUT_BUDGET}x | {_verdict(out, SAMPLED_OUT_BUDGET)} |")
    return "\n".join(lines)


def _verdict(measured: float, budget: float) -> str:
    return "met" if measured <= budget else "missed"


def main() -> int:
    args = arguments(__doc__)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "x")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "x")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    assert "opentelemetry.trace" not in sys.modules, "state 'off' needs no OpenTelemetry"
    checks: dict[str, float] = {}
    with canned_endpoint() as endpoint:
        ops = make_dynaorm(endpoint, "dynaorm")
        ops["get"]()
        from dynaorm.client.client import live_clients

        (client,) = [c for c in live_clients() if c.endpoint_url == endpoint]
        assert not client.tracing.active()
        checks["off"] = check_cost(client)
        results = measure(ops, args.repeats, args.scale)
        providers = Providers()
        assert not client.tracing.active()
        checks["none"] = check_cost(client)
        extra = floors(client, ops["get"], providers)
        results.update(measure(ops, args.repeats, args.scale, client, providers, STATES,
                               extra))
        providers.shutdown()
    print(f"client CPU per operation (ms, median of {args.repeats} interleaved rounds), "
          "ratio to 'none' (no provider installed); dynaorm's own wire, canned endpoint "
          "over loopback HTTP")
    shown = ("off", *STATES)
    print(f"| op | {' | '.join(shown)} |")
    print(f"| --- | {' | '.join('---:' for _ in shown)} |")
    for op in OPS:
        base = results["none"][op]
        cells = [f"{results[s][op] * 1e3:.3f}" + ("" if s == "none" else
                                                   f" ({results[s][op] / base:.2f}x)")
                 for s in shown]
        print(f"| {op} | {' | '.join(cells)} |")
    for label, key in (("median", ""), ("best batch", " (best)")):
        print(budgets({s: results[f"{s}{key}"]["get"] for s in (*STATES, *FLOORS)}, label))
    print("the check per operation (client.policy): " + ", ".join(
        f"{s}: {ns:.0f} ns" for s, ns in checks.items()))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"ops": results, "check_ns": checks}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
