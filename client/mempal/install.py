"""``mempal install-hooks`` / ``uninstall-hooks`` (and ``install-mcp``, in ``mempal.install_mcp``): register
mempal with Claude Code and Codex.

Rules for every file touched here (``mempal.install_files``): merge, never clobber (other hooks, other servers
and every other key stay as they were); idempotent; a backup before a change; atomic writes; ``--dry-run``
prints what the file would become. A hook command is this Python running the hook's entry
(``/venv/bin/python3 -P -S -c 'import sys; sys.path.append(...); exec(GUARD)' prompt``, where GUARD imports
the hook's entry and exits 0 silently when it cannot, then runs it: the fastest start, see ``hook_argv``);
mempal's own handlers are recognised by their command (that, or ``mempal-hook`` and ``-m mempal.hook`` of
earlier releases), so ``uninstall-hooks`` removes exactly those, and a re-install replaces a stale one (an old
path) in place.

Where: Claude Code hooks in ``~/.claude/settings.json`` (``--scope user``, the default) or
``.claude/settings.json`` of the current directory (``--scope project``); Codex hooks (``--codex``) in
``$CODEX_HOME/hooks.json`` (default ``~/.codex``) or ``.codex/hooks.json``. Codex gets every hook but the file
gate (PreToolUse on Claude Code's file tools, which Codex does not have) and PostCompact (Claude Code's); its
rule hook matches its shell tool, ``Bash``. When
this palace lives where a bare environment would not find it (``mempal.paths.pinned_env``), the hook commands
carry those variables (``env MEMPAL_DATA_DIR=... /venv/bin/python3 -P -S -c ... prompt``). Stdlib only.
"""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from mempal.install_editors import install_cursor_hooks
from mempal.install_files import (
    Change,
    InstallError,
    Json,
    _say,
    apply,
    codex_advice,
    codex_home,
    read_json,
    report,
)
from mempal.install_mcp import cmd_install_mcp, register_install_mcp
from mempal.paths import pinned_env

# What the hook commands run: this Python and the hook's entry. Neither a console script (pip's older wrappers
# import re: 13 ms of every prompt) nor -m (runpy: 8 ms); see hook_argv for the flags.
HOOK_ENTRY = "from mempal.hook import entry"
# The import is guarded on the command line itself: a hook whose package is gone (`pip install -e` after
# `pip install .` moves it; a deleted venv's site-packages) exits 0 silently, as every hook failure does, but
# with ``--probe`` (``mempal doctor``) says why and exits 3.
HOOK_GUARD = ("try:\n " + HOOK_ENTRY + "\nexcept BaseException as e:\n"
              ' sys.exit(print("mempal-hook cannot start:", repr(e), file=sys.stderr) or 3'
              ' if "--probe" in sys.argv else 0)\nentry()')
# "mempal-hook" and "-m mempal.hook": how earlier releases ran it; "-m hooks.run": releases before 0.2.
# Recognised so that uninstall removes those too and a re-install replaces them.
HOOK_MARKERS = ("mempal-hook", "-m mempal.hook", "-m hooks.run", HOOK_ENTRY)
CLAUDE_ONLY = ("PostCompact",)  # Claude Code's own event
CLAUDE_ONLY_HOOKS = ("mempal-hook file",)  # the file gate matches Claude Code's file tools, which Codex lacks
CODEX_MATCHERS = {"mempal-hook rule": "Bash"}  # Codex's PreToolUse names its shell tool Bash
HOOK_AGENT_CHOICES = ["claude", "gemini", "antigravity", "cursor", "cline"]  # install-hooks --agent
EXIT_OK = 0
EXIT_ERROR = 1

__all__ = ["cmd_install_hooks", "cmd_install_mcp", "cmd_uninstall_hooks", "is_ours", "register"]


# where -------------------------------------------------------------------------------------------------------
def claude_settings_path(scope: str) -> Path:
    return (Path.home() if scope == "user" else Path.cwd()) / ".claude" / "settings.json"


def codex_hooks_path(scope: str) -> Path:
    return (codex_home() if scope == "user" else Path.cwd() / ".codex") / "hooks.json"


def hook_argv() -> list[str]:
    """The hook's command line, before its event: this Python, ``-P`` (the agent's cwd, the project, is not put on
    sys.path), ``-S`` (no ``site``: it and its ``.pth`` files, ``_distutils_hack`` among them, cost each hook 2-3 ms;
    the hook is stdlib only) and the folder that holds this ``mempal`` package appended to sys.path (after the
    standard library, so nothing installed next to it can shadow a stdlib module). ``PYTHONPATH`` still counts."""
    root = str(Path(__file__).resolve().parent.parent)
    # JSON string literals are Python ones here, and in double quotes: the shell quoting stays plain
    code = f"import sys; sys.path.append({json.dumps(root)}); exec({json.dumps(HOOK_GUARD)})"
    return [sys.executable, "-P", "-S", "-c", code]


