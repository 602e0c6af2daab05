"""``mempal mcp`` / ``mempal-mcp``: an MCP stdio server that forwards every tool call to the mempald socket.

It speaks MCP through the official SDK (``mcp`` v1, low-level ``Server``). Its tools, their JSON schemas and
annotations are derived from the method table (``mempal.methods``): every method that declares a tool name is a
tool (no boolean-typed properties, which some clients reject; flags are ``"true"`` / ``"false"`` enums). It
holds no model and no store: the daemon does the work, so the shim starts as fast as
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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mempal.connection import DaemonUnavailable, call
from mempal.methods import METHODS
from mempal.methods.spec import Method, Param
from mempal.protocol import METHOD_NOT_FOUND, RpcError

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

SERVER_NAME = "mempal"
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

@dataclass(frozen=True)
class Caller:
    agent: str | None  # claude | codex | None (another client)
    client: str  # clientInfo.name as sent


Render = Callable[[Any], str]


def _dump(result: Any) -> str:
    return json.dumps(result, indent=1, ensure_ascii=False)


class ToolRefused(Exception):
    """The tool cannot run for this caller (for example an unknown agent pushing); shown as isError."""


# schemas (derived from the method table) ---------------------------------------------------------------------
_FLAG = {"type": "string", "enum": ["true", "false"]}  # no boolean-typed properties: some clients reject them


def param_schema(p: Param) -> dict[str, Any]:
    """The JSON schema of one parameter as MCP clients see it."""
    schema: dict[str, Any]
    if p.kind == "bool":
        schema = dict(_FLAG)
    elif p.kind in ("int", "float"):
        schema = {"type": "integer" if p.kind == "int" else "number"}
        if p.lo is not None:
            schema["minimum"] = p.lo
        if p.hi is not None:
            schema["maximum"] = p.hi
    elif p.kind == "enum":
        schema = {"type": "string", "enum": list(p.choices)}
    elif p.kind in ("strs", "paths", "ids"):  # one value or a list of them
        one: dict[str, Any] = {"type": "string", "enum": list(p.choices)} if p.choices else {"type": "string"}
        schema = {"anyOf": [one, {"type": "array", "items": dict(one)}]}
    else:
        schema = {"type": "string"}
    help_text = p.help
    if p.fill == "cwd":
        help_text = f"{p.help} (default: the directory the MCP server runs in)"
    elif p.default is not None and p.kind != "bool":
        help_text = f"{p.help} (default {p.default})"
    return {**schema, "description": help_text}


def input_schema(m: Method) -> dict[str, Any]:
    props = {p.name: param_schema(p) for p in m.params if p.mcp}
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    required = [p.name for p in m.params if p.mcp and p.required and not p.fill]
    if required:
        schema["required"] = required
    return schema


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: a method of the table that declares a tool name."""

    name: str
    method: Method
    render: Render = _dump

    @property
    def description(self) -> str:
        return f"{self.method.summary} {self.method.help}".strip()

    @property
    def schema(self) -> dict[str, Any]:
        return input_schema(self.method)

    @property
    def read_only(self) -> bool:
        return not self.method.writes


# results -----------------------------------------------------------------------------------------------------
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


def render_wake_up(result: Any) -> str:
    if isinstance(result, dict) and isinstance(result.get("text"), str):
        return f"(wing {result.get('wing')}, {result.get('tokens')} tokens)\n\n{result['text']}"
    return _dump(result)


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


RENDERERS: dict[str, Render] = {"search": render_search, "wake_up": render_wake_up, "peek_partner": render_peek}
TOOLS: tuple[ToolSpec, ...] = tuple(ToolSpec(m.mcp, m, RENDERERS.get(m.name, _dump))
                                    for m in METHODS.values() if m.mcp is not None)
TOOLS_BY_NAME = {t.name: t for t in TOOLS}


# parameters the server fills -----------------------------------------------------------------------------------
def _partner(caller: Caller) -> str | None:
    if caller.agent == "claude":
        return "codex"
    if caller.agent == "codex":
        return "claude"
    return None


def _fill(p: Param, caller: Caller, method: Method) -> Any:
    if p.fill == "cwd":
        return os.getcwd()
    if p.fill == "partner":
        partner = _partner(caller)
        if partner is None:
            raise ToolRefused(f"say which agent ({p.name}: claude or codex): this client ({caller.client!r}) is "
                              "neither Claude Code nor Codex")
        return partner
    if p.choices:  # an agent name the daemon checks (the inbox's sender or owner): only a known agent
        if caller.agent is None:
            raise ToolRefused(f"{method.mcp} needs to know which agent calls: this client ({caller.client!r}) is "
                              "neither Claude Code nor Codex (set MEMPAL_AGENT=claude or codex in the server's "
                              "environment)")
        return caller.agent
    return caller.agent or caller.client or "mcp"


def build_params(spec: ToolSpec, args: dict[str, Any], caller: Caller) -> dict[str, Any]:
    """The daemon's parameters from a tool call: the arguments, plus what this server fills (the caller's
    agent, its partner, the working directory)."""
    params = dict(args)
    for p in spec.method.params:
        if p.fill and (not p.mcp or params.get(p.name) in (None, "")):
            params[p.name] = _fill(p, caller, spec.method)
    return params


def caller_from(client_name: str | None) -> Caller:
    override = os.environ.get("MEMPAL_AGENT", "").strip().lower()
    name = client_name or ""
    if override in ("claude", "codex"):
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
        params = build_params(spec, args, caller)
        result = call(spec.method.name, params, timeout=max(CALL_TIMEOUT, spec.method.timeout))
        return spec.render(result), False
    except DaemonUnavailable as exc:
        return f"{exc}", True
    except RpcError as exc:
        if exc.code == METHOD_NOT_FOUND:
            return f"this mempald has no {spec.method.name!r} method yet: upgrade mempald and restart it", True
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
                       annotations=types.ToolAnnotations(
                           readOnlyHint=t.read_only, destructiveHint=t.method.destructive,
                           idempotentHint=t.method.idempotent, openWorldHint=False))
            for t in TOOLS if known is None or t.method.name in known
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
