"""``mempal mcp`` / ``mempal-mcp``: an MCP stdio server that forwards every tool call to the mempald socket.

It speaks MCP through the official SDK (``mcp`` v1, low-level ``Server``). Its tools, their JSON schemas and
annotations (readOnlyHint, destructiveHint, idempotentHint, openWorldHint false) are derived from the method table
(``mempal.mcp_tools``); their answers read as ``mempal.mcp_render`` writes them. It holds no model and no store:
the daemon does the work, so the shim starts as fast as the SDK imports and never loads fastembed, Qdrant or
anything of the daemon (it reads only the settings, for ``mcp.read_only``).

- ``initialize`` carries the memory protocol (``MEMORY_PROTOCOL``) as ``instructions``.
- Read-only mode (``mempal mcp --read-only``, or ``[mcp] read_only = true`` in config.toml, or
  ``MEMPAL_MCP_READ_ONLY=1``) offers only the tools that write nothing, and refuses the others if called.
- The daemon is found the way every client finds it (``mempal.paths.locate``: the data directory's pointer
  works in the bare environment MCP hosts give their servers), and checked to be this user's daemon for this
  data directory (``mempal.connection``); every error names the socket tried.
- The caller's identity comes from the client's ``clientInfo`` (Claude Code -> ``claude``, Codex ->
  ``codex``; ``MEMPAL_AGENT`` overrides it for other clients). It fills ``from`` for ``cowork_push``, the
  author of ``ingest`` and ``delete``, and picks the partner for ``peek_partner``.
- Tools whose daemon method is missing (an older daemon) are left out of ``tools/list`` when the daemon
  answers at listing time.
- Every answer stays within a token budget (``mempal.mcp_render``: 20,000 estimated LLM tokens, under Claude
  Code's 25,000 limit; ``mempal mcp --max-tokens N`` or ``MEMPAL_MCP_MAX_TOKENS`` lowers it) and says how to get
  the rest (the ids to ``get``).
- Flags are JSON booleans in the schemas; ``"true"`` / ``"false"`` strings are taken too (the daemon checks every
  argument against the method table).
- The daemon down: every tool answers ``isError`` with the one-line fix; the shim itself never crashes.

The ``mcp`` SDK is imported only when the server starts, so ``mempal``'s other commands stay fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mempal.connection import DaemonUnavailable, call
from mempal.mcp_render import DEFAULT_BUDGET, MIN_BUDGET
from mempal.mcp_tools import MEMORY_PROTOCOL, TOOLS, TOOLS_BY_NAME, ToolSpec, input_schema, instructions, offered
from mempal.methods.spec import Method, Param
from mempal.protocol import METHOD_NOT_FOUND, RpcError

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["MEMORY_PROTOCOL", "TOOLS", "Caller", "build_params", "input_schema", "main", "run_tool"]

SERVER_NAME = "mempal"
CALL_TIMEOUT = 60.0
PROBE_TIMEOUT = 2.0


@dataclass(frozen=True)
class Caller:
    agent: str | None  # claude | codex | None (another client)
    client: str  # clientInfo.name as sent


class ToolRefused(Exception):
    """The tool cannot run for this caller (for example an unknown agent pushing); shown as isError."""


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


def run_tool(name: str, args: dict[str, Any], caller: Caller, read_only: bool = False,
             budget: int = DEFAULT_BUDGET) -> tuple[str, bool]:
    """Run one tool (blocking): its text and whether it is an error. Never raises."""
    spec = TOOLS_BY_NAME.get(name)
    if spec is None:
        return f"unknown tool {name!r}", True
    if read_only and not spec.read_only:
        return f"mempal: this MCP server is read-only; {name!r} changes memory and is not offered", True
    try:
        params = build_params(spec, args, caller)
        result = call(spec.method.name, params, timeout=max(CALL_TIMEOUT, spec.method.timeout))
        return spec.render(result, budget), False
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


def read_only_setting() -> bool:
    """``mcp.read_only`` from the settings (config.toml or MEMPAL_MCP_READ_ONLY); False if they cannot be read."""
    try:
        from mempald.config import load_settings  # light (tomllib, platformdirs)

        return bool(load_settings().mcp.read_only)
    except Exception as exc:  # a broken config must not take the tools away: the daemon reports it
        print(f"mempal mcp: cannot read the settings ({exc}); serving every tool", file=sys.stderr)
        return False


def budget_setting(flag: int | None) -> int:
    """The answers' token budget: ``--max-tokens``, else ``MEMPAL_MCP_MAX_TOKENS``, else the default; never more
    than the default (hosts refuse larger answers) nor less than ``MIN_BUDGET``."""
    value: int | None = flag
    if value is None:
        raw = os.environ.get("MEMPAL_MCP_MAX_TOKENS", "").strip()
        try:
            value = int(raw) if raw else None
        except ValueError:
            print(f"mempal mcp: MEMPAL_MCP_MAX_TOKENS={raw!r} is not a number; using {DEFAULT_BUDGET}",
                  file=sys.stderr)
    return DEFAULT_BUDGET if value is None else max(MIN_BUDGET, min(DEFAULT_BUDGET, value))


def build_server(read_only: bool = False, budget: int = DEFAULT_BUDGET) -> Server[Any, Any]:
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel import Server

    server: Server[Any, Any] = Server(SERVER_NAME, version=_version(), instructions=instructions(read_only))
    tools: tuple[ToolSpec, ...] = offered(read_only)

    async def list_tools() -> list[types.Tool]:
        known = await anyio.to_thread.run_sync(daemon_methods)
        return [
            types.Tool(name=t.name, description=t.description, inputSchema=t.schema,
                       annotations=types.ToolAnnotations.model_validate(t.annotations()))
            for t in tools if known is None or t.method.name in known
        ]

    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            params = server.request_context.session.client_params
            caller = caller_from(params.clientInfo.name if params else None)
            text, is_error = await anyio.to_thread.run_sync(run_tool, name, arguments or {}, caller, read_only,
                                                            budget)
        except Exception as exc:  # never let a tool call take the shim down
            text, is_error = f"mempal MCP shim: {type(exc).__name__}: {exc}", True
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=is_error)

    server.list_tools()(list_tools)  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
    # the daemon checks every argument against the method table (and takes flags as booleans or "true" /
    # "false"), so the SDK's own schema check would only refuse what the daemon accepts
    server.call_tool(validate_input=False)(call_tool)
    return server


async def serve(read_only: bool = False, budget: int = DEFAULT_BUDGET) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(read_only, budget)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--read-only", action="store_true",
                   help="offer only the tools that change nothing (also: [mcp] read_only = true in config.toml)")
    p.add_argument("--max-tokens", type=int, default=None, metavar="N",
                   help=f"tokens an answer holds at most ({MIN_BUDGET}..{DEFAULT_BUDGET}, default {DEFAULT_BUDGET}; "
                        "also MEMPAL_MCP_MAX_TOKENS); a longer search or get lists the ids of the rest")


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``mempal-mcp``: serve MCP on stdin/stdout until the client closes stdin."""
    parser = argparse.ArgumentParser(prog="mempal-mcp", description="mempal's tools over MCP on stdin/stdout")
    _add_options(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return _serve(args.read_only or read_only_setting(), budget_setting(args.max_tokens))


def _serve(read_only: bool, budget: int = DEFAULT_BUDGET) -> int:
    import anyio

    try:
        anyio.run(serve, read_only, budget)
    except KeyboardInterrupt:
        return 130
    return 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    return _serve(args.read_only or read_only_setting(), budget_setting(args.max_tokens))


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``mcp`` (run the MCP stdio server) to the ``mempal`` parser."""
    p = sub.add_parser("mcp", help="serve mempal's tools over MCP on stdin/stdout (for Claude Code, Codex...)")
    _add_options(p)
    p.set_defaults(func=_cmd_mcp)


if __name__ == "__main__":
    sys.exit(main())
