"""A copy of a chat that mempald also reads from its agent's own file is not stored twice.

SpecStory saves Claude Code, Codex and Copilot chats as Markdown inside a project (``.specstory/history``), naming
the session. Their own files key exchanges by message ids that a Markdown copy does not carry (a Cursor copy takes
the Cursor store's keys instead: ``normalize.specstory``), so when a watched source of the agent's own format holds
the session's file (Claude Code's ``<session>.jsonl``, Codex's ``rollout-...-<session>.jsonl``, Copilot's
``<session>.json``), the copy's exchanges are skipped, with that file named in the ledger: the agent's file is the
reading that is stored, whichever is read first. A copy whose session has no file here (another machine's, or one
the agent already deleted) is stored as the copy's own.

A copy read before its session's own file appeared is stored; when that file is then read, the copy's drawers are
removed (``UnitReader``, once a session a run, only while copies of that agent are stored). Each watched root's
file names are listed at most every ``LISTED_FOR_S``, or ``RELIST_MISS_S`` when a session is not found (a backfill
reads many copies).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from mempald.normalize import registry
from mempald.normalize.format import Parsed

LISTED_FOR_S = 30.0
RELIST_MISS_S = 2.0
MIN_SESSION_CHARS = 8  # a session id shorter than this names no file safely
SUFFIXES = (".jsonl", ".json")


MIRRORS = tuple(f.name for f in registry.FORMATS if f.mirrors)  # the source kinds of copies


class LiveCopies:
    def __init__(self, roots: Callable[[str], list[Path]]) -> None:
        self.roots = roots  # a format's name -> the watched roots of that format here
        self._listed: dict[Path, tuple[float, list[tuple[str, str]]]] = {}
        # The agents some copies of are stored (None: not asked yet; the reader asks the store once), and the
        # sessions whose copies were looked for since the start (``to_remove``).
        self.copied: set[str] | None = None
        self._checked: set[tuple[str, str]] = set()

    def to_remove(self, fmt: str, sessions: set[str]) -> list[str]:
        """Sessions read from ``fmt``'s own files whose stored copies (read before: a copy stored while its
        session had no file here) should go, each asked once a run; none when no copy of ``fmt`` is stored."""
        if self.copied is None or fmt not in self.copied or fmt in MIRRORS:  # (a copy's own reading: never)
            return []
        out = sorted(s for s in sessions if (fmt, s) not in self._checked)
        self._checked.update((fmt, s) for s in out)
        return out

    def own_file(self, fmt: str, session_id: str, fresh: bool = False) -> str | None:
        """The agent's own file of this session under a watched root of ``fmt``, or None (``fresh``: a session
        not found is looked for in a new listing, however recent the last)."""
        if len(session_id) < MIN_SESSION_CHARS:
            return None
        for missed in (False, True):  # (a file made since the listing: listed again, at most every RELIST_MISS_S)
            for root in self.roots(fmt):
                for name, path in self._names(root, missed, fresh):
                    if session_id in name:
                        return path
        return None

    def drop(self, parsed: Parsed, fresh: bool = False) -> Parsed:
        """``parsed`` without the exchanges of sessions whose own file is read here (blocking: lists folders;
        ``fresh``: as ``own_file``)."""
        kept, found = [], {}
        for ex in parsed.exchanges:
            if ex.source_kind == ex.agent or not ex.agent:  # (a copy under its live keys, or no agent named)
                kept.append(ex)
                continue
            if (ex.agent, ex.session_id) not in found:
                found[(ex.agent, ex.session_id)] = self.own_file(ex.agent, ex.session_id, fresh)
            own = found[(ex.agent, ex.session_id)]
            if own is None:
                kept.append(ex)
                if self.copied is not None:
                    self.copied.add(ex.agent)
            else:
                parsed.ledger.drop(ex.key, f"a copy of a session read from its own file {own}")
        return parsed if len(kept) == len(parsed.exchanges) else replace(parsed, exchanges=kept)

    def _names(self, root: Path, missed: bool = False, fresh: bool = False) -> list[tuple[str, str]]:
        now = time.monotonic()
        listed = self._listed.get(root)
        if listed is None or now - listed[0] > (LISTED_FOR_S if not missed else 0.0 if fresh else RELIST_MISS_S):
            listed = (now, list(_files(root)))
            self._listed[root] = listed
        return listed[1]


def _files(root: Path) -> Iterator[tuple[str, str]]:
    """(name, path) of every session-like file under ``root`` (links not followed; unreadable folders skipped)."""
    for folder, _dirs, names in os.walk(root, onerror=lambda _e: None):
        for name in names:
            if name.endswith(SUFFIXES):
                yield name, os.path.join(folder, name)
