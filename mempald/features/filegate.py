"""The file gate: what memory already knows about a file an agent is about to read or edit.

Drawers carry ``files``, the paths their exchange's tool calls touched (keyword-indexed; absolute where the
session's cwd was known, as written otherwise). A file is matched by its exact absolute path in every wing, then
by its path relative to the project (the given cwd and the file's git root), within the project's wing only, so
a relative path like ``README.md`` never pulls in another project's: as written, and joined to every other
working directory the wing's sessions started in (the same project checked out elsewhere, or on another
machine). The matching exchanges (the current session's own left out) are ranked by importance and recency,
exact matches first on a tie, and the best few are written within a token budget; one whose lines are gone from
the files it wrote says so and goes after the ones that still hold (``mempald.features.staleness``).
"""

from __future__ import annotations

import math
import os
import posixpath
import time
from collections.abc import Mapping
from typing import Any

import anyio.to_thread

from mempal import tokens as llm
from mempald.embed.embedder import Embedder
from mempald.features import staleness
from mempald.features.disclosure import cut_tokens, date_of, title_of
from mempald.features.viewer import SessionBrowser
from mempald.normalize.wings import wing_from_cwd
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway

CANDIDATES = 256  # matching drawers read at most (a file touched more often keeps its best by the ranking)
HALF_LIFE_DAYS = 30.0
RECENCY_WEIGHT = 3.0  # a fresh exchange counts like three importance points; a month-old one like 1.5
GIT_LEVELS = 40
MAX_ROOTS = 64  # other working directories of the wing a relative path is joined to
STALE_BUDGET_S = 0.25  # the check of the shown memories against their files; past it they are shown unchecked


def git_root(path: str) -> str | None:
    """The nearest folder above ``path`` holding ``.git`` (a repository or a worktree), if any."""
    folder = posixpath.dirname(path)
    for _ in range(GIT_LEVELS):
        if os.path.exists(posixpath.join(folder, ".git")):
            return folder
        parent = posixpath.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return None


def path_forms(path: str, cwd: str | None) -> tuple[str, list[str], str]:
    """(absolute path, relative forms, the project's wing) for ``path`` seen from ``cwd``."""
    base = cwd if cwd and cwd.startswith("/") else "/"
    absolute = posixpath.normpath(path if path.startswith("/") else posixpath.join(base, path))
    roots = [r for r in (cwd, git_root(absolute)) if r and r.startswith("/")]
    rels: list[str] = []
    for given in roots:
        root = posixpath.normpath(given)
        if absolute.startswith(root.rstrip("/") + "/"):
            rel = posixpath.relpath(absolute, root)
            if rel not in rels:
                rels.append(rel)
    if not path.startswith("/") and path not in rels:
        rels.append(path)
    project = roots[-1] if roots else cwd
    return absolute, rels, wing_from_cwd(project)


def rank_score(payload: Mapping[str, Any], exact: bool, now: float) -> float:
    ts = payload.get("ts")
    age_days = max(0.0, (now - float(ts)) / 86400.0) if isinstance(ts, (int, float)) and ts > 0 else 3650.0
    importance = float(payload.get("importance") or 0)
    return importance + RECENCY_WEIGHT * math.pow(0.5, age_days / HALF_LIFE_DAYS) + (0.5 if exact else 0.0)


