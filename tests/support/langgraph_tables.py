"""A table of LangGraph's rows (``lg_agents``, a TTL attribute) and ``atb``, the fixture
that makes it fresh on the test's engine: what a Store's values and a Saver's long tasks
are written to (``integration/test_langgraph_store.py`` and ``test_langgraph_saver.py``,
which take the fixture as ``atb = langgraph_tables.atb``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dynaorm import Table
from dynaorm.testing import TestBackend, use_tables, worker_suffix

lg_agents = Table("redlg_agents", ttl="expires")


@pytest.fixture
def atb(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(lg_agents, endpoint_url=backend, name_suffix=worker_suffix()) as found:
        yield found
