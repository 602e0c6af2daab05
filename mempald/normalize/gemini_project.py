"""The project folder behind a Gemini CLI chat (pure: reads only through the intake's ``Look``).

A chat lies in ``~/.gemini/tmp/<project>/chats/`` (a sub-agent's in ``chats/<parent session id>/``, a ``/chat save``
checkpoint in ``<project>/`` itself). ``<project>`` is the short name ``~/.gemini/projects.json`` gives the folder
(``{"projects": {"/path/to/folder": "name"}}``, current releases) or, before that, the sha256 of the folder's path,
with the path itself written to ``<project>/.project_root``. Either names the wing.
"""

from __future__ import annotations

import hashlib
from pathlib import PurePath

from mempald.normalize.format import Look, loads

SIDE_MAX = 1024 * 1024  # .project_root, projects.json: small files


def project_dir(chat: PurePath) -> PurePath | None:
    """``~/.gemini/tmp/<project>`` of a chat or checkpoint path (None when the path is not laid out so)."""
    parents = list(chat.parents)
    for i, folder in enumerate(parents[:3]):
        if folder.name == "chats" and i + 1 < len(parents):
            return parents[i + 1]
    if chat.name.startswith("checkpoint-") and chat.parent.parent.name == "tmp":
        return chat.parent
    return None


def _is_path(text: str) -> bool:
    return text.startswith("/") or (len(text) > 2 and text[1] == ":" and text[2] in "\\/")


def project_folder(chat: PurePath, look: Look) -> str:
    """The folder the chat's session worked in, "" when neither mapping names it."""
    project = project_dir(chat)
    if project is None:
        return ""
    marker = look.read(project / ".project_root", SIDE_MAX)
    text = marker.decode("utf-8", errors="replace").strip() if marker else ""
    if _is_path(text):
        return text
    raw = look.read(project.parent.parent / "projects.json", SIDE_MAX)
    doc = loads(raw) if raw else None
    projects = doc.get("projects") if isinstance(doc, dict) else None
    if not isinstance(projects, dict):
        return ""
    for folder, name in projects.items():
        if not isinstance(folder, str) or not _is_path(folder):
            continue
        if name == project.name or hashlib.sha256(folder.encode("utf-8")).hexdigest() == project.name:
            return folder
    return ""
