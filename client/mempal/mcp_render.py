"""How the MCP tools' answers read: text for the model, short, citing drawer ids and sources. Each answer of a
search, ``get``, ``timeline`` or ``file_context`` starts with how many model tokens it holds."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from mempal import disclosure_text as dtext

if TYPE_CHECKING:
    from mempal.methods.drawer import GetResult, SearchHit, SearchResult

HIT_CHARS = 1500

Render = Callable[[Any], str]


def dump(result: Any) -> str:
    return json.dumps(result, indent=1, ensure_ascii=False)


def _dict(fn: Callable[[dict[str, Any]], str]) -> Render:
    def render(result: Any) -> str:
        return fn(result) if isinstance(result, dict) else dump(result)
    return render


def get(answer: Any) -> str:
    return dtext.drawers(cast("GetResult", answer)) if isinstance(answer, dict) else dump(answer)


def search(answer: Any) -> str:
    if not isinstance(answer, dict):
        return dump(answer)
    result = cast("SearchResult", answer)
    if result.get("format") == "index":
        return dtext.index(result)
    hits: list[SearchHit] = result.get("hits", [])
    if not hits:
        return f"No memories match {result.get('query', '')!r}. · 0 tokens"
    out = []
    held = 0
    for i, h in enumerate(hits, 1):
        meta = [f"{h.get('wing', '?')}/{h.get('room', '?')}"]
        if h.get("timestamp"):
            meta.append(str(h["timestamp"])[:19])
        if h.get("agent") or h.get("source_kind"):
            meta.append(str(h.get("agent") or h.get("source_kind")))
        meta.append(f"score {float(h.get('score') or 0):.3f}")
        full = str(h.get("text", "")).strip()
        text = full if len(full) <= HIT_CHARS else full[: HIT_CHARS - 1].rstrip() + "…"
        tokens = int(h.get("tokens") or 0)
        held += tokens if text == full else round(tokens * len(text) / max(len(full), 1))
        pos = h.get("position")
        source = str(h.get("source_path") or "?") + (f" #{pos}" if pos is not None and str(pos) else "")
        out.append(f"{i}. [drawer {h.get('drawer_id')}] {' · '.join(meta)}\n   source: {source}\n{text}")
    head = f"{len(hits)} hits · about {held} tokens (format \"index\" lists hits in about 60 tokens each)"
    return head + "\n\n" + "\n\n".join(out)


def wake_up(result: Any) -> str:
    if isinstance(result, dict) and isinstance(result.get("text"), str):
        return f"(wing {result.get('wing')}, {result.get('tokens')} tokens)\n\n{result['text']}"
    return dump(result)


def peek(result: Any) -> str:
    if not isinstance(result, dict):
        return dump(result)
    head = (f"{result.get('partner')}'s latest session in {result.get('cwd')} (session {result.get('session_id')}, "
            f"last written {result.get('age_s')} s ago; {result.get('path')}):")
    parts = [head]
    for ex in result.get("exchanges", []):
        parts.append(f"--- {ex.get('timestamp') or ''}\nUSER: {ex.get('user', '')}\n"
                     f"ASSISTANT: {ex.get('assistant', '')}")
    if len(parts) == 1:
        parts.append("(no exchanges yet)")
    return "\n\n".join(parts)


RENDERERS: dict[str, Render] = {
    "search": search, "wake_up": wake_up, "peek_partner": peek, "get": get,
    "timeline": _dict(dtext.timeline), "file_context": _dict(dtext.file_context),
}
