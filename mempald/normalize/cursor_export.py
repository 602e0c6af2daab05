"""Cursor's own "Export chat" Markdown (a ``document`` format, read whole when it changes), dropped into a
watched export folder:

    # <title>
    _Exported on 12/29/2025 at 15:57:23 GMT-3 from Cursor (2.2.44)_

    ---

    **User**

    <the prompt>

    ---

    **Cursor**

    <the answer>

Turns are ``**User**`` and ``**Cursor**`` lines between ``---`` separators (``specstory.split_turns``); the
answer keeps its code blocks and diffs, thinking and tool blocks are treated as in SpecStory's. An export with a
title line only (nothing exported yet) has no exchange: counted, read again when it is rewritten. Exchange keys
are ``<file stem>:<position>``; agent ``cursor``; the wing is the watched folder's (the export does not say).
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePosixPath

from mempald.normalize.format import Format, Input, Parsed, Probe
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import Exchange
from mempald.normalize.specstory import pair_turns, split_turns

SOURCE_KIND = "cursor_export"
AGENT = "cursor"
_EXPORTED = re.compile(r"^_Exported on (.+?) from Cursor \(([\w.\-]+)\)_\s*$", re.M)


def _role(line: str) -> str | None:
    return "user" if line == "**User**" else "assistant" if line == "**Cursor**" else None


def parse(inp: Input) -> Parsed:
    text = inp.data.decode("utf-8", errors="replace").replace("\r\n", "\n")
    ledger = Ledger()
    sid = inp.context.session_id or PurePosixPath(inp.name.replace("\\", "/")).stem
    title_m = re.search(r"^# (.+?)\s*$", text[:4096], re.M)
    title = title_m.group(1) if title_m else None
    turns, header = split_turns(text, _role)

    def make(pos: int, user: str, answer: str, tools: list[str], _marker: str, _line: int) -> Exchange:
        return Exchange(SOURCE_KIND, sid, f"{sid}:{pos}", user, answer, cwd=inp.context.cwd or None, agent=AGENT,
                        title=title, position=pos, tools=tuple(tools), project=inp.context.cwd or None)

    out = pair_turns(turns, ledger, make)
    if turns and header:
        ledger.folded("line 1", "", "export header")
    else:
        ledger.skipped("line 1", "a title only (nothing exported yet)")
    return Parsed(out, ledger, replace(inp.context, format=SOURCE_KIND, session_id=sid, title=title or ""))


def detect(probe: Probe) -> bool:
    """Markdown whose first lines say ``_Exported on ... from Cursor (x.y.z)_``."""
    return _EXPORTED.search(probe.text[:2048]) is not None


FORMAT = Format(SOURCE_KIND, "document", detect, parse, suffixes=(".md",),
                summary='Cursor\'s "Export chat" Markdown')
