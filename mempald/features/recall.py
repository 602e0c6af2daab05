"""Prompt-time recall (the UserPromptSubmit hook): the few memories relevant to a prompt, and this agent's cowork
inbox, composed into one context text within a character and token budget.

What gets injected: the hits of a search over the project of the session's cwd whose calibrated relevance
(``mempald.search.fusion.relevance``: the estimated probability that the drawer bears on the prompt, from dense
similarity and keyword evidence together) reaches the floor ``hooks.recall_threshold``, then those of a search over
every wing that belong to other projects and reach the higher floor ``hooks.recall_beyond_threshold`` (a folder
with no memory yet has only those: an exact error string met in another project is exactly when that project's
memory helps, while the same vocabulary alone is not enough). Among those, exchanges that hold an answer come
before ones that only ask the question, and the project's own before any other's; the session's own drawers are
never recalled (they are in its context, or in its compaction summary), and no exchange is injected twice in one
session (the daemon remembers what it showed each session, in memory only, for as long as the session is active).
"""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread

from mempal.methods.vocab import AGENTS
from mempal.utf16 import cut, units
from mempald.config import SettingsRef
from mempald.embed.embedder import Embedder
from mempald.features import staleness
from mempald.features.cowork import CoworkInbox, Drained, Message
from mempald.normalize.wings import wing_from_cwd
from mempald.search.ranking import SearchOptions
from mempald.search.searcher import Searcher, SearchRequest
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway

RECALL_CANDIDATES = 10
RECALL_QUERY_CHARS = 1000  # the model reads 256 tokens; the head of a long prompt carries its topic
MEMORY_TEXT_CHARS = 700  # one memory at most (about 200 tokens), so two or three fit the token budget
FRAMING_RESERVE = 1000  # characters kept back from the inbox budget for headers and per-message lines
QUESTION_ONLY_PENALTY = 0.3  # ordering: an exchange that only asks goes after those that answer
SESSION_MEMORY = 512  # sessions whose injected exchanges are remembered (least recently active dropped first)
SESSION_IDLE_S = 12 * 3600  # ... and a session idle this long is forgotten
WING_CHECK_S = 60.0  # how long "this project has drawers" is trusted
STALE_CHECKED = 6  # the first memories checked against the files they wrote (more never fit the token budget)
STALE_BUDGET_S = 0.25  # what the check may take; past it the memories are shown unchecked

def worth_recalling(prompt: str) -> bool:
    """Slash commands and one-word replies ("yes", "go on") get no memories."""
    text = prompt.strip()
    return not text.startswith("/") and len(text) >= 8 and len(text.split()) >= 2


