"""``install-mcp`` / ``install-hooks`` / ``uninstall-hooks --agent gemini|antigravity``: mempal in Gemini CLI and in
Antigravity CLI (``agy``), by the same rules as for Claude Code (``mempal.install_files``: merge, never clobber;
idempotent; a backup before a change; atomic writes; ``--dry-run``). Stdlib only.

- **Gemini CLI** keeps both in its settings file, ``~/.gemini/settings.json`` (``$GEMINI_CLI_HOME/.gemini`` when
  set; ``--scope project``: ``./.gemini/settings.json``): ``mcpServers.mempal`` and, in ``hooks``, one group per
  event, Claude Code's shape with timeouts in milliseconds: ``SessionStart`` (wake-up), ``BeforeAgent`` (recall
  for the prompt), ``AfterAgent`` (the stop hook: save every ``hooks.stop_every`` turns), ``PreCompress`` and
  ``SessionEnd`` (ask for the session's ingest, at once). Hooks run unless the settings turn them off
  (``hooksConfig.enabled: false``, or ``hooks.enabled`` in earlier releases) or name one in ``disabled``: said
  after the install.
- **Antigravity CLI** reads its customizations from ``~/.gemini/config/`` (``--scope project``: ``./.agents/``):
  ``mcp_config.json`` (``mcpServers.mempal``, no ``type``) and ``hooks.json``, which maps a hook's name to its
  events: ours is ``mempal``, with ``PreInvocation`` (recall, on a turn's first model call; on a conversation's
  first, the wake-up too: agy has no session-start event) and ``Stop`` (save); timeouts in seconds. Only events
  agy knows are written (``PreToolUse``, ``PostToolUse``, ``PreInvocation``, ``PostInvocation``, ``Stop``).
"""

from __future__ import annotations

import argparse
import copy
import os
from pathlib import Path
from typing import Any

from mempal.install_files import Change, InstallError, Json, _say, apply, read_json, report
from mempal.install_mcp import SERVER_NAME, mcp_command, merge_server
from mempal.paths import pinned_env

AGENTS = ("gemini", "antigravity")
NAMES = {"gemini": "Gemini CLI", "antigravity": "Antigravity CLI"}
HOOK_NAME = "mempal"  # our entry in Antigravity's hooks.json
# event -> (mempal-hook event, timeout: milliseconds for Gemini CLI, seconds for Antigravity CLI)
GEMINI_HOOKS = {"SessionStart": ("session-start", 15000), "BeforeAgent": ("prompt", 10000),
                "AfterAgent": ("stop", 30000), "PreCompress": ("precompact", 5000), "SessionEnd": ("session-end", 5000)}
ANTIGRAVITY_HOOKS = {"PreInvocation": ("prompt", 15), "Stop": ("stop", 30)}
EXIT_OK = 0
EXIT_ERROR = 1


def gemini_dir(scope: str) -> Path:
    if scope == "project":
        return Path.cwd() / ".gemini"
    home = os.environ.get("GEMINI_CLI_HOME")
    return (Path(home).expanduser() if home else Path.home()) / ".gemini"


def antigravity_dir(scope: str) -> Path:
    return Path.cwd() / ".agents" if scope == "project" else Path.home() / ".gemini" / "config"


def mcp_path(agent: str, scope: str) -> Path:
    return gemini_dir(scope) / "settings.json" if agent == "gemini" else antigravity_dir(scope) / "mcp_config.json"


def hooks_path(agent: str, scope: str) -> Path:
    return gemini_dir(scope) / "settings.json" if agent == "gemini" else antigravity_dir(scope) / "hooks.json"


def server_entry() -> Json:
    command, args = mcp_command()
    server: Json = {"command": command, "args": args}
    env = pinned_env()
    if env:
        server["env"] = env
    return server


def gemini_entries(prefix: str) -> dict[str, list[Json]]:
    return {event: [{"hooks": [{"type": "command", "name": f"mempal-{name}",
                                "command": f"{prefix} {name} --agent gemini", "timeout": timeout}]}]
            for event, (name, timeout) in GEMINI_HOOKS.items()}


def antigravity_entry(prefix: str) -> Json:
    return {event: [{"type": "command", "command": f"{prefix} {name} --agent antigravity", "timeout": timeout}]
            for event, (name, timeout) in ANTIGRAVITY_HOOKS.items()}


