"""What a Gemini CLI chat needs from beside it (pure over a ``Look``): its project and a sub-agent's parent.

A chat gets its project from ``.project_root`` in its project folder when its own text names none (a
sub-agent's chat lies one folder deeper, in ``chats/<parent session id>/``); a sub-agent's chat gets its parent
exchange from its parent session's chat: the last prompt there before the sub-agent started.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePath

from mempald.normalize.format import Input, Look, loads
from mempald.normalize.model import CursorContext, NormalizeError

PARENT_MAX = 64 * 1024 * 1024  # a parent session's chat read to find a sub-agent's parent (larger: not read)
SIDE_MAX = 1024 * 1024  # .project_root, or a JSONL chat's first line
HEAD_BYTES = 65536


def _header(path: PurePath, look: Look) -> dict[str, object]:
    """The header of a chat: a JSONL chat's first line, a JSON chat's own keys ({} when none)."""
    if path.suffix == ".jsonl":
        rec = loads(look.head(path, SIDE_MAX).split(b"\n", 1)[0])
        return rec if isinstance(rec, dict) else {}
    # a JSON chat's own keys come before its messages: read them from its head, not the whole file again
    text = look.head(path, HEAD_BYTES).decode("utf-8", errors="replace").split('"messages"', 1)[0]
    return {k: m.group(1) for k in ("kind", "startTime")
            if (m := re.search(rf'"{k}"\s*:\s*"([^"]*)"', text)) is not None}


def parent_of(path: PurePath, started: str, look: Look) -> str:
    """The exchange of the parent session that started the sub-agent chat ``path`` (which lies in a folder
    named after that session, beside the session's own chat): its last prompt before ``started``; "" if none."""
    from mempald.normalize import gemini  # (the format's own module declares this hook)

    folder = path.parent
    parent_id = folder.name
    if len(parent_id) < 8:
        return ""
    prefix = "session-"
    for name in look.entries(folder.parent):
        if not (name.startswith(prefix) and f"-{parent_id[:8]}.json" in name):
            continue
        data = look.read(folder.parent / name, PARENT_MAX)
        if data is None:
            continue
        try:
            parsed = gemini.parse(Input(name=str(folder.parent / name), data=data,
                                        context=CursorContext(format=gemini.SOURCE_KIND)))
        except NormalizeError:
            continue
        if parsed.context.session_id != parent_id:
            continue
        prompts = [e for e in parsed.exchanges if e.user and (not started or (e.timestamp or "") <= started)]
        return prompts[-1].key if prompts else ""
    return ""


def beside(path: PurePath, ctx: CursorContext, look: Look) -> CursorContext:
    """``ctx`` with the project of a chat from ``.project_root`` beside its ``chats/`` folder, and a sub-agent
    chat's parent exchange."""
    from mempald.normalize.gemini import SUBAGENT

    header = _header(path, look)
    if header.get("kind") == SUBAGENT and not ctx.parent:
        started = header.get("startTime")
        ctx = replace(ctx, parent=parent_of(path, started if isinstance(started, str) else "", look))
    if ctx.cwd:
        return ctx
    folders = [path.parent, path.parent.parent]
    if path.parent.parent.name == "chats":  # a sub-agent's chat, in chats/<parent session id>/
        folders.append(path.parent.parent.parent)
    for folder in folders:
        marker = folder / ".project_root"
        try:
            text = look.head(marker, SIDE_MAX).decode("utf-8").strip() if look.is_file(marker) else ""
        except UnicodeError:
            text = ""
        if text.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", text):
            return replace(ctx, cwd=text)
    return ctx
