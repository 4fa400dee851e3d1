#!/usr/bin/env python
"""The MCP server's costs (issue 61's budgets):

1. **A get tool call**, against the same ``Session.get`` plus the JSON encoding of its
   result done directly (client CPU a call). The DynamoDB endpoint is the canned one of
   ``benchmarks/canned_http.py`` (a child process: its CPU is not counted), so the figures
   are dynaorm's and the SDK's own. The server's own CPU a call is measured on
   ``dynaorm mcp`` over stdio (the server process's CPU over ``--calls`` calls sent one
   after another, read from ``/proc``; the CLI's default worker thread): that is the
   ratio the budget holds, at most 2x. Over the SDK's in-memory transport
   (``mcp.Client(server)``) the process CPU a call counts the client's half of the SDK
   too (both in this process): shown beside it, with ``threads=False`` and ``True``.
2. **Start-up over stdio**: the wall time from starting ``dynaorm mcp MODULE:table`` to its
   answer to ``initialize`` (median of ``--starts``; budget: 1 s), and to its answer to
   the ``tools/list`` a client sends next (the server answers ``initialize`` before it
   loads the ``mcp`` SDK, so this one waits for the SDK's import).

Usage::

    .venv/bin/python benchmarks/mcp_server.py [--calls 300] [--starts 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# (its directory off the path: the benchmarks must not shadow an installed package)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def tool_call_cpu(calls: int) -> dict[str, float]:
    """CPU microseconds per call: the session's get + JSON, and the tool call."""
    import importlib.util

    from mcp import Client

    spec = importlib.util.spec_from_file_location("canned_http", HERE / "canned_http.py")
    assert spec is not None and spec.loader is not None
    canned = importlib.util.module_from_spec(spec)
    sys.modules["canned_http"] = canned
    spec.loader.exec_module(canned)
    canned_endpoint, dynaorm_models = canned.canned_endpoint, canned.dynaorm_models

    import dynaorm.mcp
    from dynaorm import Session
    from dynaorm.mcp.tools import dump

    with canned_endpoint() as endpoint:
        app, user, _, _ = dynaorm_models(endpoint, "dynaorm")

        def direct() -> None:
            found = Session(app).get(user, user_id="u1")
            assert found is not None
            json.dumps({"item": dump(found)}, separators=(",", ":"))

        for _ in range(20):
            direct()
        start = time.process_time()
        for _ in range(calls):
            direct()
        session_us = (time.process_time() - start) / calls * 1e6

        async def through_mcp(server: Any) -> float:
            async with Client(server) as client:
                for _ in range(20):
                    await client.call_tool("get_user", {"user_id": "u1"})
                begin = time.process_time()
                for _ in range(calls):
                    result = await client.call_tool("get_user", {"user_id": "u1"})
                    assert not result.is_error, result.content
                return (time.process_time() - begin) / calls * 1e6
        tool_us = asyncio.run(through_mcp(dynaorm.mcp.server(app, threads=False)))
        threaded_us = asyncio.run(through_mcp(dynaorm.mcp.server(app)))
    return {"session_get_json_us": session_us, "tool_call_us": tool_us,
            "ratio": tool_us / session_us, "threaded_us": threaded_us,
            "sdk_floor_us": sdk_floor(calls)}


def _cpu_of(pid: int) -> float:
    """The CPU seconds (user + system) process ``pid`` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


_BENCH_MODULE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("canned_http", {path!r})
canned = importlib.util.module_from_spec(spec)
sys.modules["canned_http"] = canned
spec.loader.exec_module(canned)
app, *_ = canned.dynaorm_models("http://127.0.0.1:9", "dynaorm")
"""


