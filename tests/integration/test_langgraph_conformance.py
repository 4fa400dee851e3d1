"""LangGraph's official checkpointer conformance suite (``langgraph-checkpoint-conformance``)
on :class:`dynaorm_langgraph.Saver` (the distribution ``dynaorm-langgraph``; ``make
langgraph``, a CI stage of its own), on every engine: the suite detects all eight
capabilities by itself and every test of each passes (issue 71); beside it, the
repository's two delta-channel capabilities not yet released (``delta_channel_history``,
``delta_channel_reconstruction``, vendored in tests/vendor/langgraph_conformance at pinned
commits), detected as the repository detects them, every test passing (issue 83). The
saver's own behaviour (scope, TTL, one transaction, the model) is
tests/integration/test_langgraph_saver.py; its deltas test_langgraph_delta.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES, _is_overridden

from dynaorm import Table
from dynaorm.testing import use_tables, worker_suffix
from dynaorm_langgraph import Saver
from tests.vendor.langgraph_conformance import (
    test_delta_channel_history,
    test_delta_channel_reconstruction,
)

agents = Table("langgraph_conformance", ttl="expires_at")


def test_the_saver_passes_every_capability_of_the_suite(backend: str | None) -> None:
    _passes(backend, single_writer=False)


@pytest.mark.engines("local")
def test_a_single_writer_saver_passes_every_capability_of_the_suite(
        backend: str | None) -> None:
    """Single-writer (issue 83): the suite's writes (no run: each one a run of its own)
    are each accepted, as no run holds the thread between them."""
    _passes(backend, single_writer=True)


def _passes(backend: str | None, single_writer: bool) -> None:
    @checkpointer_test(name="dynaorm.langgraph.Saver")
    async def saver() -> AsyncIterator[Saver]:
        yield Saver(agents, scope={"tenant_id": "t1"}, single_writer=single_writer)

    with use_tables(agents, endpoint_url=backend, name_suffix=worker_suffix()):
        report = asyncio.run(validate(saver))
    results = report.results
    assert set(results) == {c.value for c in ALL_CAPABILITIES}
    counts = {name: (r.detected, r.passed, r.tests_passed, r.tests_failed)
              for name, r in results.items()}
    print(counts)  # (the closing note's figures: pytest -s)
    assert all(r.detected and r.passed and r.tests_passed > 0 and not r.tests_failed
               for r in results.values()), {n: r.failures for n, r in results.items()}


#: the repository's capabilities not released yet: (the method whose override detects it
#: in the repository's capabilities.py, its runner)
REPOSITORY = {
    "delta_channel_history": ("aget_delta_channel_history",
                              test_delta_channel_history.run_delta_channel_history_tests),
    "delta_channel_reconstruction": (
        "aput", test_delta_channel_reconstruction.run_delta_channel_reconstruction_tests)}


@pytest.mark.engines("moto", "local")
def test_the_saver_passes_the_repository_s_delta_channel_capabilities(
        backend: str | None) -> None:
    """Both are detected (the saver overrides what detects them) and every test of each
    passes, on moto and DynamoDB Local."""
    async def run() -> dict[str, tuple[int, int, list[str]]]:
        saver = Saver(agents, scope={"tenant_id": "t1"})
        return {name: await runner(saver) for name, (method, runner) in REPOSITORY.items()
                if _is_overridden(Saver, method)}

    with use_tables(agents, endpoint_url=backend, name_suffix=worker_suffix()):
        results = asyncio.run(run())
    print(results)  # (the closing note's figures: pytest -s)
    assert set(results) == set(REPOSITORY)
    assert all(passed > 0 and not failed for passed, failed, _ in results.values()), results
