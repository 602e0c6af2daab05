"""The MCP stdio shim, driven by the official ``mcp`` SDK's own stdio client against a real daemon."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

from mempal.mcp_render import DEFAULT_BUDGET
from mempal.mcp_server import MEMORY_PROTOCOL, TOOLS
from mempal.mcp_tools import TOOLS_BY_NAME
from mempal.paths import socket_path
from mempal.tokens import estimate
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


MEMPAL = Path(sys.executable).parent / "mempal"  # the installed `mempal` command, as an MCP host starts it


@asynccontextmanager
async def mempal_mcp(cwd: Path, env: dict[str, str] | None, *args: str,
                     client: str = "claude-code") -> AsyncIterator[Session]:
    """``mempal mcp`` under the SDK's stdio client; ``env=None`` is the SDK's default environment (HOME,
    LOGNAME, PATH, SHELL, TERM and USER only, as MCP hosts start servers)."""
    if not MEMPAL.is_file():
        pytest.skip(f"the mempal command is not installed beside {sys.executable}")
    params = StdioServerParameters(command=str(MEMPAL), args=["mcp", *args], cwd=str(cwd), env=env)
    async with stdio_client(params, errlog=sys.stderr) as (read, write), ClientSession(
            read, write, client_info=types.Implementation(name=client, version="1.0")) as session:
        init = await session.initialize()
        yield session, init


def text_of(res: types.CallToolResult) -> str:
    return "\n".join(c.text for c in res.content if isinstance(c, types.TextContent))


PLAIN_TYPES = {"string", "integer", "number", "boolean", "array", "object"}
SUBSCHEMA_KEYS = ("items", "anyOf", "oneOf", "allOf", "not", "additionalItems", "contains")


def host_schema_problems(schema: Any, where: str = "inputSchema") -> list[str]:
    """What a host's tool-schema validator refuses (Claude Code rejects a server's whole tool list for one bad
    schema): the top is an object schema with ``type: object`` and ``properties``; no subschema is a boolean
    (``true`` / ``false``) and none uses ``$ref`` / ``$defs``; every ``type`` is one plain type name; an enum's
    values are of that type."""
    problems: list[str] = []
    if where == "inputSchema" and (not isinstance(schema, dict) or schema.get("type") != "object"
                                   or not isinstance(schema.get("properties"), dict)):
        return [f"{where}: not an object schema with type object and properties"]
    if isinstance(schema, bool):
        return [f"{where}: a boolean schema"]
    if not isinstance(schema, dict):
        return [f"{where}: not a schema"]
    for key in ("$ref", "$defs", "definitions"):
        if key in schema:
            problems.append(f"{where}: uses {key}")
    t = schema.get("type")
    if t is not None and (not isinstance(t, str) or t not in PLAIN_TYPES):
        problems.append(f"{where}: type {t!r} is not one plain type")
    kind = {"string": str, "integer": int, "number": (int, float), "boolean": bool}.get(str(t))
    for value in schema.get("enum", []):
        if kind is not None and not isinstance(value, kind):
            problems.append(f"{where}: enum value {value!r} is not a {t}")
    for name, sub in (schema.get("properties") or {}).items():
        problems += host_schema_problems(sub, f"{where}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += host_schema_problems(schema["additionalProperties"], f"{where}.additionalProperties")
    for key in SUBSCHEMA_KEYS:
        sub = schema.get(key)
        for i, one in enumerate(sub if isinstance(sub, list) else [sub] if sub is not None else []):
            problems += host_schema_problems(one, f"{where}.{key}[{i}]")
    return problems


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
            assert host_schema_problems(tool.inputSchema) == [], tool.name

        status = await session.call_tool("status", {})
        assert not status.isError and '"drawers"' in text_of(status)

        found = await session.call_tool("search", {"query": "mix phx.server doesnt seem to start", "limit": 3})
        assert not found.isError
        assert "[drawer " in text_of(found) and "short_session" not in text_of(found)
        assert "55604662-cf2a-4331-851a-ec234028f8ca.jsonl" in text_of(found)
        assert text_of(found).split("\n", 1)[0].endswith("tokens (format \"index\" lists hits in about 60 tokens each)")

        # index first, then the whole drawer, then its place in the session: each says what it costs
        index = text_of(await session.call_tool("search", {"query": "mix phx.server doesnt seem to start",
                                                           "limit": 3, "format": "index"}))
        head, *lines = index.splitlines()
        assert head.endswith(" tokens") and "`get` the ones worth reading" in head and 1 <= len(lines) <= 3
        drawer = lines[0].split(" | ")[0]
        got = text_of(await session.call_tool("get", {"drawer_id": drawer}))
        assert got.startswith("1 drawer(s) · ") and f"[drawer {drawer}]" in got and "mix phx.server" in got
        timeline = await session.call_tool("timeline", {"drawer_id": drawer, "before": 1, "after": 1})
        assert not timeline.isError and ">> #" in text_of(timeline) and "outline (" in text_of(timeline)

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

        fact = await session.call_tool("kg", {"op": "add", "subject": "flamingo", "predicate": "stores_money_as",
                                               "object": "integer cents"})
        assert not fact.isError, text_of(fact)
        read = await session.call_tool("kg_query", {"subject": "flamingo"})  # the reading half: op query
        assert not read.isError and "integer cents" in text_of(read), text_of(read)
        timeline_kg = await session.call_tool("kg_query", {"op": "timeline", "entity": "flamingo"})
        assert "stores_money_as" in text_of(timeline_kg)
        assert (await session.call_tool("kg_query", {"op": "add", "subject": "x"})).isError  # it writes nothing

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


def other_palace(daemon: Daemon, tmp_path: Path) -> Daemon:
    """A second daemon of the same user on its own data, config and runtime directories."""
    runtime = Path(tempfile.mkdtemp(prefix="mpb-"))
    env = {**daemon.env, "MEMPAL_DATA_DIR": str(tmp_path / "palace-b"), "MEMPAL_CONFIG_DIR": str(tmp_path / "cfg-b"),
           "MEMPAL_RUNTIME_DIR": str(runtime / "run")}
    return Daemon(env, tmp_path / "mempald-b.log")


def save(d: Daemon, text: str) -> None:
    d.call("ingest", {"text": text, "wing": "acme", "room": "decisions", "memory_type": "decision", "agent": "user"})
    d.wait_for(lambda: any(text[:40] in h["text"] for h in d.call("search", {"query": text, "limit": 3})["hits"]), 60)


@pytest.mark.timeout(420)
async def test_mcp_finds_its_own_daemon_in_the_sdk_default_environment_and_only_its_own(
        daemon: Daemon, home: Path, tmp_path: Path) -> None:
    other = other_palace(daemon, tmp_path)
    daemon.start()
    other.start()
    try:
        save(daemon, "Decision: the heron exporter writes parquet because csv lost the column types.")
        save(other, "Decision: the pelican gateway retries twice because the upstream drops one request in ten.")
        mine = Path(daemon.env["MEMPAL_DATA_DIR"])
        theirs = Path(other.env["MEMPAL_DATA_DIR"])
        assert json.loads((mine / "daemon.json").read_text())["socket"] == str(socket_path(daemon.env))

        # the SDK's default environment: no MEMPAL_*, no XDG_*; the data dir's pointer is found from HOME
        async with mempal_mcp(tmp_path, None) as (session, _init):
            status = await session.call_tool("status", {})
            assert not status.isError, text_of(status)
            assert json.loads(text_of(status))["data_dir"] == str(mine)
            heron = text_of(await session.call_tool("search", {"query": "heron exporter parquet", "limit": 3}))
            assert "csv lost the column types" in heron
            pelican = text_of(await session.call_tool("search", {"query": "pelican gateway retries", "limit": 3}))
            assert "upstream drops one request" not in pelican

        # the full environment of the other palace reaches the other daemon
        async with mempal_mcp(tmp_path, dict(other.env)) as (session, _init):
            assert json.loads(text_of(await session.call_tool("status", {})))["data_dir"] == str(theirs)
            found = await session.call_tool("search", {"query": "pelican gateway retries", "limit": 3})
            assert "upstream drops one request" in text_of(found)

        # a client of one palace pointed at the other's socket is refused, plainly, in one line
        crossed = {**other.env, "MEMPAL_SOCKET": str(socket_path(daemon.env))}
        async with mempal_mcp(tmp_path, crossed) as (session, _init):
            for name, args in (("status", {}), ("search", {"query": "heron"})):
                res = await session.call_tool(name, args)
                assert res.isError
                text = text_of(res)
                assert f"serves {mine}, not this client's data directory {theirs}" in text, text
                assert str(socket_path(daemon.env)) in text and text.count("\n") == 0

        # killed: its pointer and socket file stay behind; the bare client says it is not running, naming them
        daemon.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        daemon.proc.wait()  # type: ignore[union-attr]
        async with mempal_mcp(tmp_path, None) as (session, _init):
            res = await session.call_tool("search", {"query": "heron"})
            text = text_of(res)
            assert res.isError and "mempald is not running" in text and "start it with `mempald`" in text
            assert str(socket_path(daemon.env)) in text and text.count("\n") == 0
    finally:
        other.kill()
        shutil.rmtree(Path(other.env["MEMPAL_RUNTIME_DIR"]).parent, ignore_errors=True)


@pytest.mark.timeout(180)
async def test_every_tool_is_annotated_and_read_only_mode_offers_only_readers(home: Path, tmp_path: Path) -> None:
    async with shim(dict(os.environ), tmp_path, "claude-code") as (session, _init):
        listed = (await session.list_tools()).tools
    assert {t.name for t in listed} == {t.name for t in TOOLS}
    for tool in listed:
        spec = TOOLS_BY_NAME[tool.name]
        assert tool.annotations is not None, tool.name
        got = tool.annotations.model_dump(exclude_none=True)
        assert got == {"readOnlyHint": not spec.method.writes, "destructiveHint": spec.method.destructive,
                       "idempotentHint": spec.method.idempotent, "openWorldHint": False}, tool.name
    assert TOOLS_BY_NAME["delete"].annotations()["destructiveHint"] is True
    assert TOOLS_BY_NAME["get"].annotations()["readOnlyHint"] is True

    readers = {t.name for t in TOOLS if not t.method.writes}
    assert {"search", "get", "timeline", "file_context", "status", "wake_up"} <= readers
    assert not {"ingest", "delete", "cowork_push", "cowork_drain", "kg", "taxonomy"} & readers
    assert {"kg_query", "fact_check"} <= readers  # the graph can still be read
    config = Path(os.environ["MEMPAL_CONFIG_DIR"]) / "config.toml"
    for args, setting in ((("--read-only",), None), ((), "[mcp]\nread_only = true\n")):
        if setting:
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(setting)
        async with mempal_mcp(tmp_path, dict(os.environ), *args) as (session, init):
            assert init.instructions and init.instructions.startswith("This server is READ-ONLY")
            assert {t.name for t in (await session.list_tools()).tools} == readers
            refused = await session.call_tool("ingest", {"text": "x"})
            assert refused.isError and "read-only" in text_of(refused)


def test_the_tool_list_is_what_host_validators_take_and_flags_are_booleans() -> None:
    for tool in TOOLS:
        assert host_schema_problems(tool.schema) == [], tool.name
        for p in tool.method.params:
            if p.mcp and p.kind == "bool":
                assert tool.schema["properties"][p.name]["type"] == "boolean", (tool.name, p.name)
    # the checker does catch what a host refuses
    assert host_schema_problems({"type": "object", "properties": {"x": True}}) == ["inputSchema.x: a boolean schema"]
    assert host_schema_problems({"type": "object", "properties": {"x": {"$ref": "#/$defs/x"}}})
    assert host_schema_problems({"type": "object", "properties": {"x": {"type": ["string", "null"]}}})
    assert host_schema_problems({"properties": {}})


def test_tools_that_remove_data_are_annotated_destructive() -> None:
    for name in ("cowork_drain", "taxonomy", "delete", "forget"):
        ann = TOOLS_BY_NAME[name].annotations()
        assert ann["readOnlyHint"] is False and ann["destructiveHint"] is True, name


SYLLABLES = ("ka", "lo", "mi", "ten", "ru", "sa", "vel", "dor", "pi", "zan", "mor", "qu", "bel", "tis", "nor", "gar")
WORDS = [a + b for a in SYLLABLES for b in SYLLABLES]


def long_memory(i: int) -> str:
    """A long memory of its own words (search drops near-duplicates of a hit, so each must differ)."""
    import random

    words = random.Random(i).sample(WORDS, 180)
    return f"Decision {i} about the kestrel ingest worker: " + " ".join(words) + "."


@pytest.mark.timeout(420)
async def test_every_answer_stays_within_the_budget_and_names_the_rest(daemon: Daemon, tmp_path: Path) -> None:
    daemon.start()
    for i in range(16):
        daemon.call("ingest", {"text": long_memory(i), "wing": "kestrel", "room": "decisions",
                               "memory_type": "decision", "agent": "user"})
    daemon.wait_for(lambda: len(daemon.call("search", {"query": "kestrel ingest worker batches parquet",
                                                       "limit": 200, "min_score": 0})["hits"]) >= 16, 120)
    query = {"query": "kestrel ingest worker batches parquet", "limit": 200, "min_score": 0}
    every = [h["drawer_id"] for h in daemon.call("search", query)["hits"]]
    budget = 1500
    async with shim({**daemon.env, "MEMPAL_MCP_MAX_TOKENS": str(budget)}, tmp_path, "claude-code") as (session, _):
        full = text_of(await session.call_tool("search", {**query, "format": "full"}))
        assert estimate(full) <= budget and "· relevance 0." in full and "score " not in full
        shown = [line.split("[drawer ", 1)[1].split("]", 1)[0] for line in full.splitlines() if "[drawer " in line]
        assert 0 < len(shown) < len(every)
        head, tail = full.splitlines()[0], full.splitlines()[-1]
        assert head.startswith(f"{len(every)} hits, {len(shown)} shown · about ")
        assert tail.startswith(f"{len(every) - len(shown)} more hits not shown (the answer's budget is {budget} "
                               "tokens): `get` them by id: ")
        listed = tail.split(": ", 2)[2].split(" (and ")[0].split(", ")
        more = int(tail.split(" (and ")[1].split()[0]) if " (and " in tail else 0
        assert not set(shown) & set(listed) and set(shown + listed) <= set(every)  # ties may swap places
        assert len(shown) + len(listed) + more == len(every)

        got = text_of(await session.call_tool("get", {"drawer_id": listed[:12]}))  # the ids it named are real
        assert estimate(got) <= budget and f"[drawer {listed[0]}]" in got
        if "more drawers not shown" in got:
            assert got.splitlines()[-1].split(": ", 2)[2].split(", ")[0] in listed

        index = text_of(await session.call_tool("search", {**query, "format": "index"}))
        lines = index.splitlines()
        assert estimate(index) <= budget and f"(showing {len(lines) - 2} of {len(every)})" in lines[0]
        assert lines[-1].startswith(f"{len(every) - len(lines) + 2} more hits not shown")

    # the default budget: under Claude Code's 25,000-token limit, for the largest legal search
    async with shim(dict(daemon.env), tmp_path, "claude-code") as (session, _):
        full = text_of(await session.call_tool("search", {**query, "format": "full"}))
        assert estimate(full) <= DEFAULT_BUDGET < 25_000 and "more hits not shown" not in full


@pytest.mark.timeout(300)
async def test_flags_take_json_booleans_and_the_old_strings(daemon: Daemon, tmp_path: Path) -> None:
    daemon.start()
    text = "Decision: the osprey cache keeps entries for ten minutes because the upstream rate limit is low."
    async with shim(dict(daemon.env), tmp_path, "claude-code") as (session, _):
        for flag in (True, "true"):
            res = await session.call_tool("ingest", {"text": text, "wing": "osprey", "dry_run": flag})
            assert not res.isError, text_of(res)
            assert json.loads(text_of(res))["dry_run"] is True
        assert daemon.call("search", {"query": "osprey cache ten minutes", "min_score": 0})["hits"] == []
        saved = await session.call_tool("ingest", {"text": text, "wing": "osprey", "dry_run": False})
        assert not saved.isError and json.loads(text_of(saved))["drawer_ids"]
        wrong = await session.call_tool("ingest", {"text": text, "dry_run": "perhaps"})
        assert wrong.isError and "dry_run" in text_of(wrong) and "true or false" in text_of(wrong)
