"""``dynaorm mcp`` over stdio answers ``initialize`` before it loads the ``mcp`` SDK
(issue 61's start-up budget): the early answer is the SDK's own, which the server then
computes too and compares (a difference is reported on stderr), for every protocol
version a client may ask, pipelined or not; what is not a plain ``initialize`` is left to
the SDK. No table is read: the endpoint is never called."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import mcp_types.version
import pytest

from dynaorm.mcp import cli
from tests.support.mcp_client import ROOT

pytestmark = pytest.mark.sync_only


def _initialize(version: str, rid: int | str = 1, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}, **params}}


def _serve(*messages: dict[str, Any] | str, scope: bool = True,
           answered: int | None = None) -> tuple[list[Any], str]:
    """The answers ``dynaorm mcp`` gives to ``messages`` (sent at once, pipelined; stdin
    closed once each request is answered), and its stderr."""
    lines = "".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in messages)
    requests = answered if answered is not None else sum(
        1 for m in messages if not isinstance(m, dict) or "id" in m)
    args = ["--scope", "tenant_id", "--tenant", "t1"] if scope else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "dynaorm", "mcp", "tests.support.tenant_models:tenants",
         "--endpoint-url", "http://127.0.0.1:9", *args], cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT), "AWS_REGION": "us-east-1"})
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(lines.encode())
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(requests)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.stdout.read() == b""  # (nothing more: no second answer to anything)
    return answers, proc.stderr.read().decode()


def test_the_versions_are_the_sdks() -> None:
    assert cli.HANDSHAKE_VERSIONS == mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS
    assert cli.HANDSHAKE_VERSIONS[-1] == mcp_types.version.LATEST_HANDSHAKE_VERSION


@pytest.mark.parametrize("version", [*cli.HANDSHAKE_VERSIONS, "1999-01-01", "2026-07-28"])
def test_the_early_answer_is_the_sdks(version: str) -> None:
    answers, err = _serve(_initialize(version, "a-1"),
                          {"jsonrpc": "2.0", "method": "notifications/initialized"},
                          {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert "otherwise" not in err, err  # (the SDK's own answer was the same)
    first, listed = answers  # (one answer to initialize: the SDK's own was dropped)
    assert first["id"] == "a-1" and first["result"]["serverInfo"]["name"] == "dynaorm-tenants"
    expected = version if version in cli.HANDSHAKE_VERSIONS else cli.HANDSHAKE_VERSIONS[-1]
    assert first["result"]["protocolVersion"] == expected
    assert "held to one tenant (tenant_id)" in first["result"]["instructions"]
    assert listed["id"] == 2 and "get_customer" in {t["name"] for t in
                                                    listed["result"]["tools"]}


def test_what_is_not_a_plain_initialize_is_the_sdks_to_answer() -> None:
    """Not JSON, a request before initialize, an initialize without client info or
    with a ``_meta``: no early answer; each gets the SDK's (an error where it refuses),
    and the connection still initializes after them."""
    early = cli.early_answer
    name, said = "dynaorm-x", "s"
    assert early(b"not json\n", name, said) is None
    assert early(json.dumps(_initialize("2025-06-18", True)).encode(), name, said) is None
    assert early(json.dumps({**_initialize("2025-06-18"), "params": []}).encode(),
                 name, said) is None
    bare = _initialize("2025-06-18")
    del bare["params"]["clientInfo"]
    assert early(json.dumps(bare).encode(), name, said) is None
    assert early(json.dumps(_initialize("2025-06-18", _meta={"k": 1})).encode(), name,
                 said) is None
    assert early(json.dumps(_initialize("2025-06-18", capabilities={"roots": 5})).encode(),
                 name, said) is None
    answers, err = _serve(bare, _initialize("2025-06-18", 2),
                          {"jsonrpc": "2.0", "method": "notifications/initialized"},
                          {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, scope=False)
    by_id = {a.get("id"): a for a in answers}
    assert "otherwise" not in err and len(answers) == 3
    assert "error" in by_id[1] and "Traceback" not in json.dumps(by_id[1])
    assert by_id[2]["result"]["protocolVersion"] == "2025-06-18"
    assert "save_memo" not in {t["name"] for t in by_id[3]["result"]["tools"]}
    answers, _ = _serve({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, scope=False)
    assert [a["id"] for a in answers] == [9] and "error" in answers[0]  # (not initialized)


# --- red team (redio): an early answer only where the SDK answers the same ---------------

_REFUSED_PARAMS = [  # (each a plain-looking initialize the SDK refuses with an error)
    {"capabilities": {"experimental": {"x": 1}}},
    {"capabilities": {"roots": {"listChanged": [1]}}},
    {"capabilities": {"sampling": {"context": 5}}},
    {"clientInfo": {"name": "t", "version": "0", "icons": 5}},
    {"clientInfo": {"name": "t", "version": "0", "title": 5}},
]


@pytest.mark.parametrize("params", _REFUSED_PARAMS)
def test_an_initialize_the_sdk_refuses_gets_one_answer_its_error(params: dict[str, Any]
                                                                 ) -> None:
    """The early answer took a shape the SDK refuses: the client got a result and then
    the SDK's error to the same id (two answers to one request)."""
    answers, _ = _serve(_initialize("2025-06-18", 1, **params),
                        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert [a["id"] for a in answers] == [1, 2]
    assert "error" in answers[0] and "result" not in answers[0]


@pytest.mark.parametrize("line", [
    b"\xef\xbb\xbf" + json.dumps(_initialize("2025-06-18")).encode(),  # (a BOM)
    json.dumps(_initialize("2025-06-18", "\ud800")).encode(),  # (a lone surrogate)
    json.dumps({**_initialize("2025-06-18"), "error": {"code": 1, "message": "m"}}
               ).encode(),  # (the SDK reads it as an error answer, not a request)
])
def test_a_first_line_the_sdk_cannot_read_gets_no_early_answer(line: bytes) -> None:
    """An initialize ``json`` reads but the SDK's parser does not: it was answered early,
    then the SDK dropped the line, never answered it, and every request after it was held
    for that answer (the connection hung)."""
    assert cli.early_answer(line, "dynaorm-x", "s") is None
    answers, _ = _serve(line.decode("utf-8", "surrogatepass"),
                        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, answered=1)
    assert [a["id"] for a in answers] == [2]  # (the SDK's: not initialized, yet answered)
