"""The one shape every transcript format has (pure): how it is recognised and how it is read.

A ``Format`` declares what it reads (``lines`` of a JSONL file, read incrementally; a whole ``document``,
re-read when it changes; or a ``folder`` unit such as a Slack export), the file names it may claim, a
``detect`` that looks at a ``Probe`` (the head of a file, or a folder's entry names) and a ``parse`` with one
signature for every format: ``Input`` in (the lines, bytes or files, and the file's ``CursorContext``),
``Parsed`` out (exchanges, the line accounting, the context to keep). ``mempald.normalize.registry`` lists
them; nothing else decides a file's format.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath
from typing import Any, Literal

from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, Line

Reads = Literal["lines", "document", "folder"]
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
class Input:
    """What a format's ``parse`` is given: ``name`` (the file's path: it names sessions of whole-file formats),
    the file's ``context`` from its cursor, and, by what the format reads, ``lines`` (complete JSONL lines
    after the cursor), ``data`` (the whole file) or ``files`` (a folder unit: relative path -> bytes)."""

    name: str = ""
    context: CursorContext = field(default_factory=CursorContext)
    lines: Sequence[Line] = ()
    data: bytes = b""
    files: Mapping[str, bytes] = field(default_factory=dict)


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
