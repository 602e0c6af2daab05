"""What a shell command or a patch touched, for ``Exchange.files`` (pure, stdlib only).

Only clear cases count: an ``apply_patch`` body (its ``*** Add/Update/Delete File:`` and ``*** Move to:`` lines),
or one simple command (no pipe, no chaining, no redirection) of a file reader (``cat``, ``nl``, ``head``,
``tail``, ``sed -n``, ``wc``, ``less``, ``bat``) naming its files. Anything else touches nothing we claim.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from mempald.normalize.common import add_unique, touched_path

_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)
_READERS = frozenset({"cat", "nl", "head", "tail", "sed", "wc", "less", "more", "bat", "batcat"})
_OPERATORS = frozenset({"|", "||", "&&", ";", "&", ">", ">>", "<", "<<", "2>", "2>&1", "|&"})
_VALUE_OPTIONS = {"head": {"-n", "-c"}, "tail": {"-n", "-c"}, "sed": {"-e", "-f"}, "nl": {"-w", "-s", "-v", "-i"}}
_SHELLS = ("bash", "sh", "zsh", "pwsh", "powershell")


def command_text(command: Any) -> str:
    """A shell command as typed: ``["bash", "-lc", "ls"]`` becomes ``ls``."""
    if isinstance(command, str):
        return command
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        if len(command) >= 3 and command[-2] in ("-lc", "-c") and command[0].rsplit("/", 1)[-1] in _SHELLS:
            return str(command[-1])
        return " ".join(command)
    return ""


def patch_files(patch: Any, cwd: str | None) -> list[str]:
    """The files an ``apply_patch`` body adds, updates, deletes or moves to."""
    out: list[str] = []
    if isinstance(patch, str):
        for m in _PATCH_FILE.finditer(patch):
            add_unique(out, touched_path(m.group(1) or m.group(2), cwd))
    return out


def command_files(command: Any, cwd: str | None) -> list[str]:
    """Files a shell command clearly reads or patches (see the module doc); empty when unclear."""
    text = command_text(command)
    if not text.strip():
        return []
    if "*** Begin Patch" in text and "apply_patch" in text:
        return patch_files(text, cwd)
    if "\n" in text.strip() or "$(" in text or "`" in text:
        return []
    first = text.lstrip().split(None, 1)[0] if text.strip() else ""
    if first.strip("'\"").rsplit("/", 1)[-1] not in _READERS:
        return []  # not a file reader: no need to tokenise (most commands)
    if not any(c in text for c in "'\"\\"):
        tokens = text.split()  # nothing to unquote: the fast path
    else:
        try:
            tokens = shlex.split(text, comments=False, posix=True)
        except ValueError:
            return []
    if not tokens or any(t in _OPERATORS for t in tokens):
        return []
    prog = tokens[0].rsplit("/", 1)[-1]
    if prog not in _READERS:
        return []
    out: list[str] = []
    takes_value = _VALUE_OPTIONS.get(prog, set())
    script_pending = prog == "sed" and "-e" not in tokens and "-f" not in tokens
    skip_next = False
    for tok in tokens[1:]:
        if skip_next:
            skip_next = False
            continue
        if tok.startswith("-") and tok != "-":
            skip_next = tok in takes_value
            continue
        if script_pending:
            script_pending = False  # sed's first operand is its script
            continue
        if tok.lstrip("+").isdigit():
            continue  # head -5 style counts, tail +10
        add_unique(out, touched_path(tok, cwd))
    return out
