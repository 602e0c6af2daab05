"""The MCP stdio shim, driven by the official ``mcp`` SDK's own stdio client against a real daemon."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from mempal.mcp_server import MEMORY_PROTOCOL, TOOLS
from mempald.features.cowork import claude_dir_name
from tests.conftest import FORMATS, REPO, Daemon
from tests.integration.test_skeleton import assistant_line, user_line

pytestmark = pytest.mark.anyio
SHORT = FORMATS / "claude_code" / "short_session_v2.1.38.jsonl"
Session = tuple[ClientSession, types.InitializeResult]


@asynccontextmanager
async def shim(env: dict[str, str], cwd: Path, client: str) -> AsyncIterator[Session]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "mempal.mcp_server"], cwd=str(cwd),
                                   env={**env, "PYTHONPATH": str(REPO)})
    async with stdio_client(params, errlog=sys.stderr) as (read, write), ClientSession(
            read, write, client_info=types.Implementation(name=client, version="1.0")) as session:
        init = await session.initialize()
        yield session, init


def text_of(res: types.CallToolResult) -> str:
    return "\n".join(c.text for c in res.content if isinstance(c, types.TextContent))


def booleans_in(schema: Any) -> list[str]:
    found: list[str] = []
    if isinstance(schema, dict):
        t = schema.get("type")
        if t == "boolean" or (isinstance(t, list) and "boolean" in t):
            found.append(json.dumps(schema))
        for v in schema.values():
            found += booleans_in(v)
    elif isinstance(schema, list):
        for v in schema:
            found += booleans_in(v)
    return found


@pytest.mark.timeout(300)
async def test_shim_against_a_real_daemon(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    if not SHORT.is_file():
        pytest.skip(f"the shared format fixtures are not at {FORMATS}")
    proj = tmp_path / "acme"
    proj.mkdir()
    folder = home / ".claude" / "projects" / "-home-marco-projects-spotter"
    folder.mkdir()
    shutil.copy(SHORT, folder / "55604662-cf2a-4331-851a-ec234028f8ca.jsonl")
    # Claude's live session in the project, for the Codex side to peek at.
    live = home / ".claude" / "projects" / claude_dir_name(str(proj))
    live.mkdir()
    sid = "abcdabcd-2222-3333-4444-555555555555"
    (live / f"{sid}.jsonl").write_text(
        user_line(sid, str(proj), "Split the billing module into invoices and payments", "pu-1",
                  "2026-03-01T10:00:00.000Z") + "\n"
        + assistant_line(sid, str(proj), "Done: billing/invoices.py and billing/payments.py.", "pa-1", "pu-1",
                         "2026-03-01T10:00:05.000Z") + "\n")
    daemon.start()
    daemon.idle()

    async with shim(daemon.env, proj, "claude-code") as (session, init):
        assert init.instructions == MEMORY_PROTOCOL
        assert "VERIFY BEFORE ASSERTING" in init.instructions and "cowork_push" in init.instructions
        assert init.serverInfo.name == "mempal"
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert {"status", "search", "ingest", "delete", "wake_up", "list_wings", "list_rooms", "taxonomy", "kg",
                "tunnels", "peek_partner", "cowork_push", "fact_check"} <= set(tools)
        for tool in tools.values():
            assert tool.description and len(tool.description) > 30, tool.name
            assert booleans_in(tool.inputSchema) == [], tool.name

        status = await session.call_tool("status", {})
        assert not status.isError and '"drawers"' in text_of(status)

        found = await session.call_tool("search", {"query": "mix phx.server doesnt seem to start", "limit": 3})
        assert not found.isError
        assert "[drawer " in text_of(found) and "short_session" not in text_of(found)
        assert "55604662-cf2a-4331-851a-ec234028f8ca.jsonl" in text_of(found)

        saved = await session.call_tool("ingest", {
            "text": "Decision: the flamingo service stores money as integer cents, because floats lost pennies "
                    "in the March invoices.", "wing": "acme", "room": "decisions", "memory_type": "decision",
            "importance": 4, "dry_run": "false"})
        assert not saved.isError, text_of(saved)
        body = json.loads(text_of(saved))
        assert body["drawer_ids"] and body["wing"] == "acme"

        def found_it() -> bool:
            hits = daemon.call("search", {"query": "flamingo money integer cents", "limit": 3})["hits"]
            return bool(hits) and "integer cents" in hits[0]["text"] and hits[0]["agent"] == "claude"

        daemon.wait_for(found_it, timeout=30)

        pushed = await session.call_tool("cowork_push", {"text": "Please review the cents migration."})
        assert not pushed.isError, text_of(pushed)
        self_push = await session.call_tool("cowork_push", {"text": "me", "to": "claude"})
        assert self_push.isError and "itself" in text_of(self_push)
        bad = await session.call_tool("search", {"query": "x", "limit": "lots"})
        assert bad.isError

    # The partner (identified as Codex) drains its inbox and peeks at Claude's live session.
    async with shim(daemon.env, proj, "codex-mcp-client") as (session, _init):
        drained = await session.call_tool("cowork_drain", {})
        assert not drained.isError
        msgs = json.loads(text_of(drained))["messages"]
        assert [(m["from"], m["text"]) for m in msgs] == [("claude", "Please review the cents migration.")]
        assert json.loads(text_of(await session.call_tool("cowork_drain", {})))["messages"] == []
        peek = await session.call_tool("peek_partner", {"n": 3})
        assert not peek.isError, text_of(peek)
        assert "Split the billing module" in text_of(peek) and "billing/payments.py" in text_of(peek)


@pytest.mark.timeout(120)
async def test_shim_answers_with_the_fix_when_the_daemon_is_down(home: Path, tmp_path: Path) -> None:
    t0 = time.perf_counter()
    async with shim(dict(os.environ), tmp_path, "claude-code") as (session, init):
        started = time.perf_counter() - t0
        assert init.instructions
        tools = (await session.list_tools()).tools
        assert {t.name for t in tools} == {t.name for t in TOOLS}
        for name, args in (("status", {}), ("search", {"query": "anything"}), ("cowork_push", {"text": "hi"})):
            res = await session.call_tool(name, args)
            assert res.isError
            assert "mempald is not running" in text_of(res) and "start it with `mempald`" in text_of(res)
            assert text_of(res).count("\n") == 0
        assert (await session.call_tool("status", {})).isError  # still alive after errors
    print(f"\nMCP shim start + initialize: {started * 1000:.0f} ms")
