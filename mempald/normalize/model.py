"""The shapes every normalizer returns.

Normalizers are pure: they take bytes or decoded records and return frozen dataclasses. They never do
I/O and never import anything heavy, so they can be tested from recorded fixtures and fuzzed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

# Every piece of text mempald injects into an agent's context is wrapped in this marker. Normalizers drop
# any span wrapped in it, so memories never feed on themselves.
INJECT_OPEN = "<mempal-context"
INJECT_CLOSE = "</mempal-context>"


class NormalizeError(ValueError):
    """The input is not in the format this normalizer reads (the only exception a normalizer raises)."""


@dataclass(frozen=True, slots=True)
class Line:
    """One complete line of a JSONL file and the byte offset where it starts."""

    offset: int
    raw: bytes


@dataclass(frozen=True, slots=True)
class Exchange:
    """One human prompt and the answer that follows it, merged across streaming parts.

    ``key`` is unique within the source file and stable across re-reads (it feeds the drawer id).
    ``offset`` is the byte offset of the exchange's first line in a JSONL file (None for whole-file formats):
    the reader re-reads from there while the exchange may still grow.
    """

    source_kind: str
    session_id: str
    key: str
    user: str
    assistant: str
    timestamp: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    agent: str | None = None
    title: str | None = None
    position: int = 0
    offset: int | None = None
    kind: str = "exchange"  # exchange | summary | note | thread
    tools: tuple[str, ...] = ()
    extra: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    # The file paths the exchange's tool calls read or changed (Read/Edit/Write/MultiEdit/NotebookEdit, Codex
    # apply_patch and plain file-reading shell commands, Gemini file tools), in first-touch order. A relative
    # path is joined to the exchange's working directory when that is known, so the same file has one spelling.
    files: tuple[str, ...] = ()
    # Sub-agent work (kind "subagent"): the key of the exchange whose tool call started it, in the same session.
    parent: str = ""
    # The session's project folder (its first working directory): the wing follows the session, not each line.
    # A property of the session, not of the exchange's content: left out of comparisons.
    project: str | None = field(default=None, compare=False)

    def render(self) -> str:
        """The verbatim text stored in the drawer: user turn quoted with '> ', then the reply."""
        parts: list[str] = []
        if self.user:
            parts.append("\n".join("> " + ln if ln else ">" for ln in self.user.splitlines()))
        if self.assistant:
            parts.append(self.assistant)
        return "\n\n".join(parts)


@dataclass(frozen=True, slots=True)
class CursorContext:
    """What a format's reader keeps about one file between reads, persisted with the file's cursor.

    Stored as a JSON object in the state database. Cursors written before this type existed hold a dict of
    strings (``{"position": "3", "read_end": "812", "session_id": ...}``) and, for a Slack export, its file
    count in the cursor's inode column: ``from_json`` reads both.
    """

    format: str = ""
    session_id: str = ""
    cwd: str = ""  # the session's first working directory: its project
    git_branch: str = ""
    title: str = ""
    title_rank: int = 0  # how good the title's source is (a later, better one replaces it)
    position: int = 0  # the position of the exchange the cursor sits at (numbering restarts there)
    read_end: int = 0  # the offset just after the last complete line read
    files: int = 0  # a folder unit (Slack export): how many JSON files it had
    parent: str = ""  # a sub-agent transcript: the key of the parent exchange that started it
    agent_type: str = ""  # a sub-agent transcript: its type (general-purpose, Explore, ...)
    since: int = 0  # a database unit (an editor's store): the row id its next read starts at

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in ("", 0)}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any] | None, *, legacy_files: int = 0) -> CursorContext:
        """A context from its stored JSON (unknown keys ignored, numbers accepted as strings)."""
        raw = raw if isinstance(raw, Mapping) else {}
        values: dict[str, Any] = {}
        for f in fields(cls):
            val = raw.get(f.name)
            if val is None:
                continue
            if f.type in ("int", int):
                try:
                    values[f.name] = int(val)
                except (TypeError, ValueError):
                    continue
            elif isinstance(val, str):
                values[f.name] = val
        ctx = cls(**values)
        if raw.get("format") == "slack" and "files" not in raw and legacy_files:
            ctx = replace(ctx, files=legacy_files)  # written when the count lived in the inode column
        return ctx

    def with_title(self, title: str, rank: int) -> CursorContext:
        """This context with ``title`` if it is better than (or as good as and newer than) the one it has."""
        title = " ".join(title.split())[:200]
        if not title or rank < self.title_rank or (title == self.title and rank == self.title_rank):
            return self
        return replace(self, title=title, title_rank=rank)


def strip_injected(text: str) -> str:
    """Remove every span mempald injected (``<mempal-context ...>...</mempal-context>``)."""
    while True:
        start = text.find(INJECT_OPEN)
        if start < 0:
            return text.replace(INJECT_CLOSE, "")
        end = text.find(INJECT_CLOSE, start)
        if end < 0:
            return text[:start].rstrip().replace(INJECT_CLOSE, "")
        text = text[:start] + text[end + len(INJECT_CLOSE) :]