def only_asks(text: str) -> bool:
    """Does this drawer only repeat a question? A drawer's text is the user's prompt (quoted, ``> ``) and the
    assistant's reply, tool calls summarised on lines of their own; a prompt with hardly any reply (or one
    the user interrupted) holds no answer. Later chunks of an exchange have no prompt and are never that."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines or not lines[0].startswith(">"):
        return False
    prose = " ".join(ln for ln in lines if not ln.startswith((">", "[tool:", "->")))
    return len(prose) < 80 or prose.endswith("[interrupted by user]")


def exchange_of(h: dict[str, Any]) -> tuple[Any, Any]:
    return (h.get("source_path"), h.get("exchange_key") or h.get("drawer_id"))


def merge_scopes(own: list[dict[str, Any]], every: list[dict[str, Any]], wing: str | None) -> list[dict[str, Any]]:
    """The candidates of recall's two searches: those of the project's own wing (none: ``wing`` is None, a folder
    with no memory), then those of the search of every wing that belong to other wings (not a text the project's
    own hits hold already: the same memory saved in two wings is shown once)."""
    if wing is None:
        return every
    seen = {h.get("drawer_id") for h in own}
    texts = {h.get("text") for h in own}
    return own + [h for h in every
                  if h.get("wing") != wing and h.get("drawer_id") not in seen and h.get("text") not in texts]


def select_memories(hits: list[dict[str, Any]], threshold: float, exclude_session: str | None,
                    shown: set[tuple[Any, Any]] | frozenset[tuple[Any, Any]] = frozenset(), *,
                    wing: str | None = None, beyond_threshold: float | None = None) -> list[dict[str, Any]]:
    """Hits whose calibrated ``relevance`` is at least ``threshold``, one per exchange, best first.

    With ``beyond_threshold``, a hit outside ``wing`` (every hit when ``wing`` is None) needs that relevance
    instead, and comes after the hits of ``wing``: the project's own memory first.

    The fused ``score`` of search is min-max normalised (its top hit is always near 1), so it cannot say
    whether anything is relevant at all; ``relevance`` can (it is comparable across queries), and it decides
    what may be injected. The order among those is search's own (the fused score: on the coding recall set it
    puts the evidence first more often than relevance does), with exchanges that only ask put after the ones
    that answer. Hits of the current session and exchanges already injected in it (``shown``) are left out.
    """
    best: dict[tuple[Any, Any], tuple[float, dict[str, Any]]] = {}
    for h in hits:
        rel = h.get("relevance")
        beyond = beyond_threshold is not None and (wing is None or h.get("wing") != wing)
        if rel is None or rel < (beyond_threshold if beyond and beyond_threshold is not None else threshold):
            continue
        if exclude_session and h.get("session_id") == exclude_session:
            continue  # already in the agent's context
        if h.get("kind") == "aaak":
            continue  # compressed digests read badly out of context; their source drawers are there
        key = exchange_of(h)
        if key in shown:
            continue
        order = float(h.get("score") or 0.0) * (1.0 - QUESTION_ONLY_PENALTY * only_asks(str(h.get("text", ""))))
        order -= 2.0 * beyond  # fused scores lie in [0, 2): every memory of the project before any other's
        if key not in best or order > best[key][0]:
            best[key] = (order, h)
    return [h for _, h in sorted(best.values(), key=lambda oh: (-oh[0], str(oh[1].get("drawer_id"))))]


def _clip(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` UTF-16 code units."""
    text = text.strip()
    return text if units(text) <= limit else cut(text, max(0, limit - 1)).rstrip() + "…"


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def render_memory(h: dict[str, Any], text_chars: int) -> str:
    where = "/".join(str(h[k]) for k in ("wing", "room") if h.get(k))
    meta = [f"drawer {h.get('drawer_id', '?')}"]
    if where:
        meta.append(where)
    if h.get("timestamp"):
        meta.append(str(h["timestamp"])[:10])
    if h.get("agent") or h.get("source_kind"):
        meta.append(str(h.get("agent") or h.get("source_kind")))
    meta.append(f"relevance {float(h.get('relevance') or 0.0):.2f}")
    if h.get("stale"):
        meta.append(str(h["stale"]))
    lines = [f"[{' · '.join(meta)}]"]
    if h.get("source_path"):
        lines.append(f"source: {h['source_path']}")
    lines.append(_clip(str(h.get("text", "")), text_chars))
    return "\n".join(lines)


INBOX_HEADER = "Messages from your partner agent (mempal cowork inbox, delivered once):"
# Worded as facts about earlier sessions, not as instructions: Claude Code's docs warn that imperative text in
# injected context can trip the model's prompt-injection defences.
MEMORY_HEADER = ("Earlier sessions recorded these exchanges, which may bear on this prompt (mempal memory; each "
                 "names its drawer id; the code may have changed since):")


