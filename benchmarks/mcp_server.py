#!/usr/bin/env python
"""The MCP server's costs (issues 61 and 70's budgets):

1. **A get tool call**, against the same ``Session.get`` plus the JSON encoding of its
   result done directly (CPU a call). The DynamoDB endpoint is the canned one of
   ``benchmarks/canned_http.py`` (a child process: its CPU is not counted), so the figures
   are dynaorm's and the SDK's own. Issue 70's budget: over the SDK's in-memory transport
   (``mcp.Client(server)``), the call's CPU beyond the SDK's floor (a tool that does
   nothing, same transport, measured in the same run) is at most 1.25x ``session.get`` +
   JSON, with ``threads=False`` and with the default worker thread; beside it, the same
   figure of an ideal adapter (the get + JSON as the tool, nothing else). The server
   process's CPU a call over stdio (``dynaorm mcp``, read from ``/proc``) is shown too
   (issue 61's figure).
2. **Start-up over stdio**: the wall time from starting ``dynaorm mcp MODULE:table`` to its
   answer to ``initialize`` (median of ``--starts``; budget: 1 s), and to its answer to
   the ``tools/list`` a client sends next (the server answers ``initialize`` before it
   loads the ``mcp`` SDK, so this one waits for the SDK's import).

``--before DIR`` measures figure 1 of another checkout too (``DIR``'s dynaorm, this
file's measurement: a child process per round, rounds taken in turn with this one's) and
prints the two side by side.

Usage::

    .venv/bin/python benchmarks/mcp_server.py [--calls 300] [--starts 5] [--json PATH]
                                              [--before DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: the checkout whose dynaorm is measured (``--before`` runs this file on another one)
ROOT = Path(os.environ.get("DYNAORM_BENCH_ROOT") or HERE.parent).resolve()
# (its directory off the path: the benchmarks must not shadow an installed package)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(ROOT))

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def tool_call_cpu(calls: int, rounds: int = 5) -> dict[str, float]:
    """CPU microseconds per call, each the least of ``rounds`` rounds taken in turn (the
    machine's load moves them all alike): the session's get + JSON; the get tool call of
    ``dynaorm.mcp.server`` with ``threads=False`` and ``True``; the SDK's floor (a tool
    that does nothing, same transport); and an ideal adapter (a hand-written SDK server
    whose tool is the session's get + JSON and nothing else, on the event loop): what the
    budget's figure would be for a server of no cost of its own on this machine (the get
    costs more between SDK calls than in a tight loop of gets)."""
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

    with canned_endpoint() as endpoint:
        app, user, _, _ = dynaorm_models(endpoint, "dynaorm")

        def direct() -> str:
            found = Session(app).get(user, user_id="u1")
            assert found is not None
            return json.dumps({"item": found.model_dump(mode="json")}, separators=(",", ":"))

        servers = {"tool_call_us": dynaorm.mcp.server(app, threads=False),
                   "threaded_us": dynaorm.mcp.server(app),
                   "sdk_floor_us": _noop_server(None),
                   "ideal_us": _noop_server(direct)}

        async def go() -> dict[str, float]:
            best: dict[str, float] = {}
            async with contextlib.AsyncExitStack() as stack:
                clients = {name: await stack.enter_async_context(Client(server))
                           for name, server in servers.items()}
                for _ in range(20):
                    direct()
                    for client in clients.values():
                        await client.call_tool("get_user", {"user_id": "u1"})
                for _ in range(rounds):
                    begin = time.process_time()
                    for _ in range(calls):
                        direct()
                    took = (time.process_time() - begin) / calls * 1e6
                    best["session_get_json_us"] = min(best.get("session_get_json_us", took),
                                                      took)
                    for name, client in clients.items():
                        begin = time.process_time()
                        for _ in range(calls):
                            result = await client.call_tool("get_user", {"user_id": "u1"})
                            assert not result.is_error, result.content
                        took = (time.process_time() - begin) / calls * 1e6
                        best[name] = min(best.get(name, took), took)
            return best
        figures = asyncio.run(go())
    base, floor = figures["session_get_json_us"], figures["sdk_floor_us"]
    figures["ratio"] = figures["tool_call_us"] / base
    for name, key in (("budget_ratio", "tool_call_us"), ("budget_ratio_threaded", "threaded_us"),
                      ("budget_ratio_ideal", "ideal_us")):
        figures[name] = (figures[key] - floor) / base
    return figures


def _noop_server(tool: Any) -> Any:
    """An SDK server of one tool ``get_user`` answering ``tool()``'s JSON text (``None``:
    a fixed small item; the SDK's own floor), as a plain result dict."""
    from mcp.server import Server
    from mcp_types import ListToolsResult, Tool

    async def list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=[Tool(name="get_user", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: Any) -> dict[str, Any]:
        text = '{"item":{"user_id":"u1"}}' if tool is None else tool()
        return {"content": [{"type": "text", "text": text}],
                "structuredContent": json.loads(text), "isError": False,
                "resultType": "complete"}

    return Server("floor", on_list_tools=list_tools, on_call_tool=call_tool)


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


def _child(calls: int, rounds: int, root: Path) -> dict[str, float]:
    """Figure 1 of the checkout ``root`` (this file run there: its dynaorm imported)."""
    found = subprocess.run(
        [sys.executable, __file__, "--calls", str(calls), "--rounds", str(rounds),
         "--calls-only"], env={**os.environ, "DYNAORM_BENCH_ROOT": str(root)},
        cwd=root, check=True, capture_output=True, text=True)
    figures: dict[str, float] = json.loads(found.stdout.splitlines()[-1])
    return figures


def before_and_after(calls: int, before: Path, turns: int = 3) -> dict[str, Any]:
    """Figure 1 of ``before`` and of this checkout, taken in turn ``turns`` times (each
    figure the least seen), printed side by side."""
    best: dict[str, dict[str, float]] = {"before": {}, "after": {}}
    for _ in range(turns):
        for name, root in (("before", before), ("after", ROOT)):
            for key, value in _child(calls, 2, root).items():
                best[name][key] = min(best[name].get(key, value), value)
    for f in best.values():  # (ratios of the least figures)
        base, floor = f["session_get_json_us"], f["sdk_floor_us"]
        for name, key in (("budget_ratio", "tool_call_us"),
                          ("budget_ratio_threaded", "threaded_us"),
                          ("budget_ratio_ideal", "ideal_us")):
            f[name] = (f[key] - floor) / base
    print(f"{'':38}{'before':>10}{'after':>10}  (us CPU a call; {before} vs {ROOT})")
    for key in ("session_get_json_us", "sdk_floor_us", "tool_call_us", "threaded_us",
                "ideal_us", "budget_ratio", "budget_ratio_threaded", "budget_ratio_ideal"):
        print(f"{key:38}{best['before'][key]:10.2f}{best['after'][key]:10.2f}")
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--before", type=Path, help="another checkout to measure too")
    parser.add_argument("--calls-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.calls_only:  # (a child of --before: figure 1 as JSON)
        print(json.dumps(tool_call_cpu(args.calls, args.rounds)))
        return 0
    if args.before:
        compared = before_and_after(args.calls, args.before.resolve())
        if args.json:
            args.json.write_text(json.dumps(compared, indent=1))
        return 0
    figures = {**tool_call_cpu(args.calls, args.rounds), **stdio_start(args.starts)}
    figures["stdio_server_us"] = stdio_server_cpu(args.calls)
    figures["server_ratio"] = figures["stdio_server_us"] / figures["session_get_json_us"]
    load = os.getloadavg()[0]
    f = figures
    print(f"session.get + JSON: {f['session_get_json_us']:.0f} us CPU a call; the SDK's "
          f"floor (a tool that does nothing, in memory): {f['sdk_floor_us']:.0f} us")
    for label, key, ratio in (("threads=False", "tool_call_us", "budget_ratio"),
                              ("threads=True, the default", "threaded_us",
                               "budget_ratio_threaded"),
                              ("ideal adapter: the get + JSON alone", "ideal_us",
                               "budget_ratio_ideal")):
        print(f"get tool call ({label}): {f[key]:.0f} us CPU a call; beyond the floor "
              f"{f[key] - f['sdk_floor_us']:.0f} us = {f[ratio]:.2f}x session.get+JSON "
              f"(budget 1.25x)")
    print(f"get tool call, the server's CPU (dynaorm mcp over stdio): "
          f"{f['stdio_server_us']:.0f} us a call ({f['server_ratio']:.2f}x session.get+JSON)")
    print(f"stdio initialize: {f['initialize_s_median']:.3f} s median, "
          f"{f['initialize_s_max']:.3f} s max (budget 1 s); the tools/list after it: "
          f"{f['tools_list_s_median']:.3f} s median")
    f["load_1min"] = load
    print(f"side by side (load {load:.1f}): get tool call beyond the SDK floor "
          f"{f['budget_ratio']:.2f}x / {f['budget_ratio_threaded']:.2f}x threaded "
          f"(budget 1.25x; ideal adapter {f['budget_ratio_ideal']:.2f}x) | initialize "
          f"{f['initialize_s_median']:.3f} s (budget 1 s)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    met = max(f["budget_ratio"], f["budget_ratio_threaded"]) <= 1.25
    return 0 if met and f["initialize_s_median"] <= 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
