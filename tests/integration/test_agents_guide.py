"""The guide "dynaorm for agents" (docs/guide/agents.md) does what it says: its agent store
and its agent, as written there, run with the SDK's own client on the embedded default
(DynamoDB Local has no vector index, which the store's memories need), and its host
configuration is a ``dynaorm mcp`` command the command line accepts."""

from __future__ import annotations

import json
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynaorm.cli.main import build_parser
from dynaorm.testing import moto_backend, use_tables

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "agents.md"


def blocks() -> dict[str, str]:
    return dict(re.findall(r"<!-- agents: (.+?) -->\n```(?:python|json)\n(.*?)```",
                           GUIDE.read_text(), re.S))


def test_the_host_configuration_is_a_command_the_cli_accepts() -> None:
    config = json.loads(blocks()["config"])
    server = config["mcpServers"]["agent-store"]
    assert server["command"] == "dynaorm"
    args = build_parser().parse_args(server["args"])
    assert (args.command, args.table, args.writes, args.scope, args.tenant) == (
        "mcp", "myapp.store:agents", "Conversation,Memory", "user_id", "u1")


@pytest.fixture
def namespace() -> Iterator[dict[str, Any]]:
    """The store block as the module ``agents_guide_store`` (as an application has it)."""
    module = types.ModuleType("agents_guide_store")
    sys.modules[module.__name__] = module
    try:
        exec(compile(blocks()["store"], f"{GUIDE}:store", "exec"), module.__dict__)
        with moto_backend(), use_tables(module.agents):
            yield dict(module.__dict__)
    finally:
        del sys.modules[module.__name__]


def test_the_agent_store_recipe_runs(namespace: dict[str, Any],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(blocks()["agent"], f"{GUIDE}:agent", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "'version': 2" in printed and "'recalled': ['prefers the train']" in printed
    assert "'stale': \"ConcurrentModificationError: Conversation" in printed
    assert "expected version 1 (an If-Match), but version 2 is stored" in printed
    from dynaorm import Session

    s = Session(namespace["agents"])
    conv = s.get(namespace["Conversation"], user_id="u1", conversation_id="c1")
    assert conv is not None and conv.turns == ["book a train to Lyon"]
    memories = s.query(namespace["Memory"], user_id="u1").all()
    assert [m.text for m in memories] == ["prefers the train", "is vegetarian"]
    assert all(m.expires is not None for m in memories)