def compose(messages: tuple[Message, ...], remaining: int, memories: list[dict[str, Any]], max_chars: int,
            max_tokens: int, count_tokens: Callable[[str], int]) -> tuple[str, list[dict[str, Any]]]:
    """The context text (inbox first: it is delivered once, and whole) and the memories that fitted.

    Memories get at most ``max_tokens`` model tokens and what is left of ``max_chars`` after the inbox;
    when even the best memory does not fit, it is cut to the budget rather than dropped. Characters are
    counted as the host counts them (UTF-16 code units: ``mempal.utf16``).
    """
    parts: list[str] = []
    if messages:
        lines = [INBOX_HEADER]
        lines += [f"- from {m.sender} at {_when(m.created_at)}:\n{m.text.strip()}" for m in messages]
        if remaining:
            lines.append(f"({remaining} more message(s) wait in the inbox; they arrive with the next prompt.)")
        parts.append("\n".join(lines))
    chars_left = max_chars - sum(units(x) + 2 for x in parts) - units(MEMORY_HEADER) - 1
    tokens_left = max_tokens - count_tokens(MEMORY_HEADER)
    blocks: list[str] = []
    kept: list[dict[str, Any]] = []
    for h in memories:
        block = render_memory(h, MEMORY_TEXT_CHARS)
        tokens = count_tokens(block)
        if tokens > tokens_left or units(block) + 2 > chars_left:
            if blocks or tokens_left < 60 or chars_left < 300:
                break
            keep = min(chars_left - 2, units(block) * tokens_left // max(tokens, 1))  # the best one, cut to fit
            block = _clip(block, keep)
            tokens = count_tokens(block)
        blocks.append(block)
        kept.append(h)
        tokens_left -= tokens
        chars_left -= units(block) + 2
    if blocks:
        parts.append(MEMORY_HEADER + "\n" + "\n\n".join(blocks))
    return cut("\n\n".join(parts), max_chars), kept


class SessionMemory:
    """Which exchanges each session was shown, so none is injected twice; in memory only, bounded, and a
    session idle for ``SESSION_IDLE_S`` is forgotten (a daemon restart forgets them all)."""

    def __init__(self, sessions: int = SESSION_MEMORY, idle_s: float = SESSION_IDLE_S) -> None:
        self.sessions = sessions
        self.idle_s = idle_s
        self._shown: OrderedDict[str, tuple[float, set[tuple[Any, Any]]]] = OrderedDict()

    def shown(self, session_id: str | None) -> set[tuple[Any, Any]]:
        if not session_id:
            return set()
        self._expire()
        entry = self._shown.get(session_id)
        return set(entry[1]) if entry else set()

    def add(self, session_id: str | None, keys: list[tuple[Any, Any]]) -> None:
        if not session_id:
            return
        _, seen = self._shown.pop(session_id, (0.0, set()))
        seen.update(keys)
        self._shown[session_id] = (time.monotonic(), seen)
        while len(self._shown) > self.sessions:
            self._shown.popitem(last=False)

    def _expire(self) -> None:
        now = time.monotonic()
        while self._shown:
            sid, (last, _) = next(iter(self._shown.items()))
            if now - last < self.idle_s:
                break
            del self._shown[sid]


class PromptContext:
    def __init__(self, settings: SettingsRef, searcher: Searcher, inbox: CoworkInbox, state: StateGateway,
                 embedder: Embedder, store: StoreGateway | None = None) -> None:
        self.settings = settings
        self.searcher = searcher
        self.inbox = inbox
        self.state = state  # (the inbox's tables are in the state database: its calls run on its thread)
        self.embedder = embedder
        self.store = store  # to tell whether the cwd's project has drawers (None: always search its wing)
        self.memory = SessionMemory()
        self.files = staleness.FileLines()
        self._wings: dict[str, tuple[float, bool]] = {}

    async def checked(self, memories: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``memories`` checked against the files they wrote (``mempald.features.staleness``): the current ones
        first; within ``STALE_BUDGET_S``, else as they were."""
        if not memories or self.store is None:
            return memories
        head, rest = memories[:STALE_CHECKED], memories[STALE_CHECKED:]
        store = self.store
        with anyio.move_on_after(STALE_BUDGET_S):
            points = await store.retrieve([str(h.get("drawer_id")) for h in head])
            payloads = {p.id: p.payload for p in points}
            marked = await anyio.to_thread.run_sync(staleness.mark, head, payloads, self.files, abandon_on_cancel=True)
            return marked + rest
        return memories

    async def scope(self, cwd: str | None) -> str | None:
        """The project of ``cwd`` when it holds drawers, else None (a folder with no memory yet)."""
        wing = wing_from_cwd(cwd, default="") if cwd else ""
        if not wing:
            return None
        if self.store is None:
            return wing
        known = self._wings.get(wing)
        if known is None or time.monotonic() - known[0] > WING_CHECK_S:
            has = await self.store.count(Filters(wing=(wing,))) > 0
            known = self._wings[wing] = (time.monotonic(), has)
        return wing if known[1] else None

    def request(self, prompt: str, wing: str | None, floor: float) -> SearchRequest:
        """The search behind recall: the prompt's head, in ``wing``, hits of relevance ``floor`` or more."""
        settings = self.settings.current
        return SearchRequest(
            query=prompt.strip()[:RECALL_QUERY_CHARS], limit=RECALL_CANDIDATES,
            filters=Filters(wing=(wing,)) if wing else Filters(),
            # search's whole pipeline (its date cue, neighbours and session strength put the evidence first more
            # often: bench/recall.py, LoCoMo +7 points over fusion alone), on fewer candidates
            options=SearchOptions(dense_weight=settings.search.dense_weight, candidates=RECALL_CANDIDATES * 3,
                                  min_relevance=floor),
        )

    async def for_prompt(self, prompt: str, *, cwd: str | None, agent: str, session_id: str | None, max_chars: int,
                         threshold: float | None, max_tokens: int | None, budget_ms: int,
                         wing: str | None = None) -> dict[str, Any]:
        """The memories relevant to ``prompt`` plus this agent's inbox (drained), as one context text."""
        settings = self.settings.current
        hooks = settings.hooks
        threshold = hooks.recall_threshold if threshold is None else threshold
        max_tokens = hooks.recall_max_tokens if max_tokens is None else max_tokens
        beyond = hooks.recall_beyond_threshold
        started = time.perf_counter()
        candidates: list[dict[str, Any]] = []
        searched = False
        scope = wing
        if hooks.recall and max_tokens > 0 and worth_recalling(prompt):
            with anyio.move_on_after(budget_ms / 1000.0):
                scope = wing or await self.scope(cwd)
                reqs = [self.request(prompt, scope, threshold)] if scope else []
                if beyond <= 1.0:
                    reqs.append(self.request(prompt, None, min(threshold, beyond)))
                found = await self.searcher.search_each(reqs) if reqs else []
                own = found.pop(0) if scope else []
                candidates = merge_scopes(own, found[0] if found else [], scope)
                searched = True
        memories = select_memories(candidates, threshold, session_id, self.memory.shown(session_id),
                                   wing=scope, beyond_threshold=beyond)
        memories = await self.checked(memories)

        # Drain last, so a slow search can never cost a message.
        def take() -> Drained:
            if not (cwd and agent in AGENTS and os.path.isabs(os.path.expanduser(cwd))):
                return Drained((), 0)  # a bad cwd must not cost the memories
            return self.inbox.drain(agent, cwd, max(0, max_chars - FRAMING_RESERVE))

        drained = await self.state.run(take)
        text, kept = await anyio.to_thread.run_sync(lambda: compose(
            drained.messages, drained.remaining, memories, max_chars, max_tokens, self.embedder.count_tokens))
        self.memory.add(session_id, [exchange_of(h) for h in kept])
        return {
            "text": text,
            "messages": [m.to_dict() for m in drained.messages],
            "remaining": drained.remaining,
            "memories": [{k: h.get(k) for k in ("drawer_id", "wing", "room", "source_path", "exchange_key",
                                                 "timestamp", "relevance", "scores", "stale")} for h in kept],
            "threshold": threshold,
            "wing": scope,
            "searched": searched,
            "ms": round((time.perf_counter() - started) * 1000, 1),
        }