def hook_command_prefix() -> str:
    prefix = shlex.join(hook_argv())
    pins = pinned_env()
    if pins:
        prefix = "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(pins.items())) + " " + prefix
    return prefix


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
    if agent != "claude":
        entries = {event: kept for event, groups in entries.items() if event not in CLAUDE_ONLY
                   if (kept := [g for g in groups if g["hooks"][0]["command"] not in CLAUDE_ONLY_HOOKS])}
        for groups in entries.values():
            for group in groups:
                if group["hooks"][0]["command"] in CODEX_MATCHERS:
                    group["matcher"] = CODEX_MATCHERS[group["hooks"][0]["command"]]
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


def _cursor_hooks(args: argparse.Namespace, *, uninstall: bool) -> int:
    """``--agent cursor``: Cursor's hooks.json (``mempal.install_editors``)."""
    try:
        install_cursor_hooks(args.scope, hook_argv(), HOOK_ENTRY, dry_run=args.dry_run, uninstall=uninstall)
    except InstallError as exc:
        _say(f"mempal: {exc}")
        return EXIT_ERROR
    return EXIT_OK


def cmd_install_hooks(args: argparse.Namespace) -> int:
    if getattr(args, "agent", "claude") == "cline":
        from mempal.install_cline import cmd_hooks as cline_hooks

        return cline_hooks(args, install=True)
    if getattr(args, "agent", "claude") in ("gemini", "antigravity"):
        from mempal.install_gemini import cmd_hooks

        return cmd_hooks(args, install=True)
    if getattr(args, "agent", "claude") == "cursor":
        return _cursor_hooks(args, uninstall=False)
    try:
        changes = install_hooks(args.scope, args.codex, args.dry_run)
    except InstallError as exc:
        _say(f"mempal: {exc}")
        return EXIT_ERROR
    for change in changes:
        report(change, "mempal hooks", dry_run=args.dry_run)
    if any(c.changed for c in changes) and not args.dry_run:
        _say("Claude Code reads hooks at startup: restart it, or review them in /hooks.")
    if args.codex:
        for line in codex_advice(codex_home() / "config.toml"):
            _say(line)
    return EXIT_OK


def cmd_uninstall_hooks(args: argparse.Namespace) -> int:
    if getattr(args, "agent", "claude") == "cline":
        from mempal.install_cline import cmd_hooks as cline_hooks

        return cline_hooks(args, install=False)
    if getattr(args, "agent", "claude") in ("gemini", "antigravity"):
        from mempal.install_gemini import cmd_hooks

        return cmd_hooks(args, install=False)
    if getattr(args, "agent", "claude") == "cursor":
        return _cursor_hooks(args, uninstall=True)
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


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add install-hooks, uninstall-hooks and install-mcp to the ``mempal`` parser."""
    p = sub.add_parser("install-hooks", help="add mempal's hooks to Claude Code (and Codex) settings")
    p.add_argument("--scope", choices=["user", "project"], default="user",
                   help="user: ~/.claude/settings.json (default); project: ./.claude/settings.json")
    p.add_argument("--codex", action="store_true", help="also write Codex's hooks.json")
    p.add_argument("--agent", choices=HOOK_AGENT_CHOICES, default="claude",
                   help="gemini: ~/.gemini/settings.json; antigravity: ~/.gemini/config/hooks.json; cursor: Cursor's "
                   "~/.cursor/hooks.json (or ./.cursor/hooks.json); cline: scripts in ~/Documents/Cline/Hooks/ "
                   "(or ./.clinerules/hooks/)")
    p.add_argument("--dry-run", action="store_true", help="print the resulting settings; write nothing")
    p.set_defaults(func=cmd_install_hooks)

    p = sub.add_parser("uninstall-hooks", help="remove exactly the hooks install-hooks added")
    p.add_argument("--scope", choices=["user", "project"], default="user")
    p.add_argument("--codex", action="store_true", help="also clean Codex's hooks.json")
    p.add_argument("--agent", choices=HOOK_AGENT_CHOICES, default="claude")
    p.add_argument("--dry-run", action="store_true", help="print the resulting settings; write nothing")
    p.set_defaults(func=cmd_uninstall_hooks)

    register_install_mcp(sub)
