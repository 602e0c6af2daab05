"""What a unit is before it is parsed (blocking; worker threads): its format (asked of the format registry),
the files of a folder unit, and what its reader needs to know from beside it (the format's ``beside`` hook,
given the ``Look`` of ``mempald.sources.look``: a Claude Code sub-agent's parent, a Gemini chat's project).

- A file whose content is binary (NUL bytes, an archive) is never text: ``format_for`` refuses it, except a
  database a database format claims by its name (an editor's store).
- A file whose format knows no working directory files under the name of the folder it lies in (an export's
  folder, a repository): ``folder_wing``.
"""

from __future__ import annotations

import re
from pathlib import Path

from mempald.normalize import registry
from mempald.normalize.format import Format, Input
from mempald.normalize.model import CursorContext, NormalizeError
from mempald.normalize.wings import slug
from mempald.sources.look import LOOK
from mempald.sources.reader import BINARY_PROBE, Refused, check_text, open_regular, read_capped

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
    database = registry.database_for(path.name)
    if database is not None and fixed in ("auto", database.name):
        return database
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


def prepare(path: Path, fmt: Format, ctx: CursorContext) -> CursorContext:
    """What the format's reader needs from beside the unit (its ``beside`` hook), added to its cursor context."""
    return fmt.beside(path, ctx, LOOK) if fmt.beside is not None else ctx


def gather(unit: Path, fmt: Format, ctx: CursorContext) -> Input:
    """A folder's or database's ``Input``: its format's ``gather`` hook, else every JSON file of the folder."""
    if fmt.gather is not None:
        return fmt.gather(unit, ctx, LOOK)
    if fmt.unit == "database":
        raise NormalizeError(f"the {fmt.name} format declares no gather for its databases")
    return Input(name=str(unit), files=read_export(unit), context=ctx)
