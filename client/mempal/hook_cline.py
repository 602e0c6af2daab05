"""What differs when Cline runs ``mempal-hook`` (stdlib only, like ``mempal.hook``: no ``json``, ``re``,
``pathlib`` or ``typing`` on its path).

Cline (3.36+) runs an executable named after the event from ``~/Documents/Cline/Hooks/`` or a workspace's
``.clinerules/hooks/`` (``mempal.install_cline``), writes one JSON object on its stdin: ``clineVersion``,
``hookName``, ``timestamp``, ``taskId``, ``workspaceRoots``, ``userId`` and the event's own object
(``userPromptSubmit: {prompt, attachments}``, ``taskStart: {taskMetadata}``, ``preCompact: {...}``), and reads
the last JSON object of stdout: ``{"cancel": false, "contextModification": "..."}`` (a non-zero exit or a
``cancel: true`` blocks the task: the hook never does either). Its input carries no transcript path: the task's
folder (``<editor>/User/globalStorage/saoudrizwan.claude-dev/tasks/<taskId>``, or the CLI's
``~/.cline/data/tasks/<taskId>``, which the daemon watches) is looked up by the task id for the save events.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CLINE_EMPTY = '{"cancel":false}'  # Cline's "nothing to add, go on"
EXTENSION = "saoudrizwan.claude-dev"
EDITORS = ("Code", "Code - Insiders", "Cursor", "Windsurf", "VSCodium")
SAVE_EVENTS = ("precompact", "session-end")


def is_cline(data: dict[str, Any]) -> bool:
    return "clineVersion" in data and "taskId" in data


def _user_dirs() -> list[str]:
    home = os.path.expanduser("~")
    if sys.platform == "darwin":
        base = os.path.join(home, "Library", "Application Support")
    elif os.name == "nt":
        base = os.environ.get("APPDATA") or os.path.join(home, "AppData", "Roaming")
    else:
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return [os.path.join(base, e, "User", "globalStorage", EXTENSION, "tasks") for e in EDITORS] + [
        os.path.join(home, ".cline", "data", "tasks"), os.path.join(home, ".cline", "data", "sessions")]


def task_folder(task_id: str) -> str | None:
    """The folder Cline keeps the task ``task_id`` in (the first found), None when there is none."""
    if not task_id or task_id in (".", "..") or "/" in task_id or "\\" in task_id or "\x00" in task_id:
        return None
    for root in _user_dirs():
        folder = os.path.join(root, task_id)
        if os.path.isdir(folder):
            return folder
    return None


def adapt_cline(event: str, data: dict[str, Any]) -> dict[str, Any]:
    """Cline's input in Claude Code's fields: ``session_id`` (the task), ``cwd`` (the first workspace root: the
    wing), ``prompt``; for the save events, ``transcript_path`` (the task's folder, when found)."""
    out = dict(data)
    task = data.get("taskId")
    if isinstance(task, str) and task:
        out["session_id"] = task
    roots = data.get("workspaceRoots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        out["cwd"] = roots[0]
    own = data.get("userPromptSubmit")
    if event == "prompt" and isinstance(own, dict) and isinstance(own.get("prompt"), str):
        out["prompt"] = own["prompt"]
    if event in SAVE_EVENTS and isinstance(task, str):
        folder = task_folder(task)
        if folder:
            out["transcript_path"] = folder
    return out
