"""The shapes every normalizer returns.

Normalizers are pure: they take bytes or decoded records and return frozen dataclasses. They never do
I/O and never import anything heavy, so they can be tested from recorded fixtures and fuzzed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

    def render(self) -> str:
        """The verbatim text stored in the drawer: user turn quoted with '> ', then the reply."""
        parts: list[str] = []
        if self.user:
            parts.append("\n".join("> " + ln if ln else ">" for ln in self.user.splitlines()))
        if self.assistant:
            parts.append(self.assistant)
        return "\n\n".join(parts)


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
