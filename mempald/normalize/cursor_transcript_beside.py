"""What a Cursor agent transcript needs from beside it (pure over a ``Look``): the workspace folder its project
slug names, and, for a sub-agent's transcript, the exchange of its parent that started it.

The slug is the workspace's absolute path with every run of characters other than letters and digits made one
``-`` (``cursor_transcript``'s docstring says where this was verified): it cannot be read back, so the folders are
listed from the root down, each name slugged the same way, the longest that leads on first. A sub-agent's
transcript (``agent-transcripts/<uuid>/subagents/<uuid2>.jsonl``) names nothing of its parent; its first message
is the task its parent gave it, the ``prompt`` of the parent's ``Subagent`` (or ``Task``) tool call: the parent
exchange is the one that made that call (read from ``<uuid>/<uuid>.jsonl``, keyed as its own reading keys it).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Any

from mempald.normalize.common import as_str
from mempald.normalize.cursor_bubbles import prompt_key
from mempald.normalize.cursor_transcript_text import said
from mempald.normalize.format import Look, loads
from mempald.normalize.model import CursorContext

FOLDER = "agent-transcripts"
RESOLVE_LISTINGS = 64  # folders listed, at most, to find the workspace a slug names
PARENT_MAX = 64 * 1024 * 1024  # a parent transcript read to find the exchange that started a sub-agent
SIDE_MAX = 1024 * 1024  # the head of a sub-agent's transcript (its first message: the task)
SPAWNS = frozenset({"Subagent", "Task"})  # the tool calls that start a sub-agent
_SLUG_RUN = re.compile(r"[^A-Za-z0-9]+")


def cursor_slug(path: str) -> str:
    """Cursor's name for a workspace folder's project (module docstring)."""
    return _SLUG_RUN.sub("-", path).strip("-")


def where(name: str) -> tuple[str, str, str]:
    """(conversation uuid, sub-agent uuid or "", project slug) of a transcript's path ("" where not laid out so)."""
    parts = PurePosixPath(name.replace("\\", "/")).parts
    stem = PurePosixPath(name.replace("\\", "/")).stem
    if FOLDER not in parts:
        return stem, "", ""
    i = len(parts) - 1 - parts[::-1].index(FOLDER)
    slug = parts[i - 1] if i >= 1 else ""
    rest = parts[i + 1:]
    if len(rest) >= 3 and rest[-2] == "subagents":
        return rest[0], stem, slug
    return (rest[0] if len(rest) >= 2 else stem), "", slug


def resolve(slug: str, look: Look) -> str:
    """The folder on disk a project slug names ("" when none is found): each dash may have been any run of
    characters, so the folders are listed from the root down, the longest matching name first."""
    tokens = [t.lower() for t in slug.split("-") if t]
    if not tokens or (len(tokens) == 1 and tokens[0].isdigit()):
        return ""
    starts: list[tuple[PurePath, int]] = [(PurePosixPath("/"), 0)]
    if len(tokens[0]) == 1 and tokens[0].isalpha():
        starts.append((PureWindowsPath(f"{tokens[0].upper()}:/"), 1))
    budget = [RESOLVE_LISTINGS]

    def walk(base: PurePath, i: int) -> str:
        if i == len(tokens):
            return str(base)
        if budget[0] <= 0:
            return ""
        budget[0] -= 1
        found: list[tuple[int, str]] = []
        for entry in look.entries(base):
            words = [w.lower() for w in cursor_slug(entry).split("-") if w]
            if words and tokens[i:i + len(words)] == words:
                found.append((len(words), entry))
        for n, entry in sorted(found, key=lambda f: (-f[0], f[1])):
            if look.is_dir(base / entry):
                path = walk(base / entry, i + n)
                if path:
                    return path
        return ""

    return next((p for base, i in starts if (p := walk(base, i))), "")


def _text(rec: Any) -> str:
    message = rec.get("message") if isinstance(rec, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(as_str(p.get("text")) for p in parts if isinstance(p, dict) and p.get("type") == "text")


def _words(text: str) -> str:
    return " ".join(text.split())


def parent_key(cid: str, parent: bytes, task: str) -> str:
    """The key of the exchange of a parent transcript whose ``Subagent`` / ``Task`` call gave ``task`` ("" when
    none did)."""
    want = _words(task)
    key = ""
    seen: dict[str, int] = {}
    for raw in parent.decode("utf-8", errors="replace").split("\n") if want else ():
        rec = loads(raw) if raw.strip().startswith("{") else None
        if not isinstance(rec, dict):
            continue
        if rec.get("role") == "user":
            told = said(_text(rec))
            if told.prompt and not told.cursors:
                key = prompt_key(cid, told.prompt, seen)
            continue
        message = rec.get("message")
        parts = message.get("content") if isinstance(message, dict) else None
        for part in parts if isinstance(parts, list) and rec.get("role") == "assistant" else ():
            args = part.get("input") if isinstance(part, dict) and part.get("name") in SPAWNS else None
            given = _words(as_str(args.get("prompt")) or as_str(args.get("description"))) if isinstance(
                args, dict) else ""
            if key and given and (given == want or given in want or want in given):
                return key
    return ""


def beside(path: PurePath, ctx: CursorContext, look: Look) -> CursorContext:
    """The workspace folder of a transcript (from its project slug) and a sub-agent's parent exchange."""
    cid, sub, slug = where(str(path))
    if sub and not ctx.parent and path.parent.name == "subagents":
        first = look.head(path, SIDE_MAX).split(b"\n", 1)[0]
        rec = loads(first) if first.strip() else None
        task = said(_text(rec)).prompt if isinstance(rec, dict) else ""
        parent = look.read(path.parent.parent / f"{cid}.jsonl", PARENT_MAX) if task else None
        found = parent_key(cid, parent, task) if parent else ""
        ctx = replace(ctx, parent=found) if found else ctx
    if ctx.cwd or not slug:
        return ctx
    folder = resolve(slug, look)
    return replace(ctx, cwd=folder) if folder else ctx
