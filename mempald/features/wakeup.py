"""The 4-layer wake-up stack.

- L0 identity: the file the user writes (``wakeup.identity_path``; ``mempal identity edit`` opens it).
- L1 essential story of a wing: its latest sessions (date, agent, title), where the latest work was left (the
  pending tasks, current work and next step of its latest compaction summary, or the last prompt of its latest
  session), then the decisions, preferences, outcomes and fixes of its exchanges, each stated by the sentence of the
  exchange that says it (``mempald.text.classify.key_sentence``), with its date and drawer, chosen by importance,
  memory type and recency, and the problems still without a fix; all within a token budget (estimated LLM tokens,
  ``mempal.tokens``: what the agent reading it pays). Only exchanges typed decision, preference or milestone, or
  problem with a fix (``has_fix``), make story lines; compaction summaries, injected context and first lines of
  prompts never do. A project with no memory yet says so and names the projects that have some.
- L2 room recall: the drawers of one room, newest and most important first.
- L3 deep search: ``search``.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempal import tokens as llm
from mempald.config import SettingsRef
from mempald.embed.embedder import Embedder
from mempald.features.memories import agent_beliefs
from mempald.features.viewer import SessionBrowser
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
SESSIONS_SHOWN = 4  # latest sessions listed
LEFT_CHARS = 700  # where the work was left, at most (about 180 tokens)
OPEN_PROBLEMS = 3
OTHER_WINGS = 8  # projects named when the asked one has no memory
# The headings of a Claude Code compaction summary; those in _LEFT_HEADS say where the work stands
_SUMMARY_HEADS = ("primary request and intent", "key technical concepts", "files and code sections",
                  "errors and fixes", "problem solving", "all user messages", "pending tasks", "current work",
                  "optional next step", "next step", "summary", "analysis")
_LEFT_HEADS = ("pending tasks", "current work", "optional next step", "next step")
# Claude Code appends an instruction to the agent after the summary: not a fact about the work
_CONTINUE = re.compile(r"\s*Please continue the conversation from where we left (?:it )?off.*$",
                       re.IGNORECASE | re.DOTALL)
_HEADING = re.compile(r"^(?:\d+\.|#{1,4})?\s*([A-Za-z][A-Za-z &/-]{2,40}?)\s*(?::\s*(.*))?$")


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


def where_left(summary: str, limit: int = LEFT_CHARS) -> str | None:
    """The pending tasks, current work and next step of a compaction summary (its numbered or ``#`` headings), as
    one short text; None when it has no such part."""
    parts: list[str] = []
    keep = False
    for raw in _CONTINUE.sub("", summary).splitlines():
        m = _HEADING.match(raw.strip().replace("**", ""))
        name = m.group(1).strip().lower() if m else ""
        if name in _SUMMARY_HEADS:
            keep = name in _LEFT_HEADS
            rest = (m.group(2) or "").strip() if m else ""
            if keep:
                parts.append(f"{name.capitalize()}:" + (f" {rest}" if rest else ""))
            continue
        if keep and raw.strip():
            parts.append(" ".join(raw.split()))
    if not parts:
        return None
    text = " ".join(parts)
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"


def prompt_of(text: str) -> str:
    """The user's prompt of an exchange's first drawer (its ``> `` lines), on one line."""
    quoted = [ln[1:].strip() for ln in text.splitlines() if ln.startswith(">")]
    return " ".join(" ".join(quoted).split())


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


def open_problem_line(payload: Mapping[str, Any], text: str) -> str | None:
    """A problem an exchange reports that it does not fix (None: not a problem, or fixed)."""
    if str(payload.get("memory_type") or "") != "problem" or payload.get("kind") in NOT_STORY_KINDS:
        return None
    prose = _prose(text)
    if has_fix(prose):
        return None
    return key_sentence(prose, "problem", LINE_CHARS)


Section = tuple[str, Sequence[str]]


def essential_story(
    wing: str,
    drawers: Sequence[tuple[str, Mapping[str, Any]]],
    budget: int,
    count_tokens: Callable[[str], int],
    now: float | None = None,
    *,
    before: Sequence[Section] = (),
) -> Story:
    """L1: the sections ``before`` (the latest sessions, where the work was left), then the decisions,
    preferences, outcomes and fixes of a wing, then its problems still without a fix, all within ``budget``
    tokens; each story line with its date and drawer."""
    now = time.time() if now is None else now
    ranked = sorted(_exchanges(drawers), key=lambda d: (-story_score(d[1], now), d[0]))
    header = f"## L1: {wing}"
    used = count_tokens(header)
    parts = [header]

    def fit(title: str, lines: Sequence[str]) -> list[str]:
        nonlocal used
        kept: list[str] = []
        for line in lines:
            cost = count_tokens(line) + (0 if kept else count_tokens(f"### {title}"))
            if used + cost > budget:
                break
            used += cost
            kept.append(line)
        return [f"### {title}", *kept] if kept else []

    for title, lines in before:
        parts += fit(title, lines)
    chosen: dict[str, list[tuple[str, str]]] = {}
    seen_lines: set[str] = set()
    titles = dict(SECTIONS)
    problems: list[tuple[float, str]] = []
    for did, p, text in ranked:
        line = story_line(p, text)
        if not line:
            open_line = open_problem_line(p, text)
            if open_line and open_line.lower() not in seen_lines:
                seen_lines.add(open_line.lower())
                problems.append((float(p.get("ts") or 0.0), _entry(open_line, p, did)))
            continue
        if line.lower() in seen_lines:
            continue
        entry = _entry(line, p, did)
        section = titles[str(p.get("memory_type"))]
        cost = count_tokens(entry) + (0 if section in chosen else count_tokens(f"### {section}"))
        if used + cost > budget:
            continue
        used += cost
        seen_lines.add(line.lower())
        chosen.setdefault(section, []).append((entry, did))
    ids: list[str] = []  # in the order the lines are shown
    for _, section in SECTIONS:
        if section in chosen:
            parts.append(f"### {section}")
            parts.extend(entry for entry, _ in chosen[section])
            ids.extend(did for _, did in chosen[section])
    problems.sort(key=lambda tp: -tp[0])
    parts += fit("open problems (no fix recorded)", [entry for _, entry in problems[:OPEN_PROBLEMS]])
    if len(parts) == 1:
        parts.append("(no decisions, outcomes or fixes recorded yet)")
    text = "\n".join(parts)
    return Story(text, count_tokens(text), tuple(ids))


def _entry(line: str, payload: Mapping[str, Any], did: str) -> str:
    date = str(payload.get("timestamp") or "")[:10]
    return f"- {line} ({date} · drawer {did[:8]})" if date else f"- {line} (drawer {did[:8]})"


def session_line(s: Mapping[str, Any]) -> str:
    """A session as the story lists it: date, agent, title (or its first prompt), size."""
    date = str(s.get("timestamp") or "")[:10] or "undated"
    who = str(s.get("agent") or s.get("source_kind") or "")
    title = " ".join(str(s.get("title") or "").split()) or one_line(str(s.get("excerpt") or ""), 120)
    size = int(s.get("drawers") or 0)
    return f"- {date}{' · ' + who if who else ''}: {title} ({size} drawer{'s' if size != 1 else ''})"


def no_memory(wing: str, wings: Mapping[str, int], last: Mapping[str, str], explicit: bool) -> str:
    """The story of a project with no memory: says so, and names the projects that have some."""
    lines = [f"## L1: {wing}"]
    if explicit and wings:
        close = difflib.get_close_matches(wing, list(wings), n=1, cutoff=0.6)
        lines.append(f"No wing named {wing!r} holds memories" + (f" (did you mean {close[0]!r}?)" if close else "")
                     + ".")
    else:
        lines.append(f"No memories of {wing} yet (no earlier session in this project was recorded).")
    if wings:
        top = sorted(wings, key=lambda w: (-wings[w], w))[:OTHER_WINGS]
        lines.append("Projects with memories: " + ", ".join(
            f"{w} ({wings[w]} drawers{', last ' + last[w] if last.get(w) else ''})" for w in top)
            + (f", and {len(wings) - len(top)} more" if len(wings) > len(top) else "") + ".")
    return "\n".join(lines)


def identity(path: Path) -> str:
    try:
        # wakeup.identity_path names it: a FIFO or a device there is refused, never waited on
        return read_capped(path, IDENTITY_MAX, limit="the largest identity file").decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


class WakeUp:
    """The wake-up stack of a wing, read from the store (L0, L1; L2 by room)."""

    def __init__(self, settings: SettingsRef, store: StoreGateway, embedder: Embedder, sources: SourceSet,
                 sessions: SessionBrowser | None = None) -> None:
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.sources = sources
        self.sessions = sessions or SessionBrowser(store)

    async def lead(self, wing: str) -> list[Section]:
        """The sections before the story: the wing's latest sessions, and where the work was left (the latest
        compaction summary's pending tasks, current work and next step among the latest sessions, else the last
        prompt of the latest session)."""
        listing = await self.sessions.wing_sessions(wing, None, None, SESSIONS_SHOWN)
        sessions = listing["sessions"]
        out: list[Section] = []
        if sessions:
            more = listing["total"] - len(sessions)
            title = f"latest sessions ({listing['total']} in all)" if more > 0 else "sessions"
            out.append((title, [session_line(x) for x in sessions]))
        for x in sessions[:2]:
            left = await self._left_in(wing, str(x["session_id"]))
            if left:
                out.append((f"where the work was left ({left[0]})", [left[1]]))
                break
        beliefs = await agent_beliefs(self.store, wing)  # the agents' own memory files, read, never written
        return out + ([("what the agent already believes", beliefs)] if beliefs else [])

    async def _left_in(self, wing: str, session_id: str) -> tuple[str, str] | None:
        """(date, text) of where a session left the work: its latest compaction summary's pending tasks, current
        work and next step, or its last prompt."""
        if not session_id:
            return None
        page, _ = await self.store.scroll(Filters(wing=(wing,), session_id=(session_id,)), 4000)
        by_ex: dict[str, list[Any]] = {}
        for pt in page:
            by_ex.setdefault(str(pt.payload.get("exchange_key") or pt.id), []).append(pt)
        exchanges = sorted(by_ex.values(), key=lambda pts: max(int(p.payload.get("position") or 0) for p in pts))
        for pts in reversed(exchanges):
            if pts[0].payload.get("kind") == "summary":
                text = "\n".join(str(p.payload.get("text") or "") for p in
                                 sorted(pts, key=lambda p: int(p.payload.get("chunk_index") or 0)))
                left = where_left(text)
                if left:
                    return str(pts[0].payload.get("timestamp") or "")[:10], left
        for pts in reversed(exchanges):
            first = min(pts, key=lambda p: int(p.payload.get("chunk_index") or 0))
            asked = prompt_of(str(first.payload.get("text") or ""))
            if first.payload.get("kind") == "exchange" and len(asked) >= 8:
                cut = asked if len(asked) <= LINE_CHARS else asked[:LINE_CHARS].rsplit(" ", 1)[0] + "…"
                return str(first.payload.get("timestamp") or "")[:10], f"Last asked: {cut}"
        return None

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

    async def wake_up(self, wing: str, budget: int | None, fmt: str, *, explicit: bool = True) -> dict[str, Any]:
        """L0 identity + L1 essential story of ``wing`` (empty: the wing with the most drawers; ``explicit``: the
        user named it, rather than it being the project of the working directory)."""
        settings = self.settings.current
        budget = budget or settings.wakeup.l1_budget
        ident = await anyio.to_thread.run_sync(identity, settings.identity_path())
        wings = await self.store.facet("wing", Filters())
        if not wing:
            wing = max(wings, key=lambda w: wings[w]) if wings else "general"
        packed = next((s.pack_output() / "knowledge_base.md" for s in self.sources if s.mode == "pack"
                       and s.wing == wing and (s.pack_output() / "knowledge_base.md").is_file()), None)
        drawers: list[tuple[str, Any]] = []
        if packed is None and not wings.get(wing):
            last = {w: (await self.sessions.wing_sessions(w, None, None, 1))["sessions"][:1]
                    for w in sorted(wings, key=lambda w: (-wings[w], w))[:OTHER_WINGS]}
            body = no_memory(wing, wings, {w: str(x[0].get("timestamp") or "")[:10] for w, x in last.items() if x},
                             explicit)
            text = (f"## L0: identity\n{ident}\n\n" if ident else "") + body
            tokens = await anyio.to_thread.run_sync(llm.estimate, text)
            return {"wing": wing, "text": text, "tokens": tokens, "drawers": [], "format": fmt, "known": False}
        if packed is not None and fmt == "text":
            # A pack-mode wing's packed knowledge base is its essential story.
            raw_pack = await anyio.to_thread.run_sync(functools.partial(
                read_capped, packed, PACK_TEXT_MAX, limit="the largest pack read for wake-up"))
            text_pack = raw_pack.decode("utf-8", "replace")
            body = await anyio.to_thread.run_sync(llm.fit, text_pack, budget)
            story = Story(body, 0, ())
        else:
            drawers = await self.wing_drawers(wing)
            lead = await self.lead(wing) if fmt == "text" else []
            story = await anyio.to_thread.run_sync(
                lambda: essential_story(wing, drawers, budget, llm.estimate, before=lead))
            body = story.text
        if fmt == "aaak":
            from mempald.features import aaak

            texts = [(str(dict(d).get("text", "")), did) for did, d in drawers if did in set(story.drawers)]
            doc = aaak.compress_many(texts, wing=wing, people=dict(settings.people))
            body = aaak.encode(doc)
        text = (f"## L0: identity\n{ident}\n\n" if ident else "") + body
        tokens = await anyio.to_thread.run_sync(llm.estimate, text)
        return {"wing": wing, "text": text, "tokens": tokens, "drawers": list(story.drawers), "format": fmt,
                "known": True}

    async def room(self, wing: str, room: str, limit: int) -> dict[str, Any]:
        """L2: the drawers of one room of a wing, most important and newest first."""
        drawers = await self.wing_drawers(wing, room)
        now = time.time()
        drawers.sort(key=lambda d: (-story_score(d[1], now), d[0]))
        return {"wing": wing, "room": room, "drawers": [
            {"drawer_id": did, "text": pl.get("text", ""), "timestamp": pl.get("timestamp"),
             "memory_type": pl.get("memory_type"), "importance": pl.get("importance"),
             "source_path": pl.get("source_path")} for did, pl in drawers[:limit]]}
