"""``mempal mcp`` / ``mempal-mcp``: an MCP stdio server that forwards every tool call to the mempald socket.

It speaks MCP through the official SDK (``mcp`` v1, low-level ``Server``, so each tool's JSON schema is
written here by hand: no boolean-typed properties, which some clients reject; flags are ``"true"`` /
``"false"`` enums). It holds no model and no store: the daemon does the work, so the shim starts as fast as
the SDK imports and never loads fastembed, Qdrant or anything from ``mempald``.

- ``initialize`` carries the memory protocol (``MEMORY_PROTOCOL``) as ``instructions``.
- The caller's identity comes from the client's ``clientInfo`` (Claude Code -> ``claude``, Codex ->
  ``codex``; ``MEMPAL_AGENT`` overrides it for other clients). It fills ``from`` for ``cowork_push``, the
  author of ``ingest`` and ``delete``, and picks the partner for ``peek_partner``.
- Tools whose daemon method is missing (an older daemon) are left out of ``tools/list`` when the daemon
  answers at listing time.
- The daemon down: every tool answers ``isError`` with the one-line fix; the shim itself never crashes.

The ``mcp`` SDK is imported only when the server starts, so ``mempal``'s other commands stay fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from client.connection import DaemonUnavailable, call
from client.protocol import METHOD_NOT_FOUND, RpcError

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

SERVER_NAME = "mempal"
AGENTS = ("claude", "codex")
CALL_TIMEOUT = 60.0
PROBE_TIMEOUT = 2.0
HIT_CHARS = 1500

MEMORY_PROTOCOL = """\
mempal is this machine's memory of past coding sessions (Claude Code, Codex, exports, notes), kept word for \
word by the local mempald daemon. Use it like this:

