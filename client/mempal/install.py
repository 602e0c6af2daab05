"""``mempal install-hooks`` / ``uninstall-hooks`` / ``install-mcp``: register mempal with Claude Code and Codex.

Rules for every file touched here:

- merge, never clobber: other hooks, other servers and every other key stay as they were;
- idempotent: running the command again changes nothing (and writes nothing);
- a backup ``<file>.bak-<timestamp>`` is made before a file is changed; writes are atomic;
- mempal's own hook handlers are recognised by their command (``mempal-hook`` or ``-m mempal.hook``), so
  ``uninstall-hooks`` removes exactly those, and a re-install replaces a stale one (an old path) in place;
- ``--dry-run`` prints what the file would become and writes nothing.

Where things go: Claude Code hooks in ``~/.claude/settings.json`` (``--scope user``, the default) or
``.claude/settings.json`` of the current directory (``--scope project``); Codex hooks (``--codex``) in
``$CODEX_HOME/hooks.json`` (default ``~/.codex``) or ``.codex/hooks.json``. The MCP server goes into
``.mcp.json`` (project) or ``~/.claude.json`` (user) for Claude Code, and ``[mcp_servers.mempal]`` in
``$CODEX_HOME/config.toml`` for Codex. Stdlib only.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

# "-m hooks.run": how releases before 0.2 ran the hook as a module; recognised so uninstall removes those too.
HOOK_MARKERS = ("mempal-hook", "-m mempal.hook", "-m hooks.run")
SERVER_NAME = "mempal"
EXIT_OK = 0
EXIT_ERROR = 1

Json = dict[str, Any]


class InstallError(Exception):
    """A file cannot be merged safely (not JSON, wrong shape); nothing was written."""


# where -------------------------------------------------------------------------------------------------------
def codex_home() -> Path:
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


def claude_settings_path(scope: str) -> Path:
    return (Path.home() if scope == "user" else Path.cwd()) / ".claude" / "settings.json"


def codex_hooks_path(scope: str) -> Path:
    return (codex_home() if scope == "user" else Path.cwd() / ".codex") / "hooks.json"


def claude_mcp_path(scope: str) -> Path:
    return Path.home() / ".claude.json" if scope == "user" else Path.cwd() / ".mcp.json"


def _script(name: str) -> str | None:
    """An installed console script: the one beside this interpreter first (same install), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def hook_command_prefix() -> str:
    script = _script("mempal-hook")
    return shlex.quote(script) if script else f"{shlex.quote(sys.executable)} -m mempal.hook"


def mcp_command() -> tuple[str, list[str]]:
    script = _script("mempal-mcp")
    return (script, []) if script else (sys.executable, ["-m", "mempal.mcp_server"])


# what --------------------------------------------------------------------------------------------------------
def snippet() -> Json:
    """hooks/settings.json: the entries install-hooks merges (commands start with ``mempal-hook``)."""
    data: Json = json.loads(snippet_text())
    return data


def snippet_text() -> str:
    """The snippet's text: packaged as ``mempal/hooks/settings.json`` in the wheel; in a source checkout (an
    editable install) it is read from the repository's ``hooks/`` folder, where it lives."""
    packaged = resources.files("mempal").joinpath("hooks", "settings.json")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "hooks" / "settings.json").read_text(encoding="utf-8")


def hook_entries(prefix: str, agent: str = "claude") -> dict[str, list[Json]]:
    """The snippet's hook groups with the real command prefix (and ``--agent codex`` for Codex)."""
    entries: dict[str, list[Json]] = copy.deepcopy(snippet()["hooks"])
    for groups in entries.values():
        for group in groups:
            for handler in group["hooks"]:
                cmd = str(handler["command"])
                if cmd.startswith("mempal-hook"):
                    cmd = prefix + cmd[len("mempal-hook"):]
                if agent != "claude":
                    cmd += f" --agent {agent}"
                handler["command"] = cmd
    return entries


def is_ours(handler: Any) -> bool:
    if not isinstance(handler, dict):
        return False
    cmd = handler.get("command")
    return isinstance(cmd, str) and any(m in cmd for m in HOOK_MARKERS)


def _has_ours(group: Any) -> bool:
    return isinstance(group, dict) and isinstance(group.get("hooks"), list) and any(map(is_ours, group["hooks"]))


def _without_ours(groups: list[Any]) -> list[Any]:
    out: list[Any] = []
    for group in groups:
        if not _has_ours(group):
            out.append(group)
            continue
        kept = [h for h in group["hooks"] if not is_ours(h)]
        if kept:  # someone else's handler shares the group: keep it with theirs only
            out.append({**group, "hooks": kept})
    return out


