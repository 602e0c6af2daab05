"""The hooks ``mempal doctor`` finds for the agents other than Claude Code and Codex: Gemini CLI's and
Antigravity's (``mempal.install_gemini``), Cursor's (``mempal.install_editors``) and Cline's scripts
(``mempal.install_cline``), each in its user scope and, when it is another place, this project's. Ours are found
by each install module's own test and path, as the command lines the agent runs (a Cline script: the file
itself, which passes its arguments on), beside the events this release installs there. Reads only."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mempal import install_cline, install_editors, install_gemini
from mempal.install import is_ours
from mempal.install_files import InstallError, Json, read_json

AGENTS = ("gemini", "antigravity", "cursor", "cline")
LABELS = {**install_gemini.NAMES, "cursor": install_editors.EDITOR_MCP["cursor"].label, "cline": "Cline"}
WANTED = {"gemini": frozenset(install_gemini.GEMINI_HOOKS), "antigravity": frozenset(install_gemini.ANTIGRAVITY_HOOKS),
          "cursor": frozenset(install_editors.CURSOR_EVENTS), "cline": frozenset(install_cline.CLINE_HOOKS)}
PASSES_ARGS = '"$@"'  # how a Cline script of this release hands ``--probe`` on (``install_cline.script_text``)


@dataclass(frozen=True)
class Installed:
    """mempal's hooks in one agent's file or folder: (event, the command line the agent runs) for each."""
    name: str  # the check's name
    where: Path
    fix: str  # the install command that writes this release's
    commands: tuple[tuple[str, str], ...] = ()
    wanted: frozenset[str] = frozenset()  # the events this release installs there
    unprobed: tuple[str, ...] = ()  # events whose command cannot take --probe (an earlier release's Cline script)
    error: str = ""  # the file could not be read

    @property
    def events(self) -> set[str]:
        return {event for event, _ in self.commands} | set(self.unprobed)


def hook_groups(settings: Json) -> dict[str, list[dict[str, Any]]]:
    """Claude Code's shape (also Codex's and Gemini CLI's): the groups of ``hooks`` that hold one of ours."""
    hooks = settings.get("hooks")
    out: dict[str, list[dict[str, Any]]] = {}
    if isinstance(hooks, dict):
        for event, groups in hooks.items():
            if isinstance(groups, list):
                mine = [g for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                        and any(map(is_ours, g["hooks"]))]
                if mine:
                    out[event] = mine
    return out


def _handlers(table: Any, ours: Callable[[Any], bool]) -> tuple[tuple[str, str], ...]:
    """``{event: [handler, ...]}`` (Antigravity's entry, Cursor's ``hooks``): ours, by ``ours``."""
    if not isinstance(table, dict):
        return ()
    return tuple((event, str(h["command"])) for event, handlers in table.items() if isinstance(handlers, list)
                 for h in handlers if ours(h))


def _commands(agent: str, config: Json) -> tuple[tuple[str, str], ...]:
    if agent == "gemini":
        return tuple((event, str(h["command"])) for event, groups in hook_groups(config).items() for g in groups
                     for h in g["hooks"] if is_ours(h))
    if agent == "antigravity":
        entry = config.get(install_gemini.HOOK_NAME)
        return _handlers(entry, is_ours) if install_gemini.holds_ours(entry) else ()
    return _handlers(config.get("hooks"), install_editors.is_ours_handler)


def hooks_file(agent: str, scope: str) -> Path:
    if agent == "cline":
        return install_cline.hooks_dir(scope)
    return install_editors.cursor_hooks_path(scope) if agent == "cursor" else install_gemini.hooks_path(agent, scope)


def _cline(base: Installed) -> Installed | None:
    try:
        files = sorted(p for p in base.where.iterdir() if p.is_file() and install_cline.is_ours(p))
    except OSError:
        return None  # no folder: none installed
    if not files:
        return None
    probed, unprobed = [], []
    for p in files:
        try:
            passes = PASSES_ARGS in p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            passes = True  # unreadable: the probe says why
        if passes:
            probed.append((p.name, shlex.quote(str(p))))
        else:
            unprobed.append(p.name)
    return Installed(base.name, base.where, base.fix, tuple(probed), base.wanted, tuple(unprobed))


def find(agent: str, scope: str) -> Installed | None:
    """mempal's hooks for ``agent`` in ``scope``: None when there are none (or no file)."""
    where = hooks_file(agent, scope)
    label = f"{LABELS[agent]} hooks" + (" (project)" if scope == "project" else "")
    fix = f"mempal install-hooks --agent {agent}" + (" --scope project" if scope == "project" else "")
    base = Installed(label, where, fix, wanted=WANTED[agent])
    if agent == "cline":
        return _cline(base)
    try:
        config = read_json(where)
    except (InstallError, OSError) as exc:
        try:
            mentions = "mempal" in where.read_text(encoding="utf-8", errors="replace")
        except OSError:
            mentions = where.exists()
        return Installed(label, where, fix, error=str(exc)) if mentions else None
    commands = _commands(agent, config)
    return Installed(label, where, fix, commands, WANTED[agent]) if commands else None


def installed() -> list[Installed]:
    """Every agent's hooks that hold ours: its user scope, and this project's when that is another place."""
    out = []
    for agent in AGENTS:
        for scope in ("user", "project"):
            if scope == "project" and hooks_file(agent, "project") == hooks_file(agent, "user"):
                continue
            found = find(agent, scope)
            if found is not None:
                out.append(found)
    return out
