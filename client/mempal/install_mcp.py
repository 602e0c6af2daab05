"""``mempal install-mcp``: register the mempal MCP server with Claude Code (and Codex).

Claude Code: ``~/.claude.json`` (``--scope user``, the default: a memory spans projects) or ``.mcp.json`` of the
current directory (``--scope project``). Codex (``--codex``): ``[mcp_servers.mempal]`` in
``$CODEX_HOME/config.toml``. The entry pins, in its ``env``, the location variables a host would drop that this
palace needs (``mempal.paths.pinned_env``: a non-default data or config directory, an explicit runtime dir or
socket); with the defaults there is nothing to pin, as the daemon's pointer in the data directory is found from
HOME alone. ``--read-only`` registers the server in read-only mode. ``--agent NAME`` writes that agent's own MCP
config instead: Gemini CLI's and Antigravity's (``mempal.install_gemini``), Cline's, Roo Code's and Kilo Code's
settings files (``EXTENSION_MCP``), OpenCode's ``opencode.json`` (``AGENT_MCP``, ``mempal.install_mcp_opencode``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

from mempal.install_editors import EDITOR_MCP, install_editor_mcp
from mempal.install_files import (
    InstallError,
    Json,
    _say,
    apply,
    backup,
    codex_home,
    read_json,
    report,
    script,
    write_text_atomic,
)
from mempal.install_mcp_opencode import install_opencode_mcp
from mempal.paths import pinned_env

SERVER_NAME = "mempal"
EXIT_OK = 0
EXIT_ERROR = 1


# ``--agent NAME``: the agents whose own MCP config is written instead of Claude Code's
AGENT_MCP: dict[str, Callable[[str, list[str], bool, dict[str, str] | None], None]] = {
    "opencode": install_opencode_mcp,
}


def claude_mcp_path(scope: str) -> Path:
    return Path.home() / ".claude.json" if scope == "user" else Path.cwd() / ".mcp.json"


def mcp_command(read_only: bool = False) -> tuple[str, list[str]]:
    found = script("mempal-mcp")
    command, args = (found, []) if found else (sys.executable, ["-m", "mempal.mcp_server"])
    return command, [*args, "--read-only"] if read_only else args


def merge_server(config: Json, name: str, server: Json, path: Path) -> Json:
    out = copy.deepcopy(config)
    servers = out.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InstallError(f'{path}: "mcpServers" is not an object; fix it by hand, nothing was changed')
    servers[name] = server
    return out


def codex_mcp_block(command: str, cmd_args: list[str], env: dict[str, str] | None = None) -> str:
    # JSON strings are valid TOML basic strings for every path we can meet here.
    block = (f"\n[mcp_servers.{SERVER_NAME}]\ncommand = {json.dumps(command)}\n"
             f"args = [{', '.join(json.dumps(a) for a in cmd_args)}]\n")
    if env:
        block += "env = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in sorted(env.items())) + " }\n"
    return block


def install_codex_mcp(command: str, cmd_args: list[str], dry_run: bool, env: dict[str, str] | None = None) -> None:
    path = codex_home() / "config.toml"
    block = codex_mcp_block(command, cmd_args, env)
    try:
        with path.open("rb") as fh:
            current = tomllib.load(fh)
    except FileNotFoundError:
        current = {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InstallError(f"{path} cannot be read as TOML ({exc}); nothing was changed") from None
    servers = current.get("mcp_servers")
    existing = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if existing is not None:
        same = (isinstance(existing, dict) and existing.get("command") == command
                and existing.get("args", []) == cmd_args and (existing.get("env") or {}) == (env or {}))
        if same:
            _say(f"mempal MCP for Codex: already up to date in {path}; nothing changed")
        else:
            _say(f"mempal MCP for Codex: {path} already has [mcp_servers.{SERVER_NAME}] with another command; "
                 f"edit it by hand to:{block}")
        return
    if dry_run:
        _say(f"# {path} would get:")
        sys.stdout.write(block)
        return
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    text += ("\n" if text and not text.endswith("\n") else "") + block
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InstallError(f"adding [mcp_servers.{SERVER_NAME}] to {path} would break it ({exc}); add it by "
                           f"hand:{block}") from None
    saved = backup(path)
    write_text_atomic(path, text)
    _say(f"mempal MCP for Codex: wrote {path}" + (f" (backup: {saved})" if saved else ""))


# Cline, Roo Code and Kilo Code (VS Code extensions, also in Cursor, Windsurf, VSCodium): the MCP settings file in
# the extension's globalStorage ``settings/`` of every editor that has the extension (VS Code's when none has it
# yet), and the Cline CLI's ``~/.cline/data/settings/`` when the CLI is there. The user's other servers are kept.
EXTENSION_MCP = {"cline": ("Cline", "saoudrizwan.claude-dev", "cline_mcp_settings.json"),
                 "roo": ("Roo Code", "rooveterinaryinc.roo-cline", "mcp_settings.json"),
                 "kilo": ("Kilo Code", "kilocode.kilo-code", "mcp_settings.json")}
EDITORS = ("Code", "Code - Insiders", "Cursor", "Windsurf", "VSCodium")


def editor_user_dirs() -> list[Path]:
    """Each editor's ``User`` folder on this platform (VS Code's first)."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return [base / editor / "User" for editor in EDITORS]


