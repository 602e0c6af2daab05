"""The text of progressive-disclosure answers (index searches, ``get``, ``timeline``, ``file_context``) and of
the token figures in ``status``, shared by the CLI and the MCP tools. Each answer's first line says how many
(estimated LLM) tokens it holds (``tokens`` in the daemon's answer: the text below that line)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mempal.methods.drawer import GetResult, SearchResult


def _head(what: str, tokens: Any) -> str:
    return f"{what} · {tokens} tokens"


def index(r: SearchResult) -> str:
    hits = r.get("hits", [])
    if not hits:
        return f"No memories match {r.get('query', '')!r}. · 0 tokens"
    head = _head(f"{len(hits)} hits for {r.get('query', '')!r} (id | date | wing/room | relevance | full size | "
                 f"title); `get` the ones worth reading (all in full: {r.get('tokens_full')} tokens)", r.get("tokens"))
    return "\n".join([head, *(str(h.get("line", "")) for h in hits)])


def drawers(r: GetResult) -> str:
    parts = [_head(f"{len(r.get('drawers', []))} drawer(s)", r.get("tokens"))]
    for d in r.get("drawers", []):
        where = f"{d.get('wing', '?')}/{d.get('room', '?')}"
        pos = d.get("position")
        source = str(d.get("source_path") or "?") + (f" #{pos}" if pos is not None and str(pos) else "")
        parts.append(f"[drawer {d.get('drawer_id')}] {where} · {str(d.get('timestamp') or '')[:19]} · "
                     f"{d.get('agent') or d.get('source_kind') or '?'} · {d.get('tokens')} tokens\n"
                     f"source: {source}\n{str(d.get('text', '')).strip()}")
    if r.get("missing"):
        parts.append("missing (unknown or deleted): " + ", ".join(r["missing"]))
    return "\n\n".join(parts)


def timeline(r: dict[str, Any]) -> str:
    title = f" «{r['session_title']}»" if r.get("session_title") else ""
    parts = [_head(f"session {r.get('session_id') or '(none)'}{title} in {r.get('wing', '?')}, around exchange "
                   f"{r.get('position')} ({r.get('source_path', '')})", r.get("tokens"))]
    for ex in r.get("exchanges", []):
        mark = ">>" if ex.get("current") else "--"
        parts.append(f"{mark} #{ex.get('position')} [drawer {ex.get('drawer_id')}] "
                     f"{str(ex.get('timestamp') or '')[:19]}\n{str(ex.get('text', '')).strip()}")
    outline = r.get("outline") or []
    if outline:
        more = (" (earlier exchanges not shown)" if r.get("earlier") else "") + (
            " (later exchanges not shown)" if r.get("later") else "")
        lines = [f"{'>' if o.get('current') else ' '} #{o.get('position')} {o.get('date')} {o.get('title')}"
                 for o in outline]
        parts.append(f"outline ({r.get('session_drawers')} drawers in the session){more}:\n" + "\n".join(lines))
    return "\n\n".join(parts)


def file_context(r: dict[str, Any]) -> str:
    if not r.get("text"):
        return f"Nothing in memory touched {r.get('path')}. · 0 tokens"
    return f"{_head(str(r.get('path')), r.get('tokens'))}\n{r['text']}"


def token_figures(t: dict[str, Any] | None) -> str:
    """Two lines for ``status``: today's injections by hook and what index-first searches saved."""
    if not t:
        return ""
    day = (t.get("days") or {}).get(t.get("today"), {})
    injected = day.get("injected") or {}
    by_event = ", ".join(f"{k} {v}" for k, v in sorted(injected.items()) if k != "total")
    totals = t.get("totals") or {}
    return (f"  tokens injected by hooks today: {injected.get('total', 0)}" + (f" ({by_event})" if by_event else "")
            + f"; all days: {totals.get('injected', 0)}\n"
            f"  tokens saved by index-first searches today: {day.get('saved', 0)} (then fetched with get: "
            f"{day.get('get', 0)}); all days: {totals.get('saved', 0)}")