def _hooks_table(settings: Json, path: Path) -> dict[str, Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f'{path}: "hooks" is not an object; fix it by hand, nothing was changed')
    return hooks


def merge_hooks(settings: Json, entries: dict[str, list[Json]], path: Path) -> Json:
    """``settings`` with our entries merged in (pure). Entries already installed exactly stay in place."""
    out = copy.deepcopy(settings)
    hooks = _hooks_table(out, path)
    for event, groups in entries.items():
        current = hooks.get(event, [])
        if not isinstance(current, list):
            raise InstallError(f"{path}: hooks.{event} is not a list; fix it by hand, nothing was changed")
        if [g for g in current if _has_ours(g)] == groups:
            continue
        hooks[event] = _without_ours(current) + copy.deepcopy(groups)
    return out


def remove_hooks(settings: Json, path: Path) -> Json:
    """``settings`` without any of our handlers (pure); events and groups left empty by that go too."""
    out = copy.deepcopy(settings)
    hooks = out.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event in list(hooks):
        current = hooks[event]
        if not isinstance(current, list) or not any(map(_has_ours, current)):
            continue
        cleaned = _without_ours(current)
        if cleaned:
            hooks[event] = cleaned
        else:
            del hooks[event]
    if not hooks:
        del out["hooks"]
    return out


def merge_server(config: Json, name: str, server: Json, path: Path) -> Json:
    out = copy.deepcopy(config)
    servers = out.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InstallError(f'{path}: "mcpServers" is not an object; fix it by hand, nothing was changed')
    servers[name] = server
    return out


# files -------------------------------------------------------------------------------------------------------
def read_json(path: Path) -> Json:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it or move it away, nothing was changed") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; nothing was changed")
    return data


def backup(path: Path) -> Path | None:
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.bak-{stamp}-{n}")
    shutil.copy2(path, target)
    return target


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dumps(data: Json) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True, slots=True)
class Change:
    path: Path
    changed: bool
    text: str
    backup: Path | None = None


def apply(path: Path, before: Json, after: Json, *, dry_run: bool) -> Change:
    text = dumps(after)
    if after == before and path.exists():
        return Change(path, False, text)
    if dry_run:
        return Change(path, True, text)
    saved = backup(path)
    write_text_atomic(path, text)
    return Change(path, True, text, saved)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr)


def report(change: Change, what: str, *, dry_run: bool) -> None:
    if dry_run:
        _say(f"# {change.path} would {'become' if change.changed else 'stay'}:")
        sys.stdout.write(change.text)
        return
    if not change.changed:
        _say(f"{what}: already up to date in {change.path}; nothing changed")
        return
    extra = f" (backup: {change.backup})" if change.backup else ""
    _say(f"{what}: wrote {change.path}{extra}")


# codex feature flag ------------------------------------------------------------------------------------------
def codex_hooks_flag(config: Path) -> str:
    """``on``, ``off`` (explicitly disabled), ``absent`` (not set) or ``unreadable``."""
    try:
        with config.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return "absent"
    except (OSError, tomllib.TOMLDecodeError):
        return "unreadable"
    features = data.get("features")
    if not isinstance(features, dict):
        return "absent"
    values = [features.get(k) for k in ("hooks", "codex_hooks") if k in features]
    if any(v is False for v in values):
        return "off"
    if any(v is True for v in values):
        return "on"
    return "absent"


def codex_warning(config: Path) -> str | None:
    flag = codex_hooks_flag(config)
    enable = "run `codex features enable codex_hooks` (or add `[features]` / `codex_hooks = true`)"
    if flag == "off":
        return f"warning: Codex hooks are turned off in {config}; {enable}, then restart Codex"
    if flag == "absent":
        return (f"warning: `[features] codex_hooks = true` is not set in {config}; Codex releases where hooks are "
                f"still experimental ignore hooks.json without it: {enable}, then restart Codex")
    if flag == "unreadable":
        return f"warning: cannot read {config} to check the Codex hooks feature flag"
    return None


# commands ----------------------------------------------------------------------------------------------------
def install_hooks(scope: str, codex: bool, dry_run: bool) -> list[Change]:
    prefix = hook_command_prefix()
    targets = [(claude_settings_path(scope), "claude")]
    if codex:
        targets.append((codex_hooks_path(scope), "codex"))
    changes = []
    for path, agent in targets:
        before = read_json(path)
        changes.append(apply(path, before, merge_hooks(before, hook_entries(prefix, agent), path), dry_run=dry_run))
    return changes


