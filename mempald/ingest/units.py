"""What a unit is before it is parsed (blocking; worker threads): its format (asked of the format registry),
the bytes of a folder unit, and what its reader needs to know from beside it.

- A Claude Code sub-agent file (``agent-<id>.jsonl``, in ``<session>/subagents/`` or, before 2.1, beside the
  session file) gets its parent exchange from the session file that started it, its type from
  ``agent-<id>.meta.json`` when there is one, and the session's project (its first working directory): a
  session is one wing, whatever sub-folder its sub-agents worked in.
- A Gemini CLI chat gets its project from ``.project_root`` in its project folder when its own text names none
  (a sub-agent's chat lies one folder deeper, in ``chats/<parent session id>/``); a sub-agent's chat gets its
  parent exchange from its parent session's chat: the last prompt there before the sub-agent started.
- A file whose content is binary (a SQLite database, NUL bytes) is never text: ``format_for`` refuses it.
- A file whose format knows no working directory files under the name of the folder it lies in (an export's
  folder, a repository): ``folder_wing``.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from mempald.normalize import claude_code, gemini, registry
from mempald.normalize.format import Format, Input, loads
from mempald.normalize.model import CursorContext, Line, NormalizeError
from mempald.normalize.wings import slug
from mempald.sources.reader import BINARY_PROBE, Refused, check_text, open_regular, read_capped, read_head

PARENT_MAX = 64 * 1024 * 1024  # a session file read to find a sub-agent's parent (larger ones are not read)
SIDE_MAX = 1024 * 1024  # a small file read beside a unit (agent-<id>.meta.json, .project_root), or a first line
EXPORT_MAX = 512 * 1024 * 1024
# folders the tools themselves name (a user's own folder names, even "exports", are wings)
_GENERIC = frozenset({"chats", "chat", "sessions", "session", "tmp", "projects", "archived_sessions", "subagents"})
# a hash, a date, a session id (a Gemini sub-agent's chat lies in a folder named after its parent session)
_HASHLIKE = re.compile(r"^(?:[0-9a-f]{16,}|\d{4}(?:-\d{2}){0,2}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})$", re.I)


def head_of(path: Path, size: int = registry.HEAD_BYTES) -> bytes:
    """The start of a file, for its format (``Refused`` for a FIFO, a socket, a device: never blocks on one)."""
    with open_regular(path) as fh:
        return fh.read(size)


def format_for(path: Path, fixed: str) -> Format | None:
    """The format of ``path``: the source's fixed format, else what the registry detects (None: a JSON file in
    no known format). ``Refused`` (reason ``binary``) for a file whose content is not text."""
    head = head_of(path, BINARY_PROBE if fixed != "auto" else registry.HEAD_BYTES)
    check_text(path, head)
    if fixed != "auto":
        return registry.by_name(fixed)
    return registry.detect_file(head, path.name)


def read_export(root: Path, max_bytes: int = EXPORT_MAX) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    for p in sorted(root.rglob("*.json")):
        if p.is_file():
            try:  # within what is left of the cap: a sparse giant .json is refused by its size, not read
                data = read_capped(p, max_bytes - total)
            except Refused as exc:
                if exc.reason == "too_large":
                    break
                continue  # (a link to a device, swapped in since is_file)
            total += len(data)
            files[p.relative_to(root).as_posix()] = data
    return files


def folder_wing(path: Path, root: Path) -> str:
    """The wing of a file whose format names no working directory: the nearest folder above it (at most up to
    the source's parent) whose name is not generic (``chats``, a date, a hash); "" when there is none."""
    stop = root.parent
    for folder in path.parents:
        if folder in (stop, folder.parent):
            break
        name = folder.name
        if name and not name.startswith(".") and name.lower() not in _GENERIC and not _HASHLIKE.match(name):
            return slug(name)
    return ""


def _lines(path: Path) -> list[Line]:
    out: list[Line] = []
    off = 0
    with open_regular(path, PARENT_MAX) as fh:
        for raw in fh:
            body = raw.rstrip(b"\r\n")
            if body.strip():
                out.append(Line(off, body))
            off += len(raw)
    return out


def _agent_id(path: Path) -> str:
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    return stem[len("agent-"):] if stem.startswith("agent-") else ""


def _session_of(path: Path) -> str:
    try:
        with open_regular(path) as fh:
            first = json.loads(fh.readline(SIDE_MAX) or b"{}")
    except (OSError, ValueError):
        return ""
    sid = first.get("sessionId") if isinstance(first, dict) else None
    return sid if isinstance(sid, str) else ""


def _first_cwd(path: Path, max_lines: int = 200) -> str:
    """The first working directory a Claude Code session file names (its project), "" when none is found."""
    try:
        with path.open("rb") as fh:
            for _, raw in zip(range(max_lines), fh, strict=False):
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                cwd = rec.get("cwd") if isinstance(rec, dict) else None
                if isinstance(cwd, str) and cwd:
                    return cwd
    except OSError:
        return ""
    return ""


def subagent_context(path: Path, ctx: CursorContext) -> CursorContext:
    """``ctx`` with the parent exchange and type of a Claude Code sub-agent file (unchanged for other files,
    and while the parent cannot be found yet: it is looked for again on the next read)."""
    agent = _agent_id(path)
    if not agent or agent.startswith("acompact") or ctx.parent:
        return ctx
    meta = path.with_name(f"agent-{agent}.meta.json")
    agent_type = ctx.agent_type
    if not agent_type and meta.is_file():
        try:
            raw = json.loads(read_capped(meta, SIDE_MAX))
            agent_type = raw.get("agentType", "") if isinstance(raw, dict) else ""
        except (OSError, ValueError):
            agent_type = ""
    if path.parent.name == "subagents":
        parent_file = path.parent.parent.with_suffix(".jsonl")
    else:
        session = _session_of(path)
        parent_file = path.with_name(f"{session}.jsonl") if session else path
    ctx = replace(ctx, agent_type=agent_type if isinstance(agent_type, str) else "")
    try:
        if parent_file == path or not parent_file.is_file():
            return ctx
        project = _first_cwd(parent_file)
        if project:
            ctx = replace(ctx, cwd=project)  # the sub-agent's drawers go to its session's wing
        if parent_file.stat().st_size > PARENT_MAX:
            return ctx
        links = claude_code.agent_links(_lines(parent_file))
    except OSError:
        return ctx
    parent, kind = links.get(agent, ("", ""))
    return replace(ctx, parent=parent, agent_type=ctx.agent_type or kind)


def _gemini_header(path: Path) -> dict[str, object]:
    """The header of a Gemini CLI chat: a JSONL chat's first line, a JSON chat's object ({} when none)."""
    try:
        with path.open("rb") as fh:
            first = fh.readline(1 << 20) if path.suffix == ".jsonl" else fh.read(registry.HEAD_BYTES)
    except OSError:
        return {}
    if path.suffix == ".jsonl":
        rec = loads(first)
        return rec if isinstance(rec, dict) else {}
    # a JSON chat's own keys come before its messages: read them from its head, not the whole file again
    text = first.decode("utf-8", errors="replace").split('"messages"', 1)[0]
    return {k: m.group(1) for k in ("kind", "startTime")
            if (m := re.search(rf'"{k}"\s*:\s*"([^"]*)"', text)) is not None}


def gemini_parent(path: Path, started: str) -> str:
    """The exchange of the parent session that started the Gemini sub-agent chat ``path`` (which lies in a folder
    named after that session, beside the session's own chat): its last prompt before ``started``; "" if none."""
    folder = path.parent
    parent_id = folder.name
    if len(parent_id) < 8:
        return ""
    for cand in sorted(folder.parent.glob(f"session-*-{parent_id[:8]}.json*")):
        try:
            if not cand.is_file() or cand.stat().st_size > PARENT_MAX:
                continue
            parsed = gemini.parse(Input(name=str(cand), data=cand.read_bytes(),
                                        context=CursorContext(format=gemini.SOURCE_KIND)))
        except (OSError, NormalizeError):
            continue
        if parsed.context.session_id != parent_id:
            continue
        prompts = [e for e in parsed.exchanges if e.user and (not started or (e.timestamp or "") <= started)]
        return prompts[-1].key if prompts else ""
    return ""


def gemini_context(path: Path, ctx: CursorContext) -> CursorContext:
    """``ctx`` with the project of a Gemini CLI chat from ``.project_root`` beside its ``chats/`` folder, and a
    sub-agent chat's parent exchange."""
    header = _gemini_header(path)
    if header.get("kind") == gemini.SUBAGENT and not ctx.parent:
        started = header.get("startTime")
        ctx = replace(ctx, parent=gemini_parent(path, started if isinstance(started, str) else ""))
    if ctx.cwd:
        return ctx
    folders = [path.parent, path.parent.parent]
    if path.parent.parent.name == "chats":  # a sub-agent's chat, in chats/<parent session id>/
        folders.append(path.parent.parent.parent)
    for folder in folders:
        marker = folder / ".project_root"
        try:
            text = read_head(marker, SIDE_MAX).decode("utf-8").strip() if marker.is_file() else ""
        except (OSError, UnicodeError):
            text = ""
        if text.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", text):
            return replace(ctx, cwd=text)
    return ctx


def prepare(path: Path, fmt: Format, ctx: CursorContext) -> CursorContext:
    """What the format's reader needs from beside the file, added to its cursor context."""
    if fmt.name == "claude_code" and path.name.startswith("agent-"):
        return subagent_context(path, ctx)
    if fmt.name == "gemini":
        return gemini_context(path, ctx)
    return ctx
