"""The one shape every transcript format has (pure): where it is found, what a unit is, how a change is read.

A ``Format`` declares everything the intake needs to know about it, so the intake never names a format:

- **where** (``places``): the agent's default folders on Linux, macOS and Windows and the globs under them
  (``Place``); a format with no place is read where the user points a watch;
- **what it reads** (``reads``), which fixes its unit and how a change is noticed (``unit``, ``change``):

  ========== ========= ==================================================================================
  reads      unit      a change is
  ========== ========= ==================================================================================
  lines      file      new complete lines after the cursor (JSONL transcripts, appended)
  document   file      a new digest: the whole file re-read (a rewritten chat, an export, notes)
  folder     folder    a new signature of its files: the folder re-read as one unit (a Slack export,
                       a task folder of small JSON files)
  rows       database  a new change counter or newer row timestamps (an editor's SQLite store)
  ========== ========= ==================================================================================

- **how exchange ids are derived** (``ids``): by ``position`` in the unit, or from the format's own
  ``message`` ids (a rewritten document then stores only the exchanges it has not stored);
- a ``detect`` that looks at a ``Probe`` (the head of a file, or a folder's entry names) and a ``parse`` with
  one signature for every format: ``Input`` in (the lines, bytes, files or rows, and the unit's
  ``CursorContext``), ``Parsed`` out (exchanges, the line accounting, the context to keep);
- optional hooks that read beside a unit through a ``Look`` the intake hands in (normalizers do no I/O of
  their own): ``unit_of`` (the unit a changed path belongs to: the export folder of a day file),
  ``beside`` (context from next to the unit: a sub-agent's parent, a chat's project folder) and ``gather``
  (a folder's or database's ``Input``); ``members``: the folders outside a folder unit whose files are also
  its own (an OpenCode session's part folders), so their changes are the unit's.

``mempald.normalize.registry`` lists them; nothing else decides a unit's format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePath, PurePosixPath
from typing import Any, Literal, Protocol

from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, Line

Reads = Literal["lines", "document", "folder", "rows"]
Unit = Literal["file", "folder", "database"]
Change = Literal["appended", "rewritten", "signature", "rows"]
Ids = Literal["position", "message"]
_UNIT: dict[str, tuple[Unit, Change]] = {
    "lines": ("file", "appended"), "document": ("file", "rewritten"), "folder": ("folder", "signature"),
    "rows": ("database", "rows"),
}
_MAX_RECORDS = 8


def loads(raw: bytes | str) -> Any:
    """``json.loads`` that returns None instead of raising on bad input."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


@dataclass(frozen=True)
class Probe:
    """What detection may look at: a file's first bytes (it may be cut anywhere) and its name, or a folder's
    entry names. The parsed views are computed once and shared by every format's ``detect``."""

    name: str = ""
    head: bytes = b""
    entries: tuple[str, ...] = ()

    @cached_property
    def base(self) -> str:
        return PurePosixPath(self.name.replace("\\", "/")).name if self.name else ""

    @cached_property
    def text(self) -> str:
        return self.head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")

    @cached_property
    def document(self) -> Any:
        """The head parsed as one JSON value (None when it is not one, e.g. cut or JSONL)."""
        return loads(self.text) if self.text.startswith(("{", "[")) else None

    @cached_property
    def records(self) -> list[dict[str, Any]]:
        """The first JSONL records (objects) of the head."""
        out: list[dict[str, Any]] = []
        if not self.text.startswith("{"):
            return out
        for line in self.text.split("\n")[:_MAX_RECORDS]:
            rec = loads(line) if line.strip().startswith("{") else None
            if isinstance(rec, dict):
                out.append(rec)
        return out

    @cached_property
    def entry_names(self) -> frozenset[str]:
        return frozenset(PurePosixPath(n.replace("\\", "/")).name for n in self.entries)


@dataclass(frozen=True)
class Place:
    """Where an agent keeps its sessions by default. Each platform's paths are templates: ``~``, and
    ``$XDG_DATA_HOME``, ``$XDG_CONFIG_HOME``, ``%APPDATA%``, ``%LOCALAPPDATA%``, ``%USERPROFILE%`` (with their
    usual defaults when unset), resolved by ``mempald.sources``. ``globs`` (relative to the root) name the
    files or folders that are units; ``setting`` is the ``[sources]`` key a user sets to move or turn it off."""

    agent: str  # who keeps it, as users name it ("Claude Code", "Cline (VS Code)")
    linux: tuple[str, ...] = ()
    macos: tuple[str, ...] = ()
    windows: tuple[str, ...] = ()
    globs: tuple[str, ...] = ()
    setting: str = ""


