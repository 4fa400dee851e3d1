"""Tools for an agent, made from the model: ``dynaorm.mcp.server(table, ...)`` is a Model
Context Protocol server (the official ``mcp`` SDK) whose tools are the table's access
patterns. Here the SDK's own client drives it in memory, as an agent host would over
stdio (``dynaorm mcp examples.agent_tools:desk --writes Ticket --scope tenant_id
--tenant acme``): it lists the tools, opens and updates a ticket (the version as If-Match),
reads a page, and tries to step outside its tenant.

Run: ``python examples/agent_tools.py [--endpoint-url URL]``
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from _support import run, show
from mcp import Client

import dynaorm.mcp
from dynaorm import Entity, Table

desk = Table("dynaorm-example-agent-tools")


class Ticket(Entity):
    class Meta:
        table = desk
        pk = "TENANT#{tenant_id}"
        sk = "TICKET#{ticket_id}"
        versioned = True

    tenant_id: str
    ticket_id: str
    subject: str
    status: str = "open"


async def agent() -> list[tuple[str, Any]]:
    """What an agent does with the tools, one call after another."""
    server = dynaorm.mcp.server(desk, writes=["Ticket"], scope={"tenant_id": "acme"})
    said: list[tuple[str, Any]] = []
    async with Client(server) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        said.append(("tools", tools))
        calls: list[tuple[str, dict[str, Any]]] = [
                ("save_ticket", {"item": {"ticket_id": "T1", "subject": "refund"}}),
                ("save_ticket", {"item": {"ticket_id": "T2", "subject": "login"}}),
                ("update_ticket", {"ticket_id": "T1", "set": {"status": "closed"},
                                   "version": 1}),
                ("update_ticket", {"ticket_id": "T1", "set": {"status": "open"},
                                   "version": 1}),
                ("query_ticket", {"limit": 10}),
                ("get_ticket", {"tenant_id": "globex", "ticket_id": "T1"})]
        for name, args in calls:
            result = await client.call_tool(name, args)
            text = "".join(getattr(c, "text", "") for c in result.content)
            said.append((f"{name} {json.dumps(args)}",
                         f"error: {text}" if result.is_error else result.structured_content))
    return said


def main() -> None:
    with run(desk, "an MCP server from the model, driven by the SDK's client"):
        for code, answer in asyncio.run(agent()):
            show(code, answer if isinstance(answer, list) else [answer], str)


if __name__ == "__main__":
    main()