def uninstall_hooks(scope: str, codex: bool, dry_run: bool) -> list[Change]:
    targets = [claude_settings_path(scope)] + ([codex_hooks_path(scope)] if codex else [])
    changes = []
    for path in targets:
        if not path.exists():
            continue
        before = read_json(path)
        changes.append(apply(path, before, remove_hooks(before, path), dry_run=dry_run))
    return changes


def cmd_install_hooks(args: argparse.Namespace) -> int:
    try:
        changes = install_hooks(args.scope, args.codex, args.dry_run)
    except InstallError as exc:
        _say(f"mempal: {exc}")
        return EXIT_ERROR
    for change in changes:
        report(change, "mempal hooks", dry_run=args.dry_run)
    if _script("mempal-hook") is None:
        _say("note: mempal-hook is not installed as a script; the hooks run it as a module of this Python")
    if any(c.changed for c in changes) and not args.dry_run:
        _say("Claude Code reads hooks at startup: restart it, or review them in /hooks.")
    if args.codex:
        warning = codex_warning(codex_home() / "config.toml")
        if warning:
            _say(warning)
    return EXIT_OK


def cmd_uninstall_hooks(args: argparse.Namespace) -> int:
    try:
        changes = uninstall_hooks(args.scope, args.codex, args.dry_run)
    except InstallError as exc:
        _say(f"mempal: {exc}")
        return EXIT_ERROR
    if not changes:
        _say("mempal hooks: nothing installed here; nothing changed")
    for change in changes:
        report(change, "mempal hooks removed", dry_run=args.dry_run)
    return EXIT_OK


def codex_mcp_block(command: str, cmd_args: list[str]) -> str:
    # JSON strings are valid TOML basic strings for every path we can meet here.
    return (f"\n[mcp_servers.{SERVER_NAME}]\ncommand = {json.dumps(command)}\n"
            f"args = [{', '.join(json.dumps(a) for a in cmd_args)}]\n")


def install_codex_mcp(command: str, cmd_args: list[str], dry_run: bool) -> None:
    path = codex_home() / "config.toml"
    block = codex_mcp_block(command, cmd_args)
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
        if isinstance(existing, dict) and existing.get("command") == command and existing.get("args", []) == cmd_args:
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


def cmd_install_mcp(args: argparse.Namespace) -> int:
    command, cmd_args = mcp_command()
    path = claude_mcp_path(args.scope)
    try:
        before = read_json(path)
        server: Json = {"type": "stdio", "command": command, "args": cmd_args}
        change = apply(path, before, merge_server(before, SERVER_NAME, server, path), dry_run=args.dry_run)
        report(change, "mempal MCP for Claude Code", dry_run=args.dry_run)
        if args.codex:
            install_codex_mcp(command, cmd_args, args.dry_run)
    except InstallError as exc:
        _say(f"mempal: {exc}")
        return EXIT_ERROR
    if not args.dry_run:
        _say("Restart Claude Code (and Codex) so they start the mempal MCP server.")
    return EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add install-hooks, uninstall-hooks and install-mcp to the ``mempal`` parser."""
    p = sub.add_parser("install-hooks", help="add mempal's hooks to Claude Code (and Codex) settings")
    p.add_argument("--scope", choices=["user", "project"], default="user",
                   help="user: ~/.claude/settings.json (default); project: ./.claude/settings.json")
    p.add_argument("--codex", action="store_true", help="also write Codex's hooks.json")
    p.add_argument("--dry-run", action="store_true", help="print the resulting settings; write nothing")
    p.set_defaults(func=cmd_install_hooks)

    p = sub.add_parser("uninstall-hooks", help="remove exactly the hooks install-hooks added")
    p.add_argument("--scope", choices=["user", "project"], default="user")
    p.add_argument("--codex", action="store_true", help="also clean Codex's hooks.json")
    p.add_argument("--dry-run", action="store_true", help="print the resulting settings; write nothing")
    p.set_defaults(func=cmd_uninstall_hooks)

    p = sub.add_parser("install-mcp", help="register the mempal MCP server with Claude Code (and Codex)")
    p.add_argument("--scope", choices=["user", "project"], default="project",
                   help="project: ./.mcp.json (default); user: ~/.claude.json")
    p.add_argument("--codex", action="store_true", help="also add [mcp_servers.mempal] to Codex's config.toml")
    p.add_argument("--dry-run", action="store_true", help="print the resulting config; write nothing")
    p.set_defaults(func=cmd_install_mcp)
