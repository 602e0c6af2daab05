"""The 4-layer wake-up stack.

- L0 identity: the file the user writes (``wakeup.identity_path``; ``mempal identity edit`` opens it).
- L1 essential story of a wing: the decisions, preferences, outcomes and fixes of its exchanges, each stated by
  the sentence of the exchange that says it (``mempald.text.classify.key_sentence``), with its date and drawer,
  chosen by importance, memory type and recency within a token budget (counted with the model's own tokenizer).
  Only exchanges typed decision, preference or milestone, or problem with a fix (``has_fix``), make lines;
  compaction summaries, injected context and first lines of prompts never do.
- L2 room recall: the drawers of one room, newest and most important first.
- L3 deep search: ``search``.
"""

from __future__ import annotations

import functools
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
from mempald.sources.reader import read_capped
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway
from mempald.text.classify import has_fix, key_sentence

TYPE_WEIGHT = {"decision": 3.0, "milestone": 2.5, "preference": 2.0, "problem": 1.5, "emotional": 1.0}
HALF_LIFE_DAYS = 30.0
LINE_CHARS = 220
IDENTITY_MAX = 1024 * 1024  # wakeup.identity_path, read whole
PACK_TEXT_MAX = 64 * 1024 * 1024  # a pack-mode wing's knowledge_base.md, read whole for its story


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


SECTIONS = (("decision", "decisions"), ("preference", "preferences"), ("milestone", "outcomes"),
            ("problem", "fixes"))
NOT_STORY_KINDS = ("summary", "aaak")  # compaction summaries restate a session; digests are not statements


def _prose(text: str) -> str:
    """An exchange's words, without the summaries of its tool calls (whose output may say anything)."""
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith(("[tool:", "->")))


def story_line(payload: Mapping[str, Any], text: str) -> str | None:
    """What the story says about one exchange (its whole ``text``, every chunk), or None when it says nothing:
    the sentence stating its decision, preference, outcome or fix. A memory saved by hand with a type speaks
    through its first line when no sentence carries a marker (the user said what it is)."""
    mtype = str(payload.get("memory_type") or "")
    if mtype not in dict(SECTIONS) or payload.get("kind") in NOT_STORY_KINDS:
        return None
    prose = _prose(text)
    if mtype == "problem" and not has_fix(prose):
        return None  # a complaint without its fix is not a story line
    line = key_sentence(prose, mtype, LINE_CHARS)
    if line is None and payload.get("added_by") not in (None, "", "mempald"):
        line = one_line(prose)
    return line


def _exchanges(drawers: Sequence[tuple[str, Mapping[str, Any]]]) -> list[tuple[str, Mapping[str, Any], str]]:
    """One entry per exchange: the id and payload of its first drawer, and the text of all its drawers."""
    parts: dict[tuple[Any, ...], list[tuple[int, str, Mapping[str, Any]]]] = {}
    for did, p in drawers:
        key = (p.get("source_path"), p.get("session_id"), p.get("exchange_key") or did)
        parts.setdefault(key, []).append((int(p.get("chunk_index") or 0), did, p))
    out = []
    for chunks in parts.values():
        chunks.sort(key=lambda c: c[0])
        _, did, payload = chunks[0]
        out.append((did, payload, "\n".join(str(c[2].get("text", "")) for c in chunks)))
    return out


def essential_story(
    wing: str,
    drawers: Sequence[tuple[str, Mapping[str, Any]]],
    budget: int,
    count_tokens: Callable[[str], int],
    now: float | None = None,
) -> Story:
    """L1: the decisions, preferences, outcomes and fixes of a wing that fit in ``budget`` tokens, grouped by
    kind, each with its date and drawer."""
    now = time.time() if now is None else now
    ranked = sorted(_exchanges(drawers), key=lambda d: (-story_score(d[1], now), d[0]))
    header = f"## L1: {wing}"
    used = count_tokens(header)
    chosen: dict[str, list[tuple[str, str]]] = {}
    seen_lines: set[str] = set()
    titles = dict(SECTIONS)
    for did, p, text in ranked:
        line = story_line(p, text)
        if not line or line.lower() in seen_lines:
            continue
        date = str(p.get("timestamp") or "")[:10]
        entry = f"- {line} ({date} · drawer {did[:8]})" if date else f"- {line} (drawer {did[:8]})"
        section = titles[str(p.get("memory_type"))]
        cost = count_tokens(entry) + (0 if section in chosen else count_tokens(f"### {section}"))
        if used + cost > budget:
            continue
        used += cost
        seen_lines.add(line.lower())
        chosen.setdefault(section, []).append((entry, did))
    parts = [header]
    ids: list[str] = []  # in the order the lines are shown
    for _, section in SECTIONS:
        if section in chosen:
            parts.append(f"### {section}")
            parts.extend(entry for entry, _ in chosen[section])
            ids.extend(did for _, did in chosen[section])
    text = "\n".join(parts) if ids else f"{header}\n(no decisions, outcomes or fixes recorded yet)"
    return Story(text, count_tokens(text), tuple(ids))


def identity(path: Path) -> str:
    try:
        # wakeup.identity_path names it: a FIFO or a device there is refused, never waited on
        return read_capped(path, IDENTITY_MAX, limit="the largest identity file").decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
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
            raw_pack = await anyio.to_thread.run_sync(functools.partial(
                read_capped, packed, PACK_TEXT_MAX, limit="the largest pack read for wake-up"))
            text_pack = raw_pack.decode("utf-8", "replace")
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
