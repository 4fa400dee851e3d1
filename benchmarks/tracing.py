#!/usr/bin/env python
"""What OpenTelemetry tracing costs a dynaorm operation: client CPU of get, put, a 3-item
transaction and a 25-item query page over dynaorm's own wire, per tracing state.

The canned endpoint of ``wire.py`` (``benchmarks/canned_http.py``, a child process on
loopback) answers; only the client process's CPU is timed (``time.process_time``).
States, measured in this order in one process (the first must run before anything
imports OpenTelemetry):

``off``         OpenTelemetry not imported: the check is a dictionary lookup
``api``         ``opentelemetry.trace`` imported, no provider configured (the API's proxy
                provider): the check also asks the API for its provider
``sampled-out`` an SDK provider whose sampler drops everything (spans made, not recorded)
``recorded``    an SDK provider recording every span into a processor that drops it: the
                whole cost of making both spans and their attributes
``metrics``     ``recorded`` and an SDK meter provider (an in-memory reader): each attempt
                also records ``db.client.operation.duration`` and its capacity by role
                (issue 63's budget: a get at most 1.1x ``off``)

Also the check alone (``client.policy``, what each operation pays when nothing is
configured), in nanoseconds, in the states ``off`` and ``api``.

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
STATES = ("off", "api", "sampled-out", "recorded", "metrics")
Op = Callable[[], object]


def timed(fn: Op, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n


def check_cost(client: Any, n: int = 500_000) -> float:
    """Nanoseconds of one ``client.policy`` (what a session reads per operation, the
    check included)."""
    return timeit.timeit("client.policy", globals={"client": client}, number=n) / n * 1e9


def provider_for(state: str) -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult as Result
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    class Drop(SpanExporter):
        def export(self, spans: Any) -> Result:
            return Result.SUCCESS

    if state == "sampled-out":
        return TracerProvider(sampler=ALWAYS_OFF)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    return provider


def measure(ops: dict[str, Op], repeats: int, scale: float) -> dict[str, float]:
    samples: dict[str, list[float]] = {}
    for op in OPS:
        ops[op]()  # warm
    for _ in range(repeats):
        for op in OPS:
            samples.setdefault(op, []).append(
                timed(ops[op], max(1, int(ITERATIONS[op] * scale))))
    return {op: statistics.median(v) for op, v in samples.items()}


def main() -> int:
    args = arguments(__doc__)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "x")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "x")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    assert "opentelemetry.trace" not in sys.modules, "state 'off' needs no OpenTelemetry"
    results: dict[str, dict[str, float]] = {}
    checks: dict[str, float] = {}
    with canned_endpoint() as endpoint:
        ops = make_dynaorm(endpoint, "dynaorm")
        ops["get"]()
        from dynaorm.client.client import live_clients

        (client,) = [c for c in live_clients() if c.endpoint_url == endpoint]
        for state in STATES:
            if state == "api":
                import opentelemetry.trace  # noqa: F401 (what the state is)
            elif state == "metrics":
                from opentelemetry.sdk.metrics import MeterProvider
                from opentelemetry.sdk.metrics.export import InMemoryMetricReader

                client.tracing.metrics.meter_provider = MeterProvider(
                    metric_readers=[InMemoryMetricReader()])
            elif state != "off":
                client.tracing.tracer_provider = provider_for(state)
            if state in ("off", "api"):
                assert not client.tracing.active()
                checks[state] = check_cost(client)
            results[state] = measure(ops, args.repeats, args.scale)
    print(f"client CPU per operation (ms, median of {args.repeats}), ratio to 'off'; "
          "dynaorm's own wire, canned endpoint over loopback HTTP")
    print(f"| op | {' | '.join(STATES)} |")
    print(f"| --- | {' | '.join('---:' for _ in STATES)} |")
    for op in OPS:
        base = results["off"][op]
        cells = [f"{results[s][op] * 1e3:.3f}" + ("" if s == "off" else
                                                   f" ({results[s][op] / base:.2f}x)")
                 for s in STATES]
        print(f"| {op} | {' | '.join(cells)} |")
    print("the check per operation (client.policy): " + ", ".join(
        f"{s}: {ns:.0f} ns" for s, ns in checks.items()))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"ops": results, "check_ns": checks}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