def stdio_server_cpu(calls: int) -> float:
    """The server process's CPU microseconds a get tool call over stdio."""
    import importlib.util
    import tempfile

    spec = importlib.util.spec_from_file_location("canned_http", HERE / "canned_http.py")
    assert spec is not None and spec.loader is not None
    canned = importlib.util.module_from_spec(spec)
    sys.modules["canned_http"] = canned
    spec.loader.exec_module(canned)
    with tempfile.TemporaryDirectory() as tmp, canned.canned_endpoint() as endpoint:
        Path(tmp, "mcp_bench_app.py").write_text(
            _BENCH_MODULE.format(path=str(HERE / "canned_http.py")))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, str(ROOT)]),
               "AWS_REGION": "us-east-1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "dynaorm", "mcp", "mcp_bench_app:app",
             "--endpoint-url", endpoint], cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout

        def send(*messages: dict[str, Any]) -> None:
            stdin.write("".join(json.dumps(m) + "\n" for m in messages).encode())
            stdin.flush()

        def get(n: int) -> dict[str, Any]:
            send({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                  "params": {"name": "get_user", "arguments": {"user_id": "u1"}}})
            answer: dict[str, Any] = json.loads(stdout.readline())
            assert answer.get("id") == n and not answer["result"].get("isError"), answer
            return answer
        send(INITIALIZE)
        stdout.readline()
        send(INITIALIZED)
        for n in range(10, 40):
            get(n)
        begin = _cpu_of(proc.pid)
        for n in range(100, 100 + calls):
            get(n)
        used = _cpu_of(proc.pid) - begin
        stdin.close()
        proc.wait(timeout=10)
    return used / calls * 1e6


def sdk_floor(calls: int) -> float:
    """CPU microseconds a call of a tool that does nothing costs through the same SDK
    server and in-memory client: the transport's and dispatch's own share."""
    import mcp_types as types
    from mcp import Client
    from mcp.server import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(
            name="noop", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        result = {"item": {"user_id": "u1"}}
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(result))],
                                    structured_content=result)

    server: Server[Any] = Server("floor", on_list_tools=list_tools, on_call_tool=call_tool)

    async def go() -> float:
        async with Client(server) as client:
            for _ in range(20):
                await client.call_tool("noop", {})
            begin = time.process_time()
            for _ in range(calls):
                await client.call_tool("noop", {})
            return (time.process_time() - begin) / calls * 1e6
    return asyncio.run(go())


def stdio_start(starts: int) -> dict[str, float]:
    """Wall seconds from starting ``dynaorm mcp`` to its ``initialize`` answer, and to
    its answer to the ``tools/list`` sent right after."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AWS_REGION": "us-east-1"}
    times, listed = [], []
    for _ in range(starts):
        begin = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "dynaorm", "mcp", "tests.support.tenant_models:tenants",
             "--endpoint-url", "http://127.0.0.1:9"], cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        answer: dict[str, Any] = json.loads(proc.stdout.readline())
        times.append(time.perf_counter() - begin)
        assert answer.get("id") == 1 and "result" in answer, answer
        proc.stdin.write((json.dumps(INITIALIZED) + "\n" + json.dumps(LIST_TOOLS) + "\n"
                          ).encode())
        proc.stdin.flush()
        tools: dict[str, Any] = json.loads(proc.stdout.readline())
        listed.append(time.perf_counter() - begin)
        assert tools.get("id") == 2 and tools["result"]["tools"], tools
        proc.stdin.close()
        proc.wait(timeout=10)
    return {"initialize_s_median": statistics.median(times), "initialize_s_max": max(times),
            "tools_list_s_median": statistics.median(listed)}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = {**tool_call_cpu(args.calls), **stdio_start(args.starts)}
    figures["stdio_server_us"] = stdio_server_cpu(args.calls)
    figures["server_ratio"] = figures["stdio_server_us"] / figures["session_get_json_us"]
    load = os.getloadavg()[0]
    print(f"session.get + JSON: {figures['session_get_json_us']:.0f} us CPU a call")
    print(f"get tool call, the server's CPU (dynaorm mcp over stdio): "
          f"{figures['stdio_server_us']:.0f} us a call ({figures['server_ratio']:.2f}x; "
          f"budget 2x)")
    print(f"get tool call (in memory, client and server, threads=False): "
          f"{figures['tool_call_us']:.0f} us CPU a call ({figures['ratio']:.2f}x)")
    print(f"get tool call (in memory, threads=True, the default): "
          f"{figures['threaded_us']:.0f} us CPU a call")
    print(f"  of which the SDK's floor (a tool that does nothing, same transport): "
          f"{figures['sdk_floor_us']:.0f} us")
    print(f"stdio initialize: {figures['initialize_s_median']:.3f} s median, "
          f"{figures['initialize_s_max']:.3f} s max (budget 1 s); the tools/list after it: "
          f"{figures['tools_list_s_median']:.3f} s median")
    figures["load_1min"] = load
    print(f"side by side (load {load:.1f}): initialize {figures['initialize_s_median']:.3f} s "
          f"(budget 1 s) | get tool call, server {figures['server_ratio']:.2f}x "
          f"session.get+JSON (budget 2x)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0 if figures["server_ratio"] <= 2 and figures["initialize_s_median"] <= 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
