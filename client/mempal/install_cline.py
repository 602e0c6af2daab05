"""``mempal install-hooks`` / ``uninstall-hooks --agent cline [--scope user|project] [--dry-run]``: mempal's hooks
in Cline (3.36+). Stdlib only.

Cline runs, for each event, an executable file named exactly after it (no extension) found in its global hooks
folder, ``~/Documents/Cline/Hooks/`` (``--scope user``, the default), or in a workspace's ``.clinerules/hooks/``
(``--scope project``: the current directory's); both run when both exist. Each file written here is a small
``/bin/sh`` script that ``exec``s ``mempal-hook EVENT --agent cline`` (``mempal.install.hook_command_prefix``:
this Python with the guarded hook entry; pinned palace variables included) with the script's own arguments
(Cline passes none; ``mempal doctor`` runs the file with ``--probe``) and carries a marker line, by which
mempal's files are recognised:

- ``TaskStart`` and ``TaskResume``: the wake-up (``session-start``);
- ``UserPromptSubmit``: recall for the prompt (``prompt``; every message the user sends, the task's first too);
- ``PreCompact`` (before Cline truncates the history), ``TaskComplete`` and ``TaskCancel``: ask for the task
  folder's ingest at once (``precompact`` / ``session-end``), returning at once.

A file of that name that is not mempal's is never overwritten nor removed: it is named and left alone (Cline
runs one file per event per folder; the user can call ``mempal-hook`` from theirs). Writes are atomic, files
are made executable (Cline skips a file without the executable bit), a re-install replaces a stale one of ours
in place, and ``uninstall-hooks`` removes exactly ours. Windows (where Cline runs ``<Event>.ps1`` through
PowerShell) is not supported yet: said, nothing written.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from mempal.install_files import InstallError, _say, write_text_atomic

MARKER = "# mempal hook for Cline: written by `mempal install-hooks --agent cline`"
CLINE_HOOKS = {"TaskStart": "session-start", "TaskResume": "session-start", "UserPromptSubmit": "prompt",
               "PreCompact": "precompact", "TaskComplete": "session-end", "TaskCancel": "session-end"}
EXIT_OK = 0
EXIT_ERROR = 1


@dataclass(frozen=True, slots=True)
class HookFile:
    path: Path
    action: str  # "write", "same", "remove", "foreign" (someone else's: left alone), "absent"
    text: str = ""


def hooks_dir(scope: str) -> Path:
    return Path.home() / "Documents" / "Cline" / "Hooks" if scope == "user" else \
        Path.cwd() / ".clinerules" / "hooks"


def script_text(prefix: str, verb: str) -> str:
    return f'#!/bin/sh\n{MARKER}\nexec {prefix} {verb} --agent cline "$@"\n'


def is_ours(path: Path) -> bool:
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return MARKER in head


def plan(scope: str, prefix: str | None) -> list[HookFile]:
    """What installing (``prefix``: the hook command's) or, with None, uninstalling does to each event's file."""
    if os.name == "nt":
        raise InstallError("Cline runs <Event>.ps1 hooks through PowerShell on Windows; mempal does not write "
                           "those yet. Nothing was changed.")
    folder = hooks_dir(scope)
    out: list[HookFile] = []
    for event, verb in CLINE_HOOKS.items():
        path = folder / event
        exists = path.exists() or path.is_symlink()
        if exists and not is_ours(path):
            out.append(HookFile(path, "foreign"))
        elif prefix is None:
            out.append(HookFile(path, "remove" if exists else "absent"))
        else:
            text = script_text(prefix, verb)
            same = exists and path.read_text(encoding="utf-8", errors="replace") == text and os.access(path, os.X_OK)
            out.append(HookFile(path, "same" if same else "write", text))
    return out


def carry_out(files: list[HookFile], *, dry_run: bool, install: bool) -> None:
    for f in files:
        if f.action == "foreign":
            what = "installing" if install else "removing"
            _say(f"mempal hooks for Cline: {f.path} is not mempal's: left as it is (not {what} ours there)")
        elif f.action == "same":
            _say(f"mempal hooks for Cline: {f.path} unchanged")
        elif f.action == "write":
            if dry_run:
                _say(f"mempal hooks for Cline: would write {f.path}:")
                sys.stdout.write(f.text)
                continue
            write_text_atomic(f.path, f.text)
            f.path.chmod(0o755)
            _say(f"mempal hooks for Cline: wrote {f.path}")
        elif f.action == "remove":
            if not dry_run:
                f.path.unlink()
            _say(f"mempal hooks for Cline: {'would remove' if dry_run else 'removed'} {f.path}")


def cmd_hooks(args: argparse.Namespace, install: bool) -> int:
    from mempal.install import hook_command_prefix

    try:
        files = plan(args.scope, hook_command_prefix() if install else None)
        carry_out(files, dry_run=args.dry_run, install=install)
    except (InstallError, OSError) as exc:
        _say(f"mempal: {exc}")
        return EXIT_ERROR
    if not install and all(f.action in ("absent", "foreign") for f in files):
        _say("mempal hooks: nothing installed here; nothing changed")
    if install and any(f.action == "write" for f in files) and not args.dry_run:
        _say("Cline runs them for its next task, when hooks are enabled in its settings.")
    return EXIT_OK
