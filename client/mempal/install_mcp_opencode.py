"""``mempal install-mcp --agent opencode``: the mempal MCP server in OpenCode's global config.

OpenCode reads ``$XDG_CONFIG_HOME/opencode/opencode.json`` or ``opencode.jsonc`` (``~/.config/opencode/`` on Linux,
macOS and Windows alike). OpenCode 1 takes a server under ``mcp.<name>`` (``{"type": "local", "command": [...],
"enabled": true, "environment": {...}}``); OpenCode 2 under ``mcp.servers.<name>`` (``{"type": "local",
"command": [...], "environment": {...}}``), the shape written when the config already has ``mcp.servers`` or
OpenCode 2's ``cli.json`` sits beside it. Every other setting is kept. A ``.jsonc`` file with comments or trailing
commas is never rewritten (its comments would be lost): the entry to add is printed instead.
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

from mempal.install_files import InstallError, Json, _say, apply, dumps, report

SERVER_NAME = "mempal"
_JSONC_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)
_TRAILING_COMMA = re.compile(r',(\s*[}\]])')


def config_dir() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".config") / "opencode"


def config_path() -> Path:
    """The user's global OpenCode config: the ``.jsonc`` one if it exists, else ``opencode.json``."""
    folder = config_dir()
    jsonc = folder / "opencode.jsonc"
    return jsonc if jsonc.is_file() and not (folder / "opencode.json").is_file() else folder / "opencode.json"


def strip_jsonc(text: str) -> str:
    """JSON from JSONC: comments and trailing commas removed (strings left as they are)."""
    out = _JSONC_TOKEN.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    return _TRAILING_COMMA.sub(r"\1", out)


def read_config(path: Path) -> tuple[Json, bool]:
    """The config as a JSON object, and whether it is plain JSON (safe to rewrite)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, True
    if not text.strip():
        return {}, True
    try:
        data: Any = json.loads(text)
        plain = True
    except ValueError:
        try:
            data = json.loads(strip_jsonc(text))
        except ValueError as exc:
            raise InstallError(f"{path} is not valid JSON or JSONC ({exc}); nothing was changed") from None
        plain = False
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; nothing was changed")
    return data, plain


def server_entry(command: str, args: list[str], env: dict[str, str] | None, v2: bool) -> Json:
    entry: Json = {"type": "local", "command": [command, *args]}
    if not v2:
        entry["enabled"] = True
    if env:
        entry["environment"] = dict(env)
    return entry


def is_v2(config: Json, folder: Path) -> bool:
    mcp = config.get("mcp")
    return (isinstance(mcp, dict) and isinstance(mcp.get("servers"), dict)) or (folder / "cli.json").is_file()


def merge(config: Json, entry: Json, v2: bool, path: Path) -> Json:
    out = copy.deepcopy(config)
    out.setdefault("$schema", "https://opencode.ai/config.json")
    mcp = out.setdefault("mcp", {})
    if not isinstance(mcp, dict):
        raise InstallError(f'{path}: "mcp" is not an object; fix it by hand, nothing was changed')
    servers = mcp.setdefault("servers", {}) if v2 else mcp
    if not isinstance(servers, dict):
        raise InstallError(f'{path}: "mcp.servers" is not an object; fix it by hand, nothing was changed')
    servers[SERVER_NAME] = entry
    return out


def install_opencode_mcp(command: str, args: list[str], dry_run: bool, env: dict[str, str] | None = None) -> None:
    path = config_path()
    before, plain = read_config(path)
    v2 = is_v2(before, path.parent)
    entry = server_entry(command, args, env, v2)
    after = merge(before, entry, v2, path)
    if not plain:
        if after == before:
            _say(f"mempal MCP for OpenCode: already up to date in {path}; nothing changed")
            return
        where = "mcp.servers" if v2 else "mcp"
        _say(f"mempal MCP for OpenCode: {path} has comments, which a rewrite would lose; add this under "
             f'"{where}" by hand:\n' + dumps({SERVER_NAME: entry}))
        return
    if not dry_run:
        path.parent.mkdir(parents=True, exist_ok=True)
    report(apply(path, before, after, dry_run=dry_run), "mempal MCP for OpenCode", dry_run=dry_run)
