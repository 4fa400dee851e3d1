"""LangGraph's official checkpointer conformance suite (``langgraph-checkpoint-conformance``)
on :class:`dynaorm.langgraph.Saver`, on every engine: the suite detects all eight
capabilities by itself and every test of each passes (issue 71). The saver's own
behaviour (scope, TTL, one transaction, the model) is tests/integration/test_langgraph_saver.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from dynaorm import Table
from dynaorm.langgraph import Saver
from dynaorm.testing import use_tables, worker_suffix

agents = Table("langgraph_conformance", ttl="expires_at")


def test_the_saver_passes_every_capability_of_the_suite(backend: str | None) -> None:
    @checkpointer_test(name="dynaorm.langgraph.Saver")
    async def saver() -> AsyncIterator[Saver]:
        yield Saver(agents, scope={"tenant_id": "t1"})

    with use_tables(agents, endpoint_url=backend, name_suffix=worker_suffix()):
        report = asyncio.run(validate(saver))
    results = report.results
    assert set(results) == {c.value for c in ALL_CAPABILITIES}
    counts = {name: (r.detected, r.passed, r.tests_passed, r.tests_failed)
              for name, r in results.items()}
    print(counts)  # (the closing note's figures: pytest -s)
    assert all(r.detected and r.passed and r.tests_passed > 0 and not r.tests_failed
               for r in results.values()), {n: r.failures for n, r in results.items()}
