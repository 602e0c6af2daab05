"""How the MCP tools' answers read: text for the model, short, citing drawer ids and sources. Each answer of a
search, ``get``, ``timeline`` or ``file_context`` starts with how many tokens it holds (estimated LLM tokens,
``mempal.tokens``).

Every answer stays within a token budget (``DEFAULT_BUDGET``, lowered with ``mempal mcp --max-tokens``): hosts
refuse larger tool results (Claude Code: 25,000 tokens by default). A search or ``get`` that would exceed it
shows the hits or drawers that fit and lists the ids of the others to ``get`` next; any other answer is cut and
says so, and what to ask for instead."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from mempal import disclosure_text as dtext
from mempal.tokens import estimate, fit

if TYPE_CHECKING:
    from mempal.methods.drawer import GetResult, SearchResult

HIT_CHARS = 1500
DEFAULT_BUDGET = 20_000  # tokens an answer holds at most (Claude Code refuses tool results over 25,000)
MIN_BUDGET = 500

Render = Callable[[Any, int], str]


def dump(result: Any, budget: int = DEFAULT_BUDGET) -> str:
    return capped(json.dumps(result, indent=1, ensure_ascii=False), budget)


def capped(text: str, budget: int) -> str:
    """``text`` if it fits in ``budget`` tokens, else its start and a last line that says it was cut."""
    total = estimate(text)
    if total <= budget:
        return text
    note = (f"\n[answer cut at about {budget} of its {total} tokens (the MCP answer budget): ask for less, e.g. a "
            "smaller limit or max_tokens, or format \"index\" then `get` by id]")
    return fit(text, budget - estimate(note)).rstrip() + note


def rest_ids(what: str, ids: list[str], budget: int) -> str:
    """The line that names what was left out for the budget, with the ids to ``get`` (as many as fit)."""
    if not ids:
        return ""
    line = f"{len(ids)} more {what} not shown (the answer's budget is {budget} tokens): `get` them by id: "
    shown: list[str] = []
    room = max(0, budget // 4 - estimate(line))
    for i in ids:
        room -= estimate(i) + 1
        if room < 0:
            break
        shown.append(i)
    more = len(ids) - len(shown)
    return line + ", ".join(shown) + (f" (and {more} more: search again with a smaller limit)" if more else "")


def _dict(fn: Callable[[dict[str, Any]], str]) -> Render:
    def render(result: Any, budget: int = DEFAULT_BUDGET) -> str:
        return capped(fn(result), budget) if isinstance(result, dict) else dump(result, budget)
    return render


def _fill(head: Callable[[int, int], str], blocks: list[tuple[str, str]], what: str, budget: int,
          sep: str) -> str:
    """``head(shown, tokens)`` and the blocks (id, text) that fit in ``budget`` with it; the others by id."""
    reserve = budget // 4 + 60 if estimate(sep.join(b for _, b in blocks)) + 60 > budget else 0
    room = budget - reserve - estimate(head(len(blocks), 0)) - 10
    kept: list[str] = []
    held = 0
    for _, block in blocks:
        cost = estimate(block) + 1
        if cost > room:
            break
        kept.append(block)
        room -= cost
        held += cost - 1
    left = [i for i, _ in blocks[len(kept):]]
    parts = [head(len(kept), held), *kept]
    tail = rest_ids(what, left, budget)
    if tail:
        parts.append(tail)
    return capped(sep.join(parts), budget)


def search(result: Any, budget: int = DEFAULT_BUDGET) -> str:
    if not isinstance(result, dict):
        return dump(result, budget)
    hits = result.get("hits", [])
    if not hits:
        return f"No memories match {result.get('query', '')!r}. · 0 tokens"
    if result.get("format") == "index":
        first = dtext.index(cast("SearchResult", result)).split("\n", 1)[0]
        return _fill(lambda n, held: first if n == len(hits) else first + f" (showing {n} of {len(hits)})",
                     [(str(h.get("drawer_id")), str(h.get("line", ""))) for h in hits], "hits", budget, "\n")
    blocks = []
    for i, h in enumerate(hits, 1):
        meta = [f"{h.get('wing', '?')}/{h.get('room', '?')}"]
        if h.get("timestamp"):
            meta.append(str(h["timestamp"])[:19])
        if h.get("agent") or h.get("source_kind"):
            meta.append(str(h.get("agent") or h.get("source_kind")))
        rel = h.get("relevance")
        meta.append(f"relevance {rel:.2f}" if isinstance(rel, (int, float)) else
                    f"score {float(h.get('score') or 0):.3f}")
        full = str(h.get("text", "")).strip()
        text = full if len(full) <= HIT_CHARS else full[: HIT_CHARS - 1].rstrip() + "…"
        pos = h.get("position")
        source = str(h.get("source_path") or "?") + (f" #{pos}" if pos not in (None, "") else "")
        blocks.append((str(h.get("drawer_id")),
                       f"{i}. [drawer {h.get('drawer_id')}] {' · '.join(meta)}\n   source: {source}\n{text}"))

    def head(n: int, held: int) -> str:
        shown = f"{len(hits)} hits" if n == len(hits) else f"{len(hits)} hits, {n} shown"
        return f"{shown} · about {held} tokens (format \"index\" lists hits in about 60 tokens each)"
    return _fill(head, blocks, "hits", budget, "\n\n")


def get(result: Any, budget: int = DEFAULT_BUDGET) -> str:
    if not isinstance(result, dict):
        return dump(result, budget)
    drawers = result.get("drawers", [])
    missing = {**result, "drawers": []}
    tail = dtext.drawers(cast("GetResult", missing)).split("\n\n", 1)[1:]  # the missing line, if any
    blocks = [(str(d.get("drawer_id")), dtext.drawers(cast("GetResult", {"drawers": [d]})).split("\n\n", 1)[1])
              for d in drawers]

    def head(n: int, held: int) -> str:
        count = f"{n} drawer(s)" if n == len(drawers) else f"{n} of {len(drawers)} drawer(s)"
        return f"{count} · {held if n < len(drawers) else result.get('tokens')} tokens"
    return capped(_fill(head, blocks, "drawers", budget - sum(estimate(t) for t in tail), "\n\n")
                  + "".join("\n\n" + t for t in tail), budget)


def wake_up(result: Any, budget: int = DEFAULT_BUDGET) -> str:
    if isinstance(result, dict) and isinstance(result.get("text"), str):
        return capped(f"(wing {result.get('wing')}, {result.get('tokens')} tokens)\n\n{result['text']}", budget)
    return dump(result, budget)


def peek(result: Any, budget: int = DEFAULT_BUDGET) -> str:
    if not isinstance(result, dict):
        return dump(result, budget)
    head = (f"{result.get('partner')}'s latest session in {result.get('cwd')} (session {result.get('session_id')}, "
            f"last written {result.get('age_s')} s ago; {result.get('path')}):")
    parts = [head]
    for ex in result.get("exchanges", []):
        parts.append(f"--- {ex.get('timestamp') or ''}\nUSER: {ex.get('user', '')}\n"
                     f"ASSISTANT: {ex.get('assistant', '')}")
    if len(parts) == 1:
        parts.append("(no exchanges yet)")
    return capped("\n\n".join(parts), budget)


RENDERERS: dict[str, Render] = {
    "search": search, "wake_up": wake_up, "peek_partner": peek, "get": get,
    "timeline": _dict(dtext.timeline), "file_context": _dict(dtext.file_context),
}
