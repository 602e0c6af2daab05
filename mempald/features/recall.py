"""Prompt-time recall (the UserPromptSubmit hook): the few memories relevant to a prompt, and this agent's cowork
inbox, composed into one context text within a character and token budget."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread

from mempal.methods.vocab import AGENTS
from mempald.config import SettingsRef
from mempald.embed.embedder import Embedder
from mempald.features.cowork import CoworkInbox, Drained, Message
from mempald.search.ranking import SearchOptions
from mempald.search.searcher import Searcher, SearchRequest

RECALL_CANDIDATES = 10
RECALL_QUERY_CHARS = 1000  # the model reads 256 tokens; the head of a long prompt carries its topic
MEMORY_TEXT_CHARS = 1200  # one memory at most, before the token budget applies
FRAMING_RESERVE = 1000  # characters kept back from the inbox budget for headers and per-message lines

def worth_recalling(prompt: str) -> bool:
    """Slash commands and one-word replies ("yes", "go on") get no memories."""
    text = prompt.strip()
    return not text.startswith("/") and len(text) >= 8 and len(text.split()) >= 2


def select_memories(hits: list[dict[str, Any]], threshold: float, exclude_session: str | None) -> list[dict[str, Any]]:
    """Hits whose cosine similarity to the prompt is at least ``threshold``, best first, one per exchange.

    The fused ``score`` of search is min-max normalised (its top hit is always near 1), so it cannot say
    whether anything is relevant at all; the raw dense cosine can.
    """
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, Any]] = set()
    for h in sorted(hits, key=lambda h: -((h.get("scores") or {}).get("dense") or 0.0)):
        dense = (h.get("scores") or {}).get("dense")
        if dense is None or dense < threshold:
            continue
        if exclude_session and h.get("session_id") == exclude_session:
            continue  # already in the agent's context
        if h.get("kind") == "aaak":
            continue  # compressed digests read badly out of context; their source drawers are there
        key = (h.get("source_path"), h.get("exchange_key") or h.get("drawer_id"))
        if key in seen:
            continue
        seen.add(key)
        out.append(h)
    return out


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


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
    meta.append(f"similarity {float((h.get('scores') or {}).get('dense') or 0.0):.2f}")
    lines = [f"[{' · '.join(meta)}]"]
    if h.get("source_path"):
        lines.append(f"source: {h['source_path']}")
    lines.append(_clip(str(h.get("text", "")), text_chars))
    return "\n".join(lines)


INBOX_HEADER = "Messages from your partner agent (mempal cowork inbox, delivered once):"
MEMORY_HEADER = ("Memories from earlier sessions that may bear on this prompt (mempal; cite the drawer id, and "
                 "check a memory against the code before relying on it):")


def compose(messages: tuple[Message, ...], remaining: int, memories: list[dict[str, Any]], max_chars: int,
            max_tokens: int, count_tokens: Callable[[str], int]) -> tuple[str, list[dict[str, Any]]]:
    """The context text (inbox first: it is delivered once, and whole) and the memories that fitted.

    Memories get at most ``max_tokens`` model tokens and what is left of ``max_chars`` after the inbox;
    when even the best memory does not fit, it is cut to the budget rather than dropped.
    """
    parts: list[str] = []
    if messages:
        lines = [INBOX_HEADER]
        lines += [f"- from {m.sender} at {_when(m.created_at)}:\n{m.text.strip()}" for m in messages]
        if remaining:
            lines.append(f"({remaining} more message(s) wait in the inbox; they arrive with the next prompt.)")
        parts.append("\n".join(lines))
    chars_left = max_chars - sum(len(x) + 2 for x in parts) - len(MEMORY_HEADER) - 1
    tokens_left = max_tokens - count_tokens(MEMORY_HEADER)
    blocks: list[str] = []
    kept: list[dict[str, Any]] = []
    for h in memories:
        block = render_memory(h, MEMORY_TEXT_CHARS)
        tokens = count_tokens(block)
        if tokens > tokens_left or len(block) + 2 > chars_left:
            if blocks or tokens_left < 60 or chars_left < 300:
                break
            keep = min(chars_left - 2, len(block) * tokens_left // max(tokens, 1))  # the best one, cut to fit
            block = _clip(block, keep)
            tokens = count_tokens(block)
        blocks.append(block)
        kept.append(h)
        tokens_left -= tokens
        chars_left -= len(block) + 2
    if blocks:
        parts.append(MEMORY_HEADER + "\n" + "\n\n".join(blocks))
    return "\n\n".join(parts)[:max_chars], kept


class PromptContext:
    def __init__(self, settings: SettingsRef, searcher: Searcher, inbox: CoworkInbox, embedder: Embedder) -> None:
        self.settings = settings
        self.searcher = searcher
        self.inbox = inbox
        self.embedder = embedder

    async def for_prompt(self, prompt: str, *, cwd: str | None, agent: str, session_id: str | None, max_chars: int,
                         threshold: float | None, max_tokens: int | None, budget_ms: int) -> dict[str, Any]:
        """The memories relevant to ``prompt`` plus this agent's inbox (drained), as one context text."""
        settings = self.settings.current
        hooks = settings.hooks
        threshold = hooks.recall_threshold if threshold is None else threshold
        max_tokens = hooks.recall_max_tokens if max_tokens is None else max_tokens
        started = time.perf_counter()
        candidates: list[dict[str, Any]] = []
        searched = False
        if hooks.recall and max_tokens > 0 and worth_recalling(prompt):
            req = SearchRequest(
                query=prompt.strip()[:RECALL_QUERY_CHARS], limit=RECALL_CANDIDATES,
                # Only the dense similarity decides here, so skip the re-ranking steps that cost store round trips.
                options=SearchOptions(dense_weight=settings.search.dense_weight, candidates=RECALL_CANDIDATES * 3,
                                      temporal_boost=0.0, neighbour_decay=0.0, session_weight=0.0),
            )
            with anyio.move_on_after(budget_ms / 1000.0):
                candidates = await self.searcher.search(req)
                searched = True
        memories = select_memories(candidates, threshold, session_id)

        # Drain last, so a slow search can never cost a message.
        def take() -> Drained:
            if not (cwd and agent in AGENTS and os.path.isabs(os.path.expanduser(cwd))):
                return Drained((), 0)  # a bad cwd must not cost the memories
            return self.inbox.drain(agent, cwd, max(0, max_chars - FRAMING_RESERVE))

        drained = await anyio.to_thread.run_sync(take)
        text, kept = await anyio.to_thread.run_sync(lambda: compose(
            drained.messages, drained.remaining, memories, max_chars, max_tokens, self.embedder.count_tokens))
        return {
            "text": text,
            "messages": [m.to_dict() for m in drained.messages],
            "remaining": drained.remaining,
            "memories": [{k: h.get(k) for k in ("drawer_id", "wing", "room", "source_path", "timestamp", "scores")}
                         for h in kept],
            "threshold": threshold,
            "searched": searched,
            "ms": round((time.perf_counter() - started) * 1000, 1),
        }