class Look(Protocol):
    """Safe reads beside a unit, handed to a format's hooks by the intake (a FIFO, a device or a file over the
    cap is refused, never waited on): what a format may look at besides its unit."""

    def is_file(self, path: PurePath) -> bool: ...

    def is_dir(self, path: PurePath) -> bool: ...

    def entries(self, folder: PurePath) -> tuple[str, ...]: ...  # the names in a folder (() when unreadable)

    def head(self, path: PurePath, size: int) -> bytes: ...  # b"" when unreadable

    def read(self, path: PurePath, max_bytes: int) -> bytes | None: ...  # None when unreadable or too large

    def lines(self, path: PurePath, max_bytes: int) -> list[Line]: ...  # [] when unreadable or too large

    def rows(self, database: PurePath, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]: ...


@dataclass(frozen=True)
class Input:
    """What a format's ``parse`` is given: ``name`` (the file's path: it names sessions of whole-file formats),
    the file's ``context`` from its cursor, and, by what the format reads, ``lines`` (complete JSONL lines
    after the cursor), ``data`` (the whole file) or ``files`` (a folder unit: relative path -> bytes)."""

    name: str = ""
    context: CursorContext = field(default_factory=CursorContext)
    lines: Sequence[Line] = ()
    data: bytes = b""
    files: Mapping[str, bytes] = field(default_factory=dict)
    rows: Sequence[Mapping[str, Any]] = ()
    more: bool = False  # a database's gather read a bounded batch: the intake reads the next one at once
    # A database's gather that read a bounded batch: how far its rows are read (done, of; in the format's own
    # units, e.g. row ids), shown by ``status`` while the rest is read. None: not known.
    progress: tuple[int, int] | None = None


@dataclass(frozen=True)
class Parsed:
    """What a parse found. ``resume`` (line formats): the offset to read again from next time and the position
    of the exchange that starts there, when that is not simply the last exchange (exchanges still open at the
    end of the lines may still grow)."""

    exchanges: list[Exchange]
    ledger: Ledger
    context: CursorContext
    resume: tuple[int, int] | None = None


@dataclass(frozen=True)
class Format:
    name: str
    reads: Reads
    detect: Callable[[Probe], bool]
    parse: Callable[[Input], Parsed]
    suffixes: tuple[str, ...] = ()  # file name endings this format's files have
    names: tuple[str, ...] = ()  # exact file names that are this format whatever their content
    summary: str = ""
    agent: str = ""  # the agent its sessions are of, as hooks and drawers name it (claude, codex, ...)
    places: tuple[Place, ...] = ()  # default roots, where the agent is installed (none: only where watched)
    ids: Ids = "position"
    archive: bool = False  # its units are archived byte for byte by default (mempald.archive): an agent's own store
    # Its exchanges copy chats another format reads from the agent's own store, under the same keys (Cursor's agent
    # transcripts beside its state.vscdb): it only adds drawers the store does not hold, never rewrites the other
    # reading's (their texts differ a little: each change of either file would otherwise re-embed the chat).
    copy: bool = False
    # Its exchanges may be copies of other agents' sessions, each naming its agent (a format's name) and session
    # (SpecStory's Markdown): one whose own file a watched source holds is skipped (``ingest.live_copies``).
    mirrors: bool = False
    room: str = ""  # the room of every drawer it makes (the agents' memories: agent-memory); "": classified
    # The unit (folder or database) a changed path belongs to, or None when the path is not one of this
    # format's: a day file of a Slack export -> the export folder.
    unit_of: Callable[[PurePath, Look], PurePath | None] | None = None
    # Context read from beside the unit before it is parsed (a sub-agent's parent exchange, a project folder).
    beside: Callable[[PurePath, CursorContext, Look], CursorContext] | None = None
    # A folder's or database's Input (its files or rows after the cursor's context), for reads folder/rows.
    gather: Callable[[PurePath, CursorContext, Look], Input] | None = None
    # The folders, outside a folder unit, whose files are also the unit's (its change signature covers them):
    # an OpenCode session's part folders, where its answers stream in.
    members: Callable[[PurePath, Look], Sequence[PurePath]] | None = None

    @property
    def unit(self) -> Unit:
        return _UNIT[self.reads][0]

    @property
    def change(self) -> Change:
        return _UNIT[self.reads][1]
