"""RPC methods for agents: the cowork inbox, peek at the partner, prompt-time recall and hook settings.

Merged into ``mempald.rpc.METHODS``. Every handler takes the palace and a ``Params`` view; blocking SQLite
and file work runs in a worker thread.

- ``cowork_push``: to, text, cwd, from (claude | codex | user; default user) -> {message, pending, ...}
- ``cowork_drain``: target, cwd, max_chars? -> {messages, remaining}
- ``cowork_status``: cwd -> {cwd, inboxes: {claude, codex}, limits}
- ``peek_partner``: cwd, partner (claude | codex), n (default 5) -> {partner, session_id, path, exchanges, ...}
- ``recall``: prompt, cwd?, agent? (whose inbox; default claude), session_id? (left out of the memories),
  max_chars?, threshold?, max_tokens?, budget_ms? -> {text, messages, remaining, memories, threshold, ...}
- ``hook_config``: -> the [hooks] settings (plus ``wakeup_budget``)
"""

from __future__ import annotations

import dataclasses
import os
import time
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mempald.cowork import AGENTS, MAX_PENDING, SENDERS, CoworkInbox, Drained, Message, check_agent, peek_partner
from mempald.palace import Palace
from mempald.params import Handler, Params
from mempald.ranking import SearchOptions
from mempald.search import SearchRequest
from mempald.state import State

RECALL_CANDIDATES = 10
RECALL_QUERY_CHARS = 1000  # the model reads 256 tokens; the head of a long prompt carries its topic
MEMORY_TEXT_CHARS = 1200  # one memory at most, before the token budget applies
FRAMING_RESERVE = 1000  # characters kept back from the inbox budget for headers and per-message lines

_inboxes: weakref.WeakKeyDictionary[State, CoworkInbox] = weakref.WeakKeyDictionary()


def inbox_of(p: Palace) -> CoworkInbox:
    """The palace's cowork inbox on its state database (created with its table on first use; blocking)."""
    inbox = _inboxes.get(p.state)
    if inbox is None:
        inbox = CoworkInbox(p.state.conn, lock=p.state.lock)
        inbox.ensure_schema()
        _inboxes[p.state] = inbox
    return inbox


# cowork -------------------------------------------------------------------------------------------------------
async def cowork_push(p: Palace, params: Params) -> Any:
    target = check_agent("to", params.text("to", required=True))
    sender = check_agent("from", params.text("from", "user"), SENDERS)
    text = params.text("text", required=True)
    cwd = params.text("cwd", required=True)

    def run() -> tuple[Message, int]:
        inbox = inbox_of(p)
        msg = inbox.push(sender=sender, target=target, cwd=cwd, text=text)
        return msg, len(inbox.pending(target, msg.cwd))

    msg, pending = await anyio.to_thread.run_sync(run)
    return {"message": msg.to_dict(), "pending": pending, "limit": MAX_PENDING,
            "delivery": f"at {target}'s next prompt in {msg.cwd}"}


async def cowork_drain(p: Palace, params: Params) -> Any:
    target = check_agent("target", params.text("target", required=True))
    cwd = params.text("cwd", required=True)
    max_chars = params.raw.get("max_chars")
    budget = params.integer("max_chars", 0, lo=1, hi=10_000_000) if max_chars is not None else None
    res: Drained = await anyio.to_thread.run_sync(lambda: inbox_of(p).drain(target, cwd, budget))
    return {"messages": [m.to_dict() for m in res.messages], "remaining": res.remaining}


async def cowork_status(p: Palace, params: Params) -> Any:
    cwd = params.text("cwd", required=True)
    return await anyio.to_thread.run_sync(lambda: inbox_of(p).status(cwd))


async def peek(p: Palace, params: Params) -> Any:
    cwd = params.text("cwd", required=True)
    partner = check_agent("partner", params.text("partner", required=True))
    n = params.integer("n", 5, lo=1, hi=50)
    src = p.settings.sources
    return await anyio.to_thread.run_sync(lambda: peek_partner(
        cwd, partner, n, claude_projects=Path(src.claude_projects).expanduser(),
        codex_sessions=Path(src.codex_sessions).expanduser()))


# recall -------------------------------------------------------------------------------------------------------
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


async def recall(p: Palace, params: Params) -> Any:
    """For the UserPromptSubmit hook: the few memories relevant to ``prompt`` plus this agent's inbox."""
    prompt = params.text("prompt", "")
    cwd = params.text("cwd")
    agent = params.text("agent", "claude")
    session_id = params.text("session_id")
    max_chars = params.integer("max_chars", 9000, lo=500, hi=100_000)
    hooks = p.settings.hooks
    threshold = params.number("threshold", hooks.recall_threshold)
    max_tokens = params.integer("max_tokens", hooks.recall_max_tokens, lo=0, hi=100_000)
    budget_s = params.integer("budget_ms", 1500, lo=50, hi=60_000) / 1000.0
    started = time.perf_counter()

    candidates: list[dict[str, Any]] = []
    searched = False
    if hooks.recall and max_tokens > 0 and worth_recalling(prompt):
        req = SearchRequest(
            query=prompt.strip()[:RECALL_QUERY_CHARS], limit=RECALL_CANDIDATES,
            # Only the dense similarity decides here, so skip the re-ranking steps that cost store round trips.
            options=SearchOptions(dense_weight=p.settings.search.dense_weight, candidates=RECALL_CANDIDATES * 3,
                                  temporal_boost=0.0, neighbour_decay=0.0, session_weight=0.0),
        )
        with anyio.move_on_after(budget_s):
            candidates = await p.searcher.search(req)
            searched = True
    memories = select_memories(candidates, threshold, session_id)

    # Drain last, so a slow search can never cost a message.
    def take() -> Drained:
        if not (cwd and agent in AGENTS and os.path.isabs(os.path.expanduser(cwd))):
            return Drained((), 0)  # a bad cwd must not cost the memories
        return inbox_of(p).drain(agent, cwd, max(0, max_chars - FRAMING_RESERVE))

    drained = await anyio.to_thread.run_sync(take)
    text, kept = await anyio.to_thread.run_sync(lambda: compose(
        drained.messages, drained.remaining, memories, max_chars, max_tokens, p.embedder.count_tokens))
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


async def hook_config(p: Palace, _params: Params) -> Any:
    """The [hooks] settings, so hooks never parse TOML."""
    out = dataclasses.asdict(p.settings.hooks)
    out["wakeup_budget"] = p.settings.wakeup.l1_budget
    return out


METHODS: dict[str, Handler] = {
    "cowork_push": cowork_push,
    "cowork_drain": cowork_drain,
    "cowork_status": cowork_status,
    "peek_partner": peek,
    "recall": recall,
    "hook_config": hook_config,
}
