"""The 4-layer wake-up stack.

- L0 identity: the file the user writes (``wakeup.identity_path``; ``mempal identity edit`` opens it).
- L1 essential story of a wing: drawers chosen by importance, memory type and recency within a token
  budget (counted with the model's own tokenizer), grouped by room, each line citing its drawer.
- L2 room recall: the drawers of one room, newest and most important first.
- L3 deep search: ``search``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempald.config import SettingsRef
from mempald.embed.embedder import Embedder
from mempald.sources.catalog import SourceSet
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway

TYPE_WEIGHT = {"decision": 3.0, "milestone": 2.5, "preference": 2.0, "problem": 1.5, "emotional": 1.0}
HALF_LIFE_DAYS = 30.0
LINE_CHARS = 220


@dataclass(frozen=True, slots=True)
class Story:
    text: str
    tokens: int
    drawers: tuple[str, ...]


def story_score(payload: Mapping[str, Any], now: float) -> float:
    """Importance first, then memory type, then recency (half-life 30 days)."""
    imp = float(payload.get("importance") or 0)
    tw = TYPE_WEIGHT.get(str(payload.get("memory_type") or ""), 0.0)
    ts = float(payload.get("ts") or 0)
    age_days = max(0.0, (now - ts) / 86400) if ts else 365.0
    recency = math.pow(0.5, age_days / HALF_LIFE_DAYS)
    kind_penalty = 1.0 if payload.get("kind") == "summary" else 0.0
    return imp * 2 + tw + 2 * recency - kind_penalty


def one_line(text: str, limit: int = LINE_CHARS) -> str:
    """The first meaningful line of a drawer, user quote marks removed, cut on a word boundary."""
    for raw in text.splitlines():
        line = raw.lstrip("> ").strip().lstrip("#-*• ").strip()
        if len(line) >= 12 and not line.startswith(("[tool:", "->")):
            break
    else:
        line = " ".join(text.split())
    line = " ".join(line.split())
    if len(line) > limit:
        line = line[:limit].rsplit(" ", 1)[0] + "…"
    return line


def essential_story(
    wing: str,
    drawers: Sequence[tuple[str, Mapping[str, Any]]],
    budget: int,
    count_tokens: Callable[[str], int],
    now: float | None = None,
) -> Story:
    """L1: the best drawers of a wing that fit in ``budget`` tokens, grouped by room, with citations."""
    now = time.time() if now is None else now
    ranked = sorted(drawers, key=lambda d: (-story_score(d[1], now), d[0]))
    header = f"## L1: {wing}"
    used = count_tokens(header)
    chosen: dict[str, list[str]] = {}
    ids: list[str] = []
    seen_lines: set[str] = set()
    for did, p in ranked:
        if int(p.get("chunk_index") or 0) > 0:
            continue  # an exchange speaks through its first chunk (the prompt and the start of the answer)
        line = one_line(str(p.get("text", "")))
        if not line or line in seen_lines:
            continue
        mtype = p.get("memory_type")
        tag = f"[{mtype}] " if mtype and mtype != "none" else ""
        date = str(p.get("timestamp") or "")[:10]
        entry = f"- {tag}{line} ({date} · drawer {did[:8]})" if date else f"- {tag}{line} (drawer {did[:8]})"
        room = str(p.get("room") or "general")
        cost = count_tokens(entry) + (0 if room in chosen else count_tokens(f"### {room}"))
        if used + cost > budget:
            continue
        used += cost
        seen_lines.add(line)
        chosen.setdefault(room, []).append(entry)
        ids.append(did)
    parts = [header]
    for room in sorted(chosen, key=lambda r: -len(chosen[r])):
        parts.append(f"### {room}")
        parts.extend(chosen[room])
    text = "\n".join(parts) if ids else f"{header}\n(no memories yet)"
    return Story(text, count_tokens(text), tuple(ids))


def identity(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, IsADirectoryError, PermissionError, UnicodeDecodeError):
        return ""


class WakeUp:
    """The wake-up stack of a wing, read from the store (L0, L1; L2 by room)."""

    def __init__(self, settings: SettingsRef, store: StoreGateway, embedder: Embedder, sources: SourceSet) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.sources = sources

    async def wing_drawers(self, wing: str, room: str | None = None, cap: int = 5000) -> list[tuple[str, Any]]:
        """Candidates for the layers: the wing's important drawers (importance >= 3), or all of them when it
        has fewer than 40 of those; at most ``cap``."""
        out: list[tuple[str, Any]] = []
        for min_imp in (3.0, None):
            out = []
            flt = Filters(wing=(wing,), room=(room,) if room else (), min_importance=min_imp)
            async for page in self.store.pages(flt):
                out += [(pt.id, pt.payload) for pt in page if pt.payload.get("kind") != "aaak"]
                if len(out) >= cap:
                    break
            if len(out) >= 40:
                break
        return out[:cap]

    async def wake_up(self, wing: str, budget: int | None, fmt: str) -> dict[str, Any]:
        """L0 identity + L1 essential story of ``wing`` (empty: the wing with the most drawers)."""
        settings = self.settings.current
        budget = budget or settings.wakeup.l1_budget
        ident = await anyio.to_thread.run_sync(identity, settings.identity_path())
        if not wing:
            wings = await self.store.facet("wing", Filters())
            wing = max(wings, key=lambda w: wings[w]) if wings else "general"
        packed = next((s.pack_output() / "knowledge_base.md" for s in self.sources if s.mode == "pack"
                       and s.wing == wing and (s.pack_output() / "knowledge_base.md").is_file()), None)
        drawers: list[tuple[str, Any]] = []
        if packed is not None and fmt == "text":
            # A pack-mode wing's packed knowledge base is its essential story.
            text_pack = await anyio.to_thread.run_sync(packed.read_text)
            body = await anyio.to_thread.run_sync(self.embedder.fit_tokens, text_pack, budget)
            story = Story(body, 0, ())
        else:
            drawers = await self.wing_drawers(wing)
            story = await anyio.to_thread.run_sync(
                lambda: essential_story(wing, drawers, budget, self.embedder.count_tokens))
            body = story.text
        if fmt == "aaak":
            from mempald.features import aaak

            texts = [(str(dict(d).get("text", "")), did) for did, d in drawers if did in set(story.drawers)]
            doc = aaak.compress_many(texts, wing=wing, people=dict(settings.people))
            body = aaak.encode(doc)
        text = (f"## L0: identity\n{ident}\n\n" if ident else "") + body
        tokens = await anyio.to_thread.run_sync(self.embedder.count_tokens, text)
        return {"wing": wing, "text": text, "tokens": tokens, "drawers": list(story.drawers), "format": fmt}

    async def room(self, wing: str, room: str, limit: int) -> dict[str, Any]:
        """L2: the drawers of one room of a wing, most important and newest first."""
        drawers = await self.wing_drawers(wing, room)
        now = time.time()
        drawers.sort(key=lambda d: (-story_score(d[1], now), d[0]))
        return {"wing": wing, "room": room, "drawers": [
            {"drawer_id": did, "text": pl.get("text", ""), "timestamp": pl.get("timestamp"),
             "memory_type": pl.get("memory_type"), "importance": pl.get("importance"),
             "source_path": pl.get("source_path")} for did, pl in drawers[:limit]]}