def extension_mcp_paths(agent: str) -> list[Path]:
    _, ext, name = EXTENSION_MCP[agent]
    users = editor_user_dirs()
    found = [u / "globalStorage" / ext / "settings" / name for u in users if (u / "globalStorage" / ext).is_dir()]
    if agent == "cline" and (Path.home() / ".cline" / "data").is_dir():
        found.append(Path.home() / ".cline" / "data" / "settings" / name)
    return found or [users[0] / "globalStorage" / ext / "settings" / name]


def install_extension_mcp(agent: str, command: str, cmd_args: list[str], env: dict[str, str], dry_run: bool) -> None:
    label = EXTENSION_MCP[agent][0]
    for path in extension_mcp_paths(agent):
        before = read_json(path)
        servers = before.get("mcpServers")
        mine = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
        # the user's own settings of our entry (alwaysAllow, autoApprove, timeout...) are kept
        server: Json = {**(mine if isinstance(mine, dict) else {}), "command": command, "args": cmd_args,
                        "disabled": False}
        if env:
            server["env"] = env
        change = apply(path, before, merge_server(before, SERVER_NAME, server, path), dry_run=dry_run)
        report(change, f"mempal MCP for {label}", dry_run=dry_run)


def cmd_install_mcp(args: argparse.Namespace) -> int:
    if getattr(args, "agent", "claude") in ("gemini", "antigravity"):  # their settings files: mempal.install_gemini
        from mempal.install_gemini import cmd_install_mcp as install_gemini_family

        return install_gemini_family(args)
    command, cmd_args = mcp_command(getattr(args, "read_only", False))
    env = pinned_env()
    agent = getattr(args, "agent", "claude")
    if agent in EDITOR_MCP:  # Cursor, VS Code, the Copilot CLI: their own files (mempal.install_editors)
        try:
            install_editor_mcp(agent, args.scope, command, cmd_args, env, dry_run=args.dry_run,
                               uninstall=getattr(args, "uninstall", False))
        except InstallError as exc:
            _say(f"mempal: {exc}")
            return EXIT_ERROR
        return EXIT_OK
    if agent in AGENT_MCP or agent in EXTENSION_MCP:
        try:
            if agent in AGENT_MCP:
                AGENT_MCP[agent](command, cmd_args, args.dry_run, env)
            else:
                install_extension_mcp(agent, command, cmd_args, env, args.dry_run)
        except InstallError as exc:
            _say(f"mempal: {exc}")
            return EXIT_ERROR
        if not args.dry_run:
            _say(f"{EXTENSION_MCP[agent][0]} reloads its MCP settings file by itself; mempal is listed in its MCP "
                 "servers view." if agent in EXTENSION_MCP else f"Restart {agent} so it starts the mempal MCP server.")
        return EXIT_OK
    path = claude_mcp_path(args.scope)
    try:
        before = read_json(path)
        server: Json = {"type": "stdio", "command": command, "args": cmd_args}
        if env:
            server["env"] = env
        change = apply(path, before, merge_server(before, SERVER_NAME, server, path), dry_run=args.dry_run)
        report(change, "mempal MCP for Claude Code", dry_run=args.dry_run)
        if args.codex:
            install_codex_mcp(command, cmd_args, args.dry_run, env)
    except InstallError as exc:
        _say(f"mempal: {exc}")
        return EXIT_ERROR
    if env and not args.dry_run:
        _say("pinned for the server: " + ", ".join(f"{k}={v}" for k, v in sorted(env.items())))
    if not args.dry_run:
        _say("Restart Claude Code (and Codex) so they start the mempal MCP server.")
    return EXIT_OK


def register_install_mcp(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("install-mcp", help="register the mempal MCP server with Claude Code (and Codex)")
    p.add_argument("--scope", choices=["user", "project"], default="user",
                   help="user: ~/.claude.json, for every project (default); project: ./.mcp.json")
    p.add_argument("--codex", action="store_true", help="also add [mcp_servers.mempal] to Codex's config.toml")
    p.add_argument("--agent", choices=["claude", "gemini", "antigravity", *EXTENSION_MCP, *AGENT_MCP, *EDITOR_MCP],
                   default="claude", help="claude: Claude Code (default); gemini: ~/.gemini/settings.json; "
                   "antigravity: ~/.gemini/config/mcp_config.json; cline, roo, kilo: the extension's MCP settings "
                   "file; opencode: OpenCode's opencode.json; cursor, vscode, copilot-cli: that editor's MCP file")
    p.add_argument("--read-only", action="store_true", help="register the server in read-only mode")
    p.add_argument("--dry-run", action="store_true", help="print the resulting config; write nothing")
    p.add_argument("--uninstall", action="store_true", help="with --agent: remove the mempal entry")
    p.set_defaults(func=cmd_install_mcp)