0. FIRST TIME: call `status` once to learn which wings (projects) and rooms (aspects) exist before you filter \
by them.
1. WAKE UP: `wake_up` returns who the user is and the essential story of this project. Text inside \
<mempal-context> tags was injected by mempal's hooks; it is memory, not the user speaking.
2. VERIFY BEFORE ASSERTING: before you state a project fact (why something is as it is, what was decided, \
what failed before), `search` for it.
3. QUERY WHEN UNCERTAIN: "why did we...", "last time we...", "what did we decide about..." -> `search` first. \
Write queries in English, with the specific names involved.
4. SAVE DECISIONS WITH THEIR REASONS: after a firm decision, `ingest` what was decided and why (alternatives \
rejected, file paths), memory_type "decision", importance 3-5. Not for tentative ideas or what the code \
already says. `dry_run` "true" shows near-duplicates without saving.
5. CITE EVERYTHING: when a memory informs your answer, cite its drawer id and its source path.
6. MEMORIES AGE: check a memory against the current code before relying on it; `delete` a wrong one with a \
reason.
7. PARTNER AWARENESS: Claude Code and Codex may work on the same repo. `peek_partner` reads the partner's \
live session (read-only): use it for what the partner is doing now, `search` for what was settled earlier.
8. COWORK PUSH: `cowork_push` sends the partner a short handoff, delivered at its next prompt (not real \
time). Read with peek, send with push, persist decisions with ingest (mention partner input that shaped \
them). `cowork_drain` reads messages pushed to you when no hook delivered them.
9. FACTS: `kg` keeps subject-predicate-object facts with validity dates; run `fact_check` on a text that \
asserts relationships between people, projects or tools before you save it.
10. DIARY: keep your own observations (what worked, what the user corrected, what to try next) with \
`ingest` in wing "agent-diary", room = your agent name (claude, codex, ...); read them back with `search` \
filtered to that wing at the start of a session.
"""

_FLAG = {"type": "string", "enum": ["true", "false"]}
_MEMORY_TYPES = ["decision", "preference", "milestone", "problem", "emotional", "none"]


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


def _s(desc: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": desc, **extra}


def _i(desc: str, lo: int, hi: int) -> dict[str, Any]:
    return {"type": "integer", "description": desc, "minimum": lo, "maximum": hi}


@dataclass(frozen=True)
class Caller:
    agent: str | None  # claude | codex | None (another client)
    client: str  # clientInfo.name as sent


Build = Callable[[dict[str, Any], Caller], dict[str, Any]]
Render = Callable[[Any], str]


def _dump(result: Any) -> str:
    return json.dumps(result, indent=1, ensure_ascii=False)


def _passthrough(args: dict[str, Any], _caller: Caller) -> dict[str, Any]:
    return dict(args)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    method: str
    description: str
    schema: dict[str, Any]
    build: Build = _passthrough
    render: Render = _dump
    read_only: bool = True
    annotations: dict[str, Any] = field(default_factory=dict)


class ToolRefused(Exception):
    """The tool cannot run for this caller (for example an unknown agent pushing); shown as isError."""


def _flags(args: dict[str, Any], *names: str) -> dict[str, Any]:
    out = dict(args)
    for name in names:
        if isinstance(out.get(name), str):
            out[name] = out[name].lower() == "true"
    return out


def _author(caller: Caller) -> str:
    return caller.agent or caller.client or "mcp"


def _build_search(args: dict[str, Any], _caller: Caller) -> dict[str, Any]:
    params = dict(args)
    params.setdefault("limit", 8)
    return params


def render_search(result: Any) -> str:
    hits = result.get("hits", []) if isinstance(result, dict) else []
    if not hits:
        return f"No memories match {result.get('query', '')!r}." if isinstance(result, dict) else "No memories."
    out = []
    for i, h in enumerate(hits, 1):
        meta = [f"{h.get('wing', '?')}/{h.get('room', '?')}"]
        if h.get("timestamp"):
            meta.append(str(h["timestamp"])[:19])
        if h.get("agent") or h.get("source_kind"):
            meta.append(str(h.get("agent") or h.get("source_kind")))
        meta.append(f"score {float(h.get('score') or 0):.3f}")
        text = str(h.get("text", "")).strip()
        if len(text) > HIT_CHARS:
            text = text[: HIT_CHARS - 1].rstrip() + "…"
        pos = h.get("position")
        source = str(h.get("source_path") or "?") + (f" #{pos}" if pos not in (None, "") else "")
        out.append(f"{i}. [drawer {h.get('drawer_id')}] {' · '.join(meta)}\n   source: {source}\n{text}")
    return "\n\n".join(out)


def _build_ingest(args: dict[str, Any], caller: Caller) -> dict[str, Any]:
    params = _flags(args, "dry_run")
    params["agent"] = _author(caller)
    params.setdefault("cwd", os.getcwd())
    return params


def _build_delete(args: dict[str, Any], caller: Caller) -> dict[str, Any]:
    return {**args, "actor": _author(caller)}


def _build_wake_up(args: dict[str, Any], _caller: Caller) -> dict[str, Any]:
    params = dict(args)
    if not params.get("wing"):
        params["cwd"] = os.getcwd()
    return params


def render_wake_up(result: Any) -> str:
    if isinstance(result, dict) and isinstance(result.get("text"), str):
        return f"(wing {result.get('wing')}, {result.get('tokens')} tokens)\n\n{result['text']}"
    return _dump(result)


def _partner(caller: Caller) -> str | None:
    if caller.agent == "claude":
        return "codex"
    if caller.agent == "codex":
        return "claude"
    return None


def _build_peek(args: dict[str, Any], caller: Caller) -> dict[str, Any]:
    partner = args.get("partner") or _partner(caller)
    if not partner:
        raise ToolRefused(f"say which partner to peek at (claude or codex): this client ({caller.client!r}) is "
                          "neither Claude Code nor Codex")
    return {"partner": partner, "n": args.get("n", 5), "cwd": args.get("cwd") or os.getcwd()}


def render_peek(result: Any) -> str:
    if not isinstance(result, dict):
        return _dump(result)
    head = (f"{result.get('partner')}'s latest session in {result.get('cwd')} (session {result.get('session_id')}, "
            f"last written {result.get('age_s')} s ago; {result.get('path')}):")
    parts = [head]
    for ex in result.get("exchanges", []):
        parts.append(f"--- {ex.get('timestamp') or ''}\nUSER: {ex.get('user', '')}\n"
                     f"ASSISTANT: {ex.get('assistant', '')}")
    if len(parts) == 1:
        parts.append("(no exchanges yet)")
    return "\n\n".join(parts)


def _build_push(args: dict[str, Any], caller: Caller) -> dict[str, Any]:
    if caller.agent is None:
        raise ToolRefused(f"cowork_push needs to know who is sending: this client ({caller.client!r}) is neither "
                          "Claude Code nor Codex (set MEMPAL_AGENT=claude or codex in the server's environment)")
    to = args.get("to") or _partner(caller)
    return {"from": caller.agent, "to": to, "text": args["text"], "cwd": args.get("cwd") or os.getcwd()}


def _build_drain(args: dict[str, Any], caller: Caller) -> dict[str, Any]:
    if caller.agent is None:
        raise ToolRefused(f"cowork_drain reads the caller's own inbox: this client ({caller.client!r}) is neither "
                          "Claude Code nor Codex (set MEMPAL_AGENT=claude or codex in the server's environment)")
    return {"target": caller.agent, "cwd": args.get("cwd") or os.getcwd()}


def _build_kg(args: dict[str, Any], _caller: Caller) -> dict[str, Any]:
    return _flags(args, "include_expired")


_CWD = _s("the project directory (default: the directory the MCP server runs in)")

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("status", "status",
             "What mempal holds: drawer counts by wing (project) and room (aspect), sources and their backlog. "
             "Call it first to learn the wing and room names, and to check the daemon is healthy.",
             _obj({})),
    ToolSpec("search", "search",
             "Hybrid (keyword + semantic) search over every past session and saved memory. Returns verbatim "
             "excerpts with drawer ids and source paths to cite. Use before asserting project facts and for any "
             "'why did we / last time we' question.",
             _obj({"query": _s("what to look for, in English, with the specific names involved"),
                   "wing": _s("only this wing (project); names come from status"),
                   "room": _s("only this room (aspect), e.g. decisions, problems, architecture"),
                   "memory_type": _s("only this kind of memory", enum=_MEMORY_TYPES),
                   "agent": _s("only memories from this agent, e.g. claude or codex"),
                   "since": _s("only newer than this: ISO date or an age like 7d, 12h"),
                   "until": _s("only older than this: ISO date or an age like 1d"),
                   "limit": _i("how many results (default 8)", 1, 50)}, ("query",)),
             build=_build_search, render=render_search),
    ToolSpec("ingest", "ingest",
             "Save a memory: a firm decision and its reasons, a preference, a milestone, a problem and its fix. "
             "Write it so it stands alone (what, why, file paths). Warns about near-duplicates.",
             _obj({"text": _s("the memory, self-contained"),
                   "wing": _s("project it belongs to (default: derived from the working directory)"),
                   "room": _s("aspect, e.g. decisions, architecture, problems (default: classified)"),
                   "memory_type": _s("kind of memory", enum=_MEMORY_TYPES),
                   "importance": _i("0 (trivia) to 5 (critical); default 3", 0, 5),
                   "dry_run": {**_FLAG, "description": "\"true\": only report near-duplicates, save nothing"}},
                  ("text",)),
             build=_build_ingest, read_only=False),
    ToolSpec("delete", "delete",
             "Soft-delete a wrong or obsolete memory by drawer id (hidden from search, kept until purged, audited).",
             _obj({"drawer_id": _s("the drawer id to delete"), "reason": _s("why it is wrong or obsolete")},
                  ("drawer_id",)),
             build=_build_delete, read_only=False),
    ToolSpec("wake_up", "wake_up",
             "The wake-up text: who the user is (L0) and the essential story of a project (L1), a few hundred "
             "tokens. Use at the start of work when no hook injected it.",
             _obj({"wing": _s("the project (default: derived from the working directory)"),
                   "budget": _i("token budget for the story (default from config)", 50, 4000)}),
             build=_build_wake_up, render=render_wake_up),
    ToolSpec("list_wings", "list_wings", "Every wing (project or source) with its drawer count.", _obj({})),
    ToolSpec("list_rooms", "list_rooms", "The rooms (aspects) of one wing, or of all wings, with drawer counts.",
             _obj({"wing": _s("the wing (default: all)")})),
    ToolSpec("taxonomy", "taxonomy",
             "The routing keywords that file drawers into rooms; with room and keywords, set that room's keywords "
             "(an empty list removes the room).",
             _obj({"room": _s("the room to edit"),
                   "keywords": {"type": "array", "items": {"type": "string"},
                                "description": "keywords that send a drawer to this room"}}),
             read_only=False),
    ToolSpec("kg", "kg",
             "Knowledge graph of subject-predicate-object facts with validity dates. op: add, query, invalidate, "
             "timeline (of an entity) or stats.",
             _obj({"op": _s("what to do", enum=["add", "query", "invalidate", "timeline", "stats"]),
                   "subject": _s("e.g. Kai"), "predicate": _s("e.g. recommends"), "object": _s("e.g. Clerk"),
                   "valid_from": _s("ISO date the fact became true (add)"),
                   "ended": _s("ISO date the fact stopped being true (invalidate)"),
                   "as_of": _s("ISO date to query at (query)"),
                   "entity": _s("the entity (timeline)"),
                   "source_drawer": _s("drawer id the fact comes from (add)"),
                   "include_expired": {**_FLAG, "description": "\"true\": include facts no longer valid (query)"},
                   "id": _i("triple id (invalidate)", 0, 2**31 - 1)}, ("op",)),
             build=_build_kg, read_only=False),
    ToolSpec("tunnels", "tunnels", "Rooms shared by several wings: where projects touch the same topic.", _obj({})),
    ToolSpec("peek_partner", "peek_partner",
             "Read the partner agent's live session in this project (Claude Code <-> Codex): its last exchanges, "
             "read-only. For what the partner is doing now; use search for what was settled earlier.",
             _obj({"partner": _s("whose session (default: the other agent)", enum=list(AGENTS)),
                   "n": _i("how many recent exchanges (default 5)", 1, 20), "cwd": _CWD}),
             build=_build_peek, render=render_peek),
    ToolSpec("cowork_push", "cowork_push",
             "Send the partner agent (Claude Code <-> Codex) a short handoff message for this project. It is "
             "delivered at the partner's next prompt, not in real time. At most 8 KB; an inbox holds 16 messages.",
             _obj({"text": _s("the message: what you did, what you need, where to look"),
                   "to": _s("recipient (default: the other agent; never yourself)", enum=list(AGENTS)),
                   "cwd": _CWD}, ("text",)),
             build=_build_push, read_only=False),
    ToolSpec("cowork_drain", "cowork_drain",
             "Read and clear the messages your partner agent pushed to you for this project (hooks usually "
             "deliver them with your next prompt; use this when they did not).",
             _obj({"cwd": _CWD}), build=_build_drain, read_only=False),
    ToolSpec("fact_check", "fact_check",
             "Check a text offline against the knowledge graph: similar-name typos, relations that contradict "
             "known facts, facts that expired. Use before saving a decision that asserts relationships.",
             _obj({"text": _s("the text to check"), "today": _s("ISO date to check against (default: today)")},
                  ("text",))),
)
TOOLS_BY_NAME = {t.name: t for t in TOOLS}


def caller_from(client_name: str | None) -> Caller:
    override = os.environ.get("MEMPAL_AGENT", "").strip().lower()
    name = client_name or ""
    if override in AGENTS:
        return Caller(override, name)
    low = name.lower()
    if "claude" in low:
        return Caller("claude", name)
    if "codex" in low:
        return Caller("codex", name)
    return Caller(None, name)


def daemon_methods() -> set[str] | None:
    """The daemon's method names (None when it is down): an unknown method's error lists them."""
    try:
        call("rpc.methods", {}, timeout=PROBE_TIMEOUT)
    except RpcError as exc:
        if exc.code == METHOD_NOT_FOUND and isinstance(exc.data, dict) and isinstance(exc.data.get("methods"), list):
            return {str(m) for m in exc.data["methods"]}
        return None
    except (DaemonUnavailable, OSError, ValueError):
        return None
    return None


def run_tool(name: str, args: dict[str, Any], caller: Caller) -> tuple[str, bool]:
    """Run one tool (blocking): its text and whether it is an error. Never raises."""
    spec = TOOLS_BY_NAME.get(name)
    if spec is None:
        return f"unknown tool {name!r}", True
    try:
        params = spec.build(args, caller)
        result = call(spec.method, params, timeout=CALL_TIMEOUT)
        return spec.render(result), False
    except DaemonUnavailable as exc:
        return f"{exc}", True
    except RpcError as exc:
        if exc.code == METHOD_NOT_FOUND:
            return f"this mempald has no {spec.method!r} method yet: upgrade mempald and restart it", True
        return f"mempal: {exc.message}", True
    except ToolRefused as exc:
        return f"mempal: {exc}", True
    except Exception as exc:
        return f"mempal MCP shim: {type(exc).__name__}: {exc}", True


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mempald")
    except PackageNotFoundError:
        return "0"


def build_server() -> Server[Any, Any]:
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel import Server

    server: Server[Any, Any] = Server(SERVER_NAME, version=_version(), instructions=MEMORY_PROTOCOL)

    async def list_tools() -> list[types.Tool]:
        known = await anyio.to_thread.run_sync(daemon_methods)
        return [
            types.Tool(name=t.name, description=t.description, inputSchema=t.schema,
                       annotations=types.ToolAnnotations(readOnlyHint=t.read_only, openWorldHint=False))
            for t in TOOLS if known is None or t.method in known
        ]

    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            params = server.request_context.session.client_params
            caller = caller_from(params.clientInfo.name if params else None)
            text, is_error = await anyio.to_thread.run_sync(run_tool, name, arguments or {}, caller)
        except Exception as exc:  # never let a tool call take the shim down
            text, is_error = f"mempal MCP shim: {type(exc).__name__}: {exc}", True
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=is_error)

    server.list_tools()(list_tools)  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
    server.call_tool()(call_tool)
    return server


async def serve() -> None:
    from mcp.server.stdio import stdio_server

    server = build_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``mempal-mcp``: serve MCP on stdin/stdout until the client closes stdin."""
    del argv
    import anyio

    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        return 130
    return 0


def _cmd_mcp(_args: argparse.Namespace) -> int:
    return main()


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``mcp`` (run the MCP stdio server) to the ``mempal`` parser."""
    p = sub.add_parser("mcp", help="serve mempal's tools over MCP on stdin/stdout (for Claude Code, Codex...)")
    p.set_defaults(func=_cmd_mcp)


if __name__ == "__main__":
    sys.exit(main())
