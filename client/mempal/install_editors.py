"""``mempal install-mcp --agent cursor|vscode|copilot-cli [--uninstall]``: the mempal MCP server in the editors'
own MCP configuration files, by the rules of ``mempal.install_files`` (merge, never clobber: the user's other
servers and keys stay; idempotent; a backup before a change; atomic; ``--dry-run`` prints the file it would
write). ``--uninstall`` removes exactly the ``mempal`` entry.

- Cursor: ``~/.cursor/mcp.json`` (``--scope user``) or ``.cursor/mcp.json`` of the current directory
  (``--scope project``), ``{"mcpServers": {"mempal": {"type": "stdio", "command", "args", "env"?}}}``;
- VS Code (GitHub Copilot's agent mode): the user profile's ``mcp.json`` (``~/.config/Code/User``,
  ``~/Library/Application Support/Code/User``, ``%APPDATA%\\Code\\User``) or ``.vscode/mcp.json``,
  ``{"servers": {"mempal": {"type": "stdio", ...}}}``;
- the Copilot CLI: ``~/.copilot/mcp-config.json`` (``$COPILOT_HOME`` when set; user scope only),
  ``{"mcpServers": {"mempal": {"type": "local", ..., "tools": ["*"]}}}``.
"""

from __future__ import annotations

import copy
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from mempal.install_files import InstallError, Json, apply, read_json, report

SERVER_NAME = "mempal"


@dataclass(frozen=True)
class Editor:
    label: str
    table: str  # the key that holds the servers
    kind: str  # the server's "type"


EDITOR_MCP = {"cursor": Editor("Cursor", "mcpServers", "stdio"), "vscode": Editor("VS Code", "servers", "stdio"),
           "copilot-cli": Editor("the Copilot CLI", "mcpServers", "local")}


def vscode_user_dir() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "Code" / "User"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming") / "Code" / "User"
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "Code" / "User"


def config_path(agent: str, scope: str) -> Path:
    if agent == "cursor":
        return (Path.home() if scope == "user" else Path.cwd()) / ".cursor" / "mcp.json"
    if agent == "vscode":
        return vscode_user_dir() / "mcp.json" if scope == "user" else Path.cwd() / ".vscode" / "mcp.json"
    if scope != "user":
        raise InstallError("the Copilot CLI reads its MCP servers from ~/.copilot/mcp-config.json only: "
                           "use --scope user")
    return Path(os.environ.get("COPILOT_HOME") or Path.home() / ".copilot") / "mcp-config.json"


def server_entry(agent: str, command: str, args: list[str], env: dict[str, str]) -> Json:
    entry: Json = {"type": EDITOR_MCP[agent].kind, "command": command, "args": args}
    if env:
        entry["env"] = env
    if agent == "copilot-cli":
        entry["tools"] = ["*"]
    return entry


def _servers(config: Json, agent: str, path: Path) -> dict[str, Json]:
    servers = config.setdefault(EDITOR_MCP[agent].table, {})
    if not isinstance(servers, dict):
        raise InstallError(f'{path}: "{EDITOR_MCP[agent].table}" is not an object; fix it by hand, nothing was changed')
    return servers


def merged(config: Json, agent: str, entry: Json, path: Path) -> Json:
    out = copy.deepcopy(config)
    _servers(out, agent, path)[SERVER_NAME] = entry
    return out


def removed(config: Json, agent: str, path: Path) -> Json:
    out = copy.deepcopy(config)
    table = EDITOR_MCP[agent].table
    if isinstance(out.get(table), dict) and SERVER_NAME in out[table]:
        servers = _servers(out, agent, path)
        del servers[SERVER_NAME]
        if not servers:
            del out[table]
    return out


def install_editor_mcp(agent: str, scope: str, command: str, args: list[str], env: dict[str, str], *,
                       dry_run: bool, uninstall: bool) -> bool:
    """Write (or clean) one editor's MCP file; True when the file changed (or would)."""
    path = config_path(agent, scope)
    label = f"mempal MCP for {EDITOR_MCP[agent].label}"
    if uninstall and not path.exists():
        report_nothing = f"{label}: {path} does not exist; nothing changed"
        print(report_nothing, file=sys.stderr)
        return False
    before = read_json(path)
    after = removed(before, agent, path) if uninstall else merged(
        before, agent, server_entry(agent, command, args, env), path)
    change = apply(path, before, after, dry_run=dry_run)
    report(change, label + (" removed" if uninstall else ""), dry_run=dry_run)
    return change.changed


# Cursor's hooks ----------------------------------------------------------------------------------------------
CURSOR_ENTRY = "from mempal.hook_cursor import entry"
CURSOR_EVENTS = {"sessionStart": "session-start"}  # what Cursor lets a hook add context to (mempal.hook_cursor)


def cursor_hooks_path(scope: str) -> Path:
    return (Path.home() if scope == "user" else Path.cwd()) / ".cursor" / "hooks.json"


def cursor_hook_commands(prefix_argv: list[str], guard_entry: str) -> dict[str, str]:
    """Cursor's event -> the command (``mempal.install.hook_argv`` with Cursor's entry in its guard)."""
    import shlex

    argv = [a.replace(guard_entry, CURSOR_ENTRY) for a in prefix_argv]
    return {event: shlex.join(argv) + " " + verb for event, verb in CURSOR_EVENTS.items()}


def is_ours_handler(handler: object) -> bool:
    return isinstance(handler, dict) and CURSOR_ENTRY in str(handler.get("command", ""))


def cursor_hooks(config: Json, commands: dict[str, str] | None, path: Path) -> Json:
    """``config`` with mempal's handlers replaced by ``commands`` (None: removed), the rest kept (pure)."""
    out = copy.deepcopy(config)
    hooks = out.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f'{path}: "hooks" is not an object; fix it by hand, nothing was changed')
    for event in set(hooks) | set(commands or {}):
        current = hooks.get(event, [])
        if not isinstance(current, list):
            raise InstallError(f"{path}: hooks.{event} is not a list; fix it by hand, nothing was changed")
        kept = [h for h in current if not is_ours_handler(h)]
        wanted = [{"command": commands[event]}] if commands and event in commands else []
        if [h for h in current if is_ours_handler(h)] == wanted:
            continue
        if kept or wanted:
            hooks[event] = kept + wanted
        else:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    elif "version" not in out:
        out["version"] = 1
    return out


def install_cursor_hooks(scope: str, prefix_argv: list[str], guard_entry: str, *, dry_run: bool,
                         uninstall: bool) -> bool:
    path = cursor_hooks_path(scope)
    if uninstall and not path.exists():
        print(f"mempal hooks for Cursor: {path} does not exist; nothing changed", file=sys.stderr)
        return False
    before = read_json(path)
    commands = None if uninstall else cursor_hook_commands(prefix_argv, guard_entry)
    change = apply(path, before, cursor_hooks(before, commands, path), dry_run=dry_run)
    report(change, "mempal hooks for Cursor" + (" removed" if uninstall else ""), dry_run=dry_run)
    return change.changed