def holds_ours(entry: Any) -> bool:
    from mempal.install import is_ours

    return isinstance(entry, dict) and any(is_ours(h) for groups in entry.values() if isinstance(groups, list)
                                           for h in groups)


def with_hooks(agent: str, config: Json, path: Path, prefix: str) -> Json:
    """``config`` with mempal's hooks for ``agent`` (pure): Gemini's merged into ``hooks`` as Claude Code's are,
    Antigravity's as the ``mempal`` entry (an entry of that name that is not ours is refused)."""
    from mempal.install import merge_hooks

    if agent == "gemini":
        return merge_hooks(config, gemini_entries(prefix), path)
    current = config.get(HOOK_NAME)
    if current is not None and not holds_ours(current):
        raise InstallError(f'{path}: a hook named "{HOOK_NAME}" that is not mempal\'s is there; nothing was changed')
    out = copy.deepcopy(config)
    out[HOOK_NAME] = antigravity_entry(prefix)
    return out


def without_hooks(agent: str, config: Json, path: Path) -> Json:
    from mempal.install import remove_hooks

    if agent == "gemini":
        return remove_hooks(config, path)
    out = copy.deepcopy(config)
    if holds_ours(out.get(HOOK_NAME)):
        del out[HOOK_NAME]
    return out


def gemini_advice(config: Json) -> list[str]:
    """What stops Gemini CLI from running the hooks just installed: the kill switch, or ours named disabled."""
    out: list[str] = []
    for where in ("hooksConfig", "hooks"):
        policy = config.get(where)
        if not isinstance(policy, dict):
            continue
        if policy.get("enabled") is False:
            out.append(f'warning: Gemini CLI hooks are turned off ("{where}": {{"enabled": false}}); set it to true, '
                       "then restart Gemini CLI")
        disabled = policy.get("disabled")
        ours = sorted(n for n in disabled if isinstance(n, str) and n.startswith("mempal-")) \
            if isinstance(disabled, list) else []
        if ours:
            out.append(f'warning: "{where}.disabled" turns off {", ".join(ours)}; remove them to use them')
    return out


def install_mcp(agent: str, scope: str, dry_run: bool) -> Change:
    path = mcp_path(agent, scope)
    before = read_json(path)
    return apply(path, before, merge_server(before, SERVER_NAME, server_entry(), path), dry_run=dry_run)


def install_hooks(agent: str, scope: str, dry_run: bool) -> Change:
    from mempal.install import hook_command_prefix

    path = hooks_path(agent, scope)
    before = read_json(path)
    return apply(path, before, with_hooks(agent, before, path, hook_command_prefix()), dry_run=dry_run)


def uninstall_hooks(agent: str, scope: str, dry_run: bool) -> Change | None:
    path = hooks_path(agent, scope)
    if not path.exists():
        return None
    before = read_json(path)
    return apply(path, before, without_hooks(agent, before, path), dry_run=dry_run)


def cmd_install_mcp(args: argparse.Namespace) -> int:
    try:
        change = install_mcp(args.agent, args.scope, args.dry_run)
    except InstallError as exc:
        _say(f"mempal: {exc}")
        return EXIT_ERROR
    report(change, f"mempal MCP for {NAMES[args.agent]}", dry_run=args.dry_run)
    if change.changed and not args.dry_run:
        _say(f"Restart {NAMES[args.agent]} so it starts the mempal MCP server.")
    return EXIT_OK


def cmd_hooks(args: argparse.Namespace, install: bool) -> int:
    try:
        change = (install_hooks if install else uninstall_hooks)(args.agent, args.scope, args.dry_run)
    except InstallError as exc:
        _say(f"mempal: {exc}")
        return EXIT_ERROR
    if change is None:
        _say("mempal hooks: nothing installed here; nothing changed")
        return EXIT_OK
    report(change, "mempal hooks" if install else "mempal hooks removed", dry_run=args.dry_run)
    if install and change.changed and not args.dry_run:
        _say(f"{NAMES[args.agent]} reads hooks at startup: restart it.")
    if install and args.agent == "gemini":
        for line in gemini_advice(read_json(change.path) if change.path.exists() else {}):
            _say(line)
    return EXIT_OK