def excerpt_of(text: str, name: str) -> str:
    """The answer side of an exchange (its lines not quoting the prompt), the part naming the file first."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(">")]
    hit = next((i for i, ln in enumerate(lines) if name and name in ln), 0)
    return "\n".join(lines[max(0, hit - 2):])


class FileGate:
    def __init__(self, store: StoreGateway, embedder: Embedder, sessions: SessionBrowser) -> None:
        self.store = store
        self.embedder = embedder
        self.sessions = sessions
        self.files = staleness.FileLines()

    async def _elsewhere(self, wing: str, rels: list[str], absolute: str) -> tuple[str, ...]:
        """``rels`` as written and joined to the other working directories of ``wing``'s sessions."""
        listing = await self.sessions.wing_sessions(wing, None, None, 100_000)
        roots = {posixpath.normpath(s["cwd"]) for s in listing["sessions"] if str(s.get("cwd") or "").startswith("/")}
        out = dict.fromkeys(rels)
        for root in sorted(roots)[:MAX_ROOTS]:
            for rel in rels:
                out.setdefault(posixpath.normpath(posixpath.join(root, rel)))
        out.pop(absolute, None)
        return tuple(out)

    async def context(self, path: str, cwd: str | None, session_id: str | None, max_tokens: int,
                      limit: int) -> dict[str, Any]:
        absolute, rels, wing = await anyio.to_thread.run_sync(path_forms, path, cwd)
        subs = [Filters(files=(absolute,))]
        moved = await self._elsewhere(wing, rels, absolute) if rels else ()
        if moved:
            subs.append(Filters(files=moved, wing=(wing,)))
        page, _ = await self.store.scroll(Filters(any_of=tuple(subs)), CANDIDATES)
        now = time.time()
        best: dict[tuple[str, str], tuple[float, Any]] = {}
        name = posixpath.basename(absolute)
        for pt in page:
            p = pt.payload
            if session_id and p.get("session_id") == session_id:
                continue
            exact = absolute in (p.get("files") or ())
            key = (str(p.get("source_path") or ""), str(p.get("exchange_key") or pt.id))
            score = rank_score(p, exact, now) + (0.01 if name in str(p.get("text") or "") else 0.0)
            if key not in best or score > best[key][0]:
                best[key] = (score, pt)
        chosen = [pt for _s, pt in sorted(best.values(), key=lambda sp: -sp[0])[:limit]]
        shown = rels[0] if rels else absolute
        if not chosen:
            return {"path": absolute, "relative": rels, "wing": wing, "text": "", "drawers": [], "matched": 0,
                    "tokens": 0}
        stale: dict[str, str] = {}
        with anyio.move_on_after(STALE_BUDGET_S):
            stale = await anyio.to_thread.run_sync(self._stale, chosen, abandon_on_cancel=True)
        chosen = [pt for pt in chosen if pt.id not in stale] + [pt for pt in chosen if pt.id in stale]

        def compose() -> tuple[str, int, int]:
            head = (f"mempal: what memory holds about {shown} ({len(best)} earlier exchange(s) touched it; the most "
                    "important and recent first, each with its drawer id; the file may have changed since):")
            left = max_tokens - llm.estimate(head)
            each = max(30, left // len(chosen))
            parts = [head]
            for pt in chosen:
                p = pt.payload
                who = p.get("agent") or p.get("source_kind") or "?"
                note = f" ({stale[pt.id]})" if pt.id in stale else ""
                line = (f"- [drawer {pt.id}] {date_of(p)} · {p.get('wing', '?')}/{p.get('room', '?')} · {who}{note}: "
                        f"{title_of(p)}\n  " + excerpt_of(str(p.get("text") or ""), name).replace("\n", "\n  "))
                parts.append(cut_tokens(self.embedder, line, each))
            text = "\n".join(parts)
            tokens = llm.estimate(text)
            while tokens > max_tokens and len(parts) > 2:
                parts.pop()
                text = "\n".join(parts)
                tokens = llm.estimate(text)
            if tokens > max_tokens:
                text = cut_tokens(self.embedder, text, max_tokens)
                tokens = llm.estimate(text)
            return text, tokens, len(parts) - 1

        text, tokens, kept = await anyio.to_thread.run_sync(compose)
        return {"path": absolute, "relative": rels, "wing": wing, "text": text,
                "drawers": [pt.id for pt in chosen[:kept]], "matched": len(best), "tokens": tokens,
                "stale": {i: c for i, c in stale.items() if i in {pt.id for pt in chosen[:kept]}}}

    def _stale(self, points: list[Any]) -> dict[str, str]:
        out: dict[str, str] = {}
        for pt in points:
            clause = staleness.out_of_date(pt.payload, self.files)
            if clause:
                out[pt.id] = clause
        return out
