"""dynaorm for agents: a Model Context Protocol server made from a table's model
(extra ``dynaorm[mcp]``, the official ``mcp`` SDK). ``dynaorm.mcp.server(table, ...)``
returns it; ``dynaorm mcp MODULE:table`` runs it over stdio or streamable HTTP. See the
guide "dynaorm for agents"."""

from dynaorm.mcp.server import MODEL_URI, server
from dynaorm.mcp.tools import Tool, ToolError, tools_of

__all__ = ["MODEL_URI", "Tool", "ToolError", "server", "tools_of"]
